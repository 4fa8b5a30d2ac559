#pragma once
// The row reductions of the _row_reduce operator, declared once.
//
// TP_ROW_REDUCTIONS has one row per reduction, TP_ROW_REDUCE_ARGS one row per argument a
// reduction may take beyond the operator's own. Everything that names a row reduction reads
// them:
//   - the enum RowReduction and struct RowReduce (its arguments as fields) below,
//   - name lookup, the list of valid names and "argument X applies to reduction Y only" in
//     the impl's validation (ops/impls.cpp) and the public operator (ops/composite.cpp),
//   - the result dtype (the walks, the public operator, and the fake impl through
//     row_reductions_json(), part of the _build_info() operator's JSON),
//   - whether a reduction records an autograd graph (ops/core_ops.h) and has a backward,
//   - the argument lists of the core operator (ops/core_ops.h: schema, typed call, autograd,
//     impl signature) and of the public lazy_reduce (schema, typed call, composite),
//   - the CPU and device-generic walks, which instantiate "the reduction of this row" through
//     visit_row_reduction(): one switch outside the tile loops selects a templated walk.
//
// A reduction is a struct template over the engine's row value type V (a scalar T for the
// CPU walk, a tensor of rows for the device-generic one) with
//   using Result = ...;                              V, or the type of a fixed-dtype result
//   static R start(const Result& zero, const Args& args)   the empty state (args: a RowReduce)
//   template <class Tile> void fold(Tile& tile)      folds the tile's values (reductions/tile.h)
//   Result finalize() const
// and a merge of two states (chunks, ranks). The walks fold the values
// scale * K_rc + weight_c: K itself for every reduction but the logsumexp (make_reduce
// rejects a scale or weight for a reduction that does not take them).
#include <ATen/ATen.h>

#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "reductions/logsumexp.h"
#include "reductions/sum.h"

// ---- the reductions ----------------------------------------------------------------------
// X(id, name, struct, result dtype, differentiable, takes, needs, total):
//   struct         the reduction's template (csrc/reductions/)
//   result dtype   std::nullopt: the tile value dtype; else a fixed dtype (not differentiable)
//   takes / needs  the arguments it accepts / that the public operator requires, as
//                  TP_ROW_REDUCE_ARG(name) | ... (0u: none)
//   total          how its results over disjoint column sets combine (a reduction over the
//                  whole matrix): at::sum or at::logsumexp over the last dimension
//   sum        sum_c K_rc
//   logsumexp  log sum_c exp(scale K_rc + weight_c)   (weight: log-weights of the columns)
//   count      #{c : K_rc <= threshold}              (int64; NaN never counts)
#define TP_ROW_REDUCTIONS(X)                                                                           \
  X(kSum, "sum", reductions::Sum, std::nullopt, true, 0u, 0u, at::sum)                                 \
  X(kLogSumExp, "logsumexp", reductions::LogSumExp, std::nullopt, true,                                \
    TP_ROW_REDUCE_ARG(scale) | TP_ROW_REDUCE_ARG(weight), 0u, at::logsumexp)                           \
  X(kCount, "count", reductions::Count, at::kLong, false, TP_ROW_REDUCE_ARG(threshold),                \
    TP_ROW_REDUCE_ARG(threshold), at::sum)

// ---- their arguments ---------------------------------------------------------------------
// A(M, name, C++ type, schema type, schema default, C++ default,
//   public name, public C++ type, public schema type, public schema default, public C++ default)
// The core operator takes `name` after its dtype (the default leaves every reduction
// unchanged); the public lazy_reduce takes `public name` (its default: "not given").
// M is passed through to A (see TP_ROW_REDUCE_CORE_ARGS).
//   scale      logsumexp of scale * K (finite)
//   weight     log-weights of the reduced dimension ([B, cols] in the value dtype at the core,
//              [..., L] broadcast over the batch publicly)
//   threshold  count of the entries <= threshold
#define TP_ROW_REDUCE_ARGS(A, M)                                                                        \
  A(M, scale, double, "float", "=1.0", 1.0, scale, double, "float", "=1.0", 1.0)                       \
  A(M, weight, const std::optional<at::Tensor>&, "Tensor?", "=None", {}, log_weight,                   \
    const std::optional<at::Tensor>&, "Tensor?", "=None", std::nullopt)                                \
  A(M, threshold, double, "float", "=0.0", 0.0, threshold, std::optional<double>, "float?", "=None",   \
    std::nullopt)

// The bit of an argument in a reduction's takes / needs mask.
#define TP_ROW_REDUCE_ARG(name) (1u << ::tp::engine::RowReduceArg::name)

// ---- expansions ---------------------------------------------------------------------------
// The core operator's arguments, as ops/core_ops.h lists them: ARG(name, type, schema, default, p).
#define TP_ROW_REDUCE_CORE_ARG(ARG, name, T, type, dflt, cdflt, ...) ARG(name, T, type, dflt, p)
#define TP_ROW_REDUCE_CORE_ARGS(ARG) TP_ROW_REDUCE_ARGS(TP_ROW_REDUCE_CORE_ARG, ARG)
// The public operator's: ", T pname" (a definition), with " = default" (a declaration), the
// types alone, the names alone, and the schema text.
#define TP_RR_PUBLIC_DECL(M, n, T, t, d, cd, pname, PT, ...) , PT pname
#define TP_RR_PUBLIC_DECL_DEFAULT(M, n, T, t, d, cd, pname, PT, pt, pd, pcd) , PT pname = pcd
#define TP_RR_PUBLIC_TYPE(M, n, T, t, d, cd, pname, PT, ...) , PT
#define TP_RR_PUBLIC_NAME(M, n, T, t, d, cd, pname, ...) , pname
#define TP_RR_PUBLIC_SCHEMA(M, n, T, t, d, cd, pname, PT, pt, pd, pcd) ", " pt " " #pname pd
#define TP_ROW_REDUCE_PUBLIC_DECLS TP_ROW_REDUCE_ARGS(TP_RR_PUBLIC_DECL, ~)
#define TP_ROW_REDUCE_PUBLIC_DECLS_DEFAULT TP_ROW_REDUCE_ARGS(TP_RR_PUBLIC_DECL_DEFAULT, ~)
#define TP_ROW_REDUCE_PUBLIC_TYPES TP_ROW_REDUCE_ARGS(TP_RR_PUBLIC_TYPE, ~)
#define TP_ROW_REDUCE_PUBLIC_NAMES TP_ROW_REDUCE_ARGS(TP_RR_PUBLIC_NAME, ~)
#define TP_ROW_REDUCE_PUBLIC_SCHEMA TP_ROW_REDUCE_ARGS(TP_RR_PUBLIC_SCHEMA, ~)

namespace tp::engine {

// An argument's index (its bit in a takes / needs mask).
struct RowReduceArg {
#define TP_RR_INDEX(M, name, ...) name,
  enum : unsigned { TP_ROW_REDUCE_ARGS(TP_RR_INDEX, ~) };
#undef TP_RR_INDEX
};

#define TP_RR_ENUM(id, ...) id,
enum class RowReduction : int { TP_ROW_REDUCTIONS(TP_RR_ENUM) };
#undef TP_RR_ENUM

// How an argument is held once validated: as its C++ type, a tensor argument as an
// (undefined when absent) tensor.
template <class T>
struct RowReduceStored {
  using type = std::decay_t<T>;
  static type of(const type& v) { return v; }
  static const type& arg(const type& v) { return v; }
};
template <>
struct RowReduceStored<const std::optional<at::Tensor>&> {
  using type = at::Tensor;
  static at::Tensor of(const std::optional<at::Tensor>& t) { return t.value_or(at::Tensor()); }
  static std::optional<at::Tensor> arg(const at::Tensor& t) {
    return t.defined() ? std::optional<at::Tensor>(t) : std::nullopt;
  }
};

// A reduction and its arguments (each at its default unless the reduction takes it).
struct RowReduce {
  RowReduction kind = RowReduction::kSum;
#define TP_RR_FIELD(M, name, T, schema, dflt, cdflt, ...) typename RowReduceStored<T>::type name = cdflt;
  TP_ROW_REDUCE_ARGS(TP_RR_FIELD, ~)
#undef TP_RR_FIELD
};

// r.<name> = <name> for every argument: a RowReduce from the core operator's parameters.
#define TP_RR_SET_FIELD(r, name, T, ...) r.name = ::tp::engine::RowReduceStored<T>::of(name);
#define TP_ROW_REDUCE_SET_FIELDS(r) TP_ROW_REDUCE_ARGS(TP_RR_SET_FIELD, r)
// ", r.<name>" for every argument, as the core operator takes it.
#define TP_RR_FIELD_ARG(r, name, T, ...) , ::tp::engine::RowReduceStored<T>::arg(r.name)
#define TP_ROW_REDUCE_FIELD_ARGS(r) TP_ROW_REDUCE_ARGS(TP_RR_FIELD_ARG, r)

// Whether an argument differs from its default ("was given").
inline bool row_reduce_arg_given(double v, double dflt) { return v != dflt; }
inline bool row_reduce_arg_given(const at::Tensor& t, const at::Tensor&) { return t.defined(); }
template <class T>
bool row_reduce_arg_given(const std::optional<T>& v, std::nullopt_t) {
  return v.has_value();
}

// A reduction's row of the table, as data.
struct RowReductionInfo {
  RowReduction kind;
  const char* name;
  std::optional<at::ScalarType> fixed_dtype;  // nullopt: the tile value dtype
  bool differentiable;
  unsigned takes, needs;  // argument masks (TP_ROW_REDUCE_ARG)
};

inline const std::vector<RowReductionInfo>& row_reductions() {
#define TP_RR_INFO(id, str, S, dt, diff, takes, needs, total) \
  RowReductionInfo{RowReduction::id, str, std::optional<at::ScalarType>(dt), diff, takes, needs},
  static const std::vector<RowReductionInfo> table{TP_ROW_REDUCTIONS(TP_RR_INFO)};
#undef TP_RR_INFO
  return table;
}
inline const RowReductionInfo& row_reduction_info(RowReduction kind) {
  return row_reductions().at(static_cast<size_t>(kind));
}

inline std::optional<RowReduction> row_reduction_of(c10::string_view name) {
  for (const auto& r : row_reductions())
    if (name == r.name) return r.kind;
  return std::nullopt;
}
inline const char* row_reduction_name(RowReduction kind) { return row_reduction_info(kind).name; }

// "a", "b" or "c": the quoted names of the reductions whose takes mask has `bit` (every one
// for ~0u), then `extra` (already quoted) if given.
inline std::string row_reduction_names(unsigned bit = ~0u, const char* extra = nullptr) {
  std::vector<std::string> names;
  for (const auto& r : row_reductions())
    if (bit == ~0u || (r.takes & bit)) names.push_back(std::string("\"") + r.name + "\"");
  if (extra) names.push_back(extra);
  std::string s;
  for (size_t i = 0; i < names.size(); ++i)
    s += (i == 0 ? "" : i + 1 == names.size() ? " or " : ", ") + names[i];
  return s;
}

// "reduction \"a\"" or "reductions \"a\" or \"b\"": those whose takes mask has `bit`.
inline std::string row_reductions_taking(unsigned bit) {
  size_t n = 0;
  for (const auto& r : row_reductions()) n += (r.takes & bit) ? 1 : 0;
  return (n == 1 ? "reduction " : "reductions ") + row_reduction_names(bit);
}

inline std::optional<at::ScalarType> row_reduction_fixed_dtype(RowReduction kind) {
  return row_reduction_info(kind).fixed_dtype;
}
// The result dtype of a reduction over tile values of `value_type`.
inline at::ScalarType row_reduction_dtype(RowReduction kind, at::ScalarType value_type) {
  return row_reduction_fixed_dtype(kind).value_or(value_type);
}
inline bool row_reduction_differentiable(RowReduction kind) { return row_reduction_info(kind).differentiable; }
// By name, for the autograd condition: an unknown name records a graph (the impl rejects it).
inline bool row_reduction_differentiable(c10::string_view name) {
  const auto kind = row_reduction_of(name);
  return !kind.has_value() || row_reduction_differentiable(*kind);
}
inline unsigned row_reduction_takes(RowReduction kind) { return row_reduction_info(kind).takes; }
inline unsigned row_reduction_needs(RowReduction kind) { return row_reduction_info(kind).needs; }

// The reduction of a [B, rows] tensor of results over its last dimension (results of
// disjoint column sets combined).
inline at::Tensor row_reduction_total(RowReduction kind, const at::Tensor& rows) {
  switch (kind) {
#define TP_RR_TOTAL(id, str, S, dt, diff, takes, needs, total) \
  case RowReduction::id:                                       \
    return total(rows, {-1});
    TP_ROW_REDUCTIONS(TP_RR_TOTAL)
#undef TP_RR_TOTAL
  }
  TORCH_CHECK(false, "torchpair: unknown row reduction ", static_cast<int>(kind));
}

// The table as JSON (the fake impls read the result dtypes from it): a list of
// {"name", "dtype" (null: the value dtype), "differentiable", "arguments"}.
inline std::string row_reductions_json() {
  static const char* const arg_names[] = {
#define TP_RR_ARG_NAME(M, name, ...) #name,
      TP_ROW_REDUCE_ARGS(TP_RR_ARG_NAME, ~)
#undef TP_RR_ARG_NAME
  };
  std::string s = "[";
  for (const auto& r : row_reductions()) {
    s += std::string(s.size() > 1 ? "," : "") + "{\"name\":\"" + r.name + "\",\"dtype\":";
    s += r.fixed_dtype.has_value() ? "\"" + std::string(c10::getDtypeNames(*r.fixed_dtype).first) + "\""
                                   : std::string("null");
    s += std::string(",\"differentiable\":") + (r.differentiable ? "true" : "false") + ",\"arguments\":[";
    bool first = true;
    for (size_t i = 0; i < sizeof(arg_names) / sizeof(arg_names[0]); ++i)
      if (r.takes & (1u << i)) {
        s += std::string(first ? "" : ",") + "\"" + arg_names[i] + "\"";
        first = false;
      }
    s += "]}";
  }
  return s + "]";
}

// The reduction template of a row, handed to a visitor: Tag::type<V> is the struct over V.
template <template <class> class R>
struct RowReductionTag {
  template <class V>
  using type = R<V>;
};

// f(RowReductionTag<the reduction's struct>{}): one switch, outside any loop, selects the
// walk instantiated for that reduction.
template <class F>
auto visit_row_reduction(RowReduction kind, F&& f) {
  switch (kind) {
#define TP_RR_VISIT(id, str, S, ...) \
  case RowReduction::id:             \
    return f(RowReductionTag<S>{});
    TP_ROW_REDUCTIONS(TP_RR_VISIT)
#undef TP_RR_VISIT
  }
  TORCH_CHECK(false, "torchpair: unknown row reduction ", static_cast<int>(kind));
}

}  // namespace tp::engine
