#pragma once
// The shared machinery of the CPU consumers (compiled per CPU capability with them): one
// tile source per batch element, the parallel walk over row blocks and column blocks, and
// the streamed backward sweep every consumer's gradient goes through. A consumer file
// (consumers_cpu.cpp, pdist_cpu.cpp, ...) includes this and adds its folds.
#include <cstdlib>
#include <type_traits>
#include <utility>

#include "cpu/sources.h"
#include "engines/request.h"

namespace tp::cpu {
inline namespace CPU_CAPABILITY {

using engine::Grads4;
using engine::Request;

// Batch element i of a [B, rows, ...] contiguous tensor, untyped (null if undefined).
inline const void* batch_element(const at::Tensor& t, int64_t i) {
  if (!t.defined()) return nullptr;
  return static_cast<const char*>(t.data_ptr()) + i * t.stride(0) * t.element_size();
}

// Below this much work (pairs compared x features, one multiply-add each) a walk runs on
// the calling thread: waking the pool and meeting at its barrier costs more than a second
// thread saves (microseconds on an idle machine, milliseconds when the other cores are
// busy and a worker has to be scheduled). TORCHPAIR_SERIAL_WORK overrides it (read once;
// 0 puts every walk of more than one unit on the pool).
inline int64_t serial_work_limit() {
  static const int64_t limit = [] {
    if (const char* env = std::getenv("TORCHPAIR_SERIAL_WORK")) return int64_t(std::atoll(env));
    return int64_t(1) << 18;
  }();
  return limit;
}

// at::parallel_for(0, units, 1, f), or f(0, units) on the calling thread when `work` is below
// serial_work_limit(). On the calling thread f runs in at::parallel_for's own serial path,
// under a c10::ParallelGuard: engine::gemm_nt pins BLAS to one thread there, but a nested
// at::parallel_for still forks (at::in_parallel_region() is omp_in_parallel() alone). That is
// how the PanelGemm product of a one-unit walk spreads its row blocks; below the limit a
// tile's product is under PanelGemm's per-thread grain and stays inline. Every walk of the
// CPU consumers goes through here.
template <typename F>
void parallel_units(int64_t units, double work, const F& f) {
  if (units <= 0) return;
  const bool serial = work < double(serial_work_limit());
  at::parallel_for(0, units, serial ? units : 1, f);
}

// The tile sources of a call's batch elements, in one orientation. A batch of a few
// elements builds them up front on the calling thread and every thread shares them (one
// element's source serves all the threads walking its tiles). A batch of many elements
// builds each element's source inside the walk, on the thread that walks it (Cursor):
// at::parallel_for hands each thread a contiguous run of units, and units are ordered by
// batch element, so each source is built about once, and the set-up of many small problems
// (allocation, packing) spreads over the threads instead of running ahead of the walk on
// one. Building them up front in a parallel region of their own would cost a second
// barrier per call.
template <typename T>
class Sources {
 public:
  Sources(const Request& req, bool transposed, bool selects = false) : req_(req), batch_(req.x.size(0)) {
    spec_ = req.spec;
    spec_.transposed = transposed;
    spec_.selects = selects;
    if (batch_ == 0) return;
    lazy_ = batch_ >= 2 * int64_t(at::get_num_threads()) && batch_ > 1;
    if (lazy_) {
      first_ = build(0);
    } else {
      shared_.reserve(size_t(batch_));
      for (int64_t b = 0; b < batch_; ++b) shared_.push_back(build(b));
    }
  }

  bool empty() const { return batch_ == 0; }
  int64_t size() const { return batch_; }
  // Batch element 0's source: the geometry (rows, cols, blocks) every element shares.
  const TileSource<T>& first() const { return lazy_ ? *first_ : *shared_[0]; }

  // One thread's view of the sources during a walk.
  class Cursor {
   public:
    explicit Cursor(const Sources& s) : s_(s) {}
    const TileSource<T>& at(int64_t b) {
      if (!s_.lazy_) return *s_.shared_[b];
      if (b == 0) return *s_.first_;
      if (b != b_) {
        own_ = s_.build(b);
        b_ = b;
      }
      return *own_;
    }

   private:
    const Sources& s_;
    engine::SourcePtr<T> own_;
    int64_t b_ = -1;
  };

 private:
  engine::SourcePtr<T> build(int64_t b) const {
    Operands ops;
    ops.x = batch_element(req_.x, b);
    ops.y = batch_element(req_.y, b);
    ops.a = batch_element(req_.a, b);
    ops.b = batch_element(req_.b, b);
    ops.n = req_.x.size(1);
    ops.m = req_.y.size(1);
    ops.d = req_.x.size(2);
    ops.batch = batch_;
    return make_source<T>(spec_, ops);
  }

  const Request& req_;
  SourceSpec spec_;
  int64_t batch_;
  bool lazy_ = false;
  engine::SourcePtr<T> first_;
  std::vector<engine::SourcePtr<T>> shared_;
};

template <typename T>
Sources<T> make_sources(const Request& req, bool transposed, bool selects = false) {
  return Sources<T>(req, transposed, selects);
}

// The work of a walk over every pair of these sources' operators.
template <typename T>
double walk_work(const Sources<T>& src) {
  if (src.empty()) return 0.0;
  const TileSource<T>& s = src.first();
  return double(src.size()) * double(s.rows()) * double(s.cols()) * double(std::max<int64_t>(s.dim(), 1));
}

// The row blocks of a walk, {rows per block, blocks}: the source's row_block() is the most
// one tile may hold. A walk on the pool with fewer than eight units (`per_block` units per
// row block: batch elements, column blocks) and more than one row block evens its blocks out
// and makes their count even: with the source's blocks alone, 300 rows were 256 + 44 and 600
// rows 256 + 256 + 88, one thread walking 85% of them. Not finer: each row block produces
// every column block again (column-side work per tile), and a one-block walk keeps its tile
// whole for the PanelGemm product to spread (parallel_units). The split follows the shape
// and the source alone, never the pool's size, so a row's tiles (and its bits) are the same
// on any number of threads.
inline std::pair<int64_t, int64_t> walk_row_blocks(int64_t rows, int64_t rb, int64_t per_block, double work) {
  int64_t nrb = (rows + rb - 1) / rb;
  if (nrb > 1 && per_block * nrb < 8 && work >= double(serial_work_limit())) {
    nrb = round_up(nrb, 2);
    rb = std::min(rb, round_up((rows + nrb - 1) / nrb, 8));
  }
  return {rb, (rows + rb - 1) / rb};
}

// f(batch, source, r0, nr) for every row block, in parallel. balanced: the row blocks of a
// batch element in the order 0, last, 1, last - 1, ..., so that the contiguous chunks
// at::parallel_for gives each thread hold equal shares of a triangle.
template <typename T, typename F>
void for_each_row_block(const Sources<T>& src, const F& f, bool balanced = false) {
  if (src.empty() || src.first().rows() == 0) return;
  // a balanced walk covers a triangle: half the pairs
  const double work = balanced ? walk_work(src) / 2 : walk_work(src);
  const int64_t rows = src.first().rows();
  const auto [rb, nrb] = walk_row_blocks(rows, src.first().row_block(), int64_t(src.size()), work);
  const int64_t units = int64_t(src.size()) * nrb;
  parallel_units(units, work, [&](int64_t u0, int64_t u1) {
    typename Sources<T>::Cursor cursor(src);
    for (int64_t u = u0; u < u1; ++u) {
      const int64_t k = u % nrb;
      const int64_t blk = !balanced ? k : (k % 2 == 0) ? k / 2 : nrb - 1 - k / 2;
      const int64_t b = u / nrb, r0 = blk * rb;
      f(b, cursor.at(b), r0, std::min(rb, rows - r0));
    }
  });
}

// f(batch, source, r0, nr, c0, nc) for every tile, in parallel: for consumers whose tiles
// are independent (the dense result). A 2000-row operand has only 8 row blocks of the
// GEMM sources, fewer than the cores of a larger machine; its 32 tiles are not. Each thread
// gets a contiguous run of tiles in row-major order, so it still reuses its row block.
template <typename T, typename F>
void for_each_tile(const Sources<T>& src, const F& f) {
  const TileSource<T>* s0 = src.empty() ? nullptr : &src.first();
  if (!s0 || s0->rows() == 0 || s0->cols() == 0) return;
  const int64_t rows = s0->rows(), cols = s0->cols(), cb = s0->col_block();
  const int64_t ncb = (cols + cb - 1) / cb;
  const double work = walk_work(src);
  const auto [rb, nrb] = walk_row_blocks(rows, s0->row_block(), int64_t(src.size()) * ncb, work);
  const int64_t units = int64_t(src.size()) * nrb * ncb;
  parallel_units(units, work, [&](int64_t u0, int64_t u1) {
    typename Sources<T>::Cursor cursor(src);
    for (int64_t u = u0; u < u1; ++u) {
      const int64_t b = u / (nrb * ncb), r0 = (u / ncb % nrb) * rb, c0 = (u % ncb) * cb;
      f(b, cursor.at(b), r0, std::min(rb, rows - r0), c0, std::min(cb, cols - c0));
    }
  });
}

template <typename T, typename F>
void for_each_col_block(const TileSource<T>& s, const F& f) {
  const int64_t cols = s.cols(), cb = s.col_block();
  for (int64_t c0 = 0; c0 < cols; c0 += cb) f(c0, std::min(cb, cols - c0));
}

// Which tiles a consumer visits, as a policy of the walkers below: every tile (FullWalk),
// or only the tiles reaching the strict upper triangle c > r (TriangleWalk, the condensed
// pdist result). rows(src, f) calls f(b, source, r0, nr) for each row block in parallel;
// cols(s, r0, nr, own, f) calls f(c0, nc) for the row block's column blocks, own = false
// in a sweep over the transposed operator (whose tiles hold the lower triangle c < r).
struct FullWalk {
  template <typename T, typename F>
  void rows(const Sources<T>& src, const F& f) const {
    for_each_row_block<T>(src, f);
  }
  template <typename T, typename F>
  void cols(const TileSource<T>& s, int64_t, int64_t, bool, const F& f) const {
    for_each_col_block<T>(s, f);
  }
};

struct TriangleWalk {
  template <typename T, typename F>
  void rows(const Sources<T>& src, const F& f) const {
    for_each_row_block<T>(src, f, /*balanced=*/true);
  }
  // Column blocks holding some column c > r for a row in [r0, r0 + nr) (own), or some
  // column c < r (the transposed operator); blocks start at multiples of col_block().
  template <typename T, typename F>
  void cols(const TileSource<T>& s, int64_t r0, int64_t nr, bool own, const F& f) const {
    const int64_t cols = s.cols(), cb = s.col_block();
    const int64_t begin = own ? (r0 + 1) / cb * cb : 0;
    const int64_t end = own ? cols : std::min(cols, r0 + nr - 1);
    for (int64_t c0 = begin; c0 < end; c0 += cb) f(c0, std::min(cb, cols - c0));
  }
};

// Column-side gradients of a one-pass backward are accumulated per thread and summed at
// the end; above this many bytes of such buffers the backward falls back to two sweeps
// (the second over the transposed operator), which need none.
// TORCHPAIR_BACKWARD_BUFFER_BYTES overrides it (the tests use 0 to exercise two sweeps).
inline int64_t column_buffer_budget() {
  if (const char* env = std::getenv("TORCHPAIR_BACKWARD_BUFFER_BYTES")) return std::atoll(env);
  return int64_t(256) << 20;
}

// The backward sweep(s) of a row consumer. For each tile, gup(b, transposed, r0, nr, c0, nc,
// buf, ld) writes dL/dK in the sweep's orientation (a gup that needs the tile's values, as
// logsumexp's does, takes the tile source as an extra first argument and produces them). With extra_cols > 0 (dV of matmul), the
// consumer also needs the operator's columns' share: extra(b, thread, transposed, r0, nr, c0,
// nc, values, ldv, dextra) where dextra points at the columns' [cols, extra_cols] buffer of
// this thread (one pass), or at the rows' own rows (two passes, transposed sweep).
template <typename T, typename Gup>
inline void call_gup(const Gup& gup, const TileSource<T>& s, int64_t b, bool transposed, int64_t r0, int64_t nr,
                     int64_t c0, int64_t nc, T* buf, int64_t ld) {
  if constexpr (std::is_invocable_v<Gup, const TileSource<T>&, int64_t, bool, int64_t, int64_t, int64_t, int64_t, T*,
                                    int64_t>)
    gup(s, b, transposed, r0, nr, c0, nc, buf, ld);
  else
    gup(b, transposed, r0, nr, c0, nc, buf, ld);
}

template <typename T, typename Gup, typename Extra, typename Walk = FullWalk>
Grads4 backward(const Request& req, const std::array<bool, 4>& mask, int64_t extra_cols, at::Tensor* dextra_out,
                const Gup& gup, const Extra& extra, const Walk& walk = Walk{}) {
  Grads4 g;
  const int64_t B = req.batch(), rows = req.rows(), cols = req.cols(), d = req.x.size(2);
  const bool rows_are_y = req.spec.transposed;
  const bool need_x = mask[0] || mask[2], need_y = mask[1] || mask[3];
  const bool need_rows = rows_are_y ? need_y : need_x, need_cols = rows_are_y ? need_x : need_y;
  const bool need_extra = extra_cols > 0;
  const auto opts = req.value_options();
  const at::Tensor& row_t = rows_are_y ? req.y : req.x;
  const at::Tensor& col_t = rows_are_y ? req.x : req.y;
  const at::Tensor& rside_t = rows_are_y ? req.b : req.a;
  const at::Tensor& cside_t = rows_are_y ? req.a : req.b;
  at::Tensor drow, rside, dcol, cside, dextra;
  if (need_rows) {
    drow = at::zeros(row_t.sizes(), opts);
    if (rside_t.defined()) rside = at::zeros(rside_t.sizes(), opts);
  }
  const int nthreads = at::get_num_threads();
  const int64_t col_bytes = int64_t(nthreads) * B * cols * ((need_cols ? d + 1 : 0) + extra_cols) * int64_t(sizeof(T));
  const bool one_pass = col_bytes <= column_buffer_budget();

  if (one_pass) {
    at::Tensor dcol_t, cside_tl, extra_tl;  // per-thread column accumulators
    if (need_cols) {
      dcol_t = at::zeros({nthreads, B, cols, d}, opts);
      if (cside_t.defined()) cside_tl = at::zeros({nthreads, B, cols}, opts);
    }
    if (need_extra) extra_tl = at::zeros({nthreads, B, cols, extra_cols}, opts);
    auto src = make_sources<T>(req, req.spec.transposed);
    walk.rows(src, [&](int64_t b, const TileSource<T>& s, int64_t r0, int64_t nr) {
      const int tid = at::get_thread_num();
      const int64_t ld = s.col_block();
      T* gbuf = scratch<T>(0, s.row_block() * ld);
      T* vbuf = need_extra ? scratch<T>(1, s.row_block() * ld) : nullptr;
      T* dr = drow.defined() ? drow.data_ptr<T>() + (b * rows + r0) * d : nullptr;
      T* rs = rside.defined() ? rside.data_ptr<T>() + b * rows + r0 : nullptr;
      T* dc = dcol_t.defined() ? dcol_t.data_ptr<T>() + (int64_t(tid) * B + b) * cols * d : nullptr;
      T* cs = cside_tl.defined() ? cside_tl.data_ptr<T>() + (int64_t(tid) * B + b) * cols : nullptr;
      T* ex = extra_tl.defined() ? extra_tl.data_ptr<T>() + (int64_t(tid) * B + b) * cols * extra_cols : nullptr;
      walk.cols(s, r0, nr, true, [&](int64_t c0, int64_t nc) {
        call_gup(gup, s, b, req.spec.transposed, r0, nr, c0, nc, gbuf, ld);
        s.vjp(r0, nr, c0, nc, gbuf, ld, dr, rs, dc ? dc + c0 * d : nullptr, cs ? cs + c0 : nullptr, vbuf, ld);
        if (need_extra) extra(b, req.spec.transposed, r0, nr, c0, nc, vbuf, ld, ex + c0 * extra_cols);
      });
    });
    if (need_cols) {
      dcol = dcol_t.sum(0);
      if (cside_tl.defined()) cside = cside_tl.sum(0);
    }
    if (need_extra) dextra = extra_tl.sum(0);
  } else {
    // Pass 1: the operator's own orientation, row gradients only.
    if (need_rows) {
      auto src = make_sources<T>(req, req.spec.transposed);
      walk.rows(src, [&](int64_t b, const TileSource<T>& s, int64_t r0, int64_t nr) {
        const int64_t ld = s.col_block();
        T* gbuf = scratch<T>(0, s.row_block() * ld);
        T* dr = drow.data_ptr<T>() + (b * rows + r0) * d;
        T* rs = rside.defined() ? rside.data_ptr<T>() + b * rows + r0 : nullptr;
        walk.cols(s, r0, nr, true, [&](int64_t c0, int64_t nc) {
          call_gup(gup, s, b, req.spec.transposed, r0, nr, c0, nc, gbuf, ld);
          s.vjp(r0, nr, c0, nc, gbuf, ld, dr, rs, nullptr, nullptr, nullptr, ld);
        });
      });
    }
    // Pass 2: the transposed operator; its rows are our columns.
    if (need_cols || need_extra) {
      if (need_cols) {
        dcol = at::zeros(col_t.sizes(), opts);
        if (cside_t.defined()) cside = at::zeros(cside_t.sizes(), opts);
      }
      if (need_extra) dextra = at::zeros({B, cols, extra_cols}, opts);
      auto src = make_sources<T>(req, !req.spec.transposed);
      walk.rows(src, [&](int64_t b, const TileSource<T>& s, int64_t r0, int64_t nr) {
        const int64_t ld = s.col_block();
        T* gbuf = scratch<T>(0, s.row_block() * ld);
        T* vbuf = need_extra ? scratch<T>(1, s.row_block() * ld) : nullptr;
        T* dr = dcol.defined() ? dcol.data_ptr<T>() + (b * cols + r0) * d : nullptr;
        T* rs = cside.defined() ? cside.data_ptr<T>() + b * cols + r0 : nullptr;
        T* ex = need_extra ? dextra.data_ptr<T>() + (b * cols + r0) * extra_cols : nullptr;
        walk.cols(s, r0, nr, false, [&](int64_t c0, int64_t nc) {
          call_gup(gup, s, b, !req.spec.transposed, r0, nr, c0, nc, gbuf, ld);
          if (dr)
            s.vjp(r0, nr, c0, nc, gbuf, ld, dr, rs, nullptr, nullptr, vbuf, ld);
          else
            s.produce(r0, nr, c0, nc, vbuf, ld);
          if (need_extra) extra(b, !req.spec.transposed, r0, nr, c0, nc, vbuf, ld, ex);
        });
      });
    }
  }
  (rows_are_y ? g[1] : g[0]) = drow;
  (rows_are_y ? g[3] : g[2]) = rside;
  (rows_are_y ? g[0] : g[1]) = dcol;
  (rows_are_y ? g[2] : g[3]) = cside;
  if (dextra_out) *dextra_out = dextra;
  return g;
}

struct NoExtra {
  template <typename T>
  void operator()(int64_t, bool, int64_t, int64_t, int64_t, int64_t, const T*, int64_t, T*) const {}
};

}  // namespace CPU_CAPABILITY
}  // namespace tp::cpu
