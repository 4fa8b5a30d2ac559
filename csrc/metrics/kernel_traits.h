#pragma once
// What an engine kernel definition looks like. Every metric in the catalog is computed by
// one kernel of one of these families (a metric may have two kernels — e.g. euclidean has a
// direct one for small D and a GEMM one for large D — chosen by csrc/catalog/prepare.cpp).
//
// Elementwise family: value = finalize(acc), acc_t = SUM_k term_t(x_k, y_k) (or MAX_k when
// kMax). A definition provides
//     static constexpr int  kScalars;    // number of resolved scalar parameters
//     static constexpr int  kAcc;        // number of accumulators (1..3)
//     static constexpr bool kMax;        // reduce by max over features instead of sum
//     static constexpr int  kCtx;        // per-pair gradient context values
//     template <class V> static void term(const V& x, const V& y, V* t, const Scalars&);
//     template <class V> static V    finalize(const V* acc, const Scalars&);
//     template <class V> static void grad_context(const V* acc, const V& value, V* ctx, const Scalars&);
//     template <class V> static V    dx(const V& x, const V& y, const V* ctx, const Scalars&);
//     template <class V> static V    dy(const V& x, const V& y, const V* ctx, const Scalars&);
// where dx/dy are d value / d x_k and d value / d y_k. For kMax kernels the engine
// multiplies dx/dy by the tie weight [term_k == max] / #ties (an even split among ties,
// as torch.amax does), so dx/dy are the derivative of the maximised term.
//
// Inner-product family: value = f(g, a, b) with g = x'_i . y'_j computed by GEMM and a, b
// per-row side features prepared by the catalog (e.g. squared norms). A definition provides
//     static constexpr int  kScalars;
//     static constexpr bool kDistanceBased;   // f = h(d2), d2 = max(a + b - 2g, 0)
//     static constexpr bool kSingularAtZero;  // dh/dd2 unbounded at d2 = 0 (sqrt-like)
// and, for distance-based kernels,
//     template <class V> static V h(const V& d2, const Scalars&);
//     template <class V> static V dh(const V& d2, const V& value, const Scalars&);   // dh/dd2
// or, for the others,
//     template <class V> static V value(const V& g, const V& a, const V& b, const Scalars&);
//     template <class V> static void grad(const V& g, const V& a, const V& b, const V& value,
//                                         V& fg, V& fa, V& fb, const Scalars&);
// A distance-based kernel whose h never falls as d2 grows (h(p) <= h(q) for p <= q) says so
//     static constexpr bool kRisesWithD2 = true;
// so a selection of its smallest values can skip a tile by comparing d2 alone, before h
// (rises_with_d2 in metrics/math.h; InnerProductSource::select).
// Exact self-comparisons (the diagonal of a symmetric call, the paired rows marked self)
// take a fixed value with gradient 0: h(0) for distance-based kernels; a value kernel opts in
// with (see fixes_self / self_value in metrics/math.h)
//     static constexpr bool kExactSelf = true;
//     template <class V> static V self_value(const V& like, const Scalars&);
// A kernel whose value is g itself (linear) declares kPlainProduct = true: the GEMM is the
// result, with no epilogue, and a dense result is one GEMM (plain_product in math.h).
//
// Boolean family (metrics/boolean.h; not differentiable): value = f(TT, TF, FT, FF), the
// counts of (x_k, y_k) = (T, T), (T, F), (F, T), (F, F) (nonzero = True), produced by the
// bit-packed popcount engine or the equality engine. A definition provides
//     template <class V> static V value(const V& tt, const V& tf, const V& ft, const V& ff);
//
// V is a scalar, an at::vec::Vectorized<T> or an at::Tensor (csrc/metrics/math.h). Every
// function of a definition is TP_HOST_DEVICE (metrics/host_device.h): with V a scalar it is
// device code under nvcc, so it calls only the math vocabulary (no std:: math, no ATen).
#include <cstdint>

#include "metrics/host_device.h"

namespace tp::metrics {

// The resolved scalar parameters of a kernel, in the order its catalog row declares. Held by
// value: an engine copies them into a local before a tile loop, and a local whose address
// never escapes is the only place the compiler may keep a parameter in a register across
// Vectorized stores (those may alias any reachable memory).
struct Scalars {
  // Every kernel declares at most 3 (kScalars); the ops check the count before any engine runs.
  static constexpr int64_t kMax = 8;
  double values[kMax] = {};
  int64_t size = 0;
  Scalars() = default;
  TP_HOST_DEVICE Scalars(const double* from, int64_t n) : size(n < kMax ? n : kMax) {
    for (int64_t i = 0; i < size; ++i) values[i] = from[i];
  }
  TP_HOST_DEVICE double operator[](int64_t i) const { return values[i]; }
};

enum class Family : int {
  Elementwise = 0,
  InnerProduct = 1,
  Packed = 2,    // Boolean family on bit-packed int64 words (popcount)
  Equality = 3,  // Boolean family (hamming, equal) on float64 values compared for equality
};

}  // namespace tp::metrics
