// torchpair::_prepare: the engine call a metric prepares (its catalog prepare function), for
// backends that translate engine kernels rather than metrics (torchpair/_keops.py). The same
// preparation the public operators run, so operands, side features, kernel id and resolved
// scalars (defaults included) are never restated outside the catalog. CompositeImplicitAutograd:
// the prepared operands carry autograd back to x, y and tensor parameters.
#include <ATen/ATen.h>
#include <torch/library.h>

#include "catalog/catalog.h"
#include "ops/ops.h"

namespace tp::ops {
namespace {

using Prepared = std::tuple<at::Tensor, at::Tensor, std::optional<at::Tensor>, std::optional<at::Tensor>, std::string,
                            std::vector<double>>;

Prepared prepare_op(const at::Tensor& x, const std::optional<at::Tensor>& y, c10::string_view metric TP_PARAM_DECLS) {
  TP_PACK_PARAMS(opts);
  const char* op = "_prepare";
  const auto& info = catalog::lookup(std::string(metric), op);
  const bool symmetric = !y.has_value();
  const at::Tensor& yv = symmetric ? x : *y;
  TORCH_CHECK_VALUE(x.dim() == 3 && yv.dim() == 3, "torchpair.", op,
                    ": 'x' and 'y' must have shape [batch, rows, features], got ", x.sizes(), " and ", yv.sizes());
  TORCH_CHECK_VALUE(x.size(0) == yv.size(0) && x.size(2) == yv.size(2), "torchpair.", op,
                    ": 'x' and 'y' must have the same batch and feature sizes, got ", x.sizes(), " and ", yv.sizes());
  TORCH_CHECK_TYPE(at::isFloatingType(x.scalar_type()) && x.scalar_type() == yv.scalar_type(), "torchpair.", op,
                   ": 'x' and 'y' must be floating tensors of one dtype, got ", x.scalar_type(), " and ",
                   yv.scalar_type());
  catalog::check_params(info, opts, op);
  catalog::Inputs in;
  in.x = x.contiguous();
  in.y = symmetric ? in.x : yv.contiguous();
  in.symmetric = symmetric;
  in.op = op;
  catalog::Prepared prep = info.prepare(in, opts);
  std::optional<at::Tensor> a, b;
  if (prep.a.defined()) a = prep.a;
  if (prep.b.defined()) b = prep.b;
  return {prep.x, prep.y, a, b, prep.kernel, prep.scalars};
}

}  // namespace
}  // namespace tp::ops

TORCH_LIBRARY_FRAGMENT(torchpair, m) {
  // x, y [B, n, d] / [B, m, d] -> (x', y', a?, b?, kernel, scalars): what the core operators get
  m.def(("_prepare(Tensor x, Tensor? y, str metric" + tp::ops::params_schema() +
         ") -> (Tensor, Tensor, Tensor?, Tensor?, str, float[])")
            .c_str());
}

TORCH_LIBRARY_IMPL(torchpair, CompositeImplicitAutograd, m) { m.impl("_prepare", &tp::ops::prepare_op); }
