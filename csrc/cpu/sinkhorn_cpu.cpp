// The Sinkhorn soft-min's fused CPU kernel (cpu/sinkhorn.h), compiled per CPU capability.
#include "cpu/sources.h"
// sources.h must come first: it opens the inline capability namespace.
#include "cpu/consumers.h"
#include "cpu/sinkhorn.h"

#include <algorithm>
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
template <typename T, int DD>
void lse_rows(const T* x, const T* yt, const T* h, int64_t n, int64_t mp, int64_t d_rt, T scale, bool euclidean,
              const T* shift, T* out) {
  using V = Vec<T>;
  constexpr int64_t L = V::size();
  const int64_t d = DD > 0 ? DD : d_rt;
  const V vscale(scale);
  // the argument h_j + scale cost(x_i, y_j) of columns [j, j + L)
  auto argument = [&](const T* xi, int64_t j) {
    V acc(T(0));
    for (int64_t k = 0; k < d; ++k) {
      const V diff = V::loadu(yt + k * mp + j) - V(xi[k]);
      acc = at::vec::fmadd(diff, diff, acc);
    }
    if (euclidean) acc = acc.sqrt();
    return at::vec::fmadd(vscale, acc, V::loadu(h + j));
  };
  auto shifted_sum = [&](const T* xi, T s) {
    const V vs(s);
    V sum0(T(0)), sum1(T(0));
    int64_t j = 0;
    for (; j + 2 * L <= mp; j += 2 * L) {
      sum0 = sum0 + math::exp(argument(xi, j) - vs);
      sum1 = sum1 + math::exp(argument(xi, j + L) - vs);
    }
    for (; j < mp; j += L) sum0 = sum0 + math::exp(argument(xi, j) - vs);
    return hsum(sum0 + sum1);
  };
  for (int64_t i = 0; i < n; ++i) {
    const T* xi = x + i * d;
    if (shift && std::isfinite(shift[i])) {
      const T s = shifted_sum(xi, shift[i]);
      if (std::isfinite(s) && s >= low_sum<T>()) {
        out[i] = std::log(s) + shift[i];
        continue;
      }
    }
    // the row's exact maximum (NaN-propagating), then the sum shifted by it
    V vmax(-std::numeric_limits<T>::infinity());
    for (int64_t j = 0; j < mp; j += L) vmax = at::vec::maximum(vmax, argument(xi, j));
    alignas(64) T lanes[L];
    vmax.store(lanes);
    T m = -std::numeric_limits<T>::infinity();
    for (int64_t l = 0; l < L; ++l) m = std::isnan(m) || std::isnan(lanes[l]) ? std::numeric_limits<T>::quiet_NaN()
                                                                              : std::max(m, lanes[l]);
    // torch.logsumexp: every term -inf gives -inf, a +inf term gives +inf, NaN stays NaN
    out[i] = std::isfinite(m) ? std::log(shifted_sum(xi, m)) + m : m;
  }
}

template <typename T>
at::Tensor lse_impl(const at::Tensor& x, const at::Tensor& y, const at::Tensor& h, double scale, bool euclidean,
                    const at::Tensor& shift) {
  using V = Vec<T>;
  constexpr int64_t L = V::size();
  const int64_t B = x.size(0), n = x.size(1), m = y.size(1), d = x.size(2);
  const int64_t mp = round_up(m, L);
  // y transposed to [B][D][Mp] and h padded to [B][Mp]: O(B M D), once per call
  std::vector<T> yt(size_t(B * d * mp), T(0));
  std::vector<T> hp(size_t(B * mp), -std::numeric_limits<T>::infinity());
  const T* yp = y.data_ptr<T>();
  const T* hs = h.data_ptr<T>();
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t j = 0; j < m; ++j)
      for (int64_t k = 0; k < d; ++k) yt[(b * d + k) * mp + j] = yp[(b * m + j) * d + k];
    std::copy(hs + b * m, hs + (b + 1) * m, hp.begin() + b * mp);
  }
  at::Tensor out = at::empty({B, n}, x.options());
  const T* xp = x.data_ptr<T>();
  const T* sp = shift.defined() ? shift.data_ptr<T>() : nullptr;
  T* op = out.data_ptr<T>();
  // about 64k pair evaluations per task, so small problems stay on one thread
  const int64_t grain = std::max<int64_t>(1, (int64_t(1) << 16) / std::max<int64_t>(mp, 1));
  at::parallel_for(0, B * n, grain, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end;) {
      const int64_t b = r / n, i = r % n;
      const int64_t count = std::min(end - r, n - i);  // rows of this batch in the range
      const T* yb = yt.data() + b * d * mp;
      const T* hb = hp.data() + b * mp;
      const T* xr = xp + (b * n + i) * d;
      const T* sr = sp ? sp + b * n + i : nullptr;
      T* o = op + b * n + i;
      switch (d) {
        case 1:
          lse_rows<T, 1>(xr, yb, hb, count, mp, d, T(scale), euclidean, sr, o);
          break;
        case 2:
          lse_rows<T, 2>(xr, yb, hb, count, mp, d, T(scale), euclidean, sr, o);
          break;
        case 3:
          lse_rows<T, 3>(xr, yb, hb, count, mp, d, T(scale), euclidean, sr, o);
          break;
        default:
          lse_rows<T, 0>(xr, yb, hb, count, mp, d, T(scale), euclidean, sr, o);
      }
      r += count;
    }
  });
  return out;
}

}  // namespace
}  // namespace CPU_CAPABILITY

namespace TP_ISA_NAMESPACE {
at::Tensor sinkhorn_lse(const at::Tensor& x, const at::Tensor& y, const at::Tensor& h, double scale, bool euclidean,
                        const at::Tensor& shift) {
  return AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "torchpair_sinkhorn_lse",
                                    [&] { return lse_impl<scalar_t>(x, y, h, scale, euclidean, shift); });
}
}  // namespace TP_ISA_NAMESPACE
}  // namespace tp::cpu
