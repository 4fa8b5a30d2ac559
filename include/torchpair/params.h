#pragma once
// The metric parameters every torchpair operator accepts, in schema order. One list feeds
// the operator schemas (ops/schemas.cpp), the C++ options struct below, and the Python
// keyword arguments (torchpair/_ops.py reads the schema).
//   scalar parameters: structural (recorded as constants in captured graphs)
//   tensor parameters: inputs (differentiable where the metric is)
#define TORCHPAIR_SCALAR_PARAMS(_) \
  _(gamma)                         \
  _(p)                             \
  _(degree)                        \
  _(coef0)                         \
  _(alpha)                         \
  _(nu)                            \
  _(length_scale)                  \
  _(base)                          \
  _(periodicity)

#define TORCHPAIR_TENSOR_PARAMS(_) \
  _(w)                             \
  _(V)                             \
  _(VI)                            \
  _(length_scales)                 \
  _(periodicities)

// String options, taken by every metric (structural, as the scalars):
//   compute_mode: torch.cdist's engine switch — "use_mm_for_euclid_dist_if_necessary"
//   (default: difference-based kernels up to 16 features or when neither operand has more
//   than 25 rows, GEMM otherwise),
//   "use_mm_for_euclid_dist" (GEMM always), "donot_use_mm_for_euclid_dist" (difference-based
//   always: exact zeros for equal rows). It selects the engine of the squared-distance family
//   (euclidean, sqeuclidean, rbf, seuclidean, hellinger, minkowski p = 2, matern,
//   rational_quadratic) and of cosine / correlation (docs/contracts.md, "compute_mode").
#define TORCHPAIR_STRING_PARAMS(_) \
  _(compute_mode)
