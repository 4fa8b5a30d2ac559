// Backend kernels of the core operators: the native CPU engines for CPU tensors, the
// device-generic engines (ATen on tiles) for every other device. Core operators are
// internal but callable (torch.ops.torchpair._dense, ...), so they validate their
// arguments too: a wrong call is a clear error, never a crash.
#include <ATen/ATen.h>
#include <torch/library.h>

#include <cstdlib>

#include "cpu/consumers.h"
#include "cpu/pdist.h"
#include "engines/kernel_id.h"
#include "engines/request.h"
#include "generic/consumers.h"
#include "ops/ops.h"

namespace tp::ops {
namespace {

using Opt = std::optional<at::Tensor>;

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

engine::Request make_request(const char* op, const at::Tensor& x, const at::Tensor& y, const Opt& a, const Opt& b,
                             c10::string_view kernel, at::ArrayRef<double> scalars, bool symmetric, bool transpose,
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
  req.spec.flipped = transpose;
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

void check_v(const char* op, const at::Tensor& v, const engine::Request& req) {
  check_operand(op, "v", v, 3, req.x, req.value_type);
  TORCH_CHECK_VALUE(v.size(0) == req.batch() && v.size(1) == req.cols(), "torchpair.", op,
                    ": 'v' must have shape [B, ", req.cols(), ", C] (B = ", req.batch(), "), got ", v.sizes());
}

void check_grad(const char* op, const at::Tensor& grad, const engine::Request& req, at::IntArrayRef expected) {
  check_operand(op, "grad", grad, int64_t(expected.size()), req.x, req.value_type);
  TORCH_CHECK_VALUE(grad.sizes() == expected, "torchpair.", op, ": 'grad' must have shape ", expected, ", got ",
                    grad.sizes());
}

// The native CPU engines, unless TORCHPAIR_FORCE_GENERIC=1 asks for the device-generic
// path (how the test suite exercises it on machines without a GPU).
bool native_cpu(const at::Tensor& x) {
  if (!x.is_cpu()) return false;
  const char* force = std::getenv("TORCHPAIR_FORCE_GENERIC");
  return !(force && force[0] == '1');
}

// Unrequested gradients come back as zeros of the right shape (empty for absent a/b).
at::Tensor or_zeros(const at::Tensor& g, const at::Tensor& like, const engine::Request& req) {
  if (g.defined()) return g;
  return like.defined() ? at::zeros(like.sizes(), req.value_options()) : at::empty({0}, req.value_options());
}

at::Tensor dense_kernel(const at::Tensor& x, const at::Tensor& y, const Opt& a, const Opt& b, c10::string_view kernel,
                        at::ArrayRef<double> scalars, bool symmetric, bool transpose,
    std::optional<at::ScalarType> dtype) {
  auto req = make_request("_dense", x, y, a, b, kernel, scalars, symmetric, transpose, dtype);
  return native_cpu(req.x) ? cpu::dispatch::dense(req) : generic::dense(req);
}

std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor> dense_backward_kernel(
    const at::Tensor& grad, const at::Tensor& x, const at::Tensor& y, const Opt& a, const Opt& b,
    c10::string_view kernel, at::ArrayRef<double> scalars, bool symmetric, bool transpose,
    std::optional<at::ScalarType> dtype, std::array<bool, 4> mask) {
  auto req = make_request("_dense_backward", x, y, a, b, kernel, scalars, symmetric, transpose, dtype);
  check_grad("_dense_backward", grad, req, {req.batch(), req.rows(), req.cols()});
  auto g = native_cpu(req.x) ? cpu::dispatch::dense_backward(grad, req, mask)
                             : generic::dense_backward(grad.contiguous(), req, mask);
  return {or_zeros(g[0], req.x, req), or_zeros(g[1], req.y, req), or_zeros(g[2], req.a, req), or_zeros(g[3], req.b, req)};
}

at::Tensor matmul_kernel(const at::Tensor& x, const at::Tensor& y, const Opt& a, const Opt& b, const at::Tensor& v,
                         c10::string_view kernel, at::ArrayRef<double> scalars, bool symmetric, bool transpose,
    std::optional<at::ScalarType> dtype) {
  auto req = make_request("_matmul", x, y, a, b, kernel, scalars, symmetric, transpose, dtype);
  check_v("_matmul", v, req);
  return native_cpu(req.x) ? cpu::dispatch::matmul(req, v) : generic::matmul(req, v.contiguous());
}

std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor, at::Tensor> matmul_backward_kernel(
    const at::Tensor& grad, const at::Tensor& x, const at::Tensor& y, const Opt& a, const Opt& b, const at::Tensor& v,
    c10::string_view kernel, at::ArrayRef<double> scalars, bool symmetric, bool transpose,
    std::optional<at::ScalarType> dtype, std::array<bool, 5> mask) {
  auto req = make_request("_matmul_backward", x, y, a, b, kernel, scalars, symmetric, transpose, dtype);
  check_v("_matmul_backward", v, req);
  check_grad("_matmul_backward", grad, req, {req.batch(), req.rows(), v.size(2)});
  auto g = native_cpu(req.x) ? cpu::dispatch::matmul_backward(grad, req, v, mask)
                             : generic::matmul_backward(grad.contiguous(), req, v.contiguous(), mask);
  return {or_zeros(g[0], req.x, req), or_zeros(g[1], req.y, req), or_zeros(g[2], req.a, req), or_zeros(g[3], req.b, req),
          or_zeros(g[4], v, req)};
}

engine::RowReduction parse_reduction(const char* op, c10::string_view reduction) {
  if (reduction == "sum") return engine::RowReduction::kSum;
  if (reduction == "logsumexp") return engine::RowReduction::kLogSumExp;
  TORCH_CHECK_VALUE(false, "torchpair.", op, ": 'reduction' must be \"sum\" or \"logsumexp\", got \"", reduction,
                    "\"");
}

at::Tensor row_reduce_kernel(const at::Tensor& x, const at::Tensor& y, const Opt& a, const Opt& b,
                             c10::string_view reduction, c10::string_view kernel, at::ArrayRef<double> scalars,
                             bool symmetric, bool transpose, std::optional<at::ScalarType> dtype) {
  auto req = make_request("_row_reduce", x, y, a, b, kernel, scalars, symmetric, transpose, dtype);
  const auto r = parse_reduction("_row_reduce", reduction);
  return native_cpu(req.x) ? cpu::dispatch::row_reduce(req, r) : generic::row_reduce(req, r);
}

std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor> row_reduce_backward_kernel(
    const at::Tensor& grad, const at::Tensor& x, const at::Tensor& y, const Opt& a, const Opt& b,
    c10::string_view reduction, const at::Tensor& result, c10::string_view kernel, at::ArrayRef<double> scalars,
    bool symmetric, bool transpose, std::optional<at::ScalarType> dtype, std::array<bool, 4> mask) {
  auto req = make_request("_row_reduce_backward", x, y, a, b, kernel, scalars, symmetric, transpose, dtype);
  const auto r = parse_reduction("_row_reduce_backward", reduction);
  check_grad("_row_reduce_backward", grad, req, {req.batch(), req.rows()});
  check_grad("_row_reduce_backward", result, req, {req.batch(), req.rows()});
  auto g = native_cpu(req.x) ? cpu::dispatch::row_reduce_backward(grad, req, r, result, mask)
                             : generic::row_reduce_backward(grad.contiguous(), req, r, result.contiguous(), mask);
  return {or_zeros(g[0], req.x, req), or_zeros(g[1], req.y, req), or_zeros(g[2], req.a, req),
          or_zeros(g[3], req.b, req)};
}

std::tuple<at::Tensor, at::Tensor> topk_kernel(const at::Tensor& x, const at::Tensor& y, const Opt& a, const Opt& b,
                                               int64_t k, bool largest, bool nan_first, c10::string_view kernel,
                                               at::ArrayRef<double> scalars, bool symmetric, bool transpose,
                                               std::optional<at::ScalarType> dtype) {
  auto req = make_request("_topk", x, y, a, b, kernel, scalars, symmetric, transpose, dtype);
  TORCH_CHECK_VALUE(k >= 0 && k <= req.cols(), "torchpair._topk: 'k' must be in [0, ", req.cols(),
                    "] (the number of columns), got ", k);
  return native_cpu(req.x) ? cpu::dispatch::topk(req, k, largest, nan_first)
                           : generic::topk(req, k, largest, nan_first);
}

std::tuple<at::Tensor, at::Tensor> softmax_matmul_kernel(const at::Tensor& x, const at::Tensor& y, const Opt& a,
                                                         const Opt& b, const at::Tensor& v, c10::string_view kernel,
                                                         at::ArrayRef<double> scalars, bool symmetric, bool transpose,
                                                         std::optional<at::ScalarType> dtype) {
  auto req = make_request("_softmax_matmul", x, y, a, b, kernel, scalars, symmetric, transpose, dtype);
  check_v("_softmax_matmul", v, req);
  return native_cpu(req.x) ? cpu::dispatch::softmax_matmul(req, v) : generic::softmax_matmul(req, v.contiguous());
}

std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor, at::Tensor> softmax_matmul_backward_kernel(
    const at::Tensor& grad, const at::Tensor& x, const at::Tensor& y, const Opt& a, const Opt& b, const at::Tensor& v,
    const at::Tensor& out, const at::Tensor& lse, c10::string_view kernel, at::ArrayRef<double> scalars,
    bool symmetric, bool transpose, std::optional<at::ScalarType> dtype, std::array<bool, 5> mask) {
  auto req = make_request("_softmax_matmul_backward", x, y, a, b, kernel, scalars, symmetric, transpose, dtype);
  check_v("_softmax_matmul_backward", v, req);
  check_grad("_softmax_matmul_backward", grad, req, {req.batch(), req.rows(), v.size(2)});
  check_grad("_softmax_matmul_backward", out, req, {req.batch(), req.rows(), v.size(2)});
  check_grad("_softmax_matmul_backward", lse, req, {req.batch(), req.rows()});
  auto g = native_cpu(req.x)
               ? cpu::dispatch::softmax_matmul_backward(grad, req, v, out, lse, mask)
               : generic::softmax_matmul_backward(grad.contiguous(), req, v.contiguous(), out.contiguous(),
                                                  lse.contiguous(), mask);
  return {or_zeros(g[0], req.x, req), or_zeros(g[1], req.y, req), or_zeros(g[2], req.a, req),
          or_zeros(g[3], req.b, req), or_zeros(g[4], v, req)};
}

// Matched pairs: x and y [B, P, d] have the same shape (make_request's rows/cols are both P).
engine::Request paired_request(const char* op, const at::Tensor& x, const at::Tensor& y, const Opt& a, const Opt& b,
                               const Opt& self_mask, c10::string_view kernel, at::ArrayRef<double> scalars,
                               std::optional<at::ScalarType> dtype, at::Tensor& mask_out) {
  auto req = make_request(op, x, y, a, b, kernel, scalars, false, false, dtype);
  TORCH_CHECK_VALUE(x.sizes() == y.sizes(), "torchpair.", op, ": 'x' and 'y' must have the same shape, got ",
                    x.sizes(), " and ", y.sizes());
  if (self_mask.has_value()) {
    TORCH_CHECK_TYPE(self_mask->scalar_type() == at::kBool, "torchpair.", op, ": 'self_mask' must be bool");
    TORCH_CHECK_VALUE(self_mask->dim() == 2 && self_mask->size(0) == x.size(0) && self_mask->size(1) == x.size(1),
                      "torchpair.", op, ": 'self_mask' must have shape [B, P] = ", x.sizes().slice(0, 2));
    mask_out = *self_mask;
  }
  return req;
}

at::Tensor paired_kernel(const at::Tensor& x, const at::Tensor& y, const Opt& a, const Opt& b, const Opt& self_mask,
                         c10::string_view kernel, at::ArrayRef<double> scalars, std::optional<at::ScalarType> dtype) {
  at::Tensor m;
  auto req = paired_request("_paired", x, y, a, b, self_mask, kernel, scalars, dtype, m);
  return generic::paired(req, m);
}

std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor> paired_backward_kernel(
    const at::Tensor& grad, const at::Tensor& x, const at::Tensor& y, const Opt& a, const Opt& b, const Opt& self_mask,
    c10::string_view kernel, at::ArrayRef<double> scalars, std::optional<at::ScalarType> dtype,
    std::array<bool, 4> mask) {
  at::Tensor m;
  auto req = paired_request("_paired_backward", x, y, a, b, self_mask, kernel, scalars, dtype, m);
  check_grad("_paired_backward", grad, req, {req.batch(), req.rows()});
  auto g = generic::paired_backward(grad, req, m);
  for (int i = 0; i < 4; ++i)
    if (!mask[i]) g[i] = at::Tensor();
  return {or_zeros(g[0], req.x, req), or_zeros(g[1], req.y, req), or_zeros(g[2], req.a, req),
          or_zeros(g[3], req.b, req)};
}

void register_kernels(torch::Library& m) {
  m.impl("_dense", &dense_kernel);
  m.impl("_dense_backward", &dense_backward_kernel);
  m.impl("_matmul", &matmul_kernel);
  m.impl("_matmul_backward", &matmul_backward_kernel);
  m.impl("_row_reduce", &row_reduce_kernel);
  m.impl("_row_reduce_backward", &row_reduce_backward_kernel);
  m.impl("_topk", &topk_kernel);
  m.impl("_softmax_matmul", &softmax_matmul_kernel);
  m.impl("_softmax_matmul_backward", &softmax_matmul_backward_kernel);
  m.impl("_paired", &paired_kernel);
  m.impl("_paired_backward", &paired_backward_kernel);
}

}  // namespace
}  // namespace tp::ops

// The same functions serve every backend: they pick the native CPU engines or the
// device-generic path from the tensors' device.
TORCH_LIBRARY_IMPL(torchpair, CPU, m) { tp::ops::register_kernels(m); }
TORCH_LIBRARY_IMPL(torchpair, CUDA, m) { tp::ops::register_kernels(m); }
TORCH_LIBRARY_IMPL(torchpair, XPU, m) { tp::ops::register_kernels(m); }
TORCH_LIBRARY_IMPL(torchpair, MPS, m) { tp::ops::register_kernels(m); }

// ---- pdist: the condensed upper triangle ----------------------------------------------
namespace tp::ops {
namespace {

engine::Request pdist_request(const char* op, const at::Tensor& x, const at::Tensor& y, const Opt& a, const Opt& b,
                              c10::string_view kernel, at::ArrayRef<double> scalars, bool symmetric,
                              std::optional<at::ScalarType> dtype) {
  auto req = make_request(op, x, y, a, b, kernel, scalars, symmetric, false, dtype);
  TORCH_CHECK_VALUE(x.sizes() == y.sizes(), "torchpair.", op, ": 'x' and 'y' must have the same shape, got ",
                    x.sizes(), " and ", y.sizes());
  return req;
}

at::Tensor pdist_kernel(const at::Tensor& x, const at::Tensor& y, const Opt& a, const Opt& b, c10::string_view kernel,
                        at::ArrayRef<double> scalars, bool symmetric, std::optional<at::ScalarType> dtype) {
  auto req = pdist_request("_pdist", x, y, a, b, kernel, scalars, symmetric, dtype);
  return native_cpu(req.x) ? cpu::dispatch::pdist(req) : generic::pdist(req);
}

std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor> pdist_backward_kernel(
    const at::Tensor& grad, const at::Tensor& x, const at::Tensor& y, const Opt& a, const Opt& b,
    c10::string_view kernel, at::ArrayRef<double> scalars, bool symmetric, std::optional<at::ScalarType> dtype,
    std::array<bool, 4> mask) {
  auto req = pdist_request("_pdist_backward", x, y, a, b, kernel, scalars, symmetric, dtype);
  const int64_t n = req.x.size(1);
  check_grad("_pdist_backward", grad, req, {req.batch(), n * (n - 1) / 2});
  auto g = native_cpu(req.x) ? cpu::dispatch::pdist_backward(grad, req, mask)
                             : generic::pdist_backward(grad.contiguous(), req, mask);
  for (int i = 0; i < 4; ++i)
    if (!mask[i]) g[i] = at::Tensor();
  return {or_zeros(g[0], req.x, req), or_zeros(g[1], req.y, req), or_zeros(g[2], req.a, req),
          or_zeros(g[3], req.b, req)};
}

void register_pdist_kernels(torch::Library& m) {
  m.impl("_pdist", &pdist_kernel);
  m.impl("_pdist_backward", &pdist_backward_kernel);
}

}  // namespace
}  // namespace tp::ops

TORCH_LIBRARY_IMPL(torchpair, CPU, m) { tp::ops::register_pdist_kernels(m); }
TORCH_LIBRARY_IMPL(torchpair, CUDA, m) { tp::ops::register_pdist_kernels(m); }
TORCH_LIBRARY_IMPL(torchpair, XPU, m) { tp::ops::register_pdist_kernels(m); }
TORCH_LIBRARY_IMPL(torchpair, MPS, m) { tp::ops::register_pdist_kernels(m); }
