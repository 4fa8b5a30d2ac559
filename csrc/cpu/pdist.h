#pragma once
// The condensed (pdist) consumer on the CPU: K(x_i, y_j) for i < j only, in scipy's order
// (row-major upper triangle), [B, n(n-1)/2]. Compiled once per CPU capability
// (cpu/pdist_cpu.cpp); cpu/dispatch.cpp picks one. Request as for the other consumers,
// with x and y of the same shape (y is usually x itself).
#include <ATen/ATen.h>

#include <array>

#include "engines/request.h"

namespace tp::cpu {

#define TP_DECLARE_CPU_PDIST(ns)                                                                       \
  namespace ns {                                                                                       \
  at::Tensor pdist(const engine::Request& req);                                                        \
  engine::Grads4 pdist_backward(const at::Tensor& grad, const engine::Request& req, std::array<bool, 4> mask); \
  }

TP_DECLARE_CPU_PDIST(isa_DEFAULT)
TP_DECLARE_CPU_PDIST(isa_AVX2)
TP_DECLARE_CPU_PDIST(isa_AVX512)
TP_DECLARE_CPU_PDIST(dispatch)

}  // namespace tp::cpu
