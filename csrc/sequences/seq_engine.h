#pragma once
// The CPU engines over pairs of token sequences (csrc/cpu/sequences_cpu.cpp, compiled once
// per CPU capability; csrc/ops/sequences.cpp picks one). Operands are validated by the
// operators: x [B, N, Lx], y [B, M, Ly] int64 contiguous, lengths [B, N] / [B, M] int64
// contiguous with 0 <= length <= L.
//   dense:  [B, N, M] d(x_i, y_j); int64 or float64 (Params::floating())
//   pdist:  [B, N (N - 1) / 2] d(x_i, x_j) for i < j in scipy's order
//   topk:   the k smallest (largest=false) or largest values of every row of the [B, N, M]
//           matrix, sorted, ties to the lower column; one bounded heap per row.
#include <ATen/ATen.h>

#include <tuple>

#include "sequences/seq_params.h"

namespace tp::seq {

#define TP_DECLARE_SEQ_ENGINES(ns)                                                                          \
  namespace ns {                                                                                            \
  at::Tensor dense_cpu(const at::Tensor& x, const at::Tensor& xlen, const at::Tensor& y, const at::Tensor& ylen, \
                       const Params& p);                                                                    \
  at::Tensor pdist_cpu(const at::Tensor& x, const at::Tensor& xlen, const Params& p);                       \
  std::tuple<at::Tensor, at::Tensor> topk_cpu(const at::Tensor& x, const at::Tensor& xlen, const at::Tensor& y, \
                                              const at::Tensor& ylen, const Params& p, int64_t k, bool largest); \
  }
TP_DECLARE_SEQ_ENGINES(isa_DEFAULT)
TP_DECLARE_SEQ_ENGINES(isa_AVX2)
TP_DECLARE_SEQ_ENGINES(isa_AVX512)

}  // namespace tp::seq
