#pragma once
// The torchpair operators, callable from C++ through the dispatcher (so autograd, autocast
// and device dispatch apply exactly as for a Python call). Schemas: ops/schemas.cpp.
//
// Public operators (CompositeImplicitAutograd: validation + metric preparation, then core
// operators): pairwise, lazy_matmul, lazy_reduce, lazy_topk, lazy_softmax_matmul, and the
// set-level knn, hausdorff, chamfer, mmd, energy_distance.
// Core operators (one table, ops/core_ops.h: schema, typed call, C++ autograd, autocast;
// backend impls in ops/impls.h; fake impls in torchpair/_meta.py): _dense, _matmul,
// _row_reduce, _topk, _softmax_matmul, _paired, _pdist and their _backward twins. They take
// engine operands (x, y, side features a, b), an engine kernel id and its resolved scalars.
// The functions below call them from a Core (core_op::<id>::call takes every argument).
#include <ATen/ATen.h>

#include <array>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "ops/core_ops.h"
#include "torchpair/options.h"
#include "torchpair/params.h"

// ", std::optional<double> gamma, ..., const std::optional<at::Tensor>& w, ..."
#define TP_SCALAR_PARAM_DECL(name) , std::optional<double> name
#define TP_TENSOR_PARAM_DECL(name) , const std::optional<at::Tensor>& name
#define TP_STRING_PARAM_DECL(name) , std::optional<c10::string_view> name
#define TP_PARAM_DECLS                                                                         \
  TORCHPAIR_SCALAR_PARAMS(TP_SCALAR_PARAM_DECL) TORCHPAIR_TENSOR_PARAMS(TP_TENSOR_PARAM_DECL) \
  TORCHPAIR_STRING_PARAMS(TP_STRING_PARAM_DECL)
// ", std::optional<double>, ..., const std::optional<at::Tensor>&, ..."
#define TP_SCALAR_PARAM_TYPE(name) , std::optional<double>
#define TP_TENSOR_PARAM_TYPE(name) , const std::optional<at::Tensor>&
#define TP_STRING_PARAM_TYPE(name) , std::optional<c10::string_view>
#define TP_PARAM_TYPES                                                                         \
  TORCHPAIR_SCALAR_PARAMS(TP_SCALAR_PARAM_TYPE) TORCHPAIR_TENSOR_PARAMS(TP_TENSOR_PARAM_TYPE) \
  TORCHPAIR_STRING_PARAMS(TP_STRING_PARAM_TYPE)
// ", o.gamma, ..., o.w, ..." for a ComparisonOptions named o in scope
#define TP_PARAM_FIELD(name) , o.name
#define TP_STRING_PARAM_FIELD(name) , tp::ops::string_view_of(o.name)
#define TP_PARAM_FIELDS                                                           \
  TORCHPAIR_SCALAR_PARAMS(TP_PARAM_FIELD) TORCHPAIR_TENSOR_PARAMS(TP_PARAM_FIELD) \
  TORCHPAIR_STRING_PARAMS(TP_STRING_PARAM_FIELD)
// Packs the named arguments of a TP_PARAM_DECLS function into a ComparisonOptions.
#define TP_PARAM_ASSIGN(name) opts.name = name;
#define TP_STRING_PARAM_ASSIGN(name) \
  if (name.has_value()) opts.name = std::string(*name);
#define TP_PACK_PARAMS(opts)                 \
  tp::ComparisonOptions opts;                \
  TORCHPAIR_SCALAR_PARAMS(TP_PARAM_ASSIGN)   \
  TORCHPAIR_TENSOR_PARAMS(TP_PARAM_ASSIGN)   \
  TORCHPAIR_STRING_PARAMS(TP_STRING_PARAM_ASSIGN)

namespace tp::ops {

inline std::optional<c10::string_view> string_view_of(const std::optional<std::string>& s) {
  if (!s.has_value()) return std::nullopt;
  return c10::string_view(*s);
}

// ", *, float? gamma=None, ..., Tensor? w=None, ..." for schema strings.
std::string params_schema();

// ---- public operators -------------------------------------------------------------
at::Tensor pairwise(const at::Tensor& x, const std::optional<at::Tensor>& y, const std::string& metric,
                    const ComparisonOptions& o);
at::Tensor lazy_matmul(const at::Tensor& x, const std::optional<at::Tensor>& y, const at::Tensor& v,
                       const std::string& metric, bool transposed, const ComparisonOptions& o);
// reduction: "mean" or a row reduction, then the row reductions' arguments in table order
// (reductions/row_reductions.h: TP_ROW_REDUCTIONS, TP_ROW_REDUCE_ARGS)
at::Tensor lazy_reduce(const at::Tensor& x, const std::optional<at::Tensor>& y, const std::string& metric,
                       const std::string& reduction, std::optional<int64_t> dim, bool transposed,
                       const ComparisonOptions& o TP_ROW_REDUCE_PUBLIC_DECLS_DEFAULT);
inline at::Tensor lazy_sum(const at::Tensor& x, const std::optional<at::Tensor>& y, const std::string& metric,
                           std::optional<int64_t> dim, bool transposed, const ComparisonOptions& o) {
  return lazy_reduce(x, y, metric, "sum", dim, transposed, o);
}
// nan: "largest" (torch.topk) or "propagate" (torch.min/max)
std::tuple<at::Tensor, at::Tensor> lazy_topk(const at::Tensor& x, const std::optional<at::Tensor>& y,
                                             const std::string& metric, int64_t k, int64_t dim, bool largest,
                                             bool sorted, bool transposed, const std::string& nan,
                                             const ComparisonOptions& o);
at::Tensor lazy_softmax_matmul(const at::Tensor& x, const std::optional<at::Tensor>& y, const at::Tensor& v,
                               const std::string& metric, int64_t dim, bool transposed, const ComparisonOptions& o);
std::tuple<at::Tensor, at::Tensor> knn(const at::Tensor& x, const std::optional<at::Tensor>& y, int64_t k,
                                       const std::string& metric, const ComparisonOptions& o);
at::Tensor hausdorff(const at::Tensor& x, const at::Tensor& y, const std::string& metric, bool directed,
                     const ComparisonOptions& o);
at::Tensor chamfer(const at::Tensor& x, const at::Tensor& y, const std::string& metric, const std::string& reduction,
                   const ComparisonOptions& o);
at::Tensor mmd(const at::Tensor& x, const at::Tensor& y, const std::string& metric, bool unbiased,
               const ComparisonOptions& o);
at::Tensor energy_distance(const at::Tensor& x, const at::Tensor& y, const std::string& metric,
                           const ComparisonOptions& o);
std::string catalog_json();
std::string build_info_json();
// Condensed upper triangle of pairwise(x, None) in scipy's order: [..., N(N-1)/2].
at::Tensor pdist(const at::Tensor& x, const std::string& metric, const ComparisonOptions& o);
// exact optimal transport (ops/transport.cpp): (plan, cost, u, v, status)
std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor, at::Tensor> emd(
    const std::optional<at::Tensor>& a, const std::optional<at::Tensor>& b, const at::Tensor& M,
    std::optional<int64_t> max_iter, bool normalize, std::optional<double> mass_tol);
// the debiased Sinkhorn divergence (ops/sinkhorn.cpp):
// (value, err, niter, f_ba, g_ab, f_aa, g_bb)
std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor, at::Tensor, at::Tensor, at::Tensor> sinkhorn_divergence(
    const at::Tensor& x, const at::Tensor& y, const std::optional<at::Tensor>& a, const std::optional<at::Tensor>& b,
    double exponent, double blur, double scaling, std::optional<double> reach,
    const std::optional<std::string>& metric, std::optional<double> diameter, bool debias, std::optional<double> tol,
    int64_t max_iter, bool unrolled, bool eager, std::optional<double> mass_tol, bool warn,
    const ComparisonOptions& o);

// K(x_i, x_i) for every row of x [..., N, D], computed as exact self-comparisons (the
// diagonal of pairwise(x, None)), differentiable. `op` names the caller in messages.
at::Tensor self_values(const char* op, const at::Tensor& x, const std::string& metric, const ComparisonOptions& o);
// "distance" or "similarity" (the catalog's kind of a metric or alias).
const std::string& metric_kind(const std::string& metric, const char* op);

// ---- core operators -----------------------------------------------------------------
// Called from a Core (ops/core_ops.h: the engine operands and arguments); the remaining
// arguments follow in schema order, e.g. matmul(c, v).
template <class... A>
at::Tensor dense(const Core& c, A&&... args) {
  return core_op::dense::call(c, std::forward<A>(args)...);
}
template <class... A>
at::Tensor matmul(const Core& c, A&&... args) {
  return core_op::matmul::call(c, std::forward<A>(args)...);
}
// The reduction named `reduction` with the arguments held by `r` (its kind is unused).
inline at::Tensor row_reduce(const Core& c, c10::string_view reduction, const engine::RowReduce& r) {
  return core_op::row_reduce::call(c, reduction TP_ROW_REDUCE_FIELD_ARGS(r));
}
template <class... A>
std::tuple<at::Tensor, at::Tensor> topk(const Core& c, A&&... args) {
  return core_op::topk::call(c, std::forward<A>(args)...);
}
template <class... A>
std::tuple<at::Tensor, at::Tensor> softmax_matmul(const Core& c, A&&... args) {
  return core_op::softmax_matmul::call(c, std::forward<A>(args)...);
}
// K(x_p, y_p) for matched rows [B, P, d]; self_mask [B, P] marks exact self-comparisons.
template <class... A>
at::Tensor paired(A&&... args) {
  return core_op::paired::call(std::forward<A>(args)...);
}
// K(x_i, y_j) for i < j of engine operands [B, n, d] (c.transposed must be false): [B, n(n-1)/2].
at::Tensor condensed(const Core& c);

}  // namespace tp::ops
