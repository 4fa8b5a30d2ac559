#pragma once
// One vocabulary of elementwise math for the three value types a metric definition is
// evaluated on:
//   - T (float/double)                 : scalar code paths,
//   - at::vec::Vectorized<T>           : the vectorized CPU engines,
//   - at::Tensor                       : the device-generic engine (ATen ops on tiles).
// Metric definitions (csrc/metrics/*.h) are templates written against these functions
// only, so one definition serves the SIMD CPU kernels and the generic path, forward and
// backward.
#include <ATen/ATen.h>
#include <ATen/cpu/vec/vec.h>

#include <cmath>
#include <type_traits>

namespace tp::math {

template <class T>
using Vec = at::vec::Vectorized<T>;

template <class V>
struct is_vec : std::false_type {};
template <class T>
struct is_vec<Vec<T>> : std::true_type {};

// ---- Vectorized<T> (op) double --------------------------------------------------
// ATen already provides Vectorized<T> (op) T; these add the float-vector (op) double forms
// so a definition can write `v * 2.0` for every T.
#define TP_VEC_SCALAR_OP(op)                                                                    \
  template <class T, std::enable_if_t<!std::is_same_v<T, double>, int> = 0>                   \
  inline Vec<T> operator op(const Vec<T>& a, double s) { return a op Vec<T>(static_cast<T>(s)); } \
  template <class T, std::enable_if_t<!std::is_same_v<T, double>, int> = 0>                   \
  inline Vec<T> operator op(double s, const Vec<T>& a) { return Vec<T>(static_cast<T>(s)) op a; }
TP_VEC_SCALAR_OP(*)
TP_VEC_SCALAR_OP(+)
TP_VEC_SCALAR_OP(-)
TP_VEC_SCALAR_OP(/)
#undef TP_VEC_SCALAR_OP

// ---- constants shaped like a value ---------------------------------------------------
template <class T, std::enable_if_t<std::is_floating_point_v<T>, int> = 0>
inline T full_like(const T&, double v) { return static_cast<T>(v); }
template <class T>
inline Vec<T> full_like(const Vec<T>&, double v) { return Vec<T>(static_cast<T>(v)); }
inline at::Tensor full_like(const at::Tensor& like, double v) { return at::full_like(like, v); }

// ---- unary ------------------------------------------------------------------------
template <class T, std::enable_if_t<std::is_floating_point_v<T>, int> = 0>
inline T abs(T x) { return std::abs(x); }
template <class T>
inline Vec<T> abs(const Vec<T>& x) { return x.abs(); }
inline at::Tensor abs(const at::Tensor& x) { return x.abs(); }

template <class T, std::enable_if_t<std::is_floating_point_v<T>, int> = 0>
inline T sqrt(T x) { return std::sqrt(x); }
template <class T>
inline Vec<T> sqrt(const Vec<T>& x) { return x.sqrt(); }
inline at::Tensor sqrt(const at::Tensor& x) { return x.sqrt(); }

template <class T, std::enable_if_t<std::is_floating_point_v<T>, int> = 0>
inline T exp(T x) { return std::exp(x); }
// float vectors use ATen's 20-ulp exp (what its softmax uses; ~2e-6 relative): exp is as
// expensive as a 64-feature GEMM row otherwise. double keeps the 1-ulp Sleef exp.
template <class T>
inline Vec<T> exp(const Vec<T>& x) {
  if constexpr (std::is_same_v<T, float>)
    return Vec<T>::blendv(x.exp_u20(), x, x.isnan());  // exp_u20 does not propagate NaN
  else
    return x.exp();
}
inline at::Tensor exp(const at::Tensor& x) { return x.exp(); }

template <class T, std::enable_if_t<std::is_floating_point_v<T>, int> = 0>
inline T log(T x) { return std::log(x); }
template <class T>
inline Vec<T> log(const Vec<T>& x) { return x.log(); }
inline at::Tensor log(const at::Tensor& x) { return x.log(); }

template <class T, std::enable_if_t<std::is_floating_point_v<T>, int> = 0>
inline T log1p(T x) { return std::log1p(x); }
template <class T>
inline Vec<T> log1p(const Vec<T>& x) { return x.log1p(); }
inline at::Tensor log1p(const at::Tensor& x) { return x.log1p(); }

template <class T, std::enable_if_t<std::is_floating_point_v<T>, int> = 0>
inline T tanh(T x) { return std::tanh(x); }
// float vectors: Sleef's 1-ulp tanhf works in double-float arithmetic and cost the sigmoid
// kernel four times its GEMM. Instead tanh(x) = x P(x^2) / Q(x^2) on x clamped to [-10, 10]
// (beyond, tanh is 1 in float), P of degree 6 and Q of degree 3 fitted to the relative error
// on [0, 10] (iterated weighted least squares): relative error < 3 float32 eps on the whole
// float range (tests/test_vector_math.py, against numpy's double tanh, every ISA). The result
// is clamped to [-1, 1] (the fit overshoots 1 by an ulp near the end). Odd, so -0 stays -0;
// ATen's clamp passes NaN on. ~5x the speed of Sleef's tanhf (AVX-512 here: ~11 ns against
// ~50 ns per 16 lanes). double keeps Sleef's tanh (its callers want ~1e-16).
template <class T>
inline Vec<T> tanh(const Vec<T>& x) {
  if constexpr (std::is_same_v<T, float>) {
    using V = Vec<float>;
    const V one(1.0f);
    const V xc = at::vec::clamp(x, V(-10.0f), V(10.0f));
    const V t = xc * xc;
    V p(-6.211992075378022e-14f);
    p = at::vec::fmadd(p, t, V(4.344687095596419e-11f));
    p = at::vec::fmadd(p, t, V(-1.8204179487794217e-08f));
    p = at::vec::fmadd(p, t, V(1.0641406030053906e-05f));
    p = at::vec::fmadd(p, t, V(0.0030541691489088646f));
    p = at::vec::fmadd(p, t, V(0.13039239395345567f));
    p = at::vec::fmadd(p, t, V(0.9999999804131563f));
    V q(0.0002474073943192065f);
    q = at::vec::fmadd(q, t, V(0.02429627403175079f));
    q = at::vec::fmadd(q, t, V(0.4637255552014207f));
    q = at::vec::fmadd(q, t, one);
    return at::vec::clamp(xc * p / q, V(-1.0f), one);
  } else {
    return x.tanh();
  }
}
inline at::Tensor tanh(const at::Tensor& x) { return x.tanh(); }

template <class T, std::enable_if_t<std::is_floating_point_v<T>, int> = 0>
inline T asin(T x) { return std::asin(x); }
template <class T>
inline Vec<T> asin(const Vec<T>& x) { return x.asin(); }
inline at::Tensor asin(const at::Tensor& x) { return x.asin(); }

template <class T, std::enable_if_t<std::is_floating_point_v<T>, int> = 0>
inline T pow(T x, double p) { return std::pow(x, static_cast<T>(p)); }
template <class T>
inline Vec<T> pow(const Vec<T>& x, double p) { return x.pow(Vec<T>(static_cast<T>(p))); }
inline at::Tensor pow(const at::Tensor& x, double p) { return x.pow(p); }

template <class V>
inline V square(const V& x) { return x * x; }

// ---- binary -----------------------------------------------------------------------
// maximum/minimum propagate NaN (IEEE 754-2019), as torch.maximum does.
template <class T, std::enable_if_t<std::is_floating_point_v<T>, int> = 0>
inline T maximum(T a, T b) { return (std::isnan(a) || std::isnan(b)) ? a + b : (a > b ? a : b); }
template <class T>
inline Vec<T> maximum(const Vec<T>& a, const Vec<T>& b) { return at::vec::maximum(a, b); }
inline at::Tensor maximum(const at::Tensor& a, const at::Tensor& b) { return at::maximum(a, b); }

template <class T, std::enable_if_t<std::is_floating_point_v<T>, int> = 0>
inline T minimum(T a, T b) { return (std::isnan(a) || std::isnan(b)) ? a + b : (a < b ? a : b); }
template <class T>
inline Vec<T> minimum(const Vec<T>& a, const Vec<T>& b) { return at::vec::minimum(a, b); }
inline at::Tensor minimum(const at::Tensor& a, const at::Tensor& b) { return at::minimum(a, b); }

template <class V>
inline V clamp_min(const V& x, double lo) { return tp::math::maximum(x, tp::math::full_like(x, lo)); }

// fused multiply-add where the type has one
template <class T, std::enable_if_t<std::is_floating_point_v<T>, int> = 0>
inline T fmadd(T a, T b, T c) { return std::fma(a, b, c); }
template <class T>
inline Vec<T> fmadd(const Vec<T>& a, const Vec<T>& b, const Vec<T>& c) { return at::vec::fmadd(a, b, c); }
inline at::Tensor fmadd(const at::Tensor& a, const at::Tensor& b, const at::Tensor& c) { return at::addcmul(c, a, b); }

// ---- comparisons and selection --------------------------------------------------------
// A comparison yields the type's own mask (bool, an all-ones-bits vector, a bool tensor);
// select(mask, a, b) is mask ? a : b elementwise.
template <class T, std::enable_if_t<std::is_floating_point_v<T>, int> = 0>
inline T select(bool m, T a, T b) { return m ? a : b; }
template <class T>
inline Vec<T> select(const Vec<T>& m, const Vec<T>& a, const Vec<T>& b) { return Vec<T>::blendv(b, a, m); }
inline at::Tensor select(const at::Tensor& m, const at::Tensor& a, const at::Tensor& b) { return at::where(m, a, b); }

template <class T, std::enable_if_t<std::is_floating_point_v<T>, int> = 0>
inline bool is_zero(T x) { return x == T(0); }
template <class T>
inline Vec<T> is_zero(const Vec<T>& x) { return x == Vec<T>(T(0)); }
inline at::Tensor is_zero(const at::Tensor& x) { return x == 0; }

template <class T, std::enable_if_t<std::is_floating_point_v<T>, int> = 0>
inline bool less_equal(T a, T b) { return a <= b; }
template <class T>
inline Vec<T> less_equal(const Vec<T>& a, const Vec<T>& b) { return a <= b; }
inline at::Tensor less_equal(const at::Tensor& a, const at::Tensor& b) { return a <= b; }

template <class T, std::enable_if_t<std::is_floating_point_v<T>, int> = 0>
inline bool equal(T a, T b) { return a == b; }
template <class T>
inline Vec<T> equal(const Vec<T>& a, const Vec<T>& b) { return a == b; }
inline at::Tensor equal(const at::Tensor& a, const at::Tensor& b) { return a == b; }

// NaN test (a mask, as the comparisons above).
template <class T, std::enable_if_t<std::is_floating_point_v<T>, int> = 0>
inline bool is_nan(T x) { return std::isnan(x); }
template <class T>
inline Vec<T> is_nan(const Vec<T>& x) { return x.isnan(); }
inline at::Tensor is_nan(const at::Tensor& x) { return x.isnan(); }

// sign(x) with sign(0) = 0 (and NaN -> NaN for the vector and tensor forms).
template <class T, std::enable_if_t<std::is_floating_point_v<T>, int> = 0>
inline T sign(T x) { return x > T(0) ? T(1) : (x < T(0) ? T(-1) : x); }
template <class T>
inline Vec<T> sign(const Vec<T>& x) {
  const Vec<T> zero(T(0)), one(T(1));
  return Vec<T>::blendv(Vec<T>::blendv(x, Vec<T>(T(-1)), x < zero), one, x > zero);
}
inline at::Tensor sign(const at::Tensor& x) { return x.sign(); }

// ---- issue 3b: kernels (csrc/metrics/kernels.h) ----------------------------------------
// Whether an exponent is an integer in [0, 1024] (computed by repeated squaring).
inline bool is_small_integer(double p) { return p >= 0.0 && p <= 1024.0 && std::floor(p) == p; }

// x^n for an integer n >= 0 by repeated squaring (x^0 = 1, also for x = 0): exact signs for
// negative x, and a handful of multiplications instead of a pow.
template <class V>
inline V powi(const V& x, int64_t n) {
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
inline at::Tensor powi(const at::Tensor& x, int64_t n) { return x.pow(static_cast<double>(n)); }

// ---- issue 3 performance: exact self-comparisons of inner-product kernels -------------------
// Whether kernel M fixes its exact self-comparisons (value self_value, gradient 0): every
// distance-based kernel (h(0)) and the value kernels declaring kExactSelf (kernel_traits.h).
template <class M, class = void>
struct declares_exact_self : std::false_type {};
template <class M>
struct declares_exact_self<M, std::void_t<decltype(M::kExactSelf)>> : std::bool_constant<M::kExactSelf> {};
template <class M>
constexpr bool fixes_self() {
  return M::kDistanceBased || declares_exact_self<M>::value;
}
// Whether kernel M's value is the GEMM product itself (kPlainProduct, kernel_traits.h).
template <class M, class = void>
struct declares_plain_product : std::false_type {};
template <class M>
struct declares_plain_product<M, std::void_t<decltype(M::kPlainProduct)>> : std::bool_constant<M::kPlainProduct> {};
template <class M>
constexpr bool plain_product() {
  return declares_plain_product<M>::value;
}
template <class M, class V, class S>
inline V self_value(const V& like, const S& s) {
  if constexpr (M::kDistanceBased)
    return M::h(tp::math::full_like(like, 0.0), s);
  else
    return M::self_value(like, s);
}

}  // namespace tp::math
