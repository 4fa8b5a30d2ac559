#pragma once
// The backend implementations (impls) of the core operators, written once for every backend.
//
// A backend is a type with one static function per consumer (see cpu/register.cpp and
// generic/register.cpp); `register_core_impls<Engine>(m)` validates each call's arguments
// (so a wrong call to an internal operator is a clear error, never a crash), lays the tensors
// out as an engine::Request and calls the backend. Each backend registers itself by dispatch
// key, the torchvision way:
//   CPU                        cpu/register.cpp      (native engines, per CPU capability)
//   CompositeExplicitAutograd  generic/register.cpp  (ATen on tiles: every other device)
// A device with impls of its own registers its key (e.g. CUDA) and takes precedence over
// the generic fallback; no operator code changes.
#include <ATen/ATen.h>
#include <torch/library.h>

#include <array>
#include <optional>
#include <tuple>

#include "engines/request.h"
#include "ops/core_ops.h"

namespace tp::ops::core {

using core_op::AR;
using core_op::CO;
using core_op::CT;
using core_op::Mask4;
using core_op::Mask5;
using core_op::SV;
using Opt = std::optional<at::Tensor>;
using Dtype = std::optional<at::ScalarType>;
using engine::Grads4;
using engine::Grads5;
using engine::Request;
using engine::RowReduce;
using engine::RowReduction;

// Validation shared by every backend (ops/impls.cpp). `op` names the operator in messages.
Request make_request(const char* op, const at::Tensor& x, const at::Tensor& y, const Opt& a, const Opt& b,
                     c10::string_view kernel, at::ArrayRef<double> scalars, bool symmetric, bool transposed,
                     Dtype dtype);
void check_v(const char* op, const at::Tensor& v, const Request& req);
void check_grad(const char* op, const at::Tensor& grad, const Request& req, at::IntArrayRef expected);
// A row reduction by name (reductions/row_reductions.h), with its arguments `args` checked:
// each at its default unless the reduction takes it.
engine::RowReduce make_reduce(const char* op, const Request& req, c10::string_view reduction, RowReduce args);
void check_topk(const char* op, int64_t k, const Request& req);
// x and y of the same shape (pdist, matched pairs); self_mask checked and returned.
Request same_shape_request(const char* op, const at::Tensor& x, const at::Tensor& y, const Opt& a, const Opt& b,
                           c10::string_view kernel, at::ArrayRef<double> scalars, bool symmetric, Dtype dtype);
at::Tensor check_self_mask(const char* op, const Opt& self_mask, const at::Tensor& x);
// Unrequested gradients come back as zeros of the right shape (empty for absent a/b).
std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor> grads4(Grads4 g, const Request& req,
                                                                  std::array<bool, 4> mask);
std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor, at::Tensor> grads5(Grads5 g, const Request& req,
                                                                              const at::Tensor& v,
                                                                              std::array<bool, 5> mask);

using Back4 = std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor>;
using Back5 = std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor, at::Tensor>;

// Each impl's parameter list is its operator's row in ops/core_ops.h.
template <class E>
struct Impls {
  static at::Tensor dense(TP_CORE_IMPL_ARGS(dense)) {
    return E::dense(make_request("_dense", x, y, a, b, kernel, scalars, symmetric, transposed, dtype));
  }
  static Back4 dense_backward(TP_CORE_IMPL_ARGS(dense_backward)) {
    auto req = make_request("_dense_backward", x, y, a, b, kernel, scalars, symmetric, transposed, dtype);
    check_grad("_dense_backward", grad, req, {req.batch(), req.rows(), req.cols()});
    return grads4(E::dense_backward(grad.contiguous(), req, output_mask), req, output_mask);
  }
  static at::Tensor matmul(TP_CORE_IMPL_ARGS(matmul)) {
    auto req = make_request("_matmul", x, y, a, b, kernel, scalars, symmetric, transposed, dtype);
    check_v("_matmul", v, req);
    return E::matmul(req, v.contiguous());
  }
  static Back5 matmul_backward(TP_CORE_IMPL_ARGS(matmul_backward)) {
    auto req = make_request("_matmul_backward", x, y, a, b, kernel, scalars, symmetric, transposed, dtype);
    check_v("_matmul_backward", v, req);
    check_grad("_matmul_backward", grad, req, {req.batch(), req.rows(), v.size(2)});
    return grads5(E::matmul_backward(grad.contiguous(), req, v.contiguous(), output_mask), req, v, output_mask);
  }
  static at::Tensor row_reduce(TP_CORE_IMPL_ARGS(row_reduce)) {
    auto req = make_request("_row_reduce", x, y, a, b, kernel, scalars, symmetric, transposed, dtype);
    RowReduce args;
    TP_ROW_REDUCE_SET_FIELDS(args)
    return E::row_reduce(req, make_reduce("_row_reduce", req, reduction, args));
  }
  static Back5 row_reduce_backward(TP_CORE_IMPL_ARGS(row_reduce_backward)) {
    const char* op = "_row_reduce_backward";
    auto req = make_request(op, x, y, a, b, kernel, scalars, symmetric, transposed, dtype);
    // the arguments of the differentiable reductions (the sum takes none)
    RowReduce args;
    args.scale = scale;
    args.weight = weight.value_or(at::Tensor());
    const auto r = make_reduce(op, req, reduction, args);
    TORCH_CHECK_VALUE(engine::row_reduction_differentiable(r.kind), "torchpair.", op, ": reduction \"", reduction,
                      "\" is not differentiable");
    check_grad(op, grad, req, {req.batch(), req.rows()});
    check_grad(op, result, req, {req.batch(), req.rows()});
    const at::Tensor w = weight.has_value() ? *weight : at::Tensor();
    return grads5(E::row_reduce_backward(grad.contiguous(), req, r, result.contiguous(), output_mask), req, w,
                  output_mask);
  }
  static std::tuple<at::Tensor, at::Tensor> topk(TP_CORE_IMPL_ARGS(topk)) {
    auto req = make_request("_topk", x, y, a, b, kernel, scalars, symmetric, transposed, dtype);
    check_topk("_topk", k, req);
    return E::topk(req, k, largest, nan_first);
  }
  static std::tuple<at::Tensor, at::Tensor> softmax_matmul(TP_CORE_IMPL_ARGS(softmax_matmul)) {
    auto req = make_request("_softmax_matmul", x, y, a, b, kernel, scalars, symmetric, transposed, dtype);
    check_v("_softmax_matmul", v, req);
    return E::softmax_matmul(req, v.contiguous());
  }
  static Back5 softmax_matmul_backward(TP_CORE_IMPL_ARGS(softmax_matmul_backward)) {
    const char* op = "_softmax_matmul_backward";
    auto req = make_request(op, x, y, a, b, kernel, scalars, symmetric, transposed, dtype);
    check_v(op, v, req);
    check_grad(op, grad, req, {req.batch(), req.rows(), v.size(2)});
    check_grad(op, out, req, {req.batch(), req.rows(), v.size(2)});
    check_grad(op, lse, req, {req.batch(), req.rows()});
    return grads5(E::softmax_matmul_backward(grad.contiguous(), req, v.contiguous(), out.contiguous(),
                                             lse.contiguous(), output_mask),
                  req, v, output_mask);
  }
  static at::Tensor pdist(TP_CORE_IMPL_ARGS(pdist)) {
    return E::pdist(same_shape_request("_pdist", x, y, a, b, kernel, scalars, symmetric, dtype));
  }
  static Back4 pdist_backward(TP_CORE_IMPL_ARGS(pdist_backward)) {
    auto req = same_shape_request("_pdist_backward", x, y, a, b, kernel, scalars, symmetric, dtype);
    const int64_t n = req.x.size(1);
    check_grad("_pdist_backward", grad, req, {req.batch(), n * (n - 1) / 2});
    return grads4(E::pdist_backward(grad.contiguous(), req, output_mask), req, output_mask);
  }
  static at::Tensor paired(TP_CORE_IMPL_ARGS(paired)) {
    auto req = same_shape_request("_paired", x, y, a, b, kernel, scalars, false, dtype);
    return E::paired(req, check_self_mask("_paired", self_mask, x));
  }
  static Back4 paired_backward(TP_CORE_IMPL_ARGS(paired_backward)) {
    auto req = same_shape_request("_paired_backward", x, y, a, b, kernel, scalars, false, dtype);
    const at::Tensor m = check_self_mask("_paired_backward", self_mask, x);
    check_grad("_paired_backward", grad, req, {req.batch(), req.rows()});
    return grads4(E::paired_backward(grad, req, m), req, output_mask);
  }
};

// Registers E's impls for every core operator it implements.
template <class E>
void register_core_impls(torch::Library& m) {
  using K = Impls<E>;
  m.impl("_dense", &K::dense);
  m.impl("_dense_backward", &K::dense_backward);
  m.impl("_matmul", &K::matmul);
  m.impl("_matmul_backward", &K::matmul_backward);
  m.impl("_row_reduce", &K::row_reduce);
  m.impl("_row_reduce_backward", &K::row_reduce_backward);
  m.impl("_topk", &K::topk);
  m.impl("_softmax_matmul", &K::softmax_matmul);
  m.impl("_softmax_matmul_backward", &K::softmax_matmul_backward);
  m.impl("_pdist", &K::pdist);
  m.impl("_pdist_backward", &K::pdist_backward);
  if constexpr (E::kPaired) {
    m.impl("_paired", &K::paired);
    m.impl("_paired_backward", &K::paired_backward);
  }
}

}  // namespace tp::ops::core
