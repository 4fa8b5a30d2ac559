#pragma once
// The torchpair operators, callable from C++ through the dispatcher (so autograd, autocast
// and device dispatch apply exactly as for a Python call). Schemas: ops/schemas.cpp.
//
// Public operators (CompositeImplicitAutograd: validation + metric preparation, then a core
// operator):  pairwise, lazy_matmul, lazy_sum.
// Core operators (CPU kernel, device-generic kernel, C++ autograd, autocast, fake kernel):
//   _dense, _matmul, _row_sum and their _backward twins. They take engine operands
//   (x, y, side features a, b), an engine kernel id and its resolved scalars.
#include <ATen/ATen.h>

#include <array>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "torchpair/options.h"
#include "torchpair/params.h"

// ", std::optional<double> gamma, ..., const std::optional<at::Tensor>& w, ..."
#define TP_SCALAR_PARAM_DECL(name) , std::optional<double> name
#define TP_TENSOR_PARAM_DECL(name) , const std::optional<at::Tensor>& name
#define TP_PARAM_DECLS TORCHPAIR_SCALAR_PARAMS(TP_SCALAR_PARAM_DECL) TORCHPAIR_TENSOR_PARAMS(TP_TENSOR_PARAM_DECL)
// ", std::optional<double>, ..., const std::optional<at::Tensor>&, ..."
#define TP_SCALAR_PARAM_TYPE(name) , std::optional<double>
#define TP_TENSOR_PARAM_TYPE(name) , const std::optional<at::Tensor>&
#define TP_PARAM_TYPES TORCHPAIR_SCALAR_PARAMS(TP_SCALAR_PARAM_TYPE) TORCHPAIR_TENSOR_PARAMS(TP_TENSOR_PARAM_TYPE)
// ", o.gamma, ..., o.w, ..." for a ComparisonOptions named o in scope
#define TP_PARAM_FIELD(name) , o.name
#define TP_PARAM_FIELDS TORCHPAIR_SCALAR_PARAMS(TP_PARAM_FIELD) TORCHPAIR_TENSOR_PARAMS(TP_PARAM_FIELD)
// Packs the named arguments of a TP_PARAM_DECLS function into a ComparisonOptions.
#define TP_PARAM_ASSIGN(name) opts.name = name;
#define TP_PACK_PARAMS(opts)                 \
  tp::ComparisonOptions opts;                \
  TORCHPAIR_SCALAR_PARAMS(TP_PARAM_ASSIGN)   \
  TORCHPAIR_TENSOR_PARAMS(TP_PARAM_ASSIGN)

namespace tp::ops {

// ", *, float? gamma=None, ..., Tensor? w=None, ..." for schema strings.
std::string params_schema();

// ---- public operators -------------------------------------------------------------
at::Tensor pairwise(const at::Tensor& x, const std::optional<at::Tensor>& y, const std::string& metric,
                    const ComparisonOptions& o);
at::Tensor lazy_matmul(const at::Tensor& x, const std::optional<at::Tensor>& y, const at::Tensor& v,
                       const std::string& metric, bool transpose, const ComparisonOptions& o);
at::Tensor lazy_sum(const at::Tensor& x, const std::optional<at::Tensor>& y, const std::string& metric,
                    std::optional<int64_t> dim, bool transpose, const ComparisonOptions& o);
std::string catalog_json();
std::string build_info_json();

// ---- core operators -----------------------------------------------------------------
// Engine operands as the catalog prepared them (see catalog/prepare.h).
struct Core {
  at::Tensor x, y;                  // [B, n, d], [B, m, d]
  std::optional<at::Tensor> a, b;   // [B, n], [B, m]
  std::string kernel;
  std::vector<double> scalars;
  bool symmetric = false;
  bool transpose = false;           // the operator is K^T
  std::optional<at::ScalarType> dtype;  // tile value dtype (None: x's dtype)
};

at::Tensor dense(const Core& c);
at::Tensor matmul(const Core& c, const at::Tensor& v);
at::Tensor row_sum(const Core& c);

}  // namespace tp::ops
