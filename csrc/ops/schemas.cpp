// Every torchpair operator schema, in one place.
//
// Public operators take the user-facing metric name and named parameters; they are
// CompositeImplicitAutograd (ops/composite.cpp): validation, metric preparation, then one
// core operator. Core operators (leading underscore) take engine operands and a kernel id;
// each has a CPU kernel, a device-generic kernel (ops/kernels.cpp), a C++ autograd kernel
// (ops/autograd.cpp), an autocast kernel (ops/autocast.cpp) and a fake kernel
// (torchpair/_meta.py). Metric names, kernel ids and scalar parameters are schema
// arguments, so captured graphs record them as constants.
#include <ATen/core/enum_tag.h>
#include <torch/library.h>

#include "ops/ops.h"

namespace tp::ops {

std::string params_schema() {
  std::string s = ", *";
#define TP_SCALAR_SCHEMA(name) s += ", float? " #name "=None";
#define TP_TENSOR_SCHEMA(name) s += ", Tensor? " #name "=None";
  TORCHPAIR_SCALAR_PARAMS(TP_SCALAR_SCHEMA)
  TORCHPAIR_TENSOR_PARAMS(TP_TENSOR_SCHEMA)
#undef TP_SCALAR_SCHEMA
#undef TP_TENSOR_SCHEMA
  return s;
}

}  // namespace tp::ops

TORCH_LIBRARY(torchpair, m) {
  const std::vector<at::Tag> tags{at::Tag::pt2_compliant_tag};
  const std::string P = tp::ops::params_schema();
  auto def = [&](const std::string& schema) { m.def(schema.c_str(), tags); };

  // ---- public operators -----------------------------------------------------------
  def("pairwise(Tensor x, Tensor? y, str metric" + P + ") -> Tensor");
  def("lazy_matmul(Tensor x, Tensor? y, Tensor v, str metric, bool transpose=False" + P + ") -> Tensor");
  def("lazy_sum(Tensor x, Tensor? y, str metric, int? dim=None, bool transpose=False" + P + ") -> Tensor");

  // ---- core operators -------------------------------------------------------------
  const std::string core = "Tensor x, Tensor y, Tensor? a, Tensor? b";
  // dtype: the tile value (and result) dtype; None means x's dtype (floating kernels).
  const std::string engine = "str kernel, float[] scalars, bool symmetric, bool transpose, ScalarType? dtype=None";
  // backward operators take the same engine arguments, followed by output_mask (no defaults)
  const std::string engine_b = "str kernel, float[] scalars, bool symmetric, bool transpose, ScalarType? dtype";
  def("_dense(" + core + ", " + engine + ") -> Tensor");
  def("_dense_backward(Tensor grad, " + core + ", " + engine_b +
      ", bool[4] output_mask) -> (Tensor, Tensor, Tensor, Tensor)");
  def("_matmul(" + core + ", Tensor v, " + engine + ") -> Tensor");
  def("_matmul_backward(Tensor grad, " + core + ", Tensor v, " + engine_b +
      ", bool[5] output_mask) -> (Tensor, Tensor, Tensor, Tensor, Tensor)");
  def("_row_sum(" + core + ", " + engine + ") -> Tensor");
  def("_row_sum_backward(Tensor grad, " + core + ", " + engine_b +
      ", bool[4] output_mask) -> (Tensor, Tensor, Tensor, Tensor)");

  // ---- introspection ----------------------------------------------------------------
  m.def("_catalog() -> str", &tp::ops::catalog_json);
  m.def("_build_info() -> str", &tp::ops::build_info_json);
}
