#pragma once
// Kernel (similarity) definitions with sklearn's names, defaults and numbers:
//   inner-product family : linear (also cosine_similarity on normalised operands),
//                          polynomial, sigmoid; matern, rational_quadratic and
//                          exp_sine_squared as functions of d2 on (length-scaled) operands;
//   elementwise family   : laplacian, chi2, additive_chi2; the difference-based twins of the
//                          d2-kernels for small D (DistanceDirect).
// See kernel_traits.h for the contracts and docs/conventions.md for the values and gradients
// at the non-differentiable points, which are chosen here.
#include "metrics/kernel_traits.h"
#include "metrics/math.h"

namespace tp::metrics {
#if !defined(TP_SCALAR_MATH_ONLY)
using math::operator*;  // Vectorized<T> (op) double (math_host.h)
using math::operator+;
using math::operator-;
using math::operator/;
#endif

// ---- inner-product family: value(g, a, b), g = x'.y' -----------------------------------

// x . y (cosine_similarity: the same on operands normalised by the catalog).
struct LinearGemm {
  static constexpr int kScalars = 0;
  static constexpr bool kDistanceBased = false, kSingularAtZero = false;
  static constexpr bool kPlainProduct = true;  // value = g: the GEMM is the result
  template <class V> TP_HOST_DEVICE static V value(const V& g, const V&, const V&, const Scalars&) { return g; }
  template <class V>
  TP_HOST_DEVICE static void grad(const V& g, const V&, const V&, const V&, V& fg, V& fa, V& fb, const Scalars&) {
    fg = math::full_like(g, 1.0);
    fa = math::full_like(g, 0.0);
    fb = fa;
  }
};

// (gamma x.y + coef0)^degree; scalars: [gamma, coef0, degree]. Integer degrees (sklearn's
// default 3) are computed by repeated squaring: exact for negative bases and much cheaper
// than pow; other degrees by pow (NaN for a negative base, as numpy's float power).
struct PolynomialGemm {
  static constexpr int kScalars = 3;
  static constexpr bool kDistanceBased = false, kSingularAtZero = false;
  template <class V> TP_HOST_DEVICE static V power(const V& base, double degree) {
    if (math::is_small_integer(degree)) return math::powi(base, static_cast<int64_t>(degree));
    return math::pow(base, degree);
  }
  template <class V> TP_HOST_DEVICE static V value(const V& g, const V&, const V&, const Scalars& s) {
    const V base = g * s[0] + s[1];
    return power(base, s[2]);
  }
  template <class V>
  TP_HOST_DEVICE static void grad(const V& g, const V&, const V&, const V&, V& fg, V& fa, V& fb, const Scalars& s) {
    const V base = g * s[0] + s[1];
    fg = power(base, s[2] - 1.0) * (s[2] * s[0]);  // base^0 = 1, also at base = 0
    fa = math::full_like(g, 0.0);
    fb = fa;
  }
};

// tanh(gamma x.y + coef0); scalars: [gamma, coef0].
struct SigmoidGemm {
  static constexpr int kScalars = 2;
  static constexpr bool kDistanceBased = false, kSingularAtZero = false;
  template <class V> TP_HOST_DEVICE static V value(const V& g, const V&, const V&, const Scalars& s) {
    const V arg = g * s[0] + s[1];
    return math::tanh(arg);
  }
  template <class V>
  TP_HOST_DEVICE static void grad(const V& g, const V&, const V&, const V& value, V& fg, V& fa, V& fb, const Scalars& s) {
    fg = (math::full_like(g, 1.0) - value * value) * s[0];
    fa = math::full_like(g, 0.0);
    fb = fa;
  }
};

// sklearn.gaussian_process.kernels.Matern as h(d2); scalars: [nu, 1 / length_scale^2]
// (the second is 1 when the catalog has scaled the operands by one length scale per
// feature). r = sqrt(d2) / length_scale;
//   nu = 0.5: exp(-r)      nu = 1.5: (1 + t) exp(-t), t = sqrt(3) r
//   nu = 2.5: (1 + t + t^2 / 3) exp(-t), t = sqrt(5) r      nu = inf: exp(-r^2 / 2).
// nu = 0.5 is not differentiable at r = 0: its gradient there is 0 (convention).
struct MaternGemm {
  static constexpr int kScalars = 2;
  // nu = 0.5 is sqrt-like at 0; for the smooth nu the engine's rounding floor only zeroes a
  // gradient that is itself below rounding (it is proportional to x - y).
  static constexpr bool kDistanceBased = true, kSingularAtZero = true;
  template <class V> TP_HOST_DEVICE static V h(const V& d2, const Scalars& s) {
    const V r2 = d2 * s[1];
    const double nu = s[0];
    if (nu == 0.5) return math::exp(math::sqrt(r2) * -1.0);
    if (nu == 1.5) {
      const V t = math::sqrt(r2 * 3.0);
      return (t + 1.0) * math::exp(t * -1.0);
    }
    if (nu == 2.5) {
      const V t = math::sqrt(r2 * 5.0);
      return (t + 1.0 + r2 * (5.0 / 3.0)) * math::exp(t * -1.0);
    }
    return math::exp(r2 * -0.5);  // nu = inf: the squared exponential
  }
  template <class V> TP_HOST_DEVICE static V dh(const V& d2, const V& value, const Scalars& s) {
    const V r2 = d2 * s[1];
    const double nu = s[0], k = s[1];
    if (nu == 0.5) {
      const V r = math::sqrt(r2);
      return math::select(math::is_zero(r), math::full_like(r, 0.0), V(value / r * (-0.5 * k)));
    }
    if (nu == 1.5) return math::exp(math::sqrt(r2 * 3.0) * -1.0) * (-1.5 * k);
    if (nu == 2.5) {
      const V t = math::sqrt(r2 * 5.0);
      return (t + 1.0) * math::exp(t * -1.0) * (-5.0 / 6.0 * k);
    }
    return value * (-0.5 * k);
  }
};

// sklearn.gaussian_process.kernels.RationalQuadratic as h(d2):
// (1 + d2 / (2 alpha length_scale^2))^(-alpha); scalars: [alpha, 1 / length_scale^2].
struct RationalQuadraticGemm {
  static constexpr int kScalars = 2;
  static constexpr bool kDistanceBased = true, kSingularAtZero = false;
  template <class V> TP_HOST_DEVICE static V base(const V& d2, const Scalars& s) { return d2 * (s[1] / (2.0 * s[0])) + 1.0; }
  // An integer alpha (sklearn's default 1) is 1 / base^alpha by repeated squaring: one
  // division instead of a pow (base >= 1, so no overflow below alpha ~ 88 / log(base)).
  template <class V> TP_HOST_DEVICE static V h(const V& d2, const Scalars& s) {
    if (s[0] <= 64.0 && math::is_small_integer(s[0]))
      return math::full_like(d2, 1.0) / math::powi(base(d2, s), static_cast<int64_t>(s[0]));
    return math::pow(base(d2, s), -s[0]);
  }
  template <class V> TP_HOST_DEVICE static V dh(const V& d2, const V& value, const Scalars& s) {
    return value / base(d2, s) * (-0.5 * s[1]);
  }
};

// sklearn.gaussian_process.kernels.ExpSineSquared: exp(-2 sin^2(pi d / periodicity) /
// length_scale^2), d the euclidean distance; written in d2, gamma = 2 / length_scale^2 and
// omega = pi / periodicity. The one formula of three engine kernels: the d2-kernel
// ExpSineSquaredGemm (scalars [gamma, omega]) and its DistanceDirect twin serve scalar
// parameters; ExpSineSquaredParamGemm serves tensor parameters (differentiable).
// h is smooth in d2 at 0 (sin^2(omega sqrt(d2)) = omega^2 d2 + O(d2^2)), so its gradient is
// bounded; at d = 0 it is 0 w.r.t. x and y (the factor x - y) and the length scale (sin 0 = 0).
struct ExpSineSquared {
  // G is double (a kernel scalar) or V (a side feature).
  template <class V, class G> TP_HOST_DEVICE static V value(const V& d2, const G& gamma, double omega) {
    const V s = math::sin(math::sqrt(d2) * omega);
    return math::exp(s * s * gamma * -1.0);
  }
  // d value / d d2 = -gamma omega^2 value sin(2 t) / (2 t), t = omega sqrt(d2) (the ratio is 1 at t = 0)
  template <class V, class G> TP_HOST_DEVICE static V d_d2(const V& d2, const V& value, const G& gamma, double omega) {
    const V z = math::sqrt(d2) * (2.0 * omega);
    const V sinc = math::select(math::is_zero(z), math::full_like(z, 1.0), V(math::sin(z) / z));
    return value * sinc * gamma * (-omega * omega);
  }
};

// exp_sine_squared as h(d2); scalars: [gamma, omega].
struct ExpSineSquaredGemm {
  static constexpr int kScalars = 2;
  static constexpr bool kDistanceBased = true, kSingularAtZero = false;
  template <class V> TP_HOST_DEVICE static V h(const V& d2, const Scalars& s) { return ExpSineSquared::value(d2, s[0], s[1]); }
  template <class V> TP_HOST_DEVICE static V dh(const V& d2, const V& value, const Scalars& s) {
    return ExpSineSquared::d_d2(d2, value, s[0], s[1]);
  }
};

// exp_sine_squared with its parameters as inputs: g = x'.y' with x' = [u, |u|^2] and
// y' = [-2 v, 1] (u, v the centred operands times pi / periodicity), side features
// a = gamma (per row of x) and b = |v|^2, so d2 = g + b (times omega^2) and the gradients
// w.r.t. gamma (fa) and the operands flow back through the catalog's preparation. Exact
// self-comparisons are 1 with gradient 0.
struct ExpSineSquaredParamGemm {
  static constexpr int kScalars = 0;
  static constexpr bool kDistanceBased = false, kSingularAtZero = false, kExactSelf = true;
  template <class V> TP_HOST_DEVICE static V self_value(const V& like, const Scalars&) { return math::full_like(like, 1.0); }
  template <class V> TP_HOST_DEVICE static V value(const V& g, const V& a, const V& b, const Scalars&) {
    return ExpSineSquared::value(math::clamp_min(g + b, 0.0), a, 1.0);
  }
  template <class V>
  TP_HOST_DEVICE static void grad(const V& g, const V& a, const V& b, const V& value, V& fg, V& fa, V& fb, const Scalars&) {
    const V d2 = math::clamp_min(g + b, 0.0);
    const V s = math::sin(math::sqrt(d2));
    fa = s * s * value * -1.0;
    fg = ExpSineSquared::d_d2(d2, value, a, 1.0);
    fb = fg;
  }
};

// ---- elementwise family -----------------------------------------------------------------

// A distance-based kernel h(d2) evaluated on differences (exact for equal rows): the
// small-D twin of an inner-product definition H.
template <class H>
struct DistanceDirect {
  static constexpr int kScalars = H::kScalars, kAcc = 1, kCtx = 1;
  static constexpr bool kMax = false;
  template <class V> TP_HOST_DEVICE static void term(const V& x, const V& y, V* t, const Scalars&) { t[0] = math::square(x - y); }
  template <class V> TP_HOST_DEVICE static V finalize(const V* acc, const Scalars& s) { return H::h(acc[0], s); }
  template <class V> TP_HOST_DEVICE static void grad_context(const V* acc, const V& value, V* ctx, const Scalars& s) {
    ctx[0] = H::dh(acc[0], value, s) * 2.0;
  }
  template <class V> TP_HOST_DEVICE static V dx(const V& x, const V& y, const V* ctx, const Scalars&) { return (x - y) * ctx[0]; }
  template <class V> TP_HOST_DEVICE static V dy(const V& x, const V& y, const V* ctx, const Scalars&) { return (y - x) * ctx[0]; }
};
using MaternDirect = DistanceDirect<MaternGemm>;
using RationalQuadraticDirect = DistanceDirect<RationalQuadraticGemm>;
using ExpSineSquaredDirect = DistanceDirect<ExpSineSquaredGemm>;

// exp(-gamma sum_k |x_k - y_k|); scalars: [gamma]. At x_k = y_k the k-th derivative is 0
// (sign(0) = 0, the subgradient torch.abs uses).
struct LaplacianDirect {
  static constexpr int kScalars = 1, kAcc = 1, kCtx = 1;
  static constexpr bool kMax = false;
  template <class V> TP_HOST_DEVICE static void term(const V& x, const V& y, V* t, const Scalars&) { t[0] = math::abs(x - y); }
  template <class V> TP_HOST_DEVICE static V finalize(const V* acc, const Scalars& s) { return math::exp(acc[0] * (-s[0])); }
  template <class V> TP_HOST_DEVICE static void grad_context(const V*, const V& value, V* ctx, const Scalars& s) {
    ctx[0] = value * (-s[0]);
  }
  template <class V> TP_HOST_DEVICE static V dx(const V& x, const V& y, const V* ctx, const Scalars&) {
    return math::sign(x - y) * ctx[0];
  }
  template <class V> TP_HOST_DEVICE static V dy(const V& x, const V& y, const V* ctx, const Scalars&) {
    return math::sign(y - x) * ctx[0];
  }
};

// The chi-squared term (x - y)^2 / (x + y) and its partial derivatives. sklearn skips a
// feature whose x + y is 0 (term 0); its derivatives are 0 there too (convention).
struct ChiSquaredTerm {
  template <class V> TP_HOST_DEVICE static V term(const V& x, const V& y) {
    const V den = x + y;
    const V num = x - y;
    return math::select(math::is_zero(den), math::full_like(den, 0.0), V(num * num / den));
  }
  // d term / d x = (x - y)(x + 3y) / (x + y)^2
  template <class V> TP_HOST_DEVICE static V dx(const V& x, const V& y) {
    const V den = x + y;
    const V q = (x - y) / den;
    return math::select(math::is_zero(den), math::full_like(den, 0.0), V(q * (den + y + y) / den));
  }
};

// exp(-gamma sum_k (x_k - y_k)^2 / (x_k + y_k)); scalars: [gamma].
struct Chi2Direct {
  static constexpr int kScalars = 1, kAcc = 1, kCtx = 1;
  static constexpr bool kMax = false;
  template <class V> TP_HOST_DEVICE static void term(const V& x, const V& y, V* t, const Scalars&) { t[0] = ChiSquaredTerm::term(x, y); }
  template <class V> TP_HOST_DEVICE static V finalize(const V* acc, const Scalars& s) { return math::exp(acc[0] * (-s[0])); }
  template <class V> TP_HOST_DEVICE static void grad_context(const V*, const V& value, V* ctx, const Scalars& s) {
    ctx[0] = value * (-s[0]);
  }
  template <class V> TP_HOST_DEVICE static V dx(const V& x, const V& y, const V* ctx, const Scalars&) {
    return ChiSquaredTerm::dx(x, y) * ctx[0];
  }
  template <class V> TP_HOST_DEVICE static V dy(const V& x, const V& y, const V* ctx, const Scalars&) {
    return ChiSquaredTerm::dx(y, x) * ctx[0];  // the term is symmetric in (x, y)
  }
};

// -sum_k (x_k - y_k)^2 / (x_k + y_k); no scalars.
struct AdditiveChi2Direct {
  static constexpr int kScalars = 0, kAcc = 1, kCtx = 0;
  static constexpr bool kMax = false;
  template <class V> TP_HOST_DEVICE static void term(const V& x, const V& y, V* t, const Scalars&) { t[0] = ChiSquaredTerm::term(x, y); }
  template <class V> TP_HOST_DEVICE static V finalize(const V* acc, const Scalars&) { return acc[0] * -1.0; }
  template <class V> TP_HOST_DEVICE static void grad_context(const V*, const V&, V*, const Scalars&) {}
  template <class V> TP_HOST_DEVICE static V dx(const V& x, const V& y, const V*, const Scalars&) {
    return ChiSquaredTerm::dx(x, y) * -1.0;
  }
  template <class V> TP_HOST_DEVICE static V dy(const V& x, const V& y, const V*, const Scalars&) {
    return ChiSquaredTerm::dx(y, x) * -1.0;
  }
};

}  // namespace tp::metrics
