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
  // reduction: "sum", "mean", "logsumexp" (log sum exp(scale K + log_weight), log_weight
  // over the reduced dimension) or "count" (#{K <= threshold}, int64); dim -1 (per row), -2
  // (per column), None (all)
  def("lazy_reduce(Tensor x, Tensor? y, str metric, str reduction=\"sum\", int? dim=None, bool transpose=False, "
      "float scale=1.0, Tensor? log_weight=None, float? threshold=None" + P + ") -> Tensor");
  // nan: "largest" (torch.topk: NaN ranks as the largest value) or "propagate"
  // (torch.min/max: NaN wins)
  def("lazy_topk(Tensor x, Tensor? y, str metric, int k, int dim=-1, bool largest=True, bool sorted=True, "
      "bool transpose=False, str nan=\"largest\"" + P + ") -> (Tensor values, Tensor indices)");
  def("lazy_softmax_matmul(Tensor x, Tensor? y, Tensor v, str metric, int dim=-1, bool transpose=False" + P +
      ") -> Tensor");

  // ---- set-level consumers (batched over leading dims) --------------------------------
  def("knn(Tensor x, Tensor? y, int k, str metric=\"euclidean\"" + P + ") -> (Tensor values, Tensor indices)");
  def("hausdorff(Tensor x, Tensor y, str metric=\"euclidean\", bool directed=False" + P + ") -> Tensor");
  def("chamfer(Tensor x, Tensor y, str metric=\"sqeuclidean\", str reduction=\"mean\"" + P + ") -> Tensor");
  def("mmd(Tensor x, Tensor y, str metric=\"rbf\", bool unbiased=False" + P + ") -> Tensor");
  def("energy_distance(Tensor x, Tensor y, str metric=\"euclidean\"" + P + ") -> Tensor");

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
  // reduction over the operator's rows: "sum"; "logsumexp" of scale * K + weight (weight:
  // log-weights of the columns [B, cols]); "count" of entries <= threshold (int64, not
  // differentiable)
  def("_row_reduce(" + core + ", str reduction, " + engine +
      ", float scale=1.0, Tensor? weight=None, float threshold=0.0) -> Tensor");
  def("_row_reduce_backward(Tensor grad, " + core + ", str reduction, Tensor result, " + engine_b +
      ", float scale, Tensor? weight, bool[5] output_mask) -> (Tensor, Tensor, Tensor, Tensor, Tensor)");
  // k best per row (ties: lower column; nan_first: NaN ranks first). Not differentiable:
  // the public operator differentiates the values through _paired.
  def("_topk(" + core + ", int k, bool largest, bool nan_first, " + engine + ") -> (Tensor, Tensor)");
  // out_r = sum_c softmax_c(K_rc) v_c, and the rows' logsumexp (saved for backward)
  def("_softmax_matmul(" + core + ", Tensor v, " + engine + ") -> (Tensor, Tensor)");
  def("_softmax_matmul_backward(Tensor grad, " + core + ", Tensor v, Tensor out, Tensor lse, " + engine_b +
      ", bool[5] output_mask) -> (Tensor, Tensor, Tensor, Tensor, Tensor)");
  // value_p = K(x_p, y_p) for matched rows x, y [B, P, d]; self_mask marks exact self pairs
  def("_paired(Tensor x, Tensor y, Tensor? a, Tensor? b, Tensor? self_mask, str kernel, float[] scalars, "
      "ScalarType? dtype=None) -> Tensor");
  def("_paired_backward(Tensor grad, Tensor x, Tensor y, Tensor? a, Tensor? b, Tensor? self_mask, str kernel, "
      "float[] scalars, ScalarType? dtype, bool[4] output_mask) -> (Tensor, Tensor, Tensor, Tensor)");

  // ---- pdist: condensed upper triangle (scipy order), computing only that half ----------
  def("pdist(Tensor x, str metric" + P + ") -> Tensor");
  // K(x_i, y_j) for i < j, [B, n(n-1)/2]; x and y have the same shape (y is usually x)
  def("_pdist(" + core + ", str kernel, float[] scalars, bool symmetric, ScalarType? dtype=None) -> Tensor");
  def("_pdist_backward(Tensor grad, " + core +
      ", str kernel, float[] scalars, bool symmetric, ScalarType? dtype, bool[4] output_mask) -> "
      "(Tensor, Tensor, Tensor, Tensor)");

  // ---- introspection ----------------------------------------------------------------
  m.def("_catalog() -> str", &tp::ops::catalog_json);
  m.def("_build_info() -> str", &tp::ops::build_info_json);
}
