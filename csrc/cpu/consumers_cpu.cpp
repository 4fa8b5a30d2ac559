// CPU consumers = tile producer + fold, compiled per CPU capability.
//
// Forward: parallel over (batch, row block); each work unit walks the column blocks,
// producing a tile in thread-local scratch and folding it into its rows' state.
// Backward: the streamed sweep of sweep.h (tiles recomputed, nothing N x M kept); each
// consumer only says what dL/dK is on a tile.
#include "cpu/sweep.h"
// sweep.h (through sources.h) must come first: it opens the inline capability namespace.
#include "cpu/consumers.h"
#include "cpu/small_product.h"
#include "cpu/tile_ops.h"
#include "cpu/topk_row.h"
#include "engines/output_memory.h"
#include "reductions/logsumexp.h"
#include "reductions/softmax.h"
#include "reductions/topk.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <type_traits>

namespace tp::cpu {
inline namespace CPU_CAPABILITY {
namespace {

template <typename T>
at::Tensor dense_impl(const Request& req) {
  const int64_t B = req.x.size(0);
  const int64_t rows = req.spec.transposed ? req.y.size(1) : req.x.size(1);
  const int64_t cols = req.spec.transposed ? req.x.size(1) : req.y.size(1);
  at::Tensor out = engine::empty_output({B, rows, cols}, req.value_options());
  if (out.numel() == 0) return out;
  auto src = make_sources<T>(req, req.spec.transposed);
  T* o = out.data_ptr<T>();
  // linear: K = X Y^T may be one product call outside our parallel region, which spreads
  // over every thread itself (PanelGemm's row blocks). Batches take the tiles below, which
  // spread over batches as well.
  if (B == 1 && src.first().product_all(o, cols)) return out;
  for_each_tile<T>(src, [&](int64_t b, const TileSource<T>& s, int64_t r0, int64_t nr, int64_t c0, int64_t nc) {
    T* dst = o + (b * rows + r0) * cols + c0;
    if (s.writes_exact_columns()) return s.produce(r0, nr, c0, nc, dst, cols);
    const int64_t ld = s.col_block();
    T* tile = scratch<T>(0, s.row_block() * ld);
    s.produce(r0, nr, c0, nc, tile, ld);
    for (int64_t r = 0; r < nr; ++r) std::copy(tile + r * ld, tile + r * ld + nc, dst + r * cols);
  });
  return out;
}

template <typename T>
Grads4 dense_backward_impl(const at::Tensor& grad_in, const Request& req, std::array<bool, 4> mask) {
  const at::Tensor grad = grad_in.contiguous();
  const T* gp = grad.data_ptr<T>();
  const int64_t rows = grad.size(1), cols = grad.size(2);  // the operator's orientation
  return backward<T>(
      req, mask, 0, nullptr,
      [&](int64_t b, bool transposed, int64_t r0, int64_t nr, int64_t c0, int64_t nc, T* buf, int64_t ld) {
        const T* base = gp + b * rows * cols;
        if (transposed == req.spec.transposed) {
          for (int64_t r = 0; r < nr; ++r)
            std::copy(base + (r0 + r) * cols + c0, base + (r0 + r) * cols + c0 + nc, buf + r * ld);
        } else {  // the transposed sweep walks the transpose of grad
          for (int64_t r = 0; r < nr; ++r)
            for (int64_t c = 0; c < nc; ++c) buf[r * ld + c] = base[(c0 + c) * cols + r0 + r];
        }
      },
      NoExtra{});
}

template <typename T>
at::Tensor matmul_impl(const Request& req, const at::Tensor& v_in) {
  const at::Tensor v = v_in.contiguous();
  const int64_t B = req.x.size(0);
  const int64_t rows = req.spec.transposed ? req.y.size(1) : req.x.size(1);
  const int64_t cols = req.spec.transposed ? req.x.size(1) : req.y.size(1);
  const int64_t C = v.size(2);
  at::Tensor out = at::zeros({B, rows, C}, req.value_options());
  if (out.numel() == 0 || cols == 0) return out;
  auto src = make_sources<T>(req, req.spec.transposed);
  const T* vp = v.data_ptr<T>();
  const bool small = use_small_product(C);
  const at::Tensor vt = small ? v.transpose(1, 2).contiguous() : at::Tensor();  // [B, C, cols]
  T* o = out.data_ptr<T>();
  for_each_row_block<T>(src, [&](int64_t b, const TileSource<T>& s, int64_t r0, int64_t nr) {
    const int64_t ld = s.col_block();
    T* tile = scratch<T>(0, s.row_block() * ld);
    T* acc = o + (b * rows + r0) * C;
    const T* vb = vp + b * cols * C;
    std::optional<SmallRowDot<T>> dot;
    if (small) dot.emplace(1, nr, C);
    for_each_col_block<T>(s, [&](int64_t c0, int64_t nc) {
      s.produce(r0, nr, c0, nc, tile, ld);
      if (small)
        dot->add(nc, tile, ld, vt.data_ptr<T>() + b * C * cols + c0, cols);
      else
        engine::gemm_nn<T>(nr, C, nc, T(1), tile, ld, vb + c0 * C, C, T(1), acc, C);
    });
    if (small) dot->finish(acc);
  });
  return out;
}

template <typename T>
Grads5 matmul_backward_impl(const at::Tensor& grad_in, const Request& req, const at::Tensor& v_in,
                            std::array<bool, 5> mask) {
  const at::Tensor grad = grad_in.contiguous(), v = v_in.contiguous();
  const int64_t C = grad.size(2);
  const ColumnProduct<T> product(grad, v);
  at::Tensor dv;
  auto g = backward<T>(
      req, {mask[0], mask[1], mask[2], mask[3]}, mask[4] ? C : 0, &dv,
      [&](int64_t b, bool transposed, int64_t r0, int64_t nr, int64_t c0, int64_t nc, T* buf, int64_t ld) {
        product.grad_k(b, transposed == req.spec.transposed, r0, nr, c0, nc, buf, ld);
      },
      [&](int64_t b, bool transposed, int64_t r0, int64_t nr, int64_t c0, int64_t nc, const T* values, int64_t ldv,
          T* dextra) {
        product.grad_v(b, transposed == req.spec.transposed, r0, nr, c0, nc, values, ldv, dextra);
      });
  return {g[0], g[1], g[2], g[3], dv};
}

// ---- row reductions (reductions/row_reductions.h) -------------------------------------------

// The values a row reduction folds: scale * K_rc + weight_c (weight: log-weights of the
// columns, or null), in place. Only the logsumexp takes a scale or weight (make_reduce).
template <typename T>
inline void reduce_argument(T* row, int64_t nc, T scale, const T* weight) {
  using V = Vec<T>;
  constexpr int64_t L = V::size();
  const V s(scale);
  for (int64_t c = 0; c < nc; c += L) {
    const int64_t count = std::min<int64_t>(L, nc - c);
    V t = V::loadu(row + c, count) * s;
    if (weight) t = t + V::loadu(weight + c, count);
    t.store(row + c, count);
  }
}

// One state of reduction R per row of the block: R's definition folds each tile row.
template <typename T, class R>
at::Tensor row_reduce_walk(const Request& req, const RowReduce& reduction) {
  using Out = typename R::Result;  // T, or the fixed result type (int64_t for an integer result)
  const int64_t B = req.batch(), rows = req.rows(), cols = req.cols();
  const R empty = R::start(Out(0), reduction);
  at::Tensor out = at::full({B, rows}, empty.finalize(),
                            req.value_options().dtype(engine::row_reduction_dtype(reduction.kind, req.value_type)));
  if (out.numel() == 0 || cols == 0) return out;
  auto src = make_sources<T>(req, req.spec.transposed);
  Out* o = out.data_ptr<Out>();
  const T scale = T(reduction.scale);
  const at::Tensor weight = reduction.weight.defined() ? reduction.weight.contiguous() : at::Tensor();
  const T* wp = weight.defined() ? weight.data_ptr<T>() : nullptr;
  const bool affine = scale != T(1) || wp != nullptr;
  for_each_row_block<T>(src, [&](int64_t b, const TileSource<T>& s, int64_t r0, int64_t nr) {
    const int64_t ld = s.col_block();
    T* tile = scratch<T>(0, s.row_block() * ld);
    std::vector<R> state(nr, empty);
    for_each_col_block<T>(s, [&](int64_t c0, int64_t nc) {
      s.produce(r0, nr, c0, nc, tile, ld);
      const T* wb = wp ? wp + b * cols + c0 : nullptr;
      for (int64_t r = 0; r < nr; ++r) {
        Row<T> row{tile + r * ld, nc};
        if (affine) reduce_argument(row.p, nc, scale, wb);
        state[r].fold(row);
      }
    });
    for (int64_t r = 0; r < nr; ++r) o[b * rows + r0 + r] = state[r].finalize();
  });
  return out;
}

template <typename T>
at::Tensor row_reduce_impl(const Request& req, const RowReduce& reduction) {
  return engine::visit_row_reduction(reduction.kind, [&](auto tag) {
    return row_reduce_walk<T, typename decltype(tag)::template type<T>>(req, reduction);
  });
}

template <typename T>
Grads5 row_reduce_backward_impl(const at::Tensor& grad_in, const Request& req, const RowReduce& reduction,
                                const at::Tensor& result_in, std::array<bool, 5> mask) {
  const at::Tensor grad = grad_in.contiguous(), result = result_in.contiguous();  // [B, rows]
  const int64_t rows = grad.size(1), cols = req.cols();
  const T* gp = grad.data_ptr<T>();
  const T* res = result.data_ptr<T>();
  const std::array<bool, 4> mask4{mask[0], mask[1], mask[2], mask[3]};
  if (reduction.kind == RowReduction::kSum) {
    auto g = backward<T>(
        req, mask4, 0, nullptr,
        [&](int64_t b, bool transposed, int64_t r0, int64_t nr, int64_t c0, int64_t nc, T* buf, int64_t ld) {
          const T* gb = gp + b * rows;
          for (int64_t r = 0; r < nr; ++r)
            for (int64_t c = 0; c < nc; ++c) buf[r * ld + c] = transposed == req.spec.transposed ? gb[r0 + r] : gb[c0 + c];
        },
        NoExtra{});
    return {g[0], g[1], g[2], g[3], at::Tensor()};
  }
  // the differentiable reductions are the sum and the logsumexp (the impl checks the table)
  TORCH_CHECK(reduction.kind == RowReduction::kLogSumExp, "torchpair: reduction \"",
              engine::row_reduction_name(reduction.kind), "\" has no backward sweep");
  // logsumexp of scale K_rc + w_c (reductions/softmax.h): dL/dK_rc = grad_r scale p_rc and
  // dL/dw_c = sum_r grad_r p_rc. In the transposed sweep (own = false) the operator's rows
  // are the tile's columns.
  const T scale = T(reduction.scale);
  const at::Tensor weight = reduction.weight.defined() ? reduction.weight.contiguous() : at::Tensor();
  const T* wp = weight.defined() ? weight.data_ptr<T>() : nullptr;
  using V = Vec<T>;
  constexpr int64_t L = V::size();
  // per-tile-row (lse, grad, weight) and per-column vectors, in the sweep's orientation
  struct Side {
    const T *lse, *grad, *w;
  };
  auto sides = [&](int64_t b, bool own, int64_t r0, int64_t c0, Side& row, Side& col) {
    const T* l = res + b * rows;
    const T* gb = gp + b * rows;
    const T* wb = wp ? wp + b * cols : nullptr;
    row = own ? Side{l + r0, gb + r0, nullptr} : Side{nullptr, nullptr, wb ? wb + r0 : nullptr};
    col = own ? Side{nullptr, nullptr, wb ? wb + c0 : nullptr} : Side{l + c0, gb + c0, nullptr};
  };
  // p and grad (as vectors) of row r, columns [c, c + count) of a tile holding K
  auto weights = [&](const Side& row, const Side& col, int64_t r, int64_t c, int64_t count, const T* k, V& p, V& g) {
    V arg = V::loadu(k + c, count) * V(scale);
    if (row.w) arg = arg + V(row.w[r]);
    if (col.w) arg = arg + V::loadu(col.w + c, count);
    const V l = row.lse ? V(row.lse[r]) : V::loadu(col.lse + c, count);
    g = row.grad ? V(row.grad[r]) : V::loadu(col.grad + c, count);
    p = reductions::softmax_weight(arg, l);
  };
  at::Tensor dw;
  auto g = backward<T>(
      req, mask4, mask[4] && wp ? 1 : 0, &dw,
      [&](const TileSource<T>& s, int64_t b, bool transposed, int64_t r0, int64_t nr, int64_t c0, int64_t nc, T* buf,
          int64_t ld) {
        s.produce(r0, nr, c0, nc, buf, ld);
        Side row, col;
        sides(b, transposed == req.spec.transposed, r0, c0, row, col);
        for (int64_t r = 0; r < nr; ++r)
          for (int64_t c = 0; c < nc; c += L) {
            const int64_t count = std::min<int64_t>(L, nc - c);
            V p, gr;
            weights(row, col, r, c, count, buf + r * ld, p, gr);
            (gr * V(scale) * p).store(buf + r * ld + c, count);
          }
      },
      // dw_c += sum_r grad_r p_rc; the transposed sweep's rows are the operator's columns
      [&](int64_t b, bool transposed, int64_t r0, int64_t nr, int64_t c0, int64_t nc, const T* values, int64_t ldv,
          T* dextra) {
        const bool own = transposed == req.spec.transposed;
        Side row, col;
        sides(b, own, r0, c0, row, col);
        for (int64_t r = 0; r < nr; ++r) {
          V acc(T(0));
          for (int64_t c = 0; c < nc; c += L) {
            const int64_t count = std::min<int64_t>(L, nc - c);
            V p, gr;
            weights(row, col, r, c, count, values + r * ldv, p, gr);
            const V term = V::blendv(V(T(0)), gr * p, lane_mask<T>(count));
            if (own)
              (V::loadu(dextra + c, count) + term).store(dextra + c, count);
            else
              acc = acc + term;
          }
          if (!own) dextra[r] += hsum(acc);
        }
      });
  return {g[0], g[1], g[2], g[3], dw.defined() ? dw.squeeze(-1) : dw};
}

// ---- top-k (min / max / argmin / argmax are k = 1; the row's selection: topk_row.h) ----

// The selections of one row block: scan() ranks a row's values of a column segment; as a
// Selection it takes the segments a source's select() hands over, and keeps each row's bar
// key for it.
template <typename T>
struct TopkRows final : engine::Selection<T> {
  TopkOrder<T> ord;
  TopkRowSet<T> sel;
  std::vector<T> bar_keys;

  TopkRows(int64_t nr, int64_t k, const TopkOrder<T>& order)
      : ord(order), sel(nr, k), bar_keys(nr, std::numeric_limits<T>::quiet_NaN()) {
    this->bars = bar_keys.data();
  }

  void take(int64_t r, int64_t c0, int64_t nc, const T* values, const T* keys) override {
    scan(r, values, keys, c0, nc);
  }

  // Row r's values t[c] (keys[c] where given) of columns c0 + c, c < nc, ascending columns.
  void scan(int64_t r, const T* t, const T* keys, int64_t c0, int64_t nc) {
    using V = Vec<T>;
    constexpr int64_t L = V::size();
    TopkRow<T>& h = sel[r];
    auto push = [&](int64_t c) { h.push(ord, t[c], keys ? keys[c] : T(0), c0 + c); };
    int64_t c = 0;
    // Take every candidate until the row has a bar (k kept, or the first cut), then only look
    // closer at candidates that beat it: a vectorized comparison discards most of a tile.
    for (; c < nc && !h.barred; ++c) push(c);
    for (; c < nc; c += L) {
      const int64_t count = std::min<int64_t>(L, nc - c);
      const V vals = V::loadu(t + c, count);
      // lanes that beat the bar (ties never do: their columns come later)
      V pass;
      if (std::isnan(h.bar.v)) {
        pass = ord.nan_first ? V(T(0)) : (vals == vals);  // a NaN bar loses to every number
      } else {
        const V bar(h.bar.v);
        pass = ord.largest ? vals > bar : vals < bar;
        if (ord.nan_first) pass = pass | vals.isnan();
      }
      // bit i set: lane i passed. Most vectors of a tile have no lane that passes, so
      // only the passing lanes are visited, lowest first.
      uint64_t passed = ~uint64_t(unsigned(pass.zero_mask())) & ((uint64_t(1) << count) - 1);
      for (; passed != 0; passed &= passed - 1) push(c + __builtin_ctzll(passed));
    }
    if (h.barred) bar_keys[r] = h.bar.key;
  }
};

template <typename T>
std::tuple<at::Tensor, at::Tensor> topk_impl(const Request& req, int64_t k, bool largest, bool nan_first) {
  const int64_t B = req.batch(), rows = req.rows();
  at::Tensor values = at::empty({B, rows, k}, req.value_options());
  at::Tensor indices = at::empty({B, rows, k}, req.value_options().dtype(at::kLong));
  if (values.numel() == 0) return {values, indices};
  // The smallest values of a few per row: the source may skip what cannot enter
  // (TileSource::select). A row's selection changes about k ln(cols / k) times; for larger k
  // most tiles hold an entrant, and handing them over piecemeal costs more than ranking
  // whole tiles (docs/performance.md).
  const bool selects = !largest && k <= 16 && req.cols() >= 512 * k;
  auto src = make_sources<T>(req, req.spec.transposed, selects);
  T* vo = values.data_ptr<T>();
  int64_t* io = indices.data_ptr<int64_t>();
  const TopkOrder<T> ord{largest, nan_first};
  for_each_row_block<T>(src, [&](int64_t b, const TileSource<T>& s, int64_t r0, int64_t nr) {
    const int64_t ld = s.col_block();
    T* tile = scratch<T>(0, s.row_block() * ld);
    TopkRows<T> sel(nr, k, ord);
    for_each_col_block<T>(s, [&](int64_t c0, int64_t nc) {
      if (selects && s.select(r0, nr, c0, nc, tile, ld, sel)) return;
      s.produce(r0, nr, c0, nc, tile, ld);
      for (int64_t r = 0; r < nr; ++r) sel.scan(r, tile + r * ld, nullptr, c0, nc);
    });
    for (int64_t r = 0; r < nr; ++r) {
      TopkRow<T>& h = sel.sel[r];
      h.finish(ord);
      const int64_t base = (b * rows + r0 + r) * k;
      for (int64_t i = 0; i < h.size; ++i) {
        vo[base + i] = h.buf[i].v;
        io[base + i] = h.buf[i].j;
      }
    }
  });
  return {values, indices};
}

// ---- softmax-weighted product: out_r = sum_c softmax_c(K_rc) V_c --------------------------

template <typename T>
std::tuple<at::Tensor, at::Tensor> softmax_matmul_impl(const Request& req, const at::Tensor& v_in) {
  const at::Tensor v = v_in.contiguous();
  const int64_t B = req.batch(), rows = req.rows(), cols = req.cols(), C = v.size(2);
  at::Tensor out = at::zeros({B, rows, C}, req.value_options());
  at::Tensor lse = at::full({B, rows}, -std::numeric_limits<double>::infinity(), req.value_options());
  if (rows == 0 || B == 0 || cols == 0) return {out, lse};
  auto src = make_sources<T>(req, req.spec.transposed);
  const T* vp = v.data_ptr<T>();
  const bool small = use_small_product(C);
  const at::Tensor vt = small ? v.transpose(1, 2).contiguous() : at::Tensor();  // [B, C, cols]
  T* o = out.data_ptr<T>();
  T* lo = lse.data_ptr<T>();
  for_each_row_block<T>(src, [&](int64_t b, const TileSource<T>& s, int64_t r0, int64_t nr) {
    const int64_t ld = s.col_block();
    T* tile = scratch<T>(0, s.row_block() * ld);
    std::vector<reductions::LogSumExp<T>> state(nr, reductions::LogSumExp<T>::empty(T(0)));
    T* acc = o + (b * rows + r0) * C;
    const T* vb = vp + b * cols * C;
    std::optional<SmallRowDot<T>> dot;
    if (small) dot.emplace(1, nr, C);
    for_each_col_block<T>(s, [&](int64_t c0, int64_t nc) {
      s.produce(r0, nr, c0, nc, tile, ld);
      for (int64_t r = 0; r < nr; ++r) {
        Row<T> row{tile + r * ld, nc};
        const T factor = state[r].fold(row);  // tile row := exp(K - shift)
        if (factor == T(1)) continue;
        if (small)
          dot->scale_row(r, factor);
        else
          for (int64_t j = 0; j < C; ++j) acc[r * C + j] *= factor;
      }
      if (small)
        dot->add(nc, tile, ld, vt.data_ptr<T>() + b * C * cols + c0, cols);
      else
        engine::gemm_nn<T>(nr, C, nc, T(1), tile, ld, vb + c0 * C, C, T(1), acc, C);
    });
    if (small) dot->finish(acc);
    for (int64_t r = 0; r < nr; ++r) {
      const T sum = state[r].sum;
      for (int64_t j = 0; j < C; ++j) acc[r * C + j] /= sum;
      lo[b * rows + r0 + r] = state[r].finalize();
    }
  });
  return {out, lse};
}

template <typename T>
Grads5 softmax_matmul_backward_impl(const at::Tensor& grad_in, const Request& req, const at::Tensor& v_in,
                                    const at::Tensor& out_in, const at::Tensor& lse_in, std::array<bool, 5> mask) {
  const at::Tensor grad = grad_in.contiguous(), v = v_in.contiguous(), out = out_in.contiguous(),
                   lse = lse_in.contiguous();
  const int64_t B = req.batch(), rows = grad.size(1), C = grad.size(2), cols = v.size(1);
  // delta_r = grad_r . out_r
  const at::Tensor delta = (grad * out).sum(-1).contiguous();
  const T* lp = lse.data_ptr<T>();
  const T* dp = delta.data_ptr<T>();
  (void)B;
  const ColumnProduct<T> product(grad, v);
  using V = Vec<T>;
  constexpr int64_t L = V::size();
  // softmax weights of a tile row (reductions/softmax.h): lse (and delta) per tile row in
  // the operator's orientation (own), per tile column in the transposed sweep
  auto lse_at = [&](const T* base, bool own, int64_t r, int64_t c, int64_t count) {
    return own ? V(base[r]) : V::loadu(base + c, count);
  };
  at::Tensor dv;
  auto g = backward<T>(
      req, {mask[0], mask[1], mask[2], mask[3]}, mask[4] ? C : 0, &dv,
      // dL/dK_rc = p_rc (grad_r . v_c - delta_r)
      [&](const TileSource<T>& s, int64_t b, bool transposed, int64_t r0, int64_t nr, int64_t c0, int64_t nc, T* buf,
          int64_t ld) {
        const bool own = transposed == req.spec.transposed;
        T* gv = scratch<T>(4, nr * ld);
        product.grad_k(b, own, r0, nr, c0, nc, gv, ld);
        s.produce(r0, nr, c0, nc, buf, ld);
        const T* lb = lp + b * rows + (own ? r0 : c0);
        const T* db = dp + b * rows + (own ? r0 : c0);
        for (int64_t r = 0; r < nr; ++r)
          for (int64_t c = 0; c < nc; c += L) {
            const int64_t count = std::min<int64_t>(L, nc - c);
            reductions::softmax_product_grad(V::loadu(buf + r * ld + c, count), lse_at(lb, own, r, c, count),
                                             V::loadu(gv + r * ld + c, count), lse_at(db, own, r, c, count))
                .store(buf + r * ld + c, count);
          }
      },
      // dV_c += sum_r p_rc grad_r
      [&](int64_t b, bool transposed, int64_t r0, int64_t nr, int64_t c0, int64_t nc, const T* values, int64_t ldv,
          T* dextra) {
        const bool own = transposed == req.spec.transposed;
        T* p = scratch<T>(5, nr * ldv);
        const T* lb = lp + b * rows + (own ? r0 : c0);
        for (int64_t r = 0; r < nr; ++r)
          for (int64_t c = 0; c < nc; c += L) {
            const int64_t count = std::min<int64_t>(L, nc - c);
            reductions::softmax_weight(V::loadu(values + r * ldv + c, count), lse_at(lb, own, r, c, count))
                .store(p + r * ldv + c, count);
          }
        product.grad_v(b, own, r0, nr, c0, nc, p, ldv, dextra);
      });
  return {g[0], g[1], g[2], g[3], dv};
}

}  // namespace
}  // namespace CPU_CAPABILITY

namespace TP_ISA_NAMESPACE {

#define TP_FLOATING(name, ...) \
  AT_DISPATCH_FLOATING_TYPES(req.value_type, name, [&] { return __VA_ARGS__; })

at::Tensor dense(const Request& req) { return TP_FLOATING("torchpair_dense", dense_impl<scalar_t>(req)); }
Grads4 dense_backward(const at::Tensor& grad, const Request& req, std::array<bool, 4> mask) {
  return TP_FLOATING("torchpair_dense_backward", dense_backward_impl<scalar_t>(grad, req, mask));
}
at::Tensor matmul(const Request& req, const at::Tensor& v) {
  return TP_FLOATING("torchpair_matmul", matmul_impl<scalar_t>(req, v));
}
Grads5 matmul_backward(const at::Tensor& grad, const Request& req, const at::Tensor& v, std::array<bool, 5> mask) {
  return TP_FLOATING("torchpair_matmul_backward", matmul_backward_impl<scalar_t>(grad, req, v, mask));
}
at::Tensor row_reduce(const Request& req, const RowReduce& reduction) {
  return TP_FLOATING("torchpair_row_reduce", row_reduce_impl<scalar_t>(req, reduction));
}
Grads5 row_reduce_backward(const at::Tensor& grad, const Request& req, const RowReduce& reduction,
                           const at::Tensor& result, std::array<bool, 5> mask) {
  return TP_FLOATING("torchpair_row_reduce_backward",
                     row_reduce_backward_impl<scalar_t>(grad, req, reduction, result, mask));
}
std::tuple<at::Tensor, at::Tensor> topk(const Request& req, int64_t k, bool largest, bool nan_first) {
  return TP_FLOATING("torchpair_topk", topk_impl<scalar_t>(req, k, largest, nan_first));
}
std::tuple<at::Tensor, at::Tensor> softmax_matmul(const Request& req, const at::Tensor& v) {
  return TP_FLOATING("torchpair_softmax_matmul", softmax_matmul_impl<scalar_t>(req, v));
}
Grads5 softmax_matmul_backward(const at::Tensor& grad, const Request& req, const at::Tensor& v,
                               const at::Tensor& out, const at::Tensor& lse, std::array<bool, 5> mask) {
  return TP_FLOATING("torchpair_softmax_matmul_backward",
                     softmax_matmul_backward_impl<scalar_t>(grad, req, v, out, lse, mask));
}

#undef TP_FLOATING
}  // namespace TP_ISA_NAMESPACE
}  // namespace tp::cpu
