#pragma once
// Numeric distances (scipy/sklearn names): kernel definitions of the elementwise and
// inner-product families. Contracts: kernel_traits.h; vocabulary: math.h. The catalog's
// prepare functions (catalog/prepare_distances.cpp) map each metric onto these kernels
// (and onto euclidean_direct / euclidean_gemm for seuclidean, mahalanobis, hellinger).
// Conventions at non-differentiable points are documented in docs/conventions.md.
#include "metrics/kernel_traits.h"
#include "metrics/math.h"

namespace tp::metrics {
#if !defined(TP_SCALAR_MATH_ONLY)
using math::operator*;  // Vectorized<T> (op) double (math_host.h)
using math::operator+;
using math::operator-;
using math::operator/;
#endif

// 1 / v where v != 0, else 0.
template <class V>
TP_HOST_DEVICE inline V inverse_or_zero(const V& v) {
  const V zero = math::full_like(v, 0.0);
  const V safe = math::select(math::is_zero(v), math::full_like(v, 1.0), v);
  return math::select(math::is_zero(v), zero, math::full_like(v, 1.0) / safe);
}

// sum_k |x_k - y_k|. Gradient sign(x_k - y_k), 0 at equal coordinates.
struct CityblockDirect {
  static constexpr int kScalars = 0, kAcc = 1, kCtx = 0;
  static constexpr bool kMax = false;
  template <class V> TP_HOST_DEVICE static void term(const V& x, const V& y, V* t, const Scalars&) { t[0] = math::abs(x - y); }
  template <class V> TP_HOST_DEVICE static V finalize(const V* acc, const Scalars&) { return acc[0]; }
  template <class V> TP_HOST_DEVICE static void grad_context(const V*, const V&, V*, const Scalars&) {}
  template <class V> TP_HOST_DEVICE static V dx(const V& x, const V& y, const V*, const Scalars&) { return math::sign(x - y); }
  template <class V> TP_HOST_DEVICE static V dy(const V& x, const V& y, const V*, const Scalars&) { return math::sign(y - x); }
};

// max_k |x_k - y_k|. Gradient sign(x_k - y_k) on the maximising features, split evenly
// among ties (the engine's tie weight); 0 at equal rows.
struct ChebyshevDirect {
  static constexpr int kScalars = 0, kAcc = 1, kCtx = 0;
  static constexpr bool kMax = true;
  template <class V> TP_HOST_DEVICE static void term(const V& x, const V& y, V* t, const Scalars&) { t[0] = math::abs(x - y); }
  template <class V> TP_HOST_DEVICE static V finalize(const V* acc, const Scalars&) { return acc[0]; }
  template <class V> TP_HOST_DEVICE static void grad_context(const V*, const V&, V*, const Scalars&) {}
  template <class V> TP_HOST_DEVICE static V dx(const V& x, const V& y, const V*, const Scalars&) { return math::sign(x - y); }
  template <class V> TP_HOST_DEVICE static V dy(const V& x, const V& y, const V*, const Scalars&) { return math::sign(y - x); }
};

// (sum_k |x_k - y_k|^p)^(1/p), 1 < p < inf; scalars: [p]. Gradient
// sign(x_k - y_k) |x_k - y_k|^(p-1) / value^(p-1), 0 at value 0.
struct MinkowskiDirect {
  static constexpr int kScalars = 1, kAcc = 1, kCtx = 1;
  static constexpr bool kMax = false;
  template <class V> TP_HOST_DEVICE static void term(const V& x, const V& y, V* t, const Scalars& s) {
    t[0] = math::pow(math::abs(x - y), s[0]);
  }
  template <class V> TP_HOST_DEVICE static V finalize(const V* acc, const Scalars& s) { return math::pow(acc[0], 1.0 / s[0]); }
  template <class V> TP_HOST_DEVICE static void grad_context(const V*, const V& value, V* ctx, const Scalars& s) {
    ctx[0] = inverse_or_zero(math::pow(value, s[0] - 1.0));
  }
  template <class V> TP_HOST_DEVICE static V dx(const V& x, const V& y, const V* ctx, const Scalars& s) {
    const V diff = x - y;
    return math::sign(diff) * math::pow(math::abs(diff), s[0] - 1.0) * ctx[0];
  }
  template <class V> TP_HOST_DEVICE static V dy(const V& x, const V& y, const V* ctx, const Scalars& s) { return dx(y, x, ctx, s); }
};

// sum_k |x_k - y_k| / (|x_k| + |y_k|), a 0/0 term counts 0 (scipy). Gradient of a term:
// sign(x - y) / den - |x - y| sign(x) / den^2 (0 where den = 0).
struct CanberraDirect {
  static constexpr int kScalars = 0, kAcc = 1, kCtx = 0;
  static constexpr bool kMax = false;
  template <class V> TP_HOST_DEVICE static void term(const V& x, const V& y, V* t, const Scalars&) {
    t[0] = math::abs(x - y) * inverse_or_zero(math::abs(x) + math::abs(y));
  }
  template <class V> TP_HOST_DEVICE static V finalize(const V* acc, const Scalars&) { return acc[0]; }
  template <class V> TP_HOST_DEVICE static void grad_context(const V*, const V&, V*, const Scalars&) {}
  template <class V> TP_HOST_DEVICE static V dx(const V& x, const V& y, const V*, const Scalars&) {
    const V inv = inverse_or_zero(math::abs(x) + math::abs(y));
    return (math::sign(x - y) - math::abs(x - y) * math::sign(x) * inv) * inv;
  }
  template <class V> TP_HOST_DEVICE static V dy(const V& x, const V& y, const V* ctx, const Scalars& s) { return dx(y, x, ctx, s); }
};

// sum_k |x_k - y_k| / sum_k |x_k + y_k|; 0/0 (both rows zero) is 0, gradient 0.
struct BrayCurtisDirect {
  static constexpr int kScalars = 0, kAcc = 2, kCtx = 2;
  static constexpr bool kMax = false;
  template <class V> TP_HOST_DEVICE static void term(const V& x, const V& y, V* t, const Scalars&) {
    t[0] = math::abs(x - y);
    t[1] = math::abs(x + y);
  }
  template <class V> TP_HOST_DEVICE static V finalize(const V* acc, const Scalars&) { return acc[0] * inverse_or_zero(acc[1]); }
  template <class V> TP_HOST_DEVICE static void grad_context(const V* acc, const V& value, V* ctx, const Scalars&) {
    ctx[0] = inverse_or_zero(acc[1]);  // d value / d acc0
    ctx[1] = value * ctx[0];           // -d value / d acc1
  }
  template <class V> TP_HOST_DEVICE static V dx(const V& x, const V& y, const V* ctx, const Scalars&) {
    return math::sign(x - y) * ctx[0] - math::sign(x + y) * ctx[1];
  }
  template <class V> TP_HOST_DEVICE static V dy(const V& x, const V& y, const V* ctx, const Scalars&) {
    return math::sign(y - x) * ctx[0] - math::sign(x + y) * ctx[1];
  }
};

// sqrt(scale * sum_k [x log(2x / (x + y)) + y log(2y / (x + y))] / 2) on rows the catalog
// normalised to sum 1 (scipy's jensenshannon; scale = 1 / log(base)); scalars: [scale].
// The catalog sets every entry of a row that had a negative entry to -1: a pair with such a
// row is +inf (scipy's cdist/pdist), gradient 0.
// A term is written m [(1 + t) log1p(t) + (1 - t) log1p(-t)] with m = (x + y) / 2,
// t = (x - y) / (x + y): accurate when x ~ y (the plain form cancels to noise there), and
// 0 log 0 = 0. Gradient of a term: log(2x / (x + y)) = log1p(t), taken as 0 where x = 0.
struct JensenShannonDirect {
  static constexpr int kScalars = 1, kAcc = 1, kCtx = 1;
  static constexpr bool kMax = false;
  // (1 + t) log1p(t), 0 at t = -1
  template <class V> TP_HOST_DEVICE static V plogp(const V& t) {
    const V one_t = math::full_like(t, 1.0) + t;
    return math::select(math::is_zero(one_t), math::full_like(t, 0.0), one_t * math::log1p(t));
  }
  template <class V> TP_HOST_DEVICE static V ratio(const V& x, const V& y) {  // t = (x - y) / (x + y), 0 for 0 / 0
    return (x - y) * inverse_or_zero(x + y);
  }
  // `value` where neither x nor y is a marked entry (<= -1), `marked` otherwise
  template <class V> TP_HOST_DEVICE static V unless_marked(const V& x, const V& y, const V& marked, const V& value) {
    const V mark = math::full_like(x, -1.0);
    return math::select(math::less_equal(x, mark), marked, math::select(math::less_equal(y, mark), marked, value));
  }
  template <class V> TP_HOST_DEVICE static void term(const V& x, const V& y, V* t, const Scalars&) {
    const V r = ratio(x, y);
    t[0] = unless_marked(x, y, math::full_like(x, math::infinity()),
                         V((x + y) * 0.5 * (plogp(r) + plogp(math::full_like(r, 0.0) - r))));
  }
  template <class V> TP_HOST_DEVICE static V finalize(const V* acc, const Scalars& s) {
    return math::sqrt(math::clamp_min(acc[0] * (0.5 * s[0]), 0.0));
  }
  template <class V> TP_HOST_DEVICE static void grad_context(const V*, const V& value, V* ctx, const Scalars& s) {
    // d value / d acc = scale / (4 value)
    ctx[0] = inverse_or_zero(value) * (0.25 * s[0]);
  }
  template <class V> TP_HOST_DEVICE static V dx(const V& x, const V& y, const V* ctx, const Scalars&) {
    const V zero = math::full_like(x, 0.0);
    return unless_marked(x, y, zero, math::select(math::is_zero(x), zero, math::log1p(ratio(x, y)) * ctx[0]));
  }
  template <class V> TP_HOST_DEVICE static V dy(const V& x, const V& y, const V* ctx, const Scalars& s) { return dx(y, x, ctx, s); }
};

// Great-circle distance 2 asin(c / 2) from the chord c = |u - v| between the unit vectors
// the catalog builds from (latitude, longitude) in radians (sklearn's haversine). Gradient
// 0 at distance 0 and at antipodes (c = 2), where the distance is extremal.
struct HaversineDirect {
  static constexpr int kScalars = 0, kAcc = 1, kCtx = 1;
  static constexpr bool kMax = false;
  template <class V> TP_HOST_DEVICE static void term(const V& x, const V& y, V* t, const Scalars&) { t[0] = math::square(x - y); }
  template <class V> TP_HOST_DEVICE static V finalize(const V* acc, const Scalars&) {
    return math::asin(math::minimum(V(math::sqrt(acc[0]) * 0.5), math::full_like(acc[0], 1.0))) * 2.0;
  }
  template <class V> TP_HOST_DEVICE static void grad_context(const V* acc, const V&, V* ctx, const Scalars&) {
    // d value / d acc = 1 / (c sqrt(1 - c^2 / 4)) / 2 ... times d acc / d x = 2 (x - y)
    const V c = math::sqrt(acc[0]);
    const V q = math::clamp_min(math::full_like(c, 1.0) - acc[0] * 0.25, 0.0);
    ctx[0] = inverse_or_zero(c * math::sqrt(q));
  }
  template <class V> TP_HOST_DEVICE static V dx(const V& x, const V& y, const V* ctx, const Scalars&) { return (x - y) * ctx[0]; }
  template <class V> TP_HOST_DEVICE static V dy(const V& x, const V& y, const V* ctx, const Scalars&) { return (y - x) * ctx[0]; }
};

// sklearn's nan_euclidean: sqrt(D / present * sum over present coordinates of (x - y)^2),
// a coordinate being present when neither x_k nor y_k is NaN; scalars: [D]. No coordinate
// present: NaN (sklearn). Gradient 0 for absent coordinates and at distance 0.
struct NanEuclideanDirect {
  static constexpr int kScalars = 1, kAcc = 2, kCtx = 1;
  static constexpr bool kMax = false;
  template <class V> TP_HOST_DEVICE static void term(const V& x, const V& y, V* t, const Scalars&) {
    const auto absent = math::is_nan(x + y);
    const V zero = math::full_like(x, 0.0);
    t[0] = math::select(absent, zero, math::square(x - y));
    t[1] = math::select(absent, zero, math::full_like(x, 1.0));
  }
  template <class V> TP_HOST_DEVICE static V finalize(const V* acc, const Scalars& s) {
    return math::sqrt(acc[0] * s[0] / acc[1]);  // 0/0 = NaN when nothing is present
  }
  template <class V> TP_HOST_DEVICE static void grad_context(const V* acc, const V& value, V* ctx, const Scalars& s) {
    // d value / d acc0 = D / (2 present value); times d acc0 / d x = 2 (x - y)
    ctx[0] = inverse_or_zero(acc[1] * value) * s[0];
    ctx[0] = math::select(math::is_nan(ctx[0]), math::full_like(value, 0.0), ctx[0]);
  }
  template <class V> TP_HOST_DEVICE static V dx(const V& x, const V& y, const V* ctx, const Scalars&) {
    return math::select(math::is_nan(x + y), math::full_like(x, 0.0), (x - y) * ctx[0]);
  }
  template <class V> TP_HOST_DEVICE static V dy(const V& x, const V& y, const V* ctx, const Scalars& s) { return dx(y, x, ctx, s); }
};

// Signal-to-noise ratio distance var(x - y) / var(x) (pytorch-metric-learning's
// SNRDistance) on rows the catalog centred: sum_k (x_k - y_k)^2 / sum_k x_k^2. A constant x
// row gives d / 0 (inf, or NaN for 0 / 0) with gradient 0.
struct SnrDirect {
  static constexpr int kScalars = 0, kAcc = 2, kCtx = 2;
  static constexpr bool kMax = false;
  template <class V> TP_HOST_DEVICE static void term(const V& x, const V& y, V* t, const Scalars&) {
    t[0] = math::square(x - y);
    t[1] = math::square(x);
  }
  template <class V> TP_HOST_DEVICE static V finalize(const V* acc, const Scalars&) { return acc[0] / acc[1]; }
  template <class V> TP_HOST_DEVICE static void grad_context(const V* acc, const V&, V* ctx, const Scalars&) {
    ctx[0] = inverse_or_zero(acc[1]) * 2.0;              // d value / d acc0 * 2
    ctx[1] = acc[0] * math::square(ctx[0]) * 0.5;        // -d value / d acc1 * 2
  }
  template <class V> TP_HOST_DEVICE static V dx(const V& x, const V& y, const V* ctx, const Scalars&) {
    return (x - y) * ctx[0] - x * ctx[1];
  }
  template <class V> TP_HOST_DEVICE static V dy(const V& x, const V& y, const V* ctx, const Scalars&) { return (y - x) * ctx[0]; }
};

// Inner-product family. cosine / correlation on the raw (correlation: centred) rows with
// side features the inverse row norms a = 1 / |x|, b = 1 / |y| (0 for a zero row, which
// the catalog computes once per row): value = 1 - g a b, clamped to [0, 2]. The
// normalisation is folded into the GEMM tile's epilogue (no normalised copy of the
// operands). A zero row has a = 0: distance 1 from everything (sklearn); exact
// self-comparisons are 0 with gradient 0.
// Cosine distance as |x - y|^2 / 2 on rows the catalog normalised to unit length (zero rows
// stay zero): compute_mode "donot_use_mm_for_euclid_dist". Exactly 0 for equal rows (two zero
// rows too); a zero row against a nonzero one is 1 (sklearn), gradient 0; clamped to [0, 2].
// acc: [|x - y|^2, |x|^2, |y|^2].
struct CosineDirect {
  static constexpr int kScalars = 0, kAcc = 3, kCtx = 1;
  static constexpr bool kMax = false;
  template <class V> TP_HOST_DEVICE static void term(const V& x, const V& y, V* t, const Scalars&) {
    t[0] = math::square(x - y);
    t[1] = x * x;
    t[2] = y * y;
  }
  // `same` where both rows are zero or neither is, `one_zero` where exactly one is
  template <class V> TP_HOST_DEVICE static V by_zero_rows(const V* acc, const V& same, const V& one_zero) {
    return math::select(math::is_zero(acc[1]), math::select(math::is_zero(acc[2]), same, one_zero),
                        math::select(math::is_zero(acc[2]), one_zero, same));
  }
  template <class V> TP_HOST_DEVICE static V finalize(const V* acc, const Scalars&) {
    const V v = math::minimum(math::clamp_min(V(acc[0] * 0.5), 0.0), math::full_like(acc[0], 2.0));
    return by_zero_rows(acc, v, math::full_like(v, 1.0));
  }
  template <class V> TP_HOST_DEVICE static void grad_context(const V* acc, const V&, V* ctx, const Scalars&) {
    ctx[0] = by_zero_rows(acc, math::full_like(acc[0], 1.0), math::full_like(acc[0], 0.0));
  }
  template <class V> TP_HOST_DEVICE static V dx(const V& x, const V& y, const V* ctx, const Scalars&) { return (x - y) * ctx[0]; }
  template <class V> TP_HOST_DEVICE static V dy(const V& x, const V& y, const V* ctx, const Scalars&) { return (y - x) * ctx[0]; }
};

struct CosineGemm {
  static constexpr int kScalars = 0;
  static constexpr bool kDistanceBased = false, kSingularAtZero = false, kExactSelf = true;
  template <class V> TP_HOST_DEVICE static V self_value(const V& like, const Scalars&) { return math::full_like(like, 0.0); }
  template <class V> TP_HOST_DEVICE static V value(const V& g, const V& a, const V& b, const Scalars&) {
    const V v = math::full_like(g, 1.0) - g * a * b;
    return math::minimum(math::clamp_min(v, 0.0), math::full_like(v, 2.0));
  }
  // The gradient of the unclamped formula (the clamp only absorbs rounding).
  template <class V>
  TP_HOST_DEVICE static void grad(const V& g, const V& a, const V& b, const V&, V& fg, V& fa, V& fb, const Scalars&) {
    fg = (a * b) * -1.0;
    fa = (g * b) * -1.0;
    fb = (g * a) * -1.0;
  }
};

}  // namespace tp::metrics
