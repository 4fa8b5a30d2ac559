// Typed C++ entry points to the torchpair operators, through the dispatcher.
#include <ATen/core/dispatch/Dispatcher.h>

#include "ops/ops.h"

namespace tp::ops {
namespace {

template <typename Sig>
c10::TypedOperatorHandle<Sig> handle(const char* name) {
  return c10::Dispatcher::singleton().findSchemaOrThrow(name, "").typed<Sig>();
}

using Opt = std::optional<at::Tensor>;
using SV = c10::string_view;
using CT = const at::Tensor&;
using Pair = std::tuple<at::Tensor, at::Tensor>;

}  // namespace

// ---- public operators ---------------------------------------------------------------

at::Tensor pairwise(const at::Tensor& x, const std::optional<at::Tensor>& y, const std::string& metric,
                    const ComparisonOptions& o) {
  static auto op = handle<at::Tensor(CT, const Opt&, SV TP_PARAM_TYPES)>("torchpair::pairwise");
  return op.call(x, y, metric TP_PARAM_FIELDS);
}

at::Tensor lazy_matmul(const at::Tensor& x, const std::optional<at::Tensor>& y, const at::Tensor& v,
                       const std::string& metric, bool transposed, const ComparisonOptions& o) {
  static auto op = handle<at::Tensor(CT, const Opt&, CT, SV, bool TP_PARAM_TYPES)>("torchpair::lazy_matmul");
  return op.call(x, y, v, metric, transposed TP_PARAM_FIELDS);
}

at::Tensor lazy_reduce(const at::Tensor& x, const std::optional<at::Tensor>& y, const std::string& metric,
                       const std::string& reduction, std::optional<int64_t> dim, bool transposed,
                       const ComparisonOptions& o TP_ROW_REDUCE_PUBLIC_DECLS) {
  static auto op = handle<at::Tensor(CT, const Opt&, SV, SV, std::optional<int64_t>,
                                     bool TP_ROW_REDUCE_PUBLIC_TYPES TP_PARAM_TYPES)>("torchpair::lazy_reduce");
  return op.call(x, y, metric, reduction, dim, transposed TP_ROW_REDUCE_PUBLIC_NAMES TP_PARAM_FIELDS);
}

std::tuple<at::Tensor, at::Tensor> lazy_topk(const at::Tensor& x, const std::optional<at::Tensor>& y,
                                             const std::string& metric, int64_t k, int64_t dim, bool largest,
                                             bool sorted, bool transposed, const std::string& nan,
                                             const ComparisonOptions& o) {
  static auto op = handle<Pair(CT, const Opt&, SV, int64_t, int64_t, bool, bool, bool, SV TP_PARAM_TYPES)>(
      "torchpair::lazy_topk");
  return op.call(x, y, metric, k, dim, largest, sorted, transposed, nan TP_PARAM_FIELDS);
}

at::Tensor lazy_softmax_matmul(const at::Tensor& x, const std::optional<at::Tensor>& y, const at::Tensor& v,
                               const std::string& metric, int64_t dim, bool transposed, const ComparisonOptions& o) {
  static auto op = handle<at::Tensor(CT, const Opt&, CT, SV, int64_t, bool TP_PARAM_TYPES)>(
      "torchpair::lazy_softmax_matmul");
  return op.call(x, y, v, metric, dim, transposed TP_PARAM_FIELDS);
}

std::tuple<at::Tensor, at::Tensor> knn(const at::Tensor& x, const std::optional<at::Tensor>& y, int64_t k,
                                       const std::string& metric, const ComparisonOptions& o) {
  static auto op = handle<Pair(CT, const Opt&, int64_t, SV TP_PARAM_TYPES)>("torchpair::knn");
  return op.call(x, y, k, metric TP_PARAM_FIELDS);
}

at::Tensor hausdorff(const at::Tensor& x, const at::Tensor& y, const std::string& metric, bool directed,
                     const ComparisonOptions& o) {
  static auto op = handle<at::Tensor(CT, CT, SV, bool TP_PARAM_TYPES)>("torchpair::hausdorff");
  return op.call(x, y, metric, directed TP_PARAM_FIELDS);
}

at::Tensor chamfer(const at::Tensor& x, const at::Tensor& y, const std::string& metric, const std::string& reduction,
                   const ComparisonOptions& o) {
  static auto op = handle<at::Tensor(CT, CT, SV, SV TP_PARAM_TYPES)>("torchpair::chamfer");
  return op.call(x, y, metric, reduction TP_PARAM_FIELDS);
}

at::Tensor mmd(const at::Tensor& x, const at::Tensor& y, const std::string& metric, bool unbiased,
               const ComparisonOptions& o) {
  static auto op = handle<at::Tensor(CT, CT, SV, bool TP_PARAM_TYPES)>("torchpair::mmd");
  return op.call(x, y, metric, unbiased TP_PARAM_FIELDS);
}

at::Tensor energy_distance(const at::Tensor& x, const at::Tensor& y, const std::string& metric,
                           const ComparisonOptions& o) {
  static auto op = handle<at::Tensor(CT, CT, SV TP_PARAM_TYPES)>("torchpair::energy_distance");
  return op.call(x, y, metric TP_PARAM_FIELDS);
}

}  // namespace tp::ops

// ---- pdist ------------------------------------------------------------------------------
namespace tp::ops {

std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor, at::Tensor> emd(
    const std::optional<at::Tensor>& a, const std::optional<at::Tensor>& b, const at::Tensor& M,
    std::optional<int64_t> max_iter, bool normalize, std::optional<double> mass_tol) {
  using Out = std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor, at::Tensor>;
  static auto op = handle<Out(const Opt&, const Opt&, CT, std::optional<int64_t>, bool, std::optional<double>, bool)>(
      "torchpair::emd");
  return op.call(a, b, M, max_iter, normalize, mass_tol, /*warn=*/true);
}

at::Tensor pdist(const at::Tensor& x, const std::string& metric, const ComparisonOptions& o) {
  static auto op = handle<at::Tensor(CT, SV TP_PARAM_TYPES)>("torchpair::pdist");
  return op.call(x, metric TP_PARAM_FIELDS);
}

at::Tensor condensed(const Core& c) {
  TORCH_CHECK_VALUE(!c.transposed, "torchpair._pdist: the condensed triangle has no transpose");
  return core_op::pdist::call(c);
}

}  // namespace tp::ops
