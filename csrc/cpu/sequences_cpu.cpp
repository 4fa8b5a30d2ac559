// CPU engines over pairs of token sequences: dense, condensed (pdist) and streamed top-k.
// Compiled once per CPU capability (the multi-pattern kernels use at::vec::Vectorized).
//
// The pattern side (x rows) is cut into units: for the metrics with a multi-pattern kernel,
// groups of rows sorted by length, one SIMD lane per row (int16 lanes for rows of at most
// 16 tokens, int32 up to 32, int64 up to 512 = 8 words; jaro: int64 up to 64); every other
// row is a unit of its own. Work is split into tasks (unit, block of up to 256 columns) so
// that both tall and wide problems use every thread; a task builds its unit's bit masks once
// and reuses them for the block. All index arithmetic is int64_t.
#include <ATen/Parallel.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <vector>

#include "cpu/topk_row.h"
#include "engines/output_memory.h"
#include "sequences/seq_damerau.h"
#include "sequences/seq_engine.h"
#include "sequences/seq_layout.h"
#include "sequences/seq_linear.h"
#include "sequences/seq_simd.h"

namespace tp::seq {
inline namespace CPU_CAPABILITY {
namespace {

constexpr int64_t kColBlock = 256;

Side side(const at::Tensor& t, const at::Tensor& len) {
  return Side{t.data_ptr<int64_t>(), len.data_ptr<int64_t>(), t.size(1), t.size(2)};
}

// Rows of x in units: order[start, start + count) (row indices within a batch element).
// Lane classes of a unit: 0 single row, 64 (int64 lanes, multi-word), 32 / 16 (narrow lanes).
struct Units {
  std::vector<int64_t> order, start, count, cls;
  int64_t size() const { return int64_t(start.size()); }
};

// Per batch element b: groups of consecutive short rows (when the metric has a group
// kernel), then single rows. Units of batch element b are [b * per, (b + 1) * per) where
// per = the largest unit count over batch elements (missing ones are empty).
struct Plan {
  std::vector<Units> per_batch;
  int64_t per = 0;
};

// The longest pattern a group kernel takes.
int64_t group_max_length(GroupKernel kind) {
  switch (kind) {
    case GroupKernel::none:
      return -1;
    case GroupKernel::jaro:
      return 64;
    case GroupKernel::damerau:
      return std::numeric_limits<int64_t>::max();
    default:
      return kMaxGroupWords * 64;
  }
}

// max_text: the longest sequence on the other side (narrow lanes hold distance counters).
// dl16: Damerau-Levenshtein groups may use int16 lanes (ids and lengths fit).
Plan plan_units(const Side& X, int64_t B, GroupKernel kind, bool by_length, int64_t max_text, bool dl16) {
  Plan plan;
  plan.per_batch.resize(B);
  const int64_t max_len = group_max_length(kind);
  // Narrow lanes for the single-word recurrences of levenshtein/indel/lcs/osa, when rows are
  // grouped by length (dense, top-k) and the counters fit.
  const bool narrow = by_length && kind != GroupKernel::none && kind != GroupKernel::jaro;
  const int64_t lim16 = (kind == GroupKernel::lcs || max_text < 32000) ? 16 : 0;
  auto cls_of = [&](int64_t len) -> int64_t {
    if (kind == GroupKernel::damerau) return dl16 ? 16 : 32;  // any length, one lane per row
    if (len > max_len) return 0;
    if (narrow && len <= lim16) return 16;
    if (narrow && len <= 32) return 32;
    return 64;
  };
  auto lanes_of = [](int64_t cls) -> int64_t {
    return cls == 16 ? NarrowGroup<int16_t>::lanes_max : cls == 32 ? NarrowGroup<int32_t>::lanes_max
                                                                  : cls == 64 ? kLanes : 1;
  };
  std::vector<int64_t> rows(X.rows);
  for (int64_t b = 0; b < B; ++b) {
    Units& u = plan.per_batch[b];
    // Rows by length, so that a group's lanes need about the same number of words.
    for (int64_t i = 0; i < X.rows; ++i) rows[i] = i;
    if (by_length && max_len > 0)
      std::stable_sort(rows.begin(), rows.end(), [&](int64_t r, int64_t q) { return X.length(b, r) < X.length(b, q); });
    int64_t open = -1;
    for (int64_t i : rows) {
      const int64_t c = cls_of(X.length(b, i));
      if (open < 0 || u.cls[open] != c || u.count[open] == lanes_of(c)) {
        open = u.size();
        u.start.push_back(int64_t(u.order.size()));
        u.count.push_back(0);
        u.cls.push_back(c);
      }
      u.order.push_back(i);
      ++u.count[open];
    }
    plan.per = std::max(plan.per, u.size());
  }
  return plan;
}

int64_t max_length(const Side& S, int64_t B) {
  int64_t mx = 0;
  for (int64_t q = 0; q < B * S.rows; ++q) mx = std::max(mx, S.len[q]);
  return mx;
}

// Read-only state of one call, built before the threads start and shared by them: the
// linear-scan layouts (hamming, prefix, postfix) and, for Damerau-Levenshtein, both
// operands' tokens as int32 ids (same layout as the int64 tokens).
struct CallData {
  std::unique_ptr<LinearScan> lin;
  std::vector<int32_t> xn, yn;
  bool dl16 = false;
  const Side *X = nullptr, *Y = nullptr;
  const int32_t* xrow(int64_t b, int64_t i) const { return xn.data() + (b * X->rows + i) * X->L; }
  const int32_t* yrow(int64_t b, int64_t j) const {
    return (yn.empty() ? xn.data() : yn.data()) + (b * Y->rows + j) * Y->L;
  }
};

// same: Y is X (pdist).
void prepare_call(CallData& cd, const Params& p, const Side& X, const Side& Y, int64_t B, bool same) {
  cd.X = &X;
  cd.Y = &Y;
  const bool dl = p.metric == Metric::damerau_levenshtein;
  if (!is_linear(p) && !dl) return;
  if (is_linear(p)) {
    cd.lin = std::make_unique<LinearScan>(p, X, Y, B, same);
    return;
  }
  const Side sides[2] = {X, Y};
  TokenIds ids;
  ids.build(sides, same ? 1 : 2, B);
  auto narrow = [&](const Side& S, std::vector<int32_t>& out) {
    out.assign(B * S.rows * S.L, 0);
    for (int64_t q = 0; q < B * S.rows; ++q)
      for (int64_t t = 0; t < S.len[q]; ++t) out[q * S.L + t] = ids(S.tok[q * S.L + t]);
  };
  narrow(X, cd.xn);
  if (!same) narrow(Y, cd.yn);
  cd.dl16 = ids.fits16() && std::max(max_length(X, B), max_length(Y, B)) < 16000;
}

// Evaluates one unit against columns [c0, c1) of y (batch element b): lane l's value of
// column j goes to dst[l][j - c0] (the output row itself for dense, a buffer otherwise).
template <typename V>
class UnitEvaluator {
 public:
  UnitEvaluator(const Params& p, const Side& X, const Side& Y, const CallData& cd)
      : p_(p), X_(X), Y_(Y), cd_(cd), kind_(group_kernel(p)) {}

  // Builds the unit's masks (once per unit); returns its lanes.
  int prepare(int64_t b, const int64_t* rows, int64_t count, int64_t cls) {
    const int64_t key = b * X_.rows + rows[0];
    lanes_ = int(count);
    cls_ = cls;
    group_ = cls == 64;
    row0_ = rows[0];
    for (int l = 0; l < lanes_; ++l) {
      s1_[l] = X_.row(b, rows[l]);
      m_[l] = X_.length(b, rows[l]);
    }
    if (key == built_) return lanes_;
    built_ = key;
    if (kind_ == GroupKernel::damerau) {
      const int32_t* ids[kMaxLanes];
      for (int l = 0; l < lanes_; ++l) ids[l] = cd_.xrow(b, rows[l]);
      if (cls == 16)
        dl16_.build(ids, m_, lanes_);
      else
        dl32_.build(ids, m_, lanes_);
    } else if (cls == 16) {
      g16_.build(s1_, m_, lanes_);
    } else if (cls == 32) {
      g32_.build(s1_, m_, lanes_);
    } else if (group_) {
      gm_.build(s1_, m_, lanes_);
      info_.set(m_, lanes_, gm_.words());
    } else if (p_.uses_pattern()) {
      pm_.build(s1_[0], m_[0]);
    }
    return lanes_;
  }

  void eval(int64_t b, int64_t c0, int64_t c1, V* const* dst) {
    if (cd_.lin) {  // single rows
      cd_.lin->row(b, row0_, c0, c1, dst[0]);
      return;
    }
    if (kind_ == GroupKernel::damerau) {
      int64_t d[kMaxLanes];
      for (int64_t j = c0; j < c1; ++j) {
        const int64_t n = Y_.length(b, j);
        if (cls_ == 16)
          dl16_.distances(cd_.yrow(b, j), n, d);
        else
          dl32_.distances(cd_.yrow(b, j), n, d);
        store(d, n, j - c0, dst);
      }
      return;
    }
    if (cls_ == 16 || cls_ == 32) {
      int64_t d[kMaxLanes];
      for (int64_t j = c0; j < c1; ++j) {
        const int64_t n = Y_.length(b, j);
        if (cls_ == 16)
          g16_.distances(p_, kind_, Y_.row(b, j), n, d);
        else
          g32_.distances(p_, kind_, Y_.row(b, j), n, d);
        store(d, n, j - c0, dst);
      }
      return;
    }
    if (group_ && kind_ == GroupKernel::jaro) {
      if constexpr (std::is_same_v<V, double>) {
        double sim[kLanes];
        for (int64_t j = c0; j < c1; ++j) {
          const int64_t n = Y_.length(b, j);
          const int64_t* t = Y_.row(b, j);
          if (n <= 64) {
            group_jaro(p_, gm_, s1_, m_, lanes_, t, n, sim);
          } else {  // a text longer than a word: the flag-array version, lane by lane
            for (int l = 0; l < lanes_; ++l) {
              sim[l] = jaro_similarity(s1_[l], m_[l], t, n, sc_);
              if (p_.metric == Metric::jaro_winkler)
                sim[l] = jaro_winkler_from(sim[l], s1_[l], m_[l], t, n, p_.prefix_weight);
            }
          }
          for (int l = 0; l < lanes_; ++l) dst[l][j - c0] = 1.0 - sim[l];
        }
      }
      return;
    }
    if (group_) {
      int64_t d[kLanes];
      for (int64_t j = c0; j < c1; ++j) {
        const int64_t n = Y_.length(b, j);
        group_distances(p_, kind_, gm_, info_, Y_.row(b, j), n, d);
        store(d, n, j - c0, dst);
      }
      return;
    }
    V* out = dst[0];
    for (int64_t j = c0; j < c1; ++j) {
      if constexpr (std::is_same_v<V, double>)
        out[j - c0] = distance_float(p_, pm_, s1_[0], m_[0], Y_.row(b, j), Y_.length(b, j), sc_);
      else
        out[j - c0] = distance_int(p_, pm_, s1_[0], m_[0], Y_.row(b, j), Y_.length(b, j), sc_);
    }
  }

 private:
  // Raw distances d[l] of the lanes against a text of n tokens into column c of the lanes' rows.
  void store(const int64_t* d, int64_t n, int64_t c, V* const* dst) const {
    for (int l = 0; l < lanes_; ++l) {
      if constexpr (std::is_same_v<V, double>) {
        const int64_t mx = maximum(p_, m_[l], n);
        dst[l][c] = mx ? double(d[l]) / double(mx) : 0.0;
      } else {
        dst[l][c] = d[l];
      }
    }
  }

  const Params& p_;
  const Side &X_, &Y_;
  const CallData& cd_;
  GroupKernel kind_;
  bool group_ = false;
  int lanes_ = 0;
  int64_t cls_ = 0, row0_ = 0;
  int64_t built_ = -1;
  const int64_t* s1_[kMaxLanes] = {};
  int64_t m_[kMaxLanes] = {};
  NarrowGroup<int16_t> g16_;
  NarrowGroup<int32_t> g32_;
  DamerauGroup<int16_t> dl16_;
  DamerauGroup<int32_t> dl32_;
  GroupMatch gm_;
  GroupInfo info_;
  PatternMatch pm_;
  Scratch sc_;
};

// Threads worth waking for a call: each must get at least kMinWorkNs of estimated work.
// Waking a thread costs microseconds on an idle machine and milliseconds on a busy one
// (the woken thread waits for a core, and the call for it), so sub-millisecond calls (the
// linear scans of a few hundred thousand pairs, every small call) run on the calling
// thread. The estimate is rough (single-thread nanoseconds, within a small factor of
// measured ones): pairs times the per-pair work of the metric's engine.
constexpr double kMinWorkNs = 5e5;

int64_t workers_for(const Params& p, const Side& X, const Side& Y, int64_t B, double pairs) {
  auto mean = [&](const Side& S) {
    double sum = 0;
    for (int64_t q = 0; q < B * S.rows; ++q) sum += double(S.len[q]);
    return B * S.rows ? sum / double(B * S.rows) : 0.0;
  };
  const double mx = mean(X), my = mean(Y);
  double per_pair;
  switch (p.metric) {
    case Metric::prefix:
    case Metric::postfix:
      per_pair = 1.5;  // a vector compare per 8-16 pairs, and the output write
      break;
    case Metric::hamming:
      per_pair = 1.0 + 0.15 * std::min(mx, my);
      break;
    case Metric::damerau_levenshtein:
      per_pair = 1.0 + 0.05 * mx * my;  // a cell per lane, 8-32 lanes
      break;
    default:
      per_pair = group_kernel(p) == GroupKernel::none ? 1.0 + mx * my  // Wagner-Fischer, scalar
                                                      : 1.0 + 0.3 * my * std::ceil(std::max(mx, 1.0) / 64.0);
  }
  return int64_t(std::min(pairs * per_pair / kMinWorkNs, 1e9));
}

// Tasks per claim of the work queue: about 1/64 of a thread's share, at least one.
int64_t chunk_for(int64_t tasks) {
  return std::max<int64_t>(1, tasks / (64 * std::max<int64_t>(1, at::get_num_threads())));
}

template <typename V>
void dense_impl(const Side& X, const Side& Y, int64_t B, const Params& p, V* out) {
  const int64_t N = X.rows, M = Y.rows;
  if (B * N * M == 0) return;
  CallData cd;
  prepare_call(cd, p, X, Y, B, /*same=*/false);
  const Plan plan = plan_units(X, B, group_kernel(p), /*by_length=*/true, max_length(Y, B), cd.dl16);
  // A linear scan's row is cheap: wide column blocks, fewer tasks.
  const int64_t cblock = cd.lin ? 4 * kColBlock : kColBlock;
  const int64_t cblocks = (M + cblock - 1) / cblock;
  const int64_t tasks = B * plan.per * cblocks;
  TaskQueue queue(tasks, chunk_for(tasks), workers_for(p, X, Y, B, double(B) * double(N) * double(M)));
  at::parallel_for(0, queue.workers(), 1, [&](int64_t, int64_t) {
    UnitEvaluator<V> ev(p, X, Y, cd);
    V* dst[kMaxLanes];
    int64_t t0, t1;
    while (queue.next(t0, t1)) {
      for (int64_t t = t0; t < t1; ++t) {
        const int64_t unit = t / cblocks, cb = t % cblocks;
        const int64_t b = unit / plan.per, u = unit % plan.per;
        const Units& us = plan.per_batch[b];
        if (u >= us.size()) continue;
        const int64_t* rows = &us.order[us.start[u]];
        const int lanes = ev.prepare(b, rows, us.count[u], us.cls[u]);
        const int64_t c0 = cb * cblock, c1 = std::min(M, c0 + cblock);
        for (int l = 0; l < lanes; ++l) dst[l] = out + (b * N + rows[l]) * M + c0;
        ev.eval(b, c0, c1, dst);
      }
    }
  });
}

template <typename V>
void pdist_impl(const Side& X, int64_t B, const Params& p, V* out) {
  const int64_t N = X.rows;
  const int64_t P = N * (N - 1) / 2;
  if (B * P == 0) return;
  CallData cd;
  prepare_call(cd, p, X, X, B, /*same=*/true);
  const Plan plan = plan_units(X, B, group_kernel(p), /*by_length=*/false, max_length(X, B), cd.dl16);
  // Rows in index order: a group's lanes then start their columns close together.
  // Tasks: (batch, unit, block of columns after the unit's first row), enumerated once.
  std::vector<int64_t> tb, tu, tc;
  for (int64_t b = 0; b < B; ++b) {
    const Units& us = plan.per_batch[b];
    for (int64_t u = 0; u < us.size(); ++u) {
      int64_t lo = N;
      for (int64_t q = 0; q < us.count[u]; ++q) lo = std::min(lo, us.order[us.start[u] + q]);
      for (int64_t c0 = lo + 1; c0 < N; c0 += kColBlock) {
        tb.push_back(b);
        tu.push_back(u);
        tc.push_back(c0);
      }
    }
  }
  const int64_t tasks = int64_t(tb.size());
  TaskQueue queue(tasks, chunk_for(tasks), workers_for(p, X, X, B, double(B) * double(P)));
  at::parallel_for(0, queue.workers(), 1, [&](int64_t, int64_t) {
    UnitEvaluator<V> ev(p, X, X, cd);
    std::vector<V> vals(kMaxLanes * kColBlock);
    V* dst[kMaxLanes];
    for (int l = 0; l < kMaxLanes; ++l) dst[l] = &vals[l * kColBlock];
    int64_t t0, t1;
    while (queue.next(t0, t1)) {
      for (int64_t t = t0; t < t1; ++t) {
        const int64_t b = tb[t], u = tu[t], c0 = tc[t], c1 = std::min(N, c0 + kColBlock);
        const Units& us = plan.per_batch[b];
        const int64_t* rows = &us.order[us.start[u]];
        const int lanes = ev.prepare(b, rows, us.count[u], us.cls[u]);
        ev.eval(b, c0, c1, dst);
        for (int l = 0; l < lanes; ++l) {
          const int64_t i = rows[l];
          const int64_t base = b * P + N * i - i * (i + 1) / 2 - i - 1;  // + j: the pair (i, j), scipy's order
          for (int64_t j = std::max(c0, i + 1); j < c1; ++j) out[base + j] = vals[l * kColBlock + (j - c0)];
        }
      }
    }
  });
}

template <typename V>
void topk_impl(const Side& X, const Side& Y, int64_t B, const Params& p, int64_t k, bool largest, V* values,
               int64_t* indices) {
  const int64_t N = X.rows, M = Y.rows;
  if (k == 0 || B * N == 0) return;
  CallData cd;
  prepare_call(cd, p, X, Y, B, /*same=*/false);
  const Plan plan = plan_units(X, B, group_kernel(p), /*by_length=*/true, max_length(Y, B), cd.dl16);
  // the rule of every top-k: the value, then the lower column (the values hold no NaN)
  const cpu::TopkOrder<V> ord{largest, /*nan_first=*/false};
  const int64_t tasks = B * plan.per;
  TaskQueue queue(tasks, chunk_for(tasks), workers_for(p, X, Y, B, double(B) * double(N) * double(M)));
  at::parallel_for(0, queue.workers(), 1, [&](int64_t, int64_t) {
    UnitEvaluator<V> ev(p, X, Y, cd);
    std::vector<V> vals(kMaxLanes * kColBlock);
    V* dst[kMaxLanes];
    for (int l = 0; l < kMaxLanes; ++l) dst[l] = &vals[l * kColBlock];
    cpu::TopkRowSet<V> sel(kMaxLanes, k);
    int64_t u0, u1;
    while (queue.next(u0, u1)) {
      for (int64_t unit = u0; unit < u1; ++unit) {
        const int64_t b = unit / plan.per, u = unit % plan.per;
        const Units& us = plan.per_batch[b];
        if (u >= us.size()) continue;
        const int64_t* rows = &us.order[us.start[u]];
        const int lanes = ev.prepare(b, rows, us.count[u], us.cls[u]);
        for (int l = 0; l < lanes; ++l) sel[l].clear();
        for (int64_t c0 = 0; c0 < M; c0 += kColBlock) {
          const int64_t c1 = std::min(M, c0 + kColBlock);
          ev.eval(b, c0, c1, dst);
          for (int l = 0; l < lanes; ++l)
            for (int64_t j = c0; j < c1; ++j) sel[l].offer(ord, vals[l * kColBlock + (j - c0)], j);
        }
        for (int l = 0; l < lanes; ++l) {
          cpu::TopkRow<V>& h = sel[l];
          h.finish(ord);
          const int64_t row = b * N + rows[l];
          for (int64_t q = 0; q < h.size; ++q) {
            values[row * k + q] = h.buf[q].v;
            indices[row * k + q] = h.buf[q].j;
          }
        }
      }
    }
  });
}

}  // namespace
}  // namespace CPU_CAPABILITY

#define TP_SEQ_CAT_(a, b) a##b
#define TP_SEQ_CAT(a, b) TP_SEQ_CAT_(a, b)
namespace TP_SEQ_CAT(isa_, CPU_CAPABILITY) {

at::Tensor dense_cpu(const at::Tensor& x, const at::Tensor& xlen, const at::Tensor& y, const at::Tensor& ylen,
                     const Params& p) {
  const int64_t B = x.size(0);
  auto out = engine::empty_output({B, x.size(1), y.size(1)}, x.options().dtype(p.floating() ? at::kDouble : at::kLong));
  const Side X = side(x, xlen), Y = side(y, ylen);
  if (p.floating())
    dense_impl<double>(X, Y, B, p, out.data_ptr<double>());
  else
    dense_impl<int64_t>(X, Y, B, p, out.data_ptr<int64_t>());
  return out;
}

at::Tensor pdist_cpu(const at::Tensor& x, const at::Tensor& xlen, const Params& p) {
  const int64_t B = x.size(0), N = x.size(1);
  auto out = engine::empty_output({B, N * (N - 1) / 2}, x.options().dtype(p.floating() ? at::kDouble : at::kLong));
  const Side X = side(x, xlen);
  if (p.floating())
    pdist_impl<double>(X, B, p, out.data_ptr<double>());
  else
    pdist_impl<int64_t>(X, B, p, out.data_ptr<int64_t>());
  return out;
}

std::tuple<at::Tensor, at::Tensor> topk_cpu(const at::Tensor& x, const at::Tensor& xlen, const at::Tensor& y,
                                            const at::Tensor& ylen, const Params& p, int64_t k, bool largest) {
  const int64_t B = x.size(0), N = x.size(1);
  auto values = at::empty({B, N, k}, x.options().dtype(p.floating() ? at::kDouble : at::kLong));
  auto indices = at::empty({B, N, k}, x.options().dtype(at::kLong));
  const Side X = side(x, xlen), Y = side(y, ylen);
  if (p.floating())
    topk_impl<double>(X, Y, B, p, k, largest, values.data_ptr<double>(), indices.data_ptr<int64_t>());
  else
    topk_impl<int64_t>(X, Y, B, p, k, largest, values.data_ptr<int64_t>(), indices.data_ptr<int64_t>());
  return {values, indices};
}

}  // namespace isa_<capability>
}  // namespace tp::seq
