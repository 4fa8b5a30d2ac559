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
