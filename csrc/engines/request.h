#pragma once
// One consumer call as the core operators hand it to a backend (CPU or device-generic):
// validated tensors x [B,n,d], y [B,m,d], a [B,n], b [B,m] (or undefined), contiguous, in
// the kernel's operand dtype, plus the engine kernel, its scalars, and the dtype of the tile
// values (and so of the results): x's dtype for floating kernels.
#include <ATen/ATen.h>

#include <array>

#include "engines/tile_source.h"
#include "reductions/row_reductions.h"  // RowReduction, RowReduce

namespace tp::engine {

struct Request {
  at::Tensor x, y, a, b;
  SourceSpec spec;  // spec.transposed: the operator is K^T ([B, m, n])
  at::ScalarType value_type = at::kFloat;

  at::TensorOptions value_options() const { return x.options().dtype(value_type); }

  int64_t batch() const { return x.size(0); }
  int64_t rows() const { return spec.transposed ? y.size(1) : x.size(1); }
  int64_t cols() const { return spec.transposed ? x.size(1) : y.size(1); }
};

// Gradients with respect to (x, y, a, b[, v]); undefined where not requested.
using Grads4 = std::array<at::Tensor, 4>;
using Grads5 = std::array<at::Tensor, 5>;

}  // namespace tp::engine
