#pragma once
// The host-only half of the math vocabulary (csrc/metrics/math.h): the overloads for
//   - at::vec::Vectorized<T>  : the vectorized CPU engines,
//   - at::Tensor              : the device-generic engine (ATen ops on tiles).
// math.h includes it on the host; device code (nvcc) sees the scalar overloads only.
#include <ATen/ATen.h>
#include <ATen/cpu/vec/vec.h>

#include <cmath>
#include <limits>
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
template <class T>
inline Vec<T> full_like(const Vec<T>&, double v) { return Vec<T>(static_cast<T>(v)); }
inline at::Tensor full_like(const at::Tensor& like, double v) { return at::full_like(like, v); }

// ---- unary ------------------------------------------------------------------------
template <class T>
inline Vec<T> abs(const Vec<T>& x) { return x.abs(); }
inline at::Tensor abs(const at::Tensor& x) { return x.abs(); }

// Float vector sqrt for AVX-512 and AVX2: vsqrtps has a reciprocal throughput of ~12 cycles
// per 16 lanes here, most of euclidean's epilogue (as much as half its D = 32 GEMM). Instead
// s = x rsqrt(x) from the hardware estimate (AVX-512: 14 bits; AVX2: 12 bits), one coupled
// Newton step on s and h = 1/(2s) (error quadratic in the estimate's: ~23 bits), then the
// residual x - s^2, exact by FMA, corrects s once more (Markstein): correctly rounded but
// for rare last-bit ties, perfect squares exact (tests/test_vector_math.py). About a third of
// vsqrtps' cost. Where that form is not the root (0, subnormal or negative arguments, inf)
// the whole vector takes vsqrtps instead: exact at the points the conventions fix
// (sqrt(0) = 0) and rare elsewhere. NaN passes through both.
#if defined(CPU_CAPABILITY_AVX512) || defined(CPU_CAPABILITY_AVX2)
// sqrt(x) from an estimate y of 1/sqrt(x), for x normal and finite.
inline Vec<float> sqrt_from_rsqrt_estimate(const Vec<float>& x, const Vec<float>& y) {
  const Vec<float> half(0.5f);
  const Vec<float> s0 = x * y, h0 = y * half;
  const Vec<float> r = at::vec::fnmadd(s0, h0, half);
  const Vec<float> s1 = at::vec::fmadd(s0, r, s0), h1 = at::vec::fmadd(h0, r, h0);
  return at::vec::fmadd(at::vec::fnmadd(s1, s1, x), h1, s1);
}
#endif
#if defined(CPU_CAPABILITY_AVX512)
inline Vec<float> sqrt_float(const Vec<float>& v) {
  const __m512 x = v;
  const __mmask16 special = _mm512_cmp_ps_mask(x, _mm512_set1_ps(std::numeric_limits<float>::min()), _CMP_LT_OQ) |
                            _mm512_cmp_ps_mask(x, _mm512_set1_ps(std::numeric_limits<float>::infinity()), _CMP_EQ_OQ);
  if (special) return _mm512_sqrt_ps(x);
  return sqrt_from_rsqrt_estimate(v, Vec<float>(_mm512_rsqrt14_ps(x)));
}
#elif defined(CPU_CAPABILITY_AVX2)
inline Vec<float> sqrt_float(const Vec<float>& v) {
  const __m256 x = v;
  const __m256 special = _mm256_or_ps(_mm256_cmp_ps(x, _mm256_set1_ps(std::numeric_limits<float>::min()), _CMP_LT_OQ),
                                      _mm256_cmp_ps(x, _mm256_set1_ps(std::numeric_limits<float>::infinity()), _CMP_EQ_OQ));
  if (_mm256_movemask_ps(special)) return _mm256_sqrt_ps(x);
  return sqrt_from_rsqrt_estimate(v, Vec<float>(_mm256_rsqrt_ps(x)));
}
#endif
template <class T>
inline Vec<T> sqrt(const Vec<T>& x) {
#if defined(CPU_CAPABILITY_AVX512) || defined(CPU_CAPABILITY_AVX2)
  if constexpr (std::is_same_v<T, float>) return sqrt_float(x);
#endif
  return x.sqrt();
}
inline at::Tensor sqrt(const at::Tensor& x) { return x.sqrt(); }

// Float vector exp for AVX-512 and AVX2: exp is the whole epilogue cost of rbf, laplacian,
// matern, chi2 and the logsumexp/softmax folds, and ATen's exp_u20 (plus the blend it needs
// to pass NaN on) took ~28 instructions per 16 lanes; its AVX2 copy also flushes results
// below FLT_MIN to 0. This one is ~1 float32 eps over the whole range, subnormal results
// included (tests/test_vector_math.py):
//   x clamped to [-104, 89] (beyond, the float result is 0 or inf); n = round(x log2 e);
//   r = x - n ln2 with ln2 split in two (the high part has 9 significant bits, so n ln2_hi is
//   exact and the first subtraction too); exp(r), |r| <= ln2/2, by a degree-6 polynomial
//   fitted to the relative error (iterated weighted least squares, 2e-9); times 2^n, rounded
//   once (AVX-512: vscalefps; AVX2: two normal powers of two, the first product exact).
// vmaxps/vminps return their second operand when one is NaN, so the clamp passes NaN on and
// the polynomial keeps it.
#if defined(CPU_CAPABILITY_AVX512) || defined(CPU_CAPABILITY_AVX2)
template <class R, class Set, class Fma>
inline R exp_reduced_polynomial(const R& r, Set set1, Fma fma) {
  R p = set1(0.0013836845755577087f);
  p = fma(p, r, set1(0.008374815806746483f));
  p = fma(p, r, set1(0.04166822507977486f));
  p = fma(p, r, set1(0.16666419804096222f));
  p = fma(p, r, set1(0.49999991059303284f));
  p = fma(p, r, set1(1.0f));
  return fma(p, r, set1(1.0f));
}
constexpr float kExpLo = -104.0f, kExpHi = 89.0f, kLog2e = 1.44269504088896341f;
constexpr float kLn2Hi = 0.693359375f, kLn2Lo = -0.00021219444170128554f;
#endif
#if defined(CPU_CAPABILITY_AVX512)
inline Vec<float> exp_float(const Vec<float>& v) {
  const __m512 x = _mm512_min_ps(_mm512_set1_ps(kExpHi), _mm512_max_ps(_mm512_set1_ps(kExpLo), __m512(v)));
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(kLog2e)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(kLn2Hi), x);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(kLn2Lo), r);
  const __m512 p = exp_reduced_polynomial(r, [](float c) { return _mm512_set1_ps(c); },
                                          [](__m512 a, __m512 b, __m512 c) { return _mm512_fmadd_ps(a, b, c); });
  return _mm512_scalef_ps(p, n);
}
#elif defined(CPU_CAPABILITY_AVX2)
inline Vec<float> exp_float(const Vec<float>& v) {
  const __m256 x = _mm256_min_ps(_mm256_set1_ps(kExpHi), _mm256_max_ps(_mm256_set1_ps(kExpLo), __m256(v)));
  const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(kLog2e)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(kLn2Hi), x);
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(kLn2Lo), r);
  const __m256 p = exp_reduced_polynomial(r, [](float c) { return _mm256_set1_ps(c); },
                                          [](__m256 a, __m256 b, __m256 c) { return _mm256_fmadd_ps(a, b, c); });
  // 2^n, n in [-151, 129], as 2^(n >> 1) 2^(n - (n >> 1)): both factors are normal floats
  const __m256i ni = _mm256_cvtps_epi32(n);
  const __m256i n1 = _mm256_srai_epi32(ni, 1);
  const __m256i n2 = _mm256_sub_epi32(ni, n1);
  const __m256i bias = _mm256_set1_epi32(127);
  const __m256 s1 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n1, bias), 23));
  const __m256 s2 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n2, bias), 23));
  return _mm256_mul_ps(_mm256_mul_ps(p, s1), s2);
}
#endif
// The DEFAULT build's float vectors use ATen's exp_u20 (std::exp per lane there), blended to
// pass NaN on. double keeps the 1-ulp Sleef exp.
template <class T>
inline Vec<T> exp(const Vec<T>& x) {
  if constexpr (std::is_same_v<T, float>) {
#if defined(CPU_CAPABILITY_AVX512) || defined(CPU_CAPABILITY_AVX2)
    return exp_float(x);
#else
    return Vec<T>::blendv(x.exp_u20(), x, x.isnan());  // exp_u20 does not propagate NaN
#endif
  } else {
    return x.exp();
  }
}
inline at::Tensor exp(const at::Tensor& x) { return x.exp(); }

template <class T>
inline Vec<T> log(const Vec<T>& x) { return x.log(); }
inline at::Tensor log(const at::Tensor& x) { return x.log(); }

template <class T>
inline Vec<T> log1p(const Vec<T>& x) { return x.log1p(); }
inline at::Tensor log1p(const at::Tensor& x) { return x.log1p(); }

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

template <class T>
inline Vec<T> sin(const Vec<T>& x) { return x.sin(); }
inline at::Tensor sin(const at::Tensor& x) { return x.sin(); }

template <class T>
inline Vec<T> asin(const Vec<T>& x) { return x.asin(); }
inline at::Tensor asin(const at::Tensor& x) { return x.asin(); }

template <class T>
inline Vec<T> pow(const Vec<T>& x, double p) { return x.pow(Vec<T>(static_cast<T>(p))); }
inline at::Tensor pow(const at::Tensor& x, double p) { return x.pow(p); }

// ---- binary -----------------------------------------------------------------------
// maximum/minimum propagate NaN (IEEE 754-2019), as torch.maximum does.
template <class T>
inline Vec<T> maximum(const Vec<T>& a, const Vec<T>& b) { return at::vec::maximum(a, b); }
inline at::Tensor maximum(const at::Tensor& a, const at::Tensor& b) { return at::maximum(a, b); }

template <class T>
inline Vec<T> minimum(const Vec<T>& a, const Vec<T>& b) { return at::vec::minimum(a, b); }
inline at::Tensor minimum(const at::Tensor& a, const at::Tensor& b) { return at::minimum(a, b); }

// fused multiply-add where the type has one
template <class T>
inline Vec<T> fmadd(const Vec<T>& a, const Vec<T>& b, const Vec<T>& c) { return at::vec::fmadd(a, b, c); }
inline at::Tensor fmadd(const at::Tensor& a, const at::Tensor& b, const at::Tensor& c) { return at::addcmul(c, a, b); }

// ---- comparisons and selection --------------------------------------------------------
// A comparison yields the type's own mask (bool, an all-ones-bits vector, a bool tensor);
// select(mask, a, b) is mask ? a : b elementwise.
template <class T>
inline Vec<T> select(const Vec<T>& m, const Vec<T>& a, const Vec<T>& b) { return Vec<T>::blendv(b, a, m); }
inline at::Tensor select(const at::Tensor& m, const at::Tensor& a, const at::Tensor& b) { return at::where(m, a, b); }

template <class T>
inline Vec<T> is_zero(const Vec<T>& x) { return x == Vec<T>(T(0)); }
inline at::Tensor is_zero(const at::Tensor& x) { return x == 0; }

template <class T>
inline Vec<T> less_equal(const Vec<T>& a, const Vec<T>& b) { return a <= b; }
inline at::Tensor less_equal(const at::Tensor& a, const at::Tensor& b) { return a <= b; }

template <class T>
inline Vec<T> equal(const Vec<T>& a, const Vec<T>& b) { return a == b; }
inline at::Tensor equal(const at::Tensor& a, const at::Tensor& b) { return a == b; }

// NaN test (a mask, as the comparisons above).
template <class T>
inline Vec<T> is_nan(const Vec<T>& x) { return x.isnan(); }
inline at::Tensor is_nan(const at::Tensor& x) { return x.isnan(); }

// sign(x) with sign(0) = 0 (and NaN -> NaN for the vector and tensor forms).
template <class T>
inline Vec<T> sign(const Vec<T>& x) {
  const Vec<T> zero(T(0)), one(T(1));
  return Vec<T>::blendv(Vec<T>::blendv(x, Vec<T>(T(-1)), x < zero), one, x > zero);
}
inline at::Tensor sign(const at::Tensor& x) { return x.sign(); }

template <class T>
inline Vec<T> constant(const Vec<T>& x) { return x; }
inline at::Tensor constant(const at::Tensor& x) { return x.detach(); }

// x^n for an integer n >= 0 (the generic powi is below, in math.h)
inline at::Tensor powi(const at::Tensor& x, int64_t n) { return x.pow(static_cast<double>(n)); }

}  // namespace tp::math
