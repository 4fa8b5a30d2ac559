// Argument validation of the core operators, shared by every backend (ops/impls.h). Core
// operators are internal but callable (torch.ops.torchpair._dense, ...), so they validate
// their arguments too: a wrong call is a clear error, never a crash.
#include "ops/impls.h"

#include <cmath>

#include "engines/kernel_id.h"

namespace tp::ops::core {
namespace {

// An operand of the given dtype, on x's device.
void check_operand(const char* op, const char* name, const at::Tensor& t, int64_t dim, const at::Tensor& x,
                   at::ScalarType dtype) {
  // nested tensors report a strided layout but have no sizes: tested first
  TORCH_CHECK_TYPE(!t.is_nested() && t.layout() == at::kStrided, "torchpair.", op, ": '", name,
                   "' must be a dense (strided) tensor");
  TORCH_CHECK_VALUE(t.dim() == dim, "torchpair.", op, ": '", name, "' must have ", dim, " dimensions, got shape ",
                    t.sizes());
  TORCH_CHECK_TYPE(t.scalar_type() == dtype, "torchpair.", op, ": '", name, "' must have dtype ", dtype, ", got ",
                   t.scalar_type());
  TORCH_CHECK_VALUE(t.device() == x.device(), "torchpair.", op, ": '", name, "' is on ", t.device(),
                    " but 'x' is on ", x.device());
}

}  // namespace

engine::Request make_request(const char* op, const at::Tensor& x, const at::Tensor& y, const Opt& a, const Opt& b,
                             c10::string_view kernel, at::ArrayRef<double> scalars, bool symmetric, bool transposed,
                             std::optional<at::ScalarType> dtype) {
  engine::Request req;
  req.spec.kernel = engine::kernel_from_name(std::string(kernel));
  const bool floating = engine::kernel_has_floating_operands(req.spec.kernel);
  if (floating) {
    TORCH_CHECK_TYPE(x.scalar_type() == at::kFloat || x.scalar_type() == at::kDouble, "torchpair.", op,
                     ": 'x' must be float32 or float64, got ", x.scalar_type());
    TORCH_CHECK_VALUE(!dtype.has_value() || *dtype == x.scalar_type(), "torchpair.", op,
                      ": 'dtype' must be None or ", x.scalar_type(), " (x's dtype) for kernel '", kernel, "'");
    req.value_type = x.scalar_type();
  } else {
    TORCH_CHECK_VALUE(dtype.has_value() && (*dtype == at::kFloat || *dtype == at::kDouble), "torchpair.", op,
                      ": kernel '", kernel, "' needs 'dtype' float32 or float64 for its values");
    req.value_type = *dtype;
  }
  // Floating kernels read operands of the value dtype; other kernels name their own.
  const at::ScalarType operand_type = floating ? req.value_type : engine::kernel_operand_type(req.spec.kernel);
  check_operand(op, "x", x, 3, x, operand_type);
  check_operand(op, "y", y, 3, x, operand_type);
  TORCH_CHECK_VALUE(x.size(0) == y.size(0), "torchpair.", op, ": 'x' and 'y' must have the same batch size, got ",
                    x.size(0), " and ", y.size(0));
  TORCH_CHECK_VALUE(x.size(2) == y.size(2), "torchpair.", op, ": 'x' has ", x.size(2), " features but 'y' has ",
                    y.size(2));
  const int64_t want = engine::kernel_scalar_count(req.spec.kernel);
  TORCH_CHECK_VALUE(int64_t(scalars.size()) == want, "torchpair.", op, ": kernel '", kernel, "' takes ", want,
                    " scalars (argument 'scalars'), got ", scalars.size());
  req.spec.scalars.assign(scalars.begin(), scalars.end());
  engine::check_kernel_scalars(req.spec.kernel, req.spec.scalars, x.size(2), op);
  req.spec.symmetric = symmetric;
  req.spec.transposed = transposed;
  TORCH_CHECK_VALUE(!symmetric || x.sizes() == y.sizes(), "torchpair.", op,
                    ": 'symmetric' requires 'x' and 'y' of the same shape");
  req.x = x.contiguous();
  req.y = y.contiguous();
  auto side = [&](const Opt& t, const char* name, const at::Tensor& rows) {
    if (!t.has_value()) return at::Tensor();
    check_operand(op, name, *t, 2, x, floating ? req.value_type : t->scalar_type());
    TORCH_CHECK_VALUE(t->size(0) == rows.size(0) && t->size(1) == rows.size(1), "torchpair.", op, ": '", name,
                      "' must have shape [B, rows] = ", rows.sizes().slice(0, 2), ", got ", t->sizes());
    return t->contiguous();
  };
  req.a = side(a, "a", x);
  req.b = side(b, "b", y);
  return req;
}

void check_v(const char* op, const at::Tensor& v, const Request& req) {
  check_operand(op, "v", v, 3, req.x, req.value_type);
  TORCH_CHECK_VALUE(v.size(0) == req.batch() && v.size(1) == req.cols(), "torchpair.", op,
                    ": 'v' must have shape [B, ", req.cols(), ", C] (B = ", req.batch(), "), got ", v.sizes());
}

void check_grad(const char* op, const at::Tensor& grad, const Request& req, at::IntArrayRef expected) {
  check_operand(op, "grad", grad, int64_t(expected.size()), req.x, req.value_type);
  TORCH_CHECK_VALUE(grad.sizes() == expected, "torchpair.", op, ": 'grad' must have shape ", expected, ", got ",
                    grad.sizes());
}

RowReduce make_reduce(const char* op, const Request& req, c10::string_view reduction, RowReduce r) {
  const auto kind = engine::row_reduction_of(reduction);
  TORCH_CHECK_VALUE(kind.has_value(), "torchpair.", op, ": 'reduction' must be ", engine::row_reduction_names(),
                    ", got \"", reduction, "\"");
  r.kind = *kind;
  const unsigned takes = engine::row_reduction_takes(r.kind);
  const RowReduce defaults;
#define TP_CHECK_TAKEN(M, name, ...)                                                                          \
  TORCH_CHECK_VALUE((takes & TP_ROW_REDUCE_ARG(name)) || !engine::row_reduce_arg_given(r.name, defaults.name), \
                    "torchpair.", op, ": '" #name "' applies to ",                                            \
                    engine::row_reductions_taking(TP_ROW_REDUCE_ARG(name)), " only");
  TP_ROW_REDUCE_ARGS(TP_CHECK_TAKEN, ~)
#undef TP_CHECK_TAKEN
  TORCH_CHECK_VALUE(std::isfinite(r.scale), "torchpair.", op, ": 'scale' must be finite, got ", r.scale);
  if (r.weight.defined()) {
    check_operand(op, "weight", r.weight, 2, req.x, req.value_type);
    TORCH_CHECK_VALUE(r.weight.size(0) == req.batch() && r.weight.size(1) == req.cols(), "torchpair.", op,
                      ": 'weight' must have shape [B, cols] = [", req.batch(), ", ", req.cols(), "], got ",
                      r.weight.sizes());
    r.weight = r.weight.contiguous();
  }
  return r;
}

void check_topk(const char* op, int64_t k, const Request& req) {
  TORCH_CHECK_VALUE(k >= 0 && k <= req.cols(), "torchpair.", op, ": 'k' must be in [0, ", req.cols(),
                    "] (the number of columns), got ", k);
}

Request same_shape_request(const char* op, const at::Tensor& x, const at::Tensor& y, const Opt& a, const Opt& b,
                           c10::string_view kernel, at::ArrayRef<double> scalars, bool symmetric, Dtype dtype) {
  auto req = make_request(op, x, y, a, b, kernel, scalars, symmetric, false, dtype);
  TORCH_CHECK_VALUE(x.sizes() == y.sizes(), "torchpair.", op, ": 'x' and 'y' must have the same shape, got ",
                    x.sizes(), " and ", y.sizes());
  return req;
}

at::Tensor check_self_mask(const char* op, const Opt& self_mask, const at::Tensor& x) {
  if (!self_mask.has_value()) return at::Tensor();
  TORCH_CHECK_TYPE(self_mask->scalar_type() == at::kBool, "torchpair.", op, ": 'self_mask' must be bool");
  TORCH_CHECK_VALUE(self_mask->dim() == 2 && self_mask->size(0) == x.size(0) && self_mask->size(1) == x.size(1),
                    "torchpair.", op, ": 'self_mask' must have shape [B, P] = ", x.sizes().slice(0, 2));
  return *self_mask;
}

namespace {
// Unrequested gradients come back as zeros of the right shape (empty for absent a/b).
at::Tensor or_zeros(bool wanted, const at::Tensor& g, const at::Tensor& like, const Request& req) {
  if (wanted && g.defined()) return g;
  return like.defined() ? at::zeros(like.sizes(), req.value_options()) : at::empty({0}, req.value_options());
}
}  // namespace

std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor> grads4(Grads4 g, const Request& req,
                                                                  std::array<bool, 4> mask) {
  return {or_zeros(mask[0], g[0], req.x, req), or_zeros(mask[1], g[1], req.y, req),
          or_zeros(mask[2], g[2], req.a, req), or_zeros(mask[3], g[3], req.b, req)};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor, at::Tensor> grads5(Grads5 g, const Request& req,
                                                                              const at::Tensor& v,
                                                                              std::array<bool, 5> mask) {
  return {or_zeros(mask[0], g[0], req.x, req), or_zeros(mask[1], g[1], req.y, req),
          or_zeros(mask[2], g[2], req.a, req), or_zeros(mask[3], g[3], req.b, req), or_zeros(mask[4], g[4], v, req)};
}

}  // namespace tp::ops::core
