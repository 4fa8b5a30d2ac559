#pragma once
// The core operators, declared once.
//
// Each core operator is one row of TP_CORE_OPS and one argument list TP_CORE_ARGS_<id>.
// Everything that restates an operator's signature is generated from them:
//   - its schema string (schemas.cpp defines every row),
//   - its typed dispatcher call `core_op::<id>::call(...)`, an overload taking the engine
//     operands and arguments from an ops::Core, and `call_below_autograd`,
//   - the signature of its backend impl (`TP_CORE_IMPL_ARGS(id)` in impls.h),
//   - its C++ autograd (autograd.cpp: TP_CORE_AUTOGRAD rows; the forward saves every tensor
//     argument, the non-tensor arguments and the outputs listed in TP_CORE_SAVED_<id>; the
//     backward calls the backward operator with the mask of the inputs that need a gradient,
//     TP_CORE_DIFF_<id>, and returns those gradients at their argument positions),
//   - its autocast impl (autocast.cpp: TP_CORE_AUTOCAST rows).
// The fake impls (torchpair/_meta.py) are Python and restate the argument order.
//
// An argument is ARG(name, C++ type, schema type, schema default, source): source c for a
// field of ops::Core (the engine operands and arguments, by the same name), p for the
// others (a call from a Core takes them as parameters). A list takes two macros:
// FIRST for its first argument and ARG for the others, so that each expansion can write a
// comma-separated list without a leading comma. C++ types are single tokens (aliases below)
// because they pass through macro arguments.
#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>

#include <array>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "reductions/row_reductions.h"

namespace tp::ops::core_op {

using CT = const at::Tensor&;
using CO = const std::optional<at::Tensor>&;
using SV = c10::string_view;
using AR = at::ArrayRef<double>;
using Dtype = std::optional<at::ScalarType>;
using Mask4 = std::array<bool, 4>;
using Mask5 = std::array<bool, 5>;
using Tensor1 = at::Tensor;
using Tensor2 = std::tuple<at::Tensor, at::Tensor>;
using Tensor4 = std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor>;
using Tensor5 = std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor, at::Tensor>;

}  // namespace tp::ops::core_op

namespace tp::ops {
// Engine operands and arguments as the catalog prepared them (see catalog/prepare.h).
struct Core {
  at::Tensor x, y;                  // [B, n, d], [B, m, d]
  std::optional<at::Tensor> a, b;   // [B, n], [B, m]
  std::string kernel;
  std::vector<double> scalars;
  bool symmetric = false;
  bool transposed = false;          // the operator is K^T
  std::optional<at::ScalarType> dtype;  // tile value dtype (None: x's dtype)
};
}  // namespace tp::ops

// ---- argument groups ------------------------------------------------------------------
// Engine operands as the catalog prepared them: x [B, n, d], y [B, m, d], side features
// a [B, n], b [B, m].
#define TP_CORE_OPERANDS(FIRST, ARG)       \
  FIRST(x, CT, "Tensor", "", c)          \
  ARG(y, CT, "Tensor", "", c)            \
  ARG(a, CO, "Tensor?", "", c)           \
  ARG(b, CO, "Tensor?", "", c)
// The engine kernel id and its resolved scalars; symmetric: y is x; transposed: the
// operator is K^T (its rows are y's).
#define TP_CORE_ENGINE(ARG)                \
  ARG(kernel, SV, "str", "", c)          \
  ARG(scalars, AR, "float[]", "", c)     \
  ARG(symmetric, bool, "bool", "", c)    \
  ARG(transposed, bool, "bool", "", c)
// The tile value (and result) dtype; None means x's dtype (floating kernels). Backward
// operators take it without a default.
#define TP_CORE_DTYPE(ARG) ARG(dtype, Dtype, "ScalarType?", "=None", c)
#define TP_CORE_DTYPE_B(ARG) ARG(dtype, Dtype, "ScalarType?", "", c)
#define TP_CORE_GRAD(FIRST) FIRST(grad, CT, "Tensor", "", p)

// ---- argument lists ---------------------------------------------------------------------
#define TP_CORE_ARGS_dense(FIRST, ARG) TP_CORE_OPERANDS(FIRST, ARG) TP_CORE_ENGINE(ARG) TP_CORE_DTYPE(ARG)
#define TP_CORE_ARGS_dense_backward(FIRST, ARG) \
  TP_CORE_GRAD(FIRST) TP_CORE_OPERANDS(ARG, ARG) TP_CORE_ENGINE(ARG) TP_CORE_DTYPE_B(ARG) ARG(output_mask, Mask4, "bool[4]", "", p)

#define TP_CORE_ARGS_matmul(FIRST, ARG) \
  TP_CORE_OPERANDS(FIRST, ARG) ARG(v, CT, "Tensor", "", p) TP_CORE_ENGINE(ARG) TP_CORE_DTYPE(ARG)
#define TP_CORE_ARGS_matmul_backward(FIRST, ARG)                                                     \
  TP_CORE_GRAD(FIRST) TP_CORE_OPERANDS(ARG, ARG) ARG(v, CT, "Tensor", "", p) TP_CORE_ENGINE(ARG) TP_CORE_DTYPE_B(ARG) \
  ARG(output_mask, Mask5, "bool[5]", "", p)

// reduction over the operator's rows, by name, and the reductions' arguments: one table,
// reductions/row_reductions.h (TP_ROW_REDUCTIONS, TP_ROW_REDUCE_ARGS)
#define TP_CORE_ARGS_row_reduce(FIRST, ARG)                                                  \
  TP_CORE_OPERANDS(FIRST, ARG) ARG(reduction, SV, "str", "", p) TP_CORE_ENGINE(ARG) TP_CORE_DTYPE(ARG)       \
  TP_ROW_REDUCE_CORE_ARGS(ARG)
#define TP_CORE_ARGS_row_reduce_backward(FIRST, ARG)                                             \
  TP_CORE_GRAD(FIRST) TP_CORE_OPERANDS(ARG, ARG) ARG(reduction, SV, "str", "", p) ARG(result, CT, "Tensor", "", p) \
  TP_CORE_ENGINE(ARG) TP_CORE_DTYPE_B(ARG) ARG(scale, double, "float", "", p) ARG(weight, CO, "Tensor?", "", p)   \
  ARG(output_mask, Mask5, "bool[5]", "", p)

// k best per row (ties: lower column; nan_first: NaN ranks first). Not differentiable:
// the public operator differentiates the values through _paired.
#define TP_CORE_ARGS_topk(FIRST, ARG)                                                        \
  TP_CORE_OPERANDS(FIRST, ARG) ARG(k, int64_t, "int", "", p) ARG(largest, bool, "bool", "", p)         \
  ARG(nan_first, bool, "bool", "", p) TP_CORE_ENGINE(ARG) TP_CORE_DTYPE(ARG)

// out_r = sum_c softmax_c(K_rc) v_c, and the rows' logsumexp (saved for backward)
#define TP_CORE_ARGS_softmax_matmul(FIRST, ARG) \
  TP_CORE_OPERANDS(FIRST, ARG) ARG(v, CT, "Tensor", "", p) TP_CORE_ENGINE(ARG) TP_CORE_DTYPE(ARG)
#define TP_CORE_ARGS_softmax_matmul_backward(FIRST, ARG)                                              \
  TP_CORE_GRAD(FIRST) TP_CORE_OPERANDS(ARG, ARG) ARG(v, CT, "Tensor", "", p) ARG(out, CT, "Tensor", "", p)            \
  ARG(lse, CT, "Tensor", "", p) TP_CORE_ENGINE(ARG) TP_CORE_DTYPE_B(ARG) ARG(output_mask, Mask5, "bool[5]", "", p)

// value_p = K(x_p, y_p) for matched rows x, y [B, P, d]; self_mask marks exact self pairs
#define TP_CORE_ARGS_paired(FIRST, ARG)                                                         \
  TP_CORE_OPERANDS(FIRST, ARG) ARG(self_mask, CO, "Tensor?", "", p) ARG(kernel, SV, "str", "", c)          \
  ARG(scalars, AR, "float[]", "", c) TP_CORE_DTYPE(ARG)
#define TP_CORE_ARGS_paired_backward(FIRST, ARG)                                               \
  TP_CORE_GRAD(FIRST) TP_CORE_OPERANDS(ARG, ARG) ARG(self_mask, CO, "Tensor?", "", p) ARG(kernel, SV, "str", "", c) \
  ARG(scalars, AR, "float[]", "", c) TP_CORE_DTYPE_B(ARG) ARG(output_mask, Mask4, "bool[4]", "", p)

// K(x_i, y_j) for i < j, [B, n(n-1)/2]; x and y have the same shape (y is usually x)
#define TP_CORE_ARGS_pdist(FIRST, ARG)                                                      \
  TP_CORE_OPERANDS(FIRST, ARG) ARG(kernel, SV, "str", "", c) ARG(scalars, AR, "float[]", "", c)         \
  ARG(symmetric, bool, "bool", "", c) TP_CORE_DTYPE(ARG)
#define TP_CORE_ARGS_pdist_backward(FIRST, ARG)                                                \
  TP_CORE_GRAD(FIRST) TP_CORE_OPERANDS(ARG, ARG) ARG(kernel, SV, "str", "", c) ARG(scalars, AR, "float[]", "", c) \
  ARG(symmetric, bool, "bool", "", c) TP_CORE_DTYPE_B(ARG) ARG(output_mask, Mask4, "bool[4]", "", p)

// ---- the operators ------------------------------------------------------------------------
// X(id, C++ return type, schema returns); the schema name is "_<id>".
#define TP_CORE_OPS(X)                                                     \
  X(dense, Tensor1, "Tensor")                                              \
  X(dense_backward, Tensor4, "(Tensor, Tensor, Tensor, Tensor)")           \
  X(matmul, Tensor1, "Tensor")                                             \
  X(matmul_backward, Tensor5, "(Tensor, Tensor, Tensor, Tensor, Tensor)")  \
  X(row_reduce, Tensor1, "Tensor")                                         \
  X(row_reduce_backward, Tensor5, "(Tensor, Tensor, Tensor, Tensor, Tensor)") \
  X(topk, Tensor2, "(Tensor, Tensor)")                                     \
  X(softmax_matmul, Tensor2, "(Tensor, Tensor)")                           \
  X(softmax_matmul_backward, Tensor5, "(Tensor, Tensor, Tensor, Tensor, Tensor)") \
  X(paired, Tensor1, "Tensor")                                             \
  X(paired_backward, Tensor4, "(Tensor, Tensor, Tensor, Tensor)")          \
  X(pdist, Tensor1, "Tensor")                                              \
  X(pdist_backward, Tensor4, "(Tensor, Tensor, Tensor, Tensor)")

// ---- autograd -------------------------------------------------------------------------------
// X(id, backward id, records a graph when): the condition is an expression of the forward's
// argument names (besides "an operand requires grad and grad mode is on").
// TP_CORE_DIFF_<id>(D): the differentiable inputs, in the order of the backward's mask and
// results. TP_CORE_SAVED_<id>(O): O(name, output index) outputs the backward takes by name.
// TP_CORE_NONDIFF_<id>(O): O(name, output index) outputs marked non-differentiable.
#define TP_CORE_AUTOGRAD(X)                                       \
  X(dense, dense_backward, true)                                  \
  X(matmul, matmul_backward, true)                                \
  X(row_reduce, row_reduce_backward, ::tp::engine::row_reduction_differentiable(reduction)) \
  X(softmax_matmul, softmax_matmul_backward, true)                \
  X(paired, paired_backward, true)                                \
  X(pdist, pdist_backward, true)
// Operators with no derivative at all: their outputs carry no graph (like argmax).
#define TP_CORE_NOT_DIFFERENTIABLE(X) X(topk)

#define TP_CORE_DIFF_dense(D) D(x) D(y) D(a) D(b)
#define TP_CORE_SAVED_dense(O)
#define TP_CORE_NONDIFF_dense(O)
#define TP_CORE_DIFF_matmul(D) D(x) D(y) D(a) D(b) D(v)
#define TP_CORE_SAVED_matmul(O)
#define TP_CORE_NONDIFF_matmul(O)
// a reduction the table marks not differentiable (an integer result) records no graph,
// whatever requires grad (the condition above)
#define TP_CORE_DIFF_row_reduce(D) D(x) D(y) D(a) D(b) D(weight)
#define TP_CORE_SAVED_row_reduce(O) O(result, 0)
#define TP_CORE_NONDIFF_row_reduce(O)
#define TP_CORE_DIFF_softmax_matmul(D) D(x) D(y) D(a) D(b) D(v)
#define TP_CORE_SAVED_softmax_matmul(O) O(out, 0) O(lse, 1)
#define TP_CORE_NONDIFF_softmax_matmul(O) O(lse, 1)
// self_mask is bool, it never needs a gradient
#define TP_CORE_DIFF_paired(D) D(x) D(y) D(a) D(b)
#define TP_CORE_SAVED_paired(O)
#define TP_CORE_NONDIFF_paired(O)
#define TP_CORE_DIFF_pdist(D) D(x) D(y) D(a) D(b)
#define TP_CORE_SAVED_pdist(O)
#define TP_CORE_NONDIFF_pdist(O)

// ---- autocast -------------------------------------------------------------------------------
// X(id): under CPU or CUDA autocast, float16/bfloat16 tensor arguments are promoted to
// float32 and the operator runs with autocast off below it (autocast.cpp). Backward
// operators are reached only from autograd, below autocast.
#define TP_CORE_AUTOCAST(X) X(dense) X(matmul) X(row_reduce) X(topk) X(softmax_matmul) X(paired) X(pdist)

// ---- expansions -------------------------------------------------------------------------------
#define TP_ARG_SCHEMA0(name, T, type, dflt, src) type " " #name dflt
#define TP_ARG_SCHEMA(name, T, type, dflt, src) ", " type " " #name dflt
#define TP_ARG_TYPE0(name, T, type, dflt, src) T
#define TP_ARG_TYPE(name, T, type, dflt, src) , T
#define TP_ARG_DECL0(name, T, type, dflt, src) T name
#define TP_ARG_DECL(name, T, type, dflt, src) , T name
#define TP_ARG_NAME0(name, T, type, dflt, src) name
#define TP_ARG_NAME(name, T, type, dflt, src) , name

// A call from a Core: the fields come from it, the other arguments are parameters.
#define TP_ARG_EXTRA(name, T, type, dflt, src) TP_ARG_EXTRA_##src(name, T)
#define TP_ARG_EXTRA_c(name, T)
#define TP_ARG_EXTRA_p(name, T) , T name
#define TP_ARG_FROM0(name, T, type, dflt, src) TP_ARG_FROM_##src(name)
#define TP_ARG_FROM(name, T, type, dflt, src) , TP_ARG_FROM_##src(name)
#define TP_ARG_FROM_c(name) c.name
#define TP_ARG_FROM_p(name) name

// "T1 name1, T2 name2, ..." of operator `id` (the parameter list of its impls).
#define TP_CORE_IMPL_ARGS(id) TP_CORE_ARGS_##id(TP_ARG_DECL0, TP_ARG_DECL)
// "name1, name2, ..." of operator `id`.
#define TP_CORE_ARG_NAMES(id) TP_CORE_ARGS_##id(TP_ARG_NAME0, TP_ARG_NAME)

namespace tp::ops::core_op {

template <typename Sig>
c10::TypedOperatorHandle<Sig> typed_handle(const char* qualified_name) {
  return c10::Dispatcher::singleton().findSchemaOrThrow(qualified_name, "").typed<Sig>();
}

// One struct per operator: name, schema, signature, typed calls through the dispatcher.
#define TP_CORE_OP_STRUCT(id, Ret_, returns)                                                    \
  struct id {                                                                                   \
    using Ret = Ret_;                                                                           \
    using Sig = Ret(TP_CORE_ARGS_##id(TP_ARG_TYPE0, TP_ARG_TYPE));                              \
    static constexpr const char* qualified_name = "torchpair::_" #id;                           \
    static constexpr const char* schema =                                                       \
        "_" #id "(" TP_CORE_ARGS_##id(TP_ARG_SCHEMA0, TP_ARG_SCHEMA) ") -> " returns;           \
    static Ret call(TP_CORE_IMPL_ARGS(id)) {                                                  \
      static auto op = typed_handle<Sig>(qualified_name);                                       \
      return op.call(TP_CORE_ARG_NAMES(id));                                                    \
    }                                                                                           \
    /* the same, the engine operands and arguments taken from a Core */                         \
    static Ret call(const Core& c TP_CORE_ARGS_##id(TP_ARG_EXTRA, TP_ARG_EXTRA)) {              \
      return call(TP_CORE_ARGS_##id(TP_ARG_FROM0, TP_ARG_FROM));                                \
    }                                                                                           \
    /* the impl below the autograd key (CPU, generic, fake, ...) */                             \
    static Ret call_below_autograd(TP_CORE_IMPL_ARGS(id)) {                                   \
      at::AutoDispatchBelowADInplaceOrView guard;                                               \
      return call(TP_CORE_ARG_NAMES(id));                                                       \
    }                                                                                           \
  };
TP_CORE_OPS(TP_CORE_OP_STRUCT)
#undef TP_CORE_OP_STRUCT

}  // namespace tp::ops::core_op

