#pragma once
// Inner-product-family kernel definitions: value = f(g, a, b), g = x'.y' by GEMM.
// Distance-based kernels are h(d2) with d2 = max(a + b - 2g, 0), a = |x'|^2, b = |y'|^2
// (after the catalog has centred and scaled the operands). See kernel_traits.h.
#include "metrics/kernel_traits.h"
#include "metrics/math.h"

namespace tp::metrics {
#if !defined(TP_SCALAR_MATH_ONLY)
using math::operator*;  // Vectorized<T> (op) double (math_host.h)
using math::operator+;
using math::operator-;
using math::operator/;
#endif

struct SqEuclideanGemm {
  static constexpr int kScalars = 0;
  static constexpr bool kDistanceBased = true, kSingularAtZero = false, kRisesWithD2 = true;
  template <class V> TP_HOST_DEVICE static V h(const V& d2, const Scalars&) { return d2; }
  template <class V> TP_HOST_DEVICE static V dh(const V& d2, const V&, const Scalars&) { return math::full_like(d2, 1.0); }
};

// Gradient 0 at d = 0 (convention); the engine also zeroes it below the GEMM rounding
// floor (kSingularAtZero), where the computed d2 is noise.
struct EuclideanGemm {
  static constexpr int kScalars = 0;
  static constexpr bool kDistanceBased = true, kSingularAtZero = true, kRisesWithD2 = true;
  template <class V> TP_HOST_DEVICE static V h(const V& d2, const Scalars&) { return math::sqrt(d2); }
  template <class V> TP_HOST_DEVICE static V dh(const V& d2, const V& value, const Scalars&) {
    return math::select(math::is_zero(value), math::full_like(d2, 0.0), math::full_like(d2, 0.5) / value);
  }
};

// math::exp(-gamma d2); scalars: [gamma].
struct RbfGemm {
  static constexpr int kScalars = 1;
  static constexpr bool kDistanceBased = true, kSingularAtZero = false;
  template <class V> TP_HOST_DEVICE static V h(const V& d2, const Scalars& s) { return math::exp(d2 * (-s[0])); }
  template <class V> TP_HOST_DEVICE static V dh(const V&, const V& value, const Scalars& s) { return value * (-s[0]); }
};

}  // namespace tp::metrics
