// The condensed (pdist) consumer on the CPU, compiled per CPU capability.
//
// Forward: parallel over (batch, row block); each unit walks only the column blocks that
// reach above the diagonal (c > r), produces the tile in thread-local scratch and copies
// row r's columns c > r into its contiguous condensed segment. Row blocks are handed out in
// the order 0, last, 1, last-1, ... so the contiguous chunks at::parallel_for gives each
// thread hold equal shares of the triangle.
// Backward: the same walk with dL/dK = grad on c > r and 0 elsewhere; row gradients go
// straight to the rows, column gradients into per-thread buffers (or, above the budget of
// sweep.h, a second sweep over the transposed operator's lower triangle).
#include "cpu/sweep.h"
// sweep.h (through sources.h) must come first: it opens the inline capability namespace.
#include "cpu/consumers.h"
#include "cpu/pdist.h"
#include "engines/output_memory.h"

#include <algorithm>

namespace tp::cpu {
inline namespace CPU_CAPABILITY {
namespace {

// Offset of row i's first entry (column i + 1) in the condensed vector of an n-row set.
inline int64_t row_start(int64_t i, int64_t n) { return i * n - i * (i + 1) / 2; }

// u-th unit of `units` row blocks in balanced order: 0, last, 1, last - 1, ...
inline int64_t balanced(int64_t u, int64_t nrb) {
  const int64_t k = u % nrb, b = u / nrb;
  const int64_t blk = (k % 2 == 0) ? k / 2 : nrb - 1 - k / 2;
  return b * nrb + blk;
}

// f(b, source, r0, nr) for every row block, in balanced parallel order.
template <typename T, typename F>
void for_each_row_block_balanced(const Sources<T>& src, const F& f) {
  if (src.empty() || src[0]->rows() == 0) return;
  const int64_t rows = src[0]->rows(), rb = src[0]->row_block();
  const int64_t nrb = (rows + rb - 1) / rb;
  const int64_t units = int64_t(src.size()) * nrb;
  parallel_units(units, walk_work(src) / 2, [&](int64_t u0, int64_t u1) {
    for (int64_t u = u0; u < u1; ++u) {
      const int64_t v = balanced(u, nrb);
      const int64_t b = v / nrb, r0 = (v % nrb) * rb;
      f(b, *src[b], r0, std::min(rb, rows - r0));
    }
  });
}

// Column blocks holding some column c > r for a row in [r0, r0 + nr) (upper = true), or
// some column c < r (upper = false); blocks start at multiples of col_block().
template <typename T, typename F>
void for_each_triangle_col_block(const TileSource<T>& s, int64_t r0, int64_t nr, bool upper, const F& f) {
  const int64_t cols = s.cols(), cb = s.col_block();
  const int64_t begin = upper ? (r0 + 1) / cb * cb : 0;
  const int64_t end = upper ? cols : std::min(cols, r0 + nr - 1);
  for (int64_t c0 = begin; c0 < end; c0 += cb) f(c0, std::min(cb, cols - c0));
}

template <typename T>
at::Tensor pdist_impl(const Request& req) {
  const int64_t B = req.x.size(0), n = req.x.size(1);
  const int64_t P = n * (n - 1) / 2;
  at::Tensor out = engine::empty_output({B, P}, req.value_options());
  if (out.numel() == 0) return out;
  auto src = make_sources<T>(req, false);
  T* o = out.data_ptr<T>();
  for_each_row_block_balanced<T>(src, [&](int64_t b, const TileSource<T>& s, int64_t r0, int64_t nr) {
    const int64_t ld = s.col_block();
    T* tile = scratch<T>(0, s.row_block() * ld);
    T* ob = o + b * P;
    for_each_triangle_col_block<T>(s, r0, nr, true, [&](int64_t c0, int64_t nc) {
      s.produce(r0, nr, c0, nc, tile, ld);
      for (int64_t r = 0; r < nr; ++r) {
        const int64_t i = r0 + r;
        const int64_t cb = std::max(c0, i + 1), ce = c0 + nc;
        if (cb >= ce) continue;
        std::copy(tile + r * ld + (cb - c0), tile + r * ld + (ce - c0), ob + row_start(i, n) + (cb - i - 1));
      }
    });
  });
  return out;
}

// dL/dK on a tile of the upper orientation (rows i, columns j): grad where j > i, else 0.
template <typename T>
void upper_gup(const T* gb, int64_t n, int64_t r0, int64_t nr, int64_t c0, int64_t nc, T* buf, int64_t ld) {
  for (int64_t r = 0; r < nr; ++r) {
    const int64_t i = r0 + r;
    T* row = buf + r * ld;
    const int64_t cb = std::clamp<int64_t>(i + 1 - c0, 0, nc);
    std::fill(row, row + cb, T(0));
    if (cb < nc) std::copy(gb + row_start(i, n) + (c0 + cb - i - 1), gb + row_start(i, n) + (c0 + nc - i - 1), row + cb);
  }
}

// ... of the transposed orientation (rows j from y, columns i from x): grad(i, j) where i < j.
template <typename T>
void lower_gup(const T* gb, int64_t n, int64_t r0, int64_t nr, int64_t c0, int64_t nc, T* buf, int64_t ld) {
  for (int64_t r = 0; r < nr; ++r) {
    const int64_t j = r0 + r;
    T* row = buf + r * ld;
    for (int64_t c = 0; c < nc; ++c) {
      const int64_t i = c0 + c;
      row[c] = i < j ? gb[row_start(i, n) + (j - i - 1)] : T(0);
    }
  }
}

template <typename T>
Grads4 pdist_backward_impl(const at::Tensor& grad_in, const Request& req, std::array<bool, 4> mask) {
  const at::Tensor grad = grad_in.contiguous();
  const T* gp = grad.data_ptr<T>();
  const int64_t B = req.x.size(0), n = req.x.size(1), d = req.x.size(2);
  const int64_t P = n * (n - 1) / 2;
  const auto opts = req.value_options();
  const bool need_x = mask[0] || mask[2], need_y = mask[1] || mask[3];
  Grads4 g;
  if (B == 0 || n < 2) return g;
  at::Tensor dx, da, dy, db;
  if (need_x) {
    dx = at::zeros(req.x.sizes(), opts);
    if (req.a.defined()) da = at::zeros(req.a.sizes(), opts);
  }
  const int nthreads = at::get_num_threads();
  const bool one_pass = int64_t(nthreads) * B * n * (d + 1) * int64_t(sizeof(T)) <= column_buffer_budget();
  at::Tensor dy_t, db_t;  // per-thread column accumulators (one pass)
  if (need_y && one_pass) {
    dy_t = at::zeros({nthreads, B, n, d}, opts);
    if (req.b.defined()) db_t = at::zeros({nthreads, B, n}, opts);
  }
  if (need_x || (need_y && one_pass)) {
    auto src = make_sources<T>(req, false);
    for_each_row_block_balanced<T>(src, [&](int64_t b, const TileSource<T>& s, int64_t r0, int64_t nr) {
      const int tid = at::get_thread_num();
      const int64_t ld = s.col_block();
      T* gbuf = scratch<T>(0, s.row_block() * ld);
      T* dr = dx.defined() ? dx.data_ptr<T>() + (b * n + r0) * d : nullptr;
      T* rs = da.defined() ? da.data_ptr<T>() + b * n + r0 : nullptr;
      T* dc = dy_t.defined() ? dy_t.data_ptr<T>() + (int64_t(tid) * B + b) * n * d : nullptr;
      T* cs = db_t.defined() ? db_t.data_ptr<T>() + (int64_t(tid) * B + b) * n : nullptr;
      for_each_triangle_col_block<T>(s, r0, nr, true, [&](int64_t c0, int64_t nc) {
        upper_gup<T>(gp + b * P, n, r0, nr, c0, nc, gbuf, ld);
        s.vjp(r0, nr, c0, nc, gbuf, ld, dr, rs, dc ? dc + c0 * d : nullptr, cs ? cs + c0 : nullptr, nullptr, ld);
      });
    });
  }
  if (need_y && one_pass) {
    dy = dy_t.sum(0);
    if (db_t.defined()) db = db_t.sum(0);
  } else if (need_y) {
    // The transposed operator: its rows are y's rows j, its columns x's rows i < j.
    dy = at::zeros(req.y.sizes(), opts);
    if (req.b.defined()) db = at::zeros(req.b.sizes(), opts);
    auto src = make_sources<T>(req, true);
    for_each_row_block_balanced<T>(src, [&](int64_t b, const TileSource<T>& s, int64_t r0, int64_t nr) {
      const int64_t ld = s.col_block();
      T* gbuf = scratch<T>(0, s.row_block() * ld);
      T* dr = dy.data_ptr<T>() + (b * n + r0) * d;
      T* rs = db.defined() ? db.data_ptr<T>() + b * n + r0 : nullptr;
      for_each_triangle_col_block<T>(s, r0, nr, false, [&](int64_t c0, int64_t nc) {
        lower_gup<T>(gp + b * P, n, r0, nr, c0, nc, gbuf, ld);
        s.vjp(r0, nr, c0, nc, gbuf, ld, dr, rs, nullptr, nullptr, nullptr, ld);
      });
    });
  }
  g[0] = dx;
  g[1] = dy;
  g[2] = da;
  g[3] = db;
  return g;
}

}  // namespace
}  // namespace CPU_CAPABILITY

namespace TP_ISA_NAMESPACE {

at::Tensor pdist(const Request& req) {
  return AT_DISPATCH_FLOATING_TYPES(req.value_type, "torchpair_pdist", [&] { return pdist_impl<scalar_t>(req); });
}
Grads4 pdist_backward(const at::Tensor& grad, const Request& req, std::array<bool, 4> mask) {
  return AT_DISPATCH_FLOATING_TYPES(req.value_type, "torchpair_pdist_backward",
                                    [&] { return pdist_backward_impl<scalar_t>(grad, req, mask); });
}

}  // namespace TP_ISA_NAMESPACE
}  // namespace tp::cpu
