// The public operators (CompositeImplicitAutograd): argument validation with messages that
// name the argument, batch broadcasting, metric preparation (catalog), then one core
// operator. Everything here is ATen composition, so autograd, compile and export see
// through it; the C++ API (csrc/api) and the Python API both call these operators, so the
// two never compute the same thing twice.
#include <ATen/ATen.h>
#include <ATen/ExpandUtils.h>
#include <ATen/Parallel.h>
#include <torch/library.h>
#include <torch/version.h>

#include <cmath>
#include <sstream>

#include "catalog/catalog.h"
#include "cpu/consumers.h"
#include "cpu/popcount.h"
#include "ops/ops.h"

namespace tp::ops {
namespace {

using Opt = std::optional<at::Tensor>;
using SymShape = c10::SymDimVector;

// Inputs flattened to [B, n, d] / [B, m, d], plus what is needed to restore the result.
struct Flat {
  catalog::Inputs in;
  SymShape batch;
  c10::SymInt B, n, m;
  at::ScalarType result_dtype;
};

const char* dtype_name(at::ScalarType t) { return c10::toString(t); }

void check_input(const char* op, const char* name, const at::Tensor& t, const catalog::MetricInfo& info) {
  TORCH_CHECK_VALUE(t.defined(), "torchpair.", op, ": '", name, "' is undefined");
  // The layout is part of a tensor's type (as its dtype): a nested or sparse operand is a
  // TypeError. Nested tensors are tested first: they report a strided layout, and their
  // sizes are not defined.
  TORCH_CHECK_TYPE(!t.is_nested(), "torchpair.", op, ": '", name,
                   "' must be a dense (strided) tensor, got a nested tensor; pad it to one "
                   "(torch.nested.to_padded_tensor) or compare its components one by one");
  TORCH_CHECK_TYPE(t.layout() == at::kStrided, "torchpair.", op, ": '", name,
                   "' must be a dense (strided) tensor, got layout ", t.layout());
  TORCH_CHECK_VALUE(t.dim() >= 2, "torchpair.", op, ": '", name, "' must have shape [..., rows, features], got ",
                    t.dim(), " dimension(s) ", t.sym_sizes());
  const auto st = t.scalar_type();
  if (info.family == catalog::Family::kBoolean) {  // bool, integer or floating (nonzero = True / values compared)
    TORCH_CHECK_TYPE(at::isIntegralType(st, /*includeBool=*/true) || at::isFloatingType(st), "torchpair.", op,
                     ": metric '", info.name, "' needs a bool, integer or floating '", name, "' (", info.input,
                     "), got ", dtype_name(st));
    return;
  }
  TORCH_CHECK_TYPE(at::isFloatingType(st) && st != at::kFloat8_e4m3fn && st != at::kFloat8_e5m2, "torchpair.", op,
                   ": metric '", info.name, "' needs floating-point '", name, "' (", info.input, "), got ",
                   dtype_name(st));
}

SymShape batch_of(const at::Tensor& t, int64_t trailing) {
  auto s = t.sym_sizes();
  return SymShape(s.begin(), s.end() - trailing);
}

SymShape broadcast(const char* op, const SymShape& a, const char* an, const SymShape& b, const char* bn) {
  try {
    return at::infer_size_symdimvector(a, b);
  } catch (const c10::Error&) {
    std::ostringstream msg;
    msg << "torchpair." << op << ": the batch dimensions of '" << an << "' " << c10::SymIntArrayRef(a)
        << " and '" << bn << "' " << c10::SymIntArrayRef(b) << " do not broadcast";
    TORCH_CHECK_VALUE(false, msg.str());
  }
}

c10::SymInt product(const SymShape& s) {
  c10::SymInt p = 1;
  for (const auto& v : s) p = p * v;
  return p;
}

// view(t) for an internal reshape that never reaches the user as a view: made below the
// autograd layers where no gradient can flow (catalog::untracked). On a small eager call the
// view tracking of the two operand views and the result view is a large share of the call
// (docs/performance.md, "Fixed cost of a call").
template <class F>
at::Tensor internal_view(const at::Tensor& t, const F& view) {
  if (!catalog::untracked(t)) return view(t);
  at::AutoDispatchBelowADInplaceOrView below;
  return view(t);
}

at::Tensor to_flat(const at::Tensor& t, const SymShape& batch, const c10::SymInt& B) {
  // Unbatched operands (the common case) become [1, rows, features] in one view op: the
  // general expand + reshape is three dispatcher calls, each a cache miss on a cold call.
  if (batch.empty()) return internal_view(t, [](const at::Tensor& v) { return v.unsqueeze(0); });
  SymShape full = batch;
  full.push_back(t.sym_size(-2));
  full.push_back(t.sym_size(-1));
  return t.expand_symint(full).reshape_symint({B, t.sym_size(-2), t.sym_size(-1)});
}

// Validates x, y (and the batch dims of an extra operand such as V) and flattens them.
Flat flatten(const char* op, const catalog::MetricInfo& info, const at::Tensor& x, const Opt& y_opt,
             const SymShape* extra_batch = nullptr, const char* extra_name = nullptr) {
  check_input(op, "x", x, info);
  const bool symmetric = !y_opt.has_value();
  const at::Tensor& y = symmetric ? x : *y_opt;
  if (!symmetric) {
    check_input(op, "y", y, info);
    TORCH_CHECK_VALUE(x.device() == y.device(), "torchpair.", op, ": 'x' is on ", x.device(), " but 'y' is on ",
                      y.device());
    // Boolean-family metrics take mixed dtypes (each side is packed / compared by value).
    TORCH_CHECK_TYPE(x.scalar_type() == y.scalar_type() || info.family == catalog::Family::kBoolean, "torchpair.", op,
                     ": 'x' has dtype ", dtype_name(x.scalar_type()), " but 'y' has ", dtype_name(y.scalar_type()),
                     "; convert them to one dtype");
    TORCH_CHECK_VALUE(x.sym_size(-1) == y.sym_size(-1), "torchpair.", op, ": 'x' has ", x.sym_size(-1),
                      " features but 'y' has ", y.sym_size(-1), " (last dimension)");
  }
  Flat f;
  f.batch = symmetric ? batch_of(x, 2) : broadcast(op, batch_of(x, 2), "x", batch_of(y, 2), "y");
  if (extra_batch) f.batch = broadcast(op, f.batch, symmetric ? "x" : "x/y", *extra_batch, extra_name);
  f.B = product(f.batch);
  f.n = x.sym_size(-2);
  f.m = y.sym_size(-2);
  f.result_dtype = x.scalar_type();
  // float16/bfloat16 outside autocast: computed in float32, returned in the input dtype.
  // (each side on its own: Boolean-family metrics take mixed dtypes)
  auto widen = [](const at::Tensor& t) {
    const bool reduced = t.scalar_type() == at::kHalf || t.scalar_type() == at::kBFloat16;
    return reduced ? t.to(at::kFloat) : t;
  };
  f.in.x = to_flat(widen(x), f.batch, f.B).contiguous();
  f.in.y = symmetric ? f.in.x : to_flat(widen(y), f.batch, f.B).contiguous();
  f.in.symmetric = symmetric;
  f.in.op = op;
  return f;
}

Core core_of(const catalog::Prepared& p, bool transposed) {
  Core c;
  c.x = p.x;
  c.y = p.y;
  if (p.a.defined()) c.a = p.a;
  if (p.b.defined()) c.b = p.b;
  c.kernel = p.kernel;
  c.scalars = p.scalars;
  c.symmetric = p.symmetric;
  c.transposed = transposed;
  c.dtype = p.dtype;
  return c;
}

catalog::Prepared prepare(const char* op, const catalog::MetricInfo& info, Flat& f, const ComparisonOptions& o,
                          bool selection = false) {
  catalog::check_params(info, o, op);
  f.in.compute_mode = catalog::compute_mode_of(o, op);
  catalog::Prepared p = info.prepare(f.in, o);
  // Kernels over non-floating operands (Boolean family) give results in their value dtype;
  // `equal` is bool where the result holds entries of the matrix itself (dense, selections).
  if (p.dtype.has_value())
    f.result_dtype = (selection && info.output_dtype == catalog::OutputDtype::kBool) ? at::kBool : *p.dtype;
  return p;
}

// [B, ...] -> batch + tail, keeping the dtype (indices)
at::Tensor restore_shape(const at::Tensor& out, const Flat& f, std::initializer_list<c10::SymInt> tail) {
  // Unbatched: [1, tail...] -> tail by one view op (see to_flat).
  if (f.batch.empty() && out.dim() == static_cast<int64_t>(tail.size()) + 1)
    return internal_view(out, [](const at::Tensor& v) { return v.select(0, 0); });
  SymShape shape = f.batch;
  for (const auto& s : tail) shape.push_back(s);
  return out.reshape_symint(shape);
}

// [B, ...] -> batch + tail, in the result dtype (reduced-precision inputs get theirs back)
at::Tensor restore(const at::Tensor& out_in, const Flat& f, std::initializer_list<c10::SymInt> tail) {
  const at::Tensor out = restore_shape(out_in, f, tail);
  return out.scalar_type() == f.result_dtype ? out : out.to(f.result_dtype);
}

// V must have x's dtype; Boolean-family metrics take any floating V instead (their inputs
// need not be floating).
void check_v_dtype(const char* op, const catalog::MetricInfo& info, const at::Tensor& x, const at::Tensor& v) {
  if (info.family == catalog::Family::kBoolean) {
    TORCH_CHECK_TYPE(at::isFloatingType(v.scalar_type()), "torchpair.", op, ": 'v' must be floating for metric '",
                     info.name, "', got dtype ", dtype_name(v.scalar_type()));
    return;
  }
  TORCH_CHECK_TYPE(v.scalar_type() == x.scalar_type(), "torchpair.", op, ": 'v' has dtype ",
                   dtype_name(v.scalar_type()), " but 'x' has ", dtype_name(x.scalar_type()));
}

// The dtype V is computed in: the operands' for floating kernels; for the Boolean family the
// value dtype, raised to float64 (core and result) when V is float64.
at::ScalarType v_dtype(Core& core, Flat& f, const at::Tensor& v) {
  if (!core.dtype.has_value()) return f.in.x.scalar_type();
  if (v.scalar_type() == at::kDouble) core.dtype = f.result_dtype = at::kDouble;
  return *core.dtype;
}

// A row reduction's argument as the core operator holds it (reductions/row_reductions.h):
// a given optional public argument is its value; a tensor is broadcast by the operator itself.
template <class Stored, class P>
Stored core_arg(const P& v) {
  if constexpr (std::is_same_v<P, std::optional<at::Tensor>>)
    return Stored();
  else if constexpr (std::is_same_v<P, std::optional<Stored>>)
    return *v;
  else
    return v;
}

// ---- public operators ---------------------------------------------------------------

at::Tensor pairwise_op(const at::Tensor& x, const Opt& y, c10::string_view metric TP_PARAM_DECLS) {
  TP_PACK_PARAMS(opts);
  const auto& info = catalog::lookup(std::string(metric), "pairwise");
  Flat f = flatten("pairwise", info, x, y);
  const auto prep = prepare("pairwise", info, f, opts, /*selection=*/true);
  return restore(dense(core_of(prep, false)), f, {f.n, f.m});
}

at::Tensor lazy_matmul_op(const at::Tensor& x, const Opt& y, const at::Tensor& v, c10::string_view metric,
                          bool transposed TP_PARAM_DECLS) {
  TP_PACK_PARAMS(opts);
  const char* op = "lazy_matmul";
  const auto& info = catalog::lookup(std::string(metric), op);
  TORCH_CHECK_VALUE(v.defined() && v.dim() >= 1, "torchpair.", op,
                    ": 'v' must have shape [..., M, C] or [M], got ", v.defined() ? v.dim() : 0, " dimensions");
  const bool vector = v.dim() == 1;
  const at::Tensor v2 = vector ? v.unsqueeze(-1) : v;
  const SymShape vbatch = batch_of(v2, 2);
  Flat f = flatten(op, info, x, y, &vbatch, "v");
  const c10::SymInt& cols = transposed ? f.n : f.m;
  TORCH_CHECK_VALUE(v2.sym_size(-2) == cols, "torchpair.", op, ": 'v' has ", v2.sym_size(-2),
                    " rows but the operator has ", cols, " columns (", transposed ? "N of x" : "M of y", ")");
  TORCH_CHECK_VALUE(v.device() == x.device(), "torchpair.", op, ": 'v' is on ", v.device(), " but 'x' is on ",
                    x.device());
  check_v_dtype(op, info, x, v);
  const auto prep = prepare(op, info, f, opts);
  Core core = core_of(prep, transposed);
  const at::Tensor vf = to_flat(v2.to(v_dtype(core, f, v)), f.batch, f.B).contiguous();
  at::Tensor out = matmul(core, vf);
  const c10::SymInt rows = transposed ? f.m : f.n;
  out = restore(out, f, {rows, v2.sym_size(-1)});
  return vector ? out.squeeze(-1) : out;
}

int64_t check_dim(const char* op, int64_t dim) {
  TORCH_CHECK_VALUE(dim == -1 || dim == -2, "torchpair.", op, ": 'dim' must be -1 (per row) or -2 (per column), got ",
                    dim);
  return dim;
}

// The orientation a row consumer walks: K (or K^T when transposed) for dim -1, the other
// one for dim -2.
bool walks_transposed(int64_t dim, bool transposed) { return dim == -2 ? !transposed : transposed; }

// reduction: "mean" (the sum divided by the number of entries) or a row reduction of the
// table (reductions/row_reductions.h), whose arguments follow dim and transposed.
at::Tensor lazy_reduce_op(const at::Tensor& x, const Opt& y, c10::string_view metric, c10::string_view reduction,
                          std::optional<int64_t> dim, bool transposed TP_ROW_REDUCE_PUBLIC_DECLS TP_PARAM_DECLS) {
  TP_PACK_PARAMS(opts);
  const char* op = "lazy_reduce";
  const auto& info = catalog::lookup(std::string(metric), op);
  const bool mean = reduction == "mean";
  const auto kind = mean ? std::optional(engine::RowReduction::kSum) : engine::row_reduction_of(reduction);
  TORCH_CHECK_VALUE(kind.has_value(), "torchpair.", op, ": 'reduction' must be ",
                    engine::row_reduction_names(~0u, "\"mean\""), ", got \"", reduction, "\"");
  if (dim.has_value()) check_dim(op, *dim);
  // each argument: given only to a reduction that takes it, and given where it is needed
  const unsigned takes = engine::row_reduction_takes(*kind), needs = engine::row_reduction_needs(*kind);
  engine::RowReduce args;
#define TP_CHECK_PUBLIC_ARG(M, name, T, schema, dflt, cdflt, pname, PT, pschema, pdflt, pcdflt)                      \
  {                                                                                                          \
    const bool given = engine::row_reduce_arg_given(pname, pcdflt);                                          \
    TORCH_CHECK_VALUE(given || !(needs & TP_ROW_REDUCE_ARG(name)), "torchpair.", op, ": reduction \"",        \
                      reduction, "\" needs a '" #pname "'");                                                   \
    TORCH_CHECK_VALUE(!given || (takes & TP_ROW_REDUCE_ARG(name)), "torchpair.", op, ": '" #pname "' applies to ", \
                      engine::row_reductions_taking(TP_ROW_REDUCE_ARG(name)), " only");                      \
    if (given) args.name = core_arg<typename engine::RowReduceStored<T>::type>(pname);                       \
  }
  TP_ROW_REDUCE_ARGS(TP_CHECK_PUBLIC_ARG, ~)
#undef TP_CHECK_PUBLIC_ARG
  TORCH_CHECK_VALUE(std::isfinite(scale), "torchpair.", op, ": 'scale' must be finite, got ", scale);
  TORCH_CHECK_VALUE(!log_weight.has_value() || dim.has_value(), "torchpair.", op,
                    ": 'log_weight' needs 'dim' (-1 or -2): it weighs the reduced dimension");
  SymShape wbatch;
  if (log_weight.has_value()) {
    TORCH_CHECK_VALUE(log_weight->dim() >= 1, "torchpair.", op,
                      ": 'log_weight' must have shape [..., L] (L: the size of the reduced dimension), got a 0-d tensor");
    TORCH_CHECK_VALUE(log_weight->device() == x.device(), "torchpair.", op, ": 'log_weight' is on ",
                      log_weight->device(), " but 'x' is on ", x.device());
    TORCH_CHECK_TYPE(at::isFloatingType(log_weight->scalar_type()), "torchpair.", op,
                     ": 'log_weight' must be floating, got ", dtype_name(log_weight->scalar_type()));
    wbatch = batch_of(*log_weight, 1);
  }
  Flat f = log_weight.has_value() ? flatten(op, info, x, y, &wbatch, "log_weight") : flatten(op, info, x, y);
  const auto prep = prepare(op, info, f, opts);
  const bool walk = walks_transposed(dim.value_or(-1), transposed);
  const c10::SymInt& reduced = walk ? f.n : f.m;  // per-row count
  if (log_weight.has_value()) {
    TORCH_CHECK_VALUE(log_weight->sym_size(-1) == reduced, "torchpair.", op, ": 'log_weight' has ",
                      log_weight->sym_size(-1), " entries but the reduced dimension has ", reduced);
    const at::ScalarType vt = prep.dtype.value_or(f.in.x.scalar_type());
    SymShape full = f.batch;
    full.push_back(reduced);
    const at::Tensor w = log_weight->to(vt);
    args.weight = (f.batch.empty() ? w.unsqueeze(0) : w.expand_symint(full).reshape_symint({f.B, reduced})).contiguous();
  }
  const at::Tensor rows =
      row_reduce(core_of(prep, walk), engine::row_reduction_name(*kind), args);  // [B, rows]
  // a fixed result dtype (an integer result) is kept; value results get the inputs' dtype back
  const bool fixed = engine::row_reduction_fixed_dtype(*kind).has_value();
  if (dim.has_value()) {
    // mean: divided by the (possibly symbolic) count; 0/0 = NaN over an empty set, as torch.mean
    const at::Tensor out = mean ? rows.div(c10::Scalar(reduced)) : rows;
    return fixed ? restore_shape(out, f, {walk ? f.m : f.n}) : restore(out, f, {walk ? f.m : f.n});
  }
  at::Tensor out = engine::row_reduction_total(*kind, rows);
  if (mean) out = out.div(c10::Scalar(f.n * f.m));
  return fixed ? restore_shape(out, f, {}) : restore(out, f, {});
}

// values with the gradient of the same pairs' values recomputed by _paired (indices [B,
// rows, k] into the columns of the walked operator, K^T when `transposed`). The result equals `values`
// exactly; only its gradient comes from the recomputation.
at::Tensor differentiable_values(const catalog::Prepared& prep, bool transposed, const at::Tensor& values,
                                 const at::Tensor& indices) {
  const c10::SymInt B = values.sym_size(0), rows = values.sym_size(1), k = values.sym_size(2);
  const at::Tensor& row_op = transposed ? prep.y : prep.x;
  const at::Tensor& col_op = transposed ? prep.x : prep.y;
  const at::Tensor& row_side = transposed ? prep.b : prep.a;
  const at::Tensor& col_side = transposed ? prep.a : prep.b;
  const c10::SymInt d = row_op.sym_size(2);
  const at::Tensor flat = indices.reshape_symint({B, rows * k});
  auto expand_rows = [&](const at::Tensor& t) {
    return t.dim() == 3 ? t.unsqueeze(2).expand_symint({B, rows, k, d}).reshape_symint({B, rows * k, d})
                        : t.unsqueeze(2).expand_symint({B, rows, k}).reshape_symint({B, rows * k});
  };
  auto gather_cols = [&](const at::Tensor& t) {
    return t.dim() == 3 ? t.gather(1, flat.unsqueeze(-1).expand_symint({B, rows * k, d})) : t.gather(1, flat);
  };
  const at::Tensor r_op = expand_rows(row_op), c_op = gather_cols(col_op);
  std::optional<at::Tensor> r_side, c_side, self_mask;
  if (row_side.defined()) r_side = expand_rows(row_side);
  if (col_side.defined()) c_side = gather_cols(col_side);
  if (prep.symmetric) {
    const at::Tensor row_index =
        at::arange(c10::Scalar(rows), indices.options()).unsqueeze(1).expand_symint({rows, k}).reshape_symint({rows * k});
    self_mask = flat == row_index;
  }
  // the kernel's x operand is the row operand unless the orientation is transposed
  const at::Tensor g = transposed ? paired(c_op, r_op, c_side, r_side, self_mask, prep.kernel, prep.scalars, std::nullopt)
                            : paired(r_op, c_op, r_side, c_side, self_mask, prep.kernel, prep.scalars, std::nullopt);
  const at::Tensor delta = g - g.detach();
  return values + at::where(at::isfinite(g), delta, at::zeros({}, delta.options())).reshape_symint({B, rows, k});
}

bool requires_grad(const catalog::Prepared& p) {
  if (!at::GradMode::is_enabled()) return false;
  for (const at::Tensor* t : {&p.x, &p.y, &p.a, &p.b})
    if (t->defined() && t->requires_grad()) return true;
  return false;
}

std::tuple<at::Tensor, at::Tensor> lazy_topk_op(const at::Tensor& x, const Opt& y, c10::string_view metric, int64_t k,
                                                int64_t dim, bool largest, bool sorted, bool transposed,
                                                c10::string_view nan TP_PARAM_DECLS) {
  TP_PACK_PARAMS(opts);
  const char* op = "lazy_topk";
  const auto& info = catalog::lookup(std::string(metric), op);
  check_dim(op, dim);
  TORCH_CHECK_VALUE(nan == "largest" || nan == "propagate", "torchpair.", op,
                    ": 'nan' must be \"largest\" (torch.topk) or \"propagate\" (torch.min/max), got \"", nan, "\"");
  TORCH_CHECK_VALUE(k >= 0, "torchpair.", op, ": 'k' must be >= 0, got ", k);
  (void)sorted;  // results always come best first (a valid order for sorted=False too)
  Flat f = flatten(op, info, x, y);
  const bool walk = walks_transposed(dim, transposed);
  const c10::SymInt& cols = walk ? f.n : f.m;
  TORCH_CHECK_VALUE(cols >= k, "torchpair.", op, ": 'k' (", k, ") must not exceed the size of dimension ", dim,
                    " (", cols, ")");
  const auto prep = prepare(op, info, f, opts, /*selection=*/true);
  // Euclidean distances rank exactly as their squares: select on the squared kernel and take
  // square roots of the k winners only (a sqrt per pair is a quarter of a D = 32 tile).
  Core core = core_of(prep, walk);
  const char* squared_kernel = catalog::squared_kernel(core.kernel);
  const bool squared = squared_kernel != nullptr;
  if (squared) core.kernel = squared_kernel;
  auto [values, indices] = topk(core, k, largest, largest || nan == "propagate");
  if (squared) values = at::sqrt(values);
  if (requires_grad(prep)) values = differentiable_values(prep, walk, values, indices);
  const c10::SymInt rows = walk ? f.m : f.n;
  return {restore(values, f, {rows, k}), restore_shape(indices, f, {rows, k})};
}

at::Tensor lazy_softmax_matmul_op(const at::Tensor& x, const Opt& y, const at::Tensor& v, c10::string_view metric,
                                  int64_t dim, bool transposed TP_PARAM_DECLS) {
  TP_PACK_PARAMS(opts);
  const char* op = "lazy_softmax_matmul";
  const auto& info = catalog::lookup(std::string(metric), op);
  check_dim(op, dim);
  const bool walk = walks_transposed(dim, transposed);
  TORCH_CHECK_VALUE(v.defined() && v.dim() >= 1, "torchpair.", op,
                    ": 'v' must have shape [..., M, C] or [M], got ", v.defined() ? v.dim() : 0, " dimensions");
  const bool vector = v.dim() == 1;
  const at::Tensor v2 = vector ? v.unsqueeze(-1) : v;
  const SymShape vbatch = batch_of(v2, 2);
  Flat f = flatten(op, info, x, y, &vbatch, "v");
  const c10::SymInt& cols = walk ? f.n : f.m;
  TORCH_CHECK_VALUE(v2.sym_size(-2) == cols, "torchpair.", op, ": 'v' has ", v2.sym_size(-2),
                    " rows but the softmax runs over ", cols, " columns");
  TORCH_CHECK_VALUE(v.device() == x.device(), "torchpair.", op, ": 'v' is on ", v.device(), " but 'x' is on ",
                    x.device());
  check_v_dtype(op, info, x, v);
  const auto prep = prepare(op, info, f, opts);
  Core core = core_of(prep, walk);
  const at::Tensor vf = to_flat(v2.to(v_dtype(core, f, v)), f.batch, f.B).contiguous();
  at::Tensor out = std::get<0>(softmax_matmul(core, vf));
  out = restore(out, f, {walk ? f.m : f.n, v2.sym_size(-1)});
  return vector ? out.squeeze(-1) : out;
}

}  // namespace

at::Tensor self_values(const char* op, const at::Tensor& x, const std::string& metric, const ComparisonOptions& o) {
  const auto& info = catalog::lookup(metric, op);
  Flat f = flatten(op, info, x, std::nullopt);
  const auto prep = prepare(op, info, f, o, /*selection=*/true);
  const at::Tensor self = at::ones_symint({f.B, f.n}, prep.x.options().dtype(at::kBool));
  std::optional<at::Tensor> a, b;
  if (prep.a.defined()) a = prep.a;
  if (prep.b.defined()) b = prep.b;
  return restore(paired(prep.x, prep.y, a, b, self, prep.kernel, prep.scalars, prep.dtype), f, {f.n});
}

const std::string& metric_kind(const std::string& metric, const char* op) { return catalog::lookup(metric, op).kind; }

std::string catalog_json() { return catalog::catalog_json(); }

std::string build_info_json() {
  std::ostringstream s;
  s << "{\"torch_version\":\"" << TORCH_VERSION << "\",\"cpu_capability\":\"" << cpu::cpu_capability_name()
    << "\",\"threads\":" << at::get_num_threads();
  // the Boolean popcount engine's path now, and every path this machine can run
  s << ",\"popcount\":\"" << cpu::popcount_path_name() << "\",\"popcount_paths\":[";
  const auto paths = cpu::popcount_paths();
  for (size_t i = 0; i < paths.size(); ++i) s << (i ? "," : "") << "\"" << paths[i] << "\"";
  // the row reductions (name, result dtype, ...): the fake impls read their result dtypes
  s << "],\"row_reductions\":" << engine::row_reductions_json() << "}";
  return s.str();
}

}  // namespace tp::ops

TORCH_LIBRARY_IMPL(torchpair, CompositeImplicitAutograd, m) {
  m.impl("pairwise", &tp::ops::pairwise_op);
  m.impl("lazy_matmul", &tp::ops::lazy_matmul_op);
  m.impl("lazy_reduce", &tp::ops::lazy_reduce_op);
  m.impl("lazy_topk", &tp::ops::lazy_topk_op);
  m.impl("lazy_softmax_matmul", &tp::ops::lazy_softmax_matmul_op);
}

// ---- pdist: condensed upper triangle, scipy's order ---------------------------------------
namespace tp::ops {
namespace {

at::Tensor pdist_op(const at::Tensor& x, c10::string_view metric TP_PARAM_DECLS) {
  TP_PACK_PARAMS(opts);
  const char* op = "pdist";
  const auto& info = catalog::lookup(std::string(metric), op);
  Flat f = flatten(op, info, x, std::nullopt);
  const auto prep = prepare(op, info, f, opts, /*selection=*/true);  // entries of the matrix: `equal` stays bool
  const at::Tensor out = condensed(core_of(prep, false));  // [B, n(n-1)/2]
  return restore(out, f, {out.sym_size(1)});
}

}  // namespace
}  // namespace tp::ops

TORCH_LIBRARY_IMPL(torchpair, CompositeImplicitAutograd, m) { m.impl("pdist", &tp::ops::pdist_op); }
