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
// Several independent problems (the soft-mins of one Sinkhorn iteration) run in one
// parallel region whose threads take blocks of rows from a shared counter, so a thread that
// is descheduled or slower delays nobody. Each row is summed by one thread in a fixed order:
// the results do not depend on the schedule.
// Problem k: x[k] [B, N, D], y[k] [B, M, D], h[k] [B, M], shift[k] [B, N] or undefined;
// contiguous, one floating dtype (float or double), N, M >= 1. Forward only (no autograd).
#include <ATen/ATen.h>

#include <vector>

namespace tp::cpu {

#define TP_DECLARE_SINKHORN(ns)                                                                           \
  namespace ns {                                                                                          \
  std::vector<at::Tensor> sinkhorn_lse(at::TensorList x, at::TensorList y, at::TensorList h,              \
                                       at::TensorList shift, double scale, bool euclidean);               \
  }
TP_DECLARE_SINKHORN(isa_DEFAULT)
TP_DECLARE_SINKHORN(isa_AVX2)
TP_DECLARE_SINKHORN(isa_AVX512)
#undef TP_DECLARE_SINKHORN

}  // namespace tp::cpu
