#pragma once
// The Sinkhorn soft-min's CPU kernel (csrc/cpu/sinkhorn_cpu.cpp, compiled once per CPU
// capability; csrc/ops/sinkhorn.cpp picks one): for the squared euclidean and euclidean costs
//   lse[b, i] = log sum_j exp(h[b, j] + scale * cost(x[b, i], y[b, j]))
// in one streamed pass per row that computes the cost in registers, scales, shifts,
// exponentiates and sums (the lazy engine's logsumexp writes the tile, then rereads it for
// the argument, the maximum and the exponentials). `shift` [B, N] (or undefined) is a guess
// of each row's result: the pass sums exp(t - shift) directly, and a row whose sum leaves the
// range where that is exact (overflow, or so small that terms near the row's maximum could
// have underflowed) is redone with its exact maximum as the shift.
// x [B, N, D], y [B, M, D], h [B, M], shift [B, N]: contiguous, one floating dtype (float
// or double), N, M >= 1. Forward only (no autograd).
#include <ATen/ATen.h>

namespace tp::cpu {

#define TP_DECLARE_SINKHORN(ns)                                                                           \
  namespace ns {                                                                                          \
  at::Tensor sinkhorn_lse(const at::Tensor& x, const at::Tensor& y, const at::Tensor& h, double scale,    \
                          bool euclidean, const at::Tensor& shift);                                       \
  }
TP_DECLARE_SINKHORN(isa_DEFAULT)
TP_DECLARE_SINKHORN(isa_AVX2)
TP_DECLARE_SINKHORN(isa_AVX512)
#undef TP_DECLARE_SINKHORN

}  // namespace tp::cpu
