// The Sinkhorn soft-min's fused CPU walk (cpu/sinkhorn.h), compiled per CPU capability: the
// cost is the elementwise metric definition M (metrics/elementwise.h) evaluated in registers,
// the row's result the online logsumexp of reductions/logsumexp.h; what is particular to
// this walk is that a row's shift is known beforehand (the previous potential), so one pass
// computes cost, argument, exponential and sum without writing a tile.
#include "cpu/sources.h"
// sources.h must come first: it opens the inline capability namespace.
#include "cpu/consumers.h"
#include "cpu/sinkhorn.h"
#include "reductions/logsumexp.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <vector>

namespace tp::cpu {
inline namespace CPU_CAPABILITY {
namespace {

// A shifted sum is exact when it is finite (no term overflowed) and at least kLow: then the
// row's maximum term is at least kLow / M, so every term within ~e^-55 (float) or ~e^-150
// (double) of it is still representable, far below what the result's precision can see.
template <typename T>
constexpr T low_sum() {
  return std::is_same_v<T, float> ? T(1e-17) : T(1e-250);
}

// Column operand packed [D][Mp] per batch, padded to whole vectors: padded columns have
// h = -inf, so they add exp(-inf) = 0 and never raise a maximum.
template <typename T, typename M, int DD>
void lse_rows(const T* x, const T* yt, const T* h, int64_t n, int64_t mp, int64_t d_rt, T scale, const T* shift,
              T* out) {
  static_assert(!M::kMax && M::kScalars == 0, "the fused soft-min sums the terms of a metric without parameters");
  using V = Vec<T>;
  using reductions::LogSumExp;
  constexpr int64_t L = V::size();
  const int64_t d = DD > 0 ? DD : d_rt;
  const V vscale(scale);
  const metrics::Scalars none{};
  // the argument h_j + scale cost(x_i, y_j) of columns [j, j + L)
  auto argument = [&](const T* xi, int64_t j) {
    V acc[M::kAcc];
    for (int a = 0; a < M::kAcc; ++a) acc[a] = V(T(0));
    for (int64_t k = 0; k < d; ++k) {
      V t[M::kAcc];
      M::term(V(xi[k]), V::loadu(yt + k * mp + j), t, none);
      for (int a = 0; a < M::kAcc; ++a) acc[a] = acc[a] + t[a];
    }
    return at::vec::fmadd(vscale, M::finalize(acc, none), V::loadu(h + j));
  };
  // sum_j exp(argument(x_i, j) - s) over columns [j0, j1) (whole vectors)
  auto shifted_sum = [&](const T* xi, T s, int64_t j0, int64_t j1) {
    const V vs(s);
    V sum0(T(0)), sum1(T(0));
    int64_t j = j0;
    for (; j + 2 * L <= j1; j += 2 * L) {
      sum0 = sum0 + math::exp(argument(xi, j) - vs);
      sum1 = sum1 + math::exp(argument(xi, j + L) - vs);
    }
    for (; j < j1; j += L) sum0 = sum0 + math::exp(argument(xi, j) - vs);
    return hsum(sum0 + sum1);
  };
  // Rows with a shift go in groups over column chunks of ~16 KiB of packed columns, so the
  // chunk stays in L1 while the group's rows sweep it (one row at a time would stream all of
  // y and h from L2 or memory per row once M is large).
  constexpr int64_t kRows = 8;
  const int64_t chunk = std::max<int64_t>(2 * L, 16384 / ((d + 1) * int64_t(sizeof(T))) / (2 * L) * (2 * L));
  for (int64_t i0 = 0; i0 < n; i0 += kRows) {
    const int64_t nr = std::min(kRows, n - i0);
    T sums[kRows] = {};
    if (shift) {
      for (int64_t j0 = 0; j0 < mp; j0 += chunk) {
        const int64_t j1 = std::min(mp, j0 + chunk);
        for (int64_t r = 0; r < nr; ++r)
          if (std::isfinite(shift[i0 + r])) sums[r] += shifted_sum(x + (i0 + r) * d, shift[i0 + r], j0, j1);
      }
    }
    for (int64_t i = i0; i < i0 + nr; ++i) {
      const T* xi = x + i * d;
      if (shift && std::isfinite(shift[i])) {
        // the state of a row summed under a given shift: max = shift, sum = the shifted sum
        const LogSumExp<T> st{shift[i], sums[i - i0]};
        if (std::isfinite(st.sum) && st.sum >= low_sum<T>()) {
          out[i] = st.finalize();
          continue;
        }
      }
      // the row's exact maximum (NaN-propagating), then the sum shifted by it
      V vmax(-std::numeric_limits<T>::infinity());
      for (int64_t j = 0; j < mp; j += L) vmax = at::vec::maximum(vmax, argument(xi, j));
      alignas(64) T lanes[L];
      vmax.store(lanes);
      T m = -std::numeric_limits<T>::infinity();
      for (int64_t l = 0; l < L; ++l) m = math::maximum(m, lanes[l]);
      LogSumExp<T> st = LogSumExp<T>::empty(T(0));
      st.raise(m);
      st.sum = st.sum + shifted_sum(xi, st.shift(), 0, mp);
      out[i] = st.finalize();
    }
  }
}

// One problem, its column operand packed: y transposed to [B][D][Mp], h padded to [B][Mp].
template <typename T>
struct Problem {
  const T* x;
  const T* shift;
  T* out;
  int64_t batches, n, d, mp;
  std::vector<T> yt, hp;
  int64_t rows_per_task;
};

template <typename T, typename M>
std::vector<at::Tensor> lse_impl(at::TensorList xs, at::TensorList ys, at::TensorList hs, at::TensorList shifts,
                                 double scale) {
  using V = Vec<T>;
  constexpr int64_t L = V::size();
  const int64_t count = int64_t(xs.size());
  std::vector<at::Tensor> outs;
  std::vector<Problem<T>> problems(static_cast<size_t>(count));
  std::vector<int64_t> first_task(static_cast<size_t>(count) + 1, 0);  // problem k's tasks: [first_task[k], first_task[k + 1])
  for (int64_t k = 0; k < count; ++k) {
    const at::Tensor &x = xs[k], &y = ys[k], &h = hs[k];
    Problem<T>& p = problems[k];
    p.batches = x.size(0);
    p.n = x.size(1);
    p.d = x.size(2);
    const int64_t m = y.size(1);
    p.mp = round_up(m, L);
    p.yt.assign(size_t(p.batches * p.d * p.mp), T(0));
    p.hp.assign(size_t(p.batches * p.mp), -std::numeric_limits<T>::infinity());
    const T* yp = y.data_ptr<T>();
    const T* hq = h.data_ptr<T>();
    for (int64_t b = 0; b < p.batches; ++b) {
      for (int64_t j = 0; j < m; ++j)
        for (int64_t c = 0; c < p.d; ++c) p.yt[(b * p.d + c) * p.mp + j] = yp[(b * m + j) * p.d + c];
      std::copy(hq + b * m, hq + (b + 1) * m, p.hp.begin() + b * p.mp);
    }
    outs.push_back(at::empty({p.batches, p.n}, x.options()));
    p.x = x.data_ptr<T>();
    p.shift = k < int64_t(shifts.size()) && shifts[k].defined() ? shifts[k].data_ptr<T>() : nullptr;
    p.out = outs.back().data_ptr<T>();
    // about 2^18 pair evaluations per task: small enough to balance, large enough that the
    // shared counter is never contended
    p.rows_per_task = round_up(std::max<int64_t>(1, (int64_t(1) << 18) / std::max<int64_t>(p.mp, 1)), 8);
    first_task[k + 1] = first_task[k] + p.batches * ((p.n + p.rows_per_task - 1) / p.rows_per_task);
  }
  const int64_t tasks = first_task[count];
  std::atomic<int64_t> next{0};
  auto work = [&] {
    for (int64_t t = next.fetch_add(1, std::memory_order_relaxed); t < tasks;
         t = next.fetch_add(1, std::memory_order_relaxed)) {
      const int64_t k = std::upper_bound(first_task.begin(), first_task.end(), t) - first_task.begin() - 1;
      const Problem<T>& p = problems[k];
      const int64_t per_batch = (p.n + p.rows_per_task - 1) / p.rows_per_task;
      const int64_t b = (t - first_task[k]) / per_batch;
      const int64_t i = (t - first_task[k]) % per_batch * p.rows_per_task;
      const int64_t rows = std::min(p.rows_per_task, p.n - i);
      const T* yb = p.yt.data() + b * p.d * p.mp;
      const T* hb = p.hp.data() + b * p.mp;
      const T* xr = p.x + (b * p.n + i) * p.d;
      const T* sr = p.shift ? p.shift + b * p.n + i : nullptr;
      T* o = p.out + b * p.n + i;
      switch (p.d) {
        case 1:
          lse_rows<T, M, 1>(xr, yb, hb, rows, p.mp, p.d, T(scale), sr, o);
          break;
        case 2:
          lse_rows<T, M, 2>(xr, yb, hb, rows, p.mp, p.d, T(scale), sr, o);
          break;
        case 3:
          lse_rows<T, M, 3>(xr, yb, hb, rows, p.mp, p.d, T(scale), sr, o);
          break;
        default:
          lse_rows<T, M, 0>(xr, yb, hb, rows, p.mp, p.d, T(scale), sr, o);
      }
    }
  };
  const int64_t threads = std::min<int64_t>(at::get_num_threads(), tasks);
  if (threads <= 1 || at::in_parallel_region()) {
    work();
  } else {
    at::parallel_for(0, threads, 1, [&](int64_t, int64_t) { work(); });
  }
  return outs;
}

}  // namespace
}  // namespace CPU_CAPABILITY

namespace TP_ISA_NAMESPACE {
std::vector<at::Tensor> sinkhorn_lse(at::TensorList x, at::TensorList y, at::TensorList h, at::TensorList shift,
                                     double scale, bool euclidean) {
  if (x.empty()) return {};
  return AT_DISPATCH_FLOATING_TYPES(x[0].scalar_type(), "torchpair_sinkhorn_lse", [&] {
    return euclidean ? lse_impl<scalar_t, metrics::EuclideanDirect>(x, y, h, shift, scale)
                     : lse_impl<scalar_t, metrics::SqEuclideanDirect>(x, y, h, shift, scale);
  });
}
}  // namespace TP_ISA_NAMESPACE
}  // namespace tp::cpu
