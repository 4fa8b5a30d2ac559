#pragma once
// Elementwise-family kernel definitions: value = finalize(SUM_k term(x_k, y_k)).
// See kernel_traits.h for the contract; math.h for the vocabulary.
#include "metrics/kernel_traits.h"
#include "metrics/math.h"

namespace tp::metrics {
#if !defined(TP_SCALAR_MATH_ONLY)
using math::operator*;  // Vectorized<T> (op) double (math_host.h)
using math::operator+;
using math::operator-;
using math::operator/;
#endif

// sum_k (x_k - y_k)^2 computed from differences: exact for equal rows, the choice for
// small D where it is as fast as the GEMM form.
struct SqEuclideanDirect {
  static constexpr int kScalars = 0, kAcc = 1, kCtx = 0;
  static constexpr bool kMax = false;
  template <class V> TP_HOST_DEVICE static void term(const V& x, const V& y, V* t, const Scalars&) { t[0] = math::square(x - y); }
  template <class V> TP_HOST_DEVICE static V finalize(const V* acc, const Scalars&) { return acc[0]; }
  template <class V> TP_HOST_DEVICE static void grad_context(const V*, const V&, V*, const Scalars&) {}
  template <class V> TP_HOST_DEVICE static V dx(const V& x, const V& y, const V*, const Scalars&) { return (x - y) * 2.0; }
  template <class V> TP_HOST_DEVICE static V dy(const V& x, const V& y, const V*, const Scalars&) { return (y - x) * 2.0; }
};

// sqrt(sum_k (x_k - y_k)^2). Gradient (x - y) / d, and 0 at d = 0 (convention).
struct EuclideanDirect {
  static constexpr int kScalars = 0, kAcc = 1, kCtx = 1;
  static constexpr bool kMax = false;
  template <class V> TP_HOST_DEVICE static void term(const V& x, const V& y, V* t, const Scalars&) { t[0] = math::square(x - y); }
  template <class V> TP_HOST_DEVICE static V finalize(const V* acc, const Scalars&) { return math::sqrt(acc[0]); }
  template <class V> TP_HOST_DEVICE static void grad_context(const V*, const V& value, V* ctx, const Scalars&) {
    const V zero = math::full_like(value, 0.0);
    ctx[0] = math::select(math::is_zero(value), zero, math::full_like(value, 1.0) / value);
  }
  template <class V> TP_HOST_DEVICE static V dx(const V& x, const V& y, const V* ctx, const Scalars&) { return (x - y) * ctx[0]; }
  template <class V> TP_HOST_DEVICE static V dy(const V& x, const V& y, const V* ctx, const Scalars&) { return (y - x) * ctx[0]; }
};

// math::exp(-gamma * sum_k (x_k - y_k)^2); scalars: [gamma].
struct RbfDirect {
  static constexpr int kScalars = 1, kAcc = 1, kCtx = 1;
  static constexpr bool kMax = false;
  template <class V> TP_HOST_DEVICE static void term(const V& x, const V& y, V* t, const Scalars&) { t[0] = math::square(x - y); }
  template <class V> TP_HOST_DEVICE static V finalize(const V* acc, const Scalars& s) { return math::exp(acc[0] * (-s[0])); }
  template <class V> TP_HOST_DEVICE static void grad_context(const V*, const V& value, V* ctx, const Scalars& s) {
    ctx[0] = value * (-2.0 * s[0]);
  }
  template <class V> TP_HOST_DEVICE static V dx(const V& x, const V& y, const V* ctx, const Scalars&) { return (x - y) * ctx[0]; }
  template <class V> TP_HOST_DEVICE static V dy(const V& x, const V& y, const V* ctx, const Scalars&) { return (y - x) * ctx[0]; }
};

}  // namespace tp::metrics
