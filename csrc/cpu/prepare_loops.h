#pragma once
// The native preparation passes of the GEMM-family metrics (csrc/cpu/prepare_cpu.cpp,
// compiled once per CPU capability; catalog/prepare.cpp picks one with TP_CPU_STUB): row
// means, centring, norms and row dot products over contiguous [B, n, d] float or double
// tensors, split across threads above a grain. Every sum is taken in double.
#include <ATen/ATen.h>

#include "cpu/capability.h"

namespace tp::cpu {

#define TP_DECLARE_PREPARE_LOOPS(ns)                                                                    \
  namespace ns {                                                                                        \
  /* ctr [B, d] = mean over n of ref [B, n, d]; a non-finite mean is 0 (nan_to_num) */                 \
  void row_means(const at::Tensor& ref, const at::Tensor& ctr);                                         \
  /* xc = x - ctr[b] per batch element; sq [B, n] = |xc row|^2 unless sq is undefined */               \
  void centre(const at::Tensor& x, const at::Tensor& ctr, const at::Tensor& xc, const at::Tensor& sq);  \
  /* out [B, n] = 1 / |x row| (0 for a zero, NaN or infinite norm) */                                   \
  void inverse_norms(const at::Tensor& x, const at::Tensor& out);                                       \
  /* out [B, n] = a row . b row */                                                                      \
  void row_dots(const at::Tensor& a, const at::Tensor& b, const at::Tensor& out);                       \
  /* out = x - (mean of each row's d features) */                                                       \
  void subtract_feature_means(const at::Tensor& x, const at::Tensor& out);                              \
  }
TP_DECLARE_PREPARE_LOOPS(isa_DEFAULT)
TP_DECLARE_PREPARE_LOOPS(isa_AVX2)
TP_DECLARE_PREPARE_LOOPS(isa_AVX512)
#undef TP_DECLARE_PREPARE_LOOPS

}  // namespace tp::cpu
