// Every torchpair operator schema, in one place.
//
// Public operators take the user-facing metric name and named parameters; they are
// CompositeImplicitAutograd (ops/composite.cpp): validation, metric preparation, then one
// core operator. Core operators (leading underscore) take engine operands and a kernel id;
// their schemas, typed calls, autograd and autocast are generated from one table,
// ops/core_ops.h; each has backend impls (ops/impls.h) and a fake impl
// (torchpair/_meta.py). Metric names, kernel ids and scalar parameters are schema
// arguments, so captured graphs record them as constants.
#include <ATen/core/enum_tag.h>
#include <torch/library.h>

#include "ops/core_ops.h"
#include "ops/ops.h"

namespace tp::ops {

std::string params_schema() {
  std::string s = ", *";
#define TP_SCALAR_SCHEMA(name) s += ", float? " #name "=None";
#define TP_TENSOR_SCHEMA(name) s += ", Tensor? " #name "=None";
#define TP_STRING_SCHEMA(name) s += ", str? " #name "=None";
  TORCHPAIR_SCALAR_PARAMS(TP_SCALAR_SCHEMA)
  TORCHPAIR_TENSOR_PARAMS(TP_TENSOR_SCHEMA)
  TORCHPAIR_STRING_PARAMS(TP_STRING_SCHEMA)
#undef TP_SCALAR_SCHEMA
#undef TP_TENSOR_SCHEMA
#undef TP_STRING_SCHEMA
  return s;
}

}  // namespace tp::ops

TORCH_LIBRARY(torchpair, m) {
  const std::vector<at::Tag> tags{at::Tag::pt2_compliant_tag};
  const std::string P = tp::ops::params_schema();
  auto def = [&](const std::string& schema) { m.def(schema.c_str(), tags); };

  // ---- public operators -----------------------------------------------------------
  def("pairwise(Tensor x, Tensor? y, str metric" + P + ") -> Tensor");
  def("lazy_matmul(Tensor x, Tensor? y, Tensor v, str metric, bool transposed=False" + P + ") -> Tensor");
  // reduction: "mean" or a row reduction, then the row reductions' arguments (both from
  // reductions/row_reductions.h); dim -1 (per row), -2 (per column), None (all)
  def("lazy_reduce(Tensor x, Tensor? y, str metric, str reduction=\"sum\", int? dim=None, bool transposed=False"
      TP_ROW_REDUCE_PUBLIC_SCHEMA + P + ") -> Tensor");
  // nan: "largest" (torch.topk: NaN ranks as the largest value) or "propagate"
  // (torch.min/max: NaN wins)
  def("lazy_topk(Tensor x, Tensor? y, str metric, int k, int dim=-1, bool largest=True, bool sorted=True, "
      "bool transposed=False, str nan=\"largest\"" + P + ") -> (Tensor values, Tensor indices)");
  def("lazy_softmax_matmul(Tensor x, Tensor? y, Tensor v, str metric, int dim=-1, bool transposed=False" + P +
      ") -> Tensor");

  // ---- set-level consumers (batched over leading dims) --------------------------------
  def("knn(Tensor x, Tensor? y, int k, str metric=\"euclidean\"" + P + ") -> (Tensor values, Tensor indices)");
  def("hausdorff(Tensor x, Tensor y, str metric=\"euclidean\", bool directed=False" + P + ") -> Tensor");
  def("chamfer(Tensor x, Tensor y, str metric=\"sqeuclidean\", str reduction=\"mean\"" + P + ") -> Tensor");
  def("mmd(Tensor x, Tensor y, str metric=\"rbf\", bool unbiased=False" + P + ") -> Tensor");
  def("energy_distance(Tensor x, Tensor y, str metric=\"euclidean\"" + P + ") -> Tensor");

  // ---- core operators: one row each in ops/core_ops.h ------------------------------
#define TP_DEFINE_CORE_OP(id, Ret, returns) def(tp::ops::core_op::id::schema);
  TP_CORE_OPS(TP_DEFINE_CORE_OP)
#undef TP_DEFINE_CORE_OP

  // ---- pdist: condensed upper triangle (scipy order), computing only that half ----------
  def("pdist(Tensor x, str metric" + P + ") -> Tensor");

  // ---- introspection ----------------------------------------------------------------
  m.def("_catalog() -> str", &tp::ops::catalog_json);
  m.def("_build_info() -> str", &tp::ops::build_info_json);
}
