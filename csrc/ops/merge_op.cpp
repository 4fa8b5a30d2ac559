// Merging partial results of the streamed reductions, for callers that split the columns
// themselves (torchpair/distributed.py merges per-rank results): the reductions' own
// definitions (csrc/reductions/) on tensors, so the math of a merge lives in one place.
// CompositeImplicitAutograd: ATen compositions, differentiable, traceable.
//   _merge_topk(values, indices, k, largest, nan_first)  the k best of candidate lists [..., n]
//   _logsumexp_merge(partials, dim)                       logsumexp of partial logsumexps along dim
//                                                         (their states merged)
//   _logsumexp_raise(value, max)                          a partial logsumexp's sum under a larger
//                                                         running maximum (to add sums across ranks;
//                                                         max broadcasts to value's shape)
//   _logsumexp_finalize(sum, max)                         the logsumexp of such a sum
#include <ATen/ATen.h>
#include <torch/library.h>

#include "reductions/logsumexp.h"
#include "reductions/topk.h"

namespace tp::ops {
namespace {

using reductions::LogSumExp;

void check_floating(const at::Tensor& t, const char* op, const char* name) {
  TORCH_CHECK_TYPE(at::isFloatingType(t.scalar_type()), "torchpair.", op, ": '", name,
                   "' must be a floating tensor, got ", t.scalar_type());
}

std::tuple<at::Tensor, at::Tensor> merge_topk_op(const at::Tensor& values, const at::Tensor& indices, int64_t k,
                                                 bool largest, bool nan_first) {
  check_floating(values, "_merge_topk", "values");
  TORCH_CHECK_TYPE(indices.scalar_type() == at::kLong, "torchpair._merge_topk: 'indices' must be an int64 tensor, got ",
                   indices.scalar_type());
  TORCH_CHECK_VALUE(values.sizes() == indices.sizes() && values.dim() >= 1,
                    "torchpair._merge_topk: 'values' and 'indices' must have one shape [..., n], got ", values.sizes(),
                    " and ", indices.sizes());
  TORCH_CHECK_VALUE(k >= 0 && k <= values.size(-1), "torchpair._merge_topk: 'k' must be in [0, ", values.size(-1),
                    "], got ", k);
  return reductions::merge_topk(values, indices, k, largest, nan_first);
}

// One state per partial value l: max l, sum exp(l - shift(l)) (1 when l is finite, 0 when
// it is -inf, the empty state).
LogSumExp<at::Tensor> state_of(const at::Tensor& value) {
  return {value, at::exp(value - LogSumExp<at::Tensor>::shift_of(value))};
}

at::Tensor logsumexp_merge_op(const at::Tensor& partials, int64_t dim) {
  check_floating(partials, "_logsumexp_merge", "partials");
  TORCH_CHECK_VALUE(partials.dim() >= 1 && dim >= -partials.dim() && dim < partials.dim(),
                    "torchpair._logsumexp_merge: 'dim' must be a dimension of 'partials' (", partials.dim(),
                    " dimensions), got ", dim);
  // one state per partial (a few: one per rank), merged
  std::vector<int64_t> shape = partials.sizes().vec();
  shape.erase(shape.begin() + at::maybe_wrap_dim(dim, partials.dim()));
  auto state = LogSumExp<at::Tensor>::empty(at::zeros(shape, partials.options()));
  for (int64_t k = 0; k < partials.size(dim); ++k) state.merge(state_of(partials.select(dim, k)));
  return state.finalize();
}

void check_pair(const at::Tensor& a, const at::Tensor& max, const char* op, const char* name) {
  check_floating(a, op, name);
  check_floating(max, op, "max");
  TORCH_CHECK_VALUE(at::is_expandable_to(max.sizes(), a.sizes()), "torchpair.", op, ": 'max' must broadcast to the shape of '",
                    name, "', got ", max.sizes(), " and ", a.sizes());
}

at::Tensor logsumexp_raise_op(const at::Tensor& value, const at::Tensor& max) {
  check_pair(value, max, "_logsumexp_raise", "value");
  auto state = state_of(value);
  state.raise(max);
  return state.sum;
}

at::Tensor logsumexp_finalize_op(const at::Tensor& sum, const at::Tensor& max) {
  check_pair(sum, max, "_logsumexp_finalize", "sum");
  return LogSumExp<at::Tensor>{max, sum}.finalize();
}

}  // namespace
}  // namespace tp::ops

TORCH_LIBRARY_FRAGMENT(torchpair, m) {
  m.def("_merge_topk(Tensor values, Tensor indices, int k, bool largest, bool nan_first) -> (Tensor, Tensor)");
  m.def("_logsumexp_merge(Tensor partials, int dim) -> Tensor");
  m.def("_logsumexp_raise(Tensor value, Tensor max) -> Tensor");
  m.def("_logsumexp_finalize(Tensor sum, Tensor max) -> Tensor");
}

TORCH_LIBRARY_IMPL(torchpair, CompositeImplicitAutograd, m) {
  m.impl("_merge_topk", &tp::ops::merge_topk_op);
  m.impl("_logsumexp_merge", &tp::ops::logsumexp_merge_op);
  m.impl("_logsumexp_raise", &tp::ops::logsumexp_raise_op);
  m.impl("_logsumexp_finalize", &tp::ops::logsumexp_finalize_op);
}
