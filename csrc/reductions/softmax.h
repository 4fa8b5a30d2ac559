#pragma once
// The softmax-weighted product out_r = sum_c softmax_c(K_rc) V_c: an online logsumexp
// (logsumexp.h) whose rescaling factor also rescales the running product, and the gradient
// tile both engines sweep with.
#include "reductions/logsumexp.h"

namespace tp::reductions {

// dL/dK_rc of the logsumexp of scale * K_rc + w_c: grad_r * scale * p_rc, with p_rc the
// softmax weight of the argument (dL/dw_c is the column sum of grad_r * p_rc).
template <class V>
TP_HOST_DEVICE inline V logsumexp_grad(const V& arg, const V& lse, const V& grad, const V& scale) {
  return grad * scale * softmax_weight(arg, lse);
}

// dL/dK_rc of the softmax product: p_rc (grad_r . V_c - delta_r) with p_rc = exp(K_rc - lse_r)
// and delta_r = grad_r . out_r (gv: the tile of grad_r . V_c).
template <class V>
TP_HOST_DEVICE inline V softmax_product_grad(const V& k, const V& lse, const V& gv, const V& delta) {
  return softmax_weight(k, lse) * (gv - delta);
}

}  // namespace tp::reductions
