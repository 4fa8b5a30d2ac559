#pragma once
// CPU consumers: each is "tile producer + fold" over row blocks in parallel, with O(tile)
// scratch per thread. Compiled once per CPU capability; cpu/dispatch.cpp picks one.
// Tensors are validated and laid out by ops/impls.cpp: x [B,n,d], y [B,m,d], a [B,n],
// b [B,m] (or undefined), contiguous, same floating dtype.
#include <ATen/ATen.h>

#include <array>

#include "cpu/capability.h"
#include "engines/request.h"

namespace tp::cpu {

using engine::Grads4;
using engine::Grads5;
using engine::Request;
using engine::RowReduce;
using engine::RowReduction;

#define TP_DECLARE_CPU_CONSUMERS(ns)                                                                 \
  namespace ns {                                                                                     \
  at::Tensor dense(const Request& req);                                                              \
  Grads4 dense_backward(const at::Tensor& grad, const Request& req, std::array<bool, 4> mask);       \
  at::Tensor matmul(const Request& req, const at::Tensor& v);                                        \
  Grads5 matmul_backward(const at::Tensor& grad, const Request& req, const at::Tensor& v,            \
                         std::array<bool, 5> mask);                                                  \
  at::Tensor row_reduce(const Request& req, const RowReduce& reduction);                                 \
  Grads5 row_reduce_backward(const at::Tensor& grad, const Request& req, const RowReduce& reduction,      \
                             const at::Tensor& result, std::array<bool, 5> mask);                    \
  std::tuple<at::Tensor, at::Tensor> topk(const Request& req, int64_t k, bool largest, bool nan_first); \
  std::tuple<at::Tensor, at::Tensor> softmax_matmul(const Request& req, const at::Tensor& v);         \
  Grads5 softmax_matmul_backward(const at::Tensor& grad, const Request& req, const at::Tensor& v,      \
                                 const at::Tensor& out, const at::Tensor& lse, std::array<bool, 5> mask); \
  }

TP_DECLARE_CPU_CONSUMERS(isa_DEFAULT)
TP_DECLARE_CPU_CONSUMERS(isa_AVX2)
TP_DECLARE_CPU_CONSUMERS(isa_AVX512)

// The capability chosen for this machine (honours ATEN_CPU_CAPABILITY=default|avx2|avx512).
TP_DECLARE_CPU_CONSUMERS(dispatch)

}  // namespace tp::cpu
