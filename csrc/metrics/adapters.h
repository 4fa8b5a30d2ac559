#pragma once
// The family rules every engine applies around a metric definition, written once over the
// value type V (T, Vectorized<T>, at::Tensor: see math.h) so the CPU engine, the
// device-generic engine and device code share them:
//   - the GEMM form's rounding floor (inner-product family): value and derivatives of a
//     distance-based kernel from g = x'.y' and the side features, with the derivative zero
//     where a + b - 2g is below rounding;
//   - exact self-comparisons (the diagonal of K(X, X)): the kernel's self value, derivative 0;
//   - ties of a max-reduced metric (chebyshev): the derivative split equally among the
//     features that reach the maximum.
#include "metrics/math.h"

namespace tp::metrics {

// Value and derivatives d/dg, d/da, d/db of inner-product kernel M at g with side features
// a (of the kernel's x) and b (of its y). eps: the machine epsilon of the value dtype.
// Distance-based kernels: d2 = max(a + b - 2g, 0); below the rounding floor 16 eps (a + b)
// of that form, d2 is noise that a sqrt-like h would turn into an arbitrary large
// gradient, so the derivative is 0 there (kSingularAtZero).
template <class M, class V, class S>
TP_HOST_DEVICE inline void inner_product_derivatives(const V& g, const V& a, const V& b, double eps, V& val, V& fg,
                                                     V& fa, V& fb, const S& s) {
  if constexpr (M::kDistanceBased) {
    const V zero = math::full_like(g, 0.0);
    const V raw = a + b - (g + g);
    const V d2 = math::clamp_min(raw, 0.0);
    val = M::h(d2, s);
    V dh = M::dh(d2, val, s);
    const V floor = M::kSingularAtZero ? (a + b) * math::full_like(a, 16.0 * eps) : zero;
    dh = math::select(math::less_equal(raw, floor), zero, dh);
    fg = zero - (dh + dh);
    fa = dh;
    fb = dh;
  } else {
    val = M::value(g, a, b, s);
    M::grad(g, a, b, val, fg, fa, fb, s);
  }
}

// An exact self-comparison (mask: the diagonal entries): the kernel's self value, and no
// derivative.
template <class M, class Mask, class V, class S>
TP_HOST_DEVICE inline void exact_self(const Mask& on_diagonal, V& val, V& fg, V& fa, V& fb, const S& s) {
  const V zero = math::full_like(val, 0.0);
  val = math::select(on_diagonal, math::self_value<M>(zero, s), val);
  fg = math::select(on_diagonal, zero, fg);
  fa = math::select(on_diagonal, zero, fa);
  fb = math::select(on_diagonal, zero, fb);
}

// The share of a max-reduced metric's derivative that goes to a feature whose term is
// `term`, where `maximum` is the reduced value and 1 / inv_ties features reach it.
template <class V>
TP_HOST_DEVICE inline V tie_share(const V& term, const V& maximum, const V& inv_ties) {
  return math::select(math::equal(term, maximum), inv_ties, math::full_like(term, 0.0));
}

}  // namespace tp::metrics
