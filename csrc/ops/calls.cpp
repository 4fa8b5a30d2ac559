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

}  // namespace

at::Tensor pairwise(const at::Tensor& x, const std::optional<at::Tensor>& y, const std::string& metric,
                    const ComparisonOptions& o) {
  static auto op = handle<at::Tensor(const at::Tensor&, const Opt&, c10::string_view TP_PARAM_TYPES)>(
      "torchpair::pairwise");
  return op.call(x, y, metric TP_PARAM_FIELDS);
}

at::Tensor lazy_matmul(const at::Tensor& x, const std::optional<at::Tensor>& y, const at::Tensor& v,
                       const std::string& metric, bool transpose, const ComparisonOptions& o) {
  static auto op =
      handle<at::Tensor(const at::Tensor&, const Opt&, const at::Tensor&, c10::string_view, bool TP_PARAM_TYPES)>(
          "torchpair::lazy_matmul");
  return op.call(x, y, v, metric, transpose TP_PARAM_FIELDS);
}

at::Tensor lazy_sum(const at::Tensor& x, const std::optional<at::Tensor>& y, const std::string& metric,
                    std::optional<int64_t> dim, bool transpose, const ComparisonOptions& o) {
  static auto op = handle<at::Tensor(const at::Tensor&, const Opt&, c10::string_view, std::optional<int64_t>,
                                     bool TP_PARAM_TYPES)>("torchpair::lazy_sum");
  return op.call(x, y, metric, dim, transpose TP_PARAM_FIELDS);
}

at::Tensor dense(const Core& c) {
  static auto op = handle<at::Tensor(const at::Tensor&, const at::Tensor&, const Opt&, const Opt&, c10::string_view,
                                     at::ArrayRef<double>, bool, bool, std::optional<at::ScalarType>)>(
      "torchpair::_dense");
  return op.call(c.x, c.y, c.a, c.b, c.kernel, c.scalars, c.symmetric, c.transpose, c.dtype);
}

at::Tensor matmul(const Core& c, const at::Tensor& v) {
  static auto op = handle<at::Tensor(const at::Tensor&, const at::Tensor&, const Opt&, const Opt&, const at::Tensor&,
                                     c10::string_view, at::ArrayRef<double>, bool, bool,
                                     std::optional<at::ScalarType>)>("torchpair::_matmul");
  return op.call(c.x, c.y, c.a, c.b, v, c.kernel, c.scalars, c.symmetric, c.transpose, c.dtype);
}

at::Tensor row_sum(const Core& c) {
  static auto op = handle<at::Tensor(const at::Tensor&, const at::Tensor&, const Opt&, const Opt&, c10::string_view,
                                     at::ArrayRef<double>, bool, bool, std::optional<at::ScalarType>)>(
      "torchpair::_row_sum");
  return op.call(c.x, c.y, c.a, c.b, c.kernel, c.scalars, c.symmetric, c.transpose, c.dtype);
}

}  // namespace tp::ops
