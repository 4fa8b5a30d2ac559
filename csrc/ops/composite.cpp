// The public operators (CompositeImplicitAutograd): argument validation with messages that
// name the argument, batch broadcasting, metric preparation (catalog), then one core
// operator. Everything here is ATen composition, so autograd, compile and export see
// through it; the C++ API (csrc/api) and the Python API both call these operators, so the
// two never compute the same thing twice.
#include <ATen/ATen.h>
#include <ATen/ExpandUtils.h>
#include <torch/library.h>
#include <torch/version.h>

#include <sstream>

#include "catalog/catalog.h"
#include "cpu/consumers.h"
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
  TORCH_CHECK_VALUE(t.dim() >= 2, "torchpair.", op, ": '", name, "' must have shape [..., rows, features], got ",
                    t.dim(), " dimension(s) ", t.sym_sizes());
  TORCH_CHECK_VALUE(t.layout() == at::kStrided, "torchpair.", op, ": '", name,
                    "' must be a dense (strided) tensor, got layout ", t.layout());
  const auto st = t.scalar_type();
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

at::Tensor to_flat(const at::Tensor& t, const SymShape& batch, const c10::SymInt& B) {
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
    TORCH_CHECK_TYPE(x.scalar_type() == y.scalar_type(), "torchpair.", op, ": 'x' has dtype ",
                     dtype_name(x.scalar_type()), " but 'y' has ", dtype_name(y.scalar_type()),
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
  const bool reduced = x.scalar_type() == at::kHalf || x.scalar_type() == at::kBFloat16;
  const at::Tensor xc = reduced ? x.to(at::kFloat) : x;
  f.in.x = to_flat(xc, f.batch, f.B).contiguous();
  f.in.y = symmetric ? f.in.x : to_flat(reduced ? y.to(at::kFloat) : y, f.batch, f.B).contiguous();
  f.in.symmetric = symmetric;
  f.in.op = op;
  return f;
}

Core core_of(const catalog::Prepared& p, bool transpose) {
  Core c;
  c.x = p.x;
  c.y = p.y;
  if (p.a.defined()) c.a = p.a;
  if (p.b.defined()) c.b = p.b;
  c.kernel = p.kernel;
  c.scalars = p.scalars;
  c.symmetric = p.symmetric;
  c.transpose = transpose;
  return c;
}

catalog::Prepared prepare(const char* op, const catalog::MetricInfo& info, const Flat& f,
                          const ComparisonOptions& o) {
  catalog::check_params(info, o, op);
  return info.prepare(f.in, o);
}

at::Tensor restore(at::Tensor out, const Flat& f, std::initializer_list<c10::SymInt> tail) {
  SymShape shape = f.batch;
  for (const auto& s : tail) shape.push_back(s);
  out = out.reshape_symint(shape);
  return out.scalar_type() == f.result_dtype ? out : out.to(f.result_dtype);
}

// ---- public operators ---------------------------------------------------------------

at::Tensor pairwise_op(const at::Tensor& x, const Opt& y, c10::string_view metric TP_PARAM_DECLS) {
  TP_PACK_PARAMS(opts);
  const auto& info = catalog::lookup(std::string(metric), "pairwise");
  const Flat f = flatten("pairwise", info, x, y);
  const auto prep = prepare("pairwise", info, f, opts);
  return restore(dense(core_of(prep, false)), f, {f.n, f.m});
}

at::Tensor lazy_matmul_op(const at::Tensor& x, const Opt& y, const at::Tensor& v, c10::string_view metric,
                          bool transpose TP_PARAM_DECLS) {
  TP_PACK_PARAMS(opts);
  const char* op = "lazy_matmul";
  const auto& info = catalog::lookup(std::string(metric), op);
  TORCH_CHECK_VALUE(v.defined() && v.dim() >= 1, "torchpair.", op,
                    ": 'v' must have shape [..., M, C] or [M], got ", v.defined() ? v.dim() : 0, " dimensions");
  const bool vector = v.dim() == 1;
  const at::Tensor v2 = vector ? v.unsqueeze(-1) : v;
  const SymShape vbatch = batch_of(v2, 2);
  Flat f = flatten(op, info, x, y, &vbatch, "v");
  const c10::SymInt& cols = transpose ? f.n : f.m;
  TORCH_CHECK_VALUE(v2.sym_size(-2) == cols, "torchpair.", op, ": 'v' has ", v2.sym_size(-2),
                    " rows but the operator has ", cols, " columns (", transpose ? "N of x" : "M of y", ")");
  TORCH_CHECK_VALUE(v.device() == x.device(), "torchpair.", op, ": 'v' is on ", v.device(), " but 'x' is on ",
                    x.device());
  TORCH_CHECK_TYPE(v.scalar_type() == x.scalar_type(), "torchpair.", op, ": 'v' has dtype ",
                   dtype_name(v.scalar_type()), " but 'x' has ", dtype_name(x.scalar_type()));
  const at::Tensor vf = to_flat(v2.to(f.in.x.scalar_type()), f.batch, f.B).contiguous();
  const auto prep = prepare(op, info, f, opts);
  at::Tensor out = matmul(core_of(prep, transpose), vf);
  const c10::SymInt rows = transpose ? f.m : f.n;
  out = restore(out, f, {rows, v2.sym_size(-1)});
  return vector ? out.squeeze(-1) : out;
}

at::Tensor lazy_sum_op(const at::Tensor& x, const Opt& y, c10::string_view metric, std::optional<int64_t> dim,
                       bool transpose TP_PARAM_DECLS) {
  TP_PACK_PARAMS(opts);
  const char* op = "lazy_sum";
  const auto& info = catalog::lookup(std::string(metric), op);
  TORCH_CHECK_VALUE(!dim.has_value() || *dim == -1 || *dim == -2, "torchpair.", op,
                    ": 'dim' must be -1 (per row), -2 (per column) or None (everything), got ", *dim);
  const Flat f = flatten(op, info, x, y);
  const auto prep = prepare(op, info, f, opts);
  // Sum over the last dim of the operator (K, or K^T when transposed); dim -2 is the row
  // sum of the other orientation.
  const bool flip = dim.has_value() && *dim == -2 ? !transpose : transpose;
  const at::Tensor sums = row_sum(core_of(prep, flip));
  if (!dim.has_value()) return restore(sums.sum(-1), f, {});
  return restore(sums, f, {flip ? f.m : f.n});
}

}  // namespace

std::string catalog_json() { return catalog::catalog_json(); }

std::string build_info_json() {
  std::ostringstream s;
  s << "{\"torch_version\":\"" << TORCH_VERSION << "\",\"cpu_capability\":\"" << cpu::cpu_capability_name()
    << "\",\"threads\":" << at::get_num_threads() << "}";
  return s.str();
}

}  // namespace tp::ops

TORCH_LIBRARY_IMPL(torchpair, CompositeImplicitAutograd, m) {
  m.impl("pairwise", &tp::ops::pairwise_op);
  m.impl("lazy_matmul", &tp::ops::lazy_matmul_op);
  m.impl("lazy_sum", &tp::ops::lazy_sum_op);
}
