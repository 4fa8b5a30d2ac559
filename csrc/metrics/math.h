#pragma once
// One vocabulary of elementwise math for the three value types a metric definition is
// evaluated on:
//   - T (float/double)                 : scalar code paths, host and device,
//   - at::vec::Vectorized<T>           : the vectorized CPU engines,
//   - at::Tensor                       : the device-generic engine (ATen ops on tiles).
// Metric definitions (csrc/metrics/*.h) are templates written against these functions
// only, so one definition serves the SIMD CPU kernels, the generic path and device code,
// forward and backward.
//
// The scalar overloads and the generic templates below are TP_HOST_DEVICE: under nvcc they
// compile for the device too. The Vectorized and Tensor overloads (math_host.h) are
// host-only and are left out of nvcc translation units (TP_SCALAR_MATH_ONLY, host_device.h).
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "metrics/host_device.h"

// Scalar math functions: std:: on the host (the overloads the CPU engines always called),
// the global overloads CUDA's math headers declare for host and device under nvcc.
#if defined(__CUDACC__)
#define TP_STD_MATH
#else
#define TP_STD_MATH std
#endif

namespace tp::math {

// ---- scalars (float/double) ------------------------------------------------------------
template <class T>
using if_floating = std::enable_if_t<std::is_floating_point_v<T>, int>;

template <class T, if_floating<T> = 0>
TP_HOST_DEVICE inline T full_like(const T&, double v) { return static_cast<T>(v); }

template <class T, if_floating<T> = 0>
TP_HOST_DEVICE inline T abs(T x) {
#if defined(__CUDACC__)
  return ::fabs(x);
#else
  return std::abs(x);
#endif
}
template <class T, if_floating<T> = 0>
TP_HOST_DEVICE inline T sqrt(T x) { return TP_STD_MATH::sqrt(x); }
template <class T, if_floating<T> = 0>
TP_HOST_DEVICE inline T exp(T x) { return TP_STD_MATH::exp(x); }
template <class T, if_floating<T> = 0>
TP_HOST_DEVICE inline T log(T x) { return TP_STD_MATH::log(x); }
template <class T, if_floating<T> = 0>
TP_HOST_DEVICE inline T log1p(T x) { return TP_STD_MATH::log1p(x); }
template <class T, if_floating<T> = 0>
TP_HOST_DEVICE inline T tanh(T x) { return TP_STD_MATH::tanh(x); }
template <class T, if_floating<T> = 0>
TP_HOST_DEVICE inline T sin(T x) { return TP_STD_MATH::sin(x); }
template <class T, if_floating<T> = 0>
TP_HOST_DEVICE inline T asin(T x) { return TP_STD_MATH::asin(x); }
template <class T, if_floating<T> = 0>
TP_HOST_DEVICE inline T pow(T x, double p) { return TP_STD_MATH::pow(x, static_cast<T>(p)); }

// NaN test (a mask, as the comparisons below). x != x under nvcc: the same answer, without
// the host's isnan.
template <class T, if_floating<T> = 0>
TP_HOST_DEVICE inline bool is_nan(T x) {
#if defined(__CUDACC__)
  return x != x;
#else
  return std::isnan(x);
#endif
}
// Integers have none: the top-k rule (reductions/topk.h) also ranks integer values, the
// sequence engine's edit distances.
template <class T, std::enable_if_t<std::is_integral_v<T>, int> = 0>
TP_HOST_DEVICE inline bool is_nan(T) {
  return false;
}

// maximum/minimum propagate NaN (IEEE 754-2019), as torch.maximum does.
template <class T, if_floating<T> = 0>
TP_HOST_DEVICE inline T maximum(T a, T b) { return (is_nan(a) || is_nan(b)) ? a + b : (a > b ? a : b); }
template <class T, if_floating<T> = 0>
TP_HOST_DEVICE inline T minimum(T a, T b) { return (is_nan(a) || is_nan(b)) ? a + b : (a < b ? a : b); }

// fused multiply-add
template <class T, if_floating<T> = 0>
TP_HOST_DEVICE inline T fmadd(T a, T b, T c) { return TP_STD_MATH::fma(a, b, c); }

// A comparison yields the type's own mask (bool, an all-ones-bits vector, a bool tensor);
// select(mask, a, b) is mask ? a : b elementwise.
template <class T, if_floating<T> = 0>
TP_HOST_DEVICE inline T select(bool m, T a, T b) { return m ? a : b; }
template <class T, if_floating<T> = 0>
TP_HOST_DEVICE inline bool is_zero(T x) { return x == T(0); }
template <class T, if_floating<T> = 0>
TP_HOST_DEVICE inline bool less_equal(T a, T b) { return a <= b; }
template <class T, if_floating<T> = 0>
TP_HOST_DEVICE inline bool equal(T a, T b) { return a == b; }

// sign(x) with sign(0) = 0 (and NaN -> NaN).
template <class T, if_floating<T> = 0>
TP_HOST_DEVICE inline T sign(T x) { return x > T(0) ? T(1) : (x < T(0) ? T(-1) : x); }

// A value autograd must treat as a constant (a tensor is detached; other types are values
// already): e.g. logsumexp's shift, which keeps exp in range but does not change the result.
template <class T, if_floating<T> = 0>
TP_HOST_DEVICE inline T constant(T x) { return x; }

// +inf as a double, in host and device code (std::numeric_limits is host-only under nvcc
// without --expt-relaxed-constexpr).
TP_HOST_DEVICE constexpr double infinity() { return __builtin_huge_val(); }

}  // namespace tp::math

#if !defined(TP_SCALAR_MATH_ONLY)
#include "metrics/math_host.h"
#endif

namespace tp::math {

template <class V>
TP_HOST_DEVICE inline V square(const V& x) { return x * x; }

template <class V>
TP_HOST_DEVICE inline V clamp_min(const V& x, double lo) { return tp::math::maximum(x, tp::math::full_like(x, lo)); }

// ---- generic: every value type ------------------------------------------------------------
// Whether an exponent is an integer in [0, 1024] (computed by repeated squaring).
TP_HOST_DEVICE inline bool is_small_integer(double p) { return p >= 0.0 && p <= 1024.0 && TP_STD_MATH::floor(p) == p; }

// x^n for an integer n >= 0 by repeated squaring (x^0 = 1, also for x = 0): exact signs for
// negative x, and a handful of multiplications instead of a pow.
template <class V>
TP_HOST_DEVICE inline V powi(const V& x, int64_t n) {
  V result = tp::math::full_like(x, 1.0);
  V base = x;
  bool first = true;
  while (n > 0) {
    if (n & 1) {
      result = first ? base : result * base;
      first = false;
    }
    n >>= 1;
    if (n > 0) base = base * base;
  }
  return result;
}

// ---- exact self-comparisons of inner-product kernels -----------------------------------------
// Whether kernel M fixes its exact self-comparisons (value self_value, gradient 0): every
// distance-based kernel (h(0)) and the value kernels declaring kExactSelf (kernel_traits.h).
template <class M, class = void>
struct declares_exact_self : std::false_type {};
template <class M>
struct declares_exact_self<M, std::void_t<decltype(M::kExactSelf)>> : std::bool_constant<M::kExactSelf> {};
template <class M>
TP_HOST_DEVICE constexpr bool fixes_self() {
  return M::kDistanceBased || declares_exact_self<M>::value;
}
// Whether kernel M's value is the GEMM product itself (kPlainProduct, kernel_traits.h).
template <class M, class = void>
struct declares_plain_product : std::false_type {};
template <class M>
struct declares_plain_product<M, std::void_t<decltype(M::kPlainProduct)>> : std::bool_constant<M::kPlainProduct> {};
template <class M>
TP_HOST_DEVICE constexpr bool plain_product() {
  return declares_plain_product<M>::value;
}
// Whether distance-based kernel M's value never falls as d2 grows (kRisesWithD2,
// kernel_traits.h): the smallest values are then those of the smallest d2.
template <class M, class = void>
struct declares_rises_with_d2 : std::false_type {};
template <class M>
struct declares_rises_with_d2<M, std::void_t<decltype(M::kRisesWithD2)>> : std::bool_constant<M::kRisesWithD2> {};
template <class M>
TP_HOST_DEVICE constexpr bool rises_with_d2() {
  if constexpr (M::kDistanceBased)
    return declares_rises_with_d2<M>::value;
  else
    return false;
}
template <class M, class V, class S>
TP_HOST_DEVICE inline V self_value(const V& like, const S& s) {
  if constexpr (M::kDistanceBased)
    return M::h(tp::math::full_like(like, 0.0), s);
  else
    return M::self_value(like, s);
}

}  // namespace tp::math
