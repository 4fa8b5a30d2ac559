// Exact discrete optimal transport operators (schemas, kernels, autograd), one file:
//
//   emd(a?, b?, M, max_iter?, normalize, mass_tol?) -> (plan, cost, u, v, status)
//       public, CompositeImplicitAutograd: argument checks, uniform weights, normalization,
//       batch broadcasting, then _emd on [B, n], [B, m], [B, n, m].
//   _emd(a, b, M, max_iter, mass_tol) -> (plan, cost, u, v, status)
//       core: CPU kernel (network simplex in float64, csrc/transport/network_simplex.h,
//       at::parallel_for across the B problems); on any other device
//       (CompositeExplicitAutograd) the inputs are copied to the CPU, solved there and the
//       results copied back. C++ autograd: d cost / d M = plan, d cost / d a = u - mean(u),
//       d cost / d b = v - mean(v) (POT's convention).
//   _emd_backward(grad, plan, u, v, output_mask) -> (grad_a, grad_b, grad_M)
//       not differentiable: a second derivative raises a clear error.
// Fake kernels: torchpair/_meta_transport.py. Conventions: docs/conventions.md.
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/autograd.h>
#include <torch/library.h>

#include <cmath>
#include <limits>

#include "transport/network_simplex.h"

namespace tp::ops {
namespace {

using Opt = std::optional<at::Tensor>;
using Five = std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor, at::Tensor>;
using Three = std::tuple<at::Tensor, at::Tensor, at::Tensor>;
using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

template <typename Sig>
c10::TypedOperatorHandle<Sig> handle(const char* name) {
  return c10::Dispatcher::singleton().findSchemaOrThrow(name, "").typed<Sig>();
}

double default_mass_tol(at::ScalarType t) {
  switch (t) {
    case at::kDouble: return 1e-7;
    case at::kFloat: return 1e-4;
    default: return 1e-2;  // float16, bfloat16
  }
}

// ---- public operator ------------------------------------------------------------------
void check_floating(const char* name, const at::Tensor& t) {
  TORCH_CHECK_TYPE(!t.is_nested() && t.layout() == at::kStrided, "torchpair.emd: '", name,
                   "' must be a dense (strided) tensor");
  TORCH_CHECK_TYPE(at::isFloatingType(t.scalar_type()), "torchpair.emd: '", name,
                   "' must be a floating tensor, got ", t.scalar_type());
}

Five emd_op(const Opt& a_in, const Opt& b_in, const at::Tensor& M, std::optional<int64_t> max_iter, bool normalize,
            std::optional<double> mass_tol, bool warn) {
  TORCH_CHECK_VALUE(M.defined(), "torchpair.emd: 'M' is undefined");
  check_floating("M", M);
  TORCH_CHECK_VALUE(M.dim() >= 2, "torchpair.emd: 'M' must have shape [..., n, m], got ", M.dim(), " dimension(s)");
  TORCH_CHECK_VALUE(!max_iter.has_value() || *max_iter >= 0, "torchpair.emd: 'max_iter' must be >= 0 or None, got ",
                    max_iter.value_or(0));
  if (mass_tol.has_value())
    TORCH_CHECK_VALUE(std::isfinite(*mass_tol) && *mass_tol >= 0, "torchpair.emd: 'mass_tol' must be a finite "
                      "number >= 0, got ", *mass_tol);
  const c10::SymInt n = M.sym_size(-2), m = M.sym_size(-1);
  std::vector<c10::SymInt> batch(M.sym_sizes().begin(), M.sym_sizes().end() - 2);
  auto dtype = M.scalar_type();
  auto weights = [&](const Opt& w, const char* name, const c10::SymInt& len) -> at::Tensor {
    if (!w.has_value() || !w->defined()) return at::Tensor();
    // Weights of any real dtype: integer histograms (counts) are a normal input, as in POT.
    // They join the result dtype by torch's promotion (int64 weights with a float32 cost give
    // float32; the solver itself runs in float64). bool is not a histogram: TypeError.
    TORCH_CHECK_TYPE(!w->is_nested() && w->layout() == at::kStrided, "torchpair.emd: '", name,
                     "' must be a dense (strided) tensor");
    TORCH_CHECK_TYPE(at::isFloatingType(w->scalar_type()) || at::isIntegralType(w->scalar_type(), /*includeBool=*/false),
                     "torchpair.emd: '", name, "' must be a real (integer or floating) tensor, got ", w->scalar_type(),
                     w->scalar_type() == at::kBool ? " (an indicator: convert it with .to(torch.float64))" : "");
    TORCH_CHECK_VALUE(w->dim() >= 1, "torchpair.emd: '", name, "' must have shape [..., ", len, "], got a 0-d tensor");
    TORCH_CHECK_VALUE(w->sym_size(-1) == len, "torchpair.emd: '", name, "' has ", w->sym_size(-1),
                      " entries but 'M' has ", len, name[0] == 'a' ? " rows" : " columns");
    TORCH_CHECK_VALUE(w->device() == M.device(), "torchpair.emd: '", name, "' is on ", w->device(), " but 'M' is on ",
                      M.device());
    std::vector<c10::SymInt> wb(w->sym_sizes().begin(), w->sym_sizes().end() - 1);
    const auto joint = at::infer_size_symdimvector(batch, wb);
    batch.assign(joint.begin(), joint.end());
    dtype = at::promote_types(dtype, w->scalar_type());
    return *w;
  };
  at::Tensor a = weights(a_in, "a", n), b = weights(b_in, "b", m);
  const auto opts = M.options().dtype(dtype);
  if (!a.defined()) a = at::ones_symint({n}, opts).div(c10::Scalar(n));
  if (!b.defined()) b = at::ones_symint({m}, opts).div(c10::Scalar(m));
  a = a.to(dtype);
  b = b.to(dtype);
  at::Tensor C = M.to(dtype);
  if (normalize) {
    a = a / a.sum(-1, true);
    b = b / b.sum(-1, true);
  }
  std::vector<c10::SymInt> shape_a(batch), shape_b(batch), shape_m(batch);
  shape_a.push_back(n);
  shape_b.push_back(m);
  shape_m.push_back(n);
  shape_m.push_back(m);
  c10::SymInt B = 1;
  for (const auto& s : batch) B = B * s;
  a = a.expand_symint(shape_a).reshape_symint({B, n});
  b = b.expand_symint(shape_b).reshape_symint({B, m});
  C = C.expand_symint(shape_m).reshape_symint({B, n, m});
  static auto core = handle<Five(const at::Tensor&, const at::Tensor&, const at::Tensor&, int64_t, double, bool)>(
      "torchpair::_emd");
  auto [plan, cost, u, v, status] =
      core.call(a, b, C, max_iter.value_or(-1), mass_tol.value_or(default_mass_tol(dtype)), warn);
  return {plan.reshape_symint(shape_m), cost.reshape_symint(batch), u.reshape_symint(shape_a),
          v.reshape_symint(shape_b), status.reshape_symint(batch)};
}

// ---- core operator: CPU kernel ----------------------------------------------------------
void check_core(const at::Tensor& a, const at::Tensor& b, const at::Tensor& M) {
  TORCH_CHECK_VALUE(M.dim() == 3, "torchpair._emd: 'M' must have shape [B, n, m], got ", M.sizes(),
                    " (expects a [B, n], b [B, m], M [B, n, m])");
  TORCH_CHECK_VALUE(a.dim() == 2, "torchpair._emd: 'a' must have shape [B, n], got ", a.sizes(),
                    " (expects a [B, n], b [B, m], M [B, n, m])");
  TORCH_CHECK_VALUE(b.dim() == 2, "torchpair._emd: 'b' must have shape [B, m], got ", b.sizes(),
                    " (expects a [B, n], b [B, m], M [B, n, m])");
  TORCH_CHECK_VALUE(a.size(0) == M.size(0) && b.size(0) == M.size(0) && a.size(1) == M.size(1) &&
                        b.size(1) == M.size(2),
                    "torchpair._emd: shapes of 'a' ", a.sizes(), ", 'b' ", b.sizes(), " and 'M' ", M.sizes(),
                    " do not match");
  for (const auto& [name, t] : {std::pair<const char*, const at::Tensor*>{"a", &a}, {"b", &b}, {"M", &M}})
    TORCH_CHECK_TYPE(at::isFloatingType(t->scalar_type()), "torchpair._emd: '", name, "' must be floating, got ",
                     t->scalar_type());
}

// first entry that is negative or not finite, or -1
int64_t first_bad(const double* p, int64_t len) {
  for (int64_t i = 0; i < len; ++i)
    if (!(p[i] >= 0 && p[i] < std::numeric_limits<double>::infinity())) return i;
  return -1;
}

Five emd_cpu(const at::Tensor& a_in, const at::Tensor& b_in, const at::Tensor& M_in, int64_t max_iter,
             double mass_tol, bool warn) {
  check_core(a_in, b_in, M_in);
  const auto out_dtype = M_in.scalar_type();
  const at::Tensor a = a_in.to(at::kDouble).contiguous(), b = b_in.to(at::kDouble).contiguous();
  const at::Tensor M = M_in.to(at::kDouble).contiguous();
  const int64_t B = M.size(0), n = M.size(1), m = M.size(2);
  auto f64 = M.options().dtype(at::kDouble);
  at::Tensor plan = at::empty({B, n, m}, f64), cost = at::empty({B}, f64);
  at::Tensor u = at::empty({B, n}, f64), v = at::empty({B, m}, f64);
  at::Tensor status = at::zeros({B}, M.options().dtype(at::kLong));
  const double *pa = a.data_ptr<double>(), *pb = b.data_ptr<double>(), *pM = M.data_ptr<double>();
  double *pplan = plan.data_ptr<double>(), *pcost = cost.data_ptr<double>();
  double *pu = u.data_ptr<double>(), *pv = v.data_ptr<double>();
  int64_t* pstatus = status.data_ptr<int64_t>();
  std::vector<int64_t> iterations(B, 0);
  at::parallel_for(0, B, 1, [&](int64_t begin, int64_t end) {
    std::vector<double> bs;
    for (int64_t k = begin; k < end; ++k) {
      const double *ak = pa + k * n, *bk = pb + k * m, *Mk = pM + k * n * m;
      int64_t bad = first_bad(ak, n);
      TORCH_CHECK_VALUE(bad < 0, "torchpair.emd: 'a' must be non-negative and finite, got a[", k, ", ", bad, "] = ",
                        bad < 0 ? 0.0 : ak[bad], " (problem ", k, " of the flattened batch)");
      bad = first_bad(bk, m);
      TORCH_CHECK_VALUE(bad < 0, "torchpair.emd: 'b' must be non-negative and finite, got b[", k, ", ", bad, "] = ",
                        bad < 0 ? 0.0 : bk[bad], " (problem ", k, " of the flattened batch)");
      bad = first_bad(Mk, n * m);
      TORCH_CHECK_VALUE(bad < 0, "torchpair.emd: 'M' (the cost) must be non-negative and finite, got M[", k, ", ",
                        bad < 0 ? 0 : bad / m, ", ", bad < 0 ? 0 : bad % m, "] = ", bad < 0 ? 0.0 : Mk[bad],
                        " (problem ", k, " of the flattened batch)");
      double sa = 0, sb = 0;
      for (int64_t i = 0; i < n; ++i) sa += ak[i];
      for (int64_t j = 0; j < m; ++j) sb += bk[j];
      TORCH_CHECK_VALUE(std::abs(sa - sb) <= mass_tol * std::max(sa, sb),
                        "torchpair.emd: 'a' and 'b' must have the same total mass (within a relative mass_tol = ",
                        mass_tol, "), got sum(a) = ", sa, " and sum(b) = ", sb, " (problem ", k,
                        " of the flattened batch); pass normalize=True to rescale both to 1");
      // within tolerance: b is rescaled to a's mass so the network is exactly balanced
      bs.assign(bk, bk + m);
      if (sb > 0 && sa != sb)
        for (auto& x : bs) x *= sa / sb;
      const auto r = tp::transport::solve(n, m, ak, bs.data(), Mk, pplan + k * n * m, pu + k * n, pv + k * m,
                                          max_iter);
      pcost[k] = r.cost;
      pstatus[k] = r.status;
      iterations[k] = r.iterations;
    }
  });
  // warnings from the calling thread (the Python warning handler is thread-local)
  int64_t stopped = 0;
  for (int64_t k = 0; k < B; ++k) stopped += pstatus[k] != tp::transport::kOptimal;
  if (warn && stopped > 0) {
    TORCH_WARN("torchpair.emd: the network simplex stopped at max_iter = ", max_iter, " pivots before optimality in ",
               stopped, " of ", B, " problem(s); the plan is feasible but may not be optimal (status 1 in the "
               "returned log). Raise max_iter (None: no limit).");
  }
  return {plan.to(out_dtype), cost.to(out_dtype), u.to(out_dtype), v.to(out_dtype), status};
}

// any other device: solve on the CPU, return on the input device
Five emd_other_device(const at::Tensor& a, const at::Tensor& b, const at::Tensor& M, int64_t max_iter,
                      double mass_tol, bool warn) {
  check_core(a, b, M);
  static auto core = handle<Five(const at::Tensor&, const at::Tensor&, const at::Tensor&, int64_t, double, bool)>(
      "torchpair::_emd");
  const auto cpu = at::Device(at::kCPU);
  auto [plan, cost, u, v, status] = core.call(a.to(cpu), b.to(cpu), M.to(cpu), max_iter, mass_tol, warn);
  const auto dev = M.device();
  return {plan.to(dev), cost.to(dev), u.to(dev), v.to(dev), status.to(dev)};
}

// ---- backward -------------------------------------------------------------------------
Three emd_backward(const at::Tensor& grad, const at::Tensor& plan, const at::Tensor& u, const at::Tensor& v,
                   std::array<bool, 3> mask) {
  TORCH_CHECK_VALUE(plan.dim() == 3 && u.dim() == 2 && v.dim() == 2 && u.size(0) == plan.size(0) &&
                        v.size(0) == plan.size(0) && u.size(1) == plan.size(1) && v.size(1) == plan.size(2),
                    "torchpair._emd_backward: 'plan' [B, n, m], 'u' [B, n] and 'v' [B, m] do not match: ",
                    plan.sizes(), ", ", u.sizes(), ", ", v.sizes());
  TORCH_CHECK_TYPE(at::isFloatingType(grad.scalar_type()), "torchpair._emd_backward: 'grad' must be floating, got ",
                   grad.scalar_type());
  TORCH_CHECK_VALUE(grad.dim() == 1 && grad.size(0) == plan.size(0), "torchpair._emd_backward: 'grad' must have "
                    "shape [", plan.size(0), "] (one per problem), got ", grad.sizes());
  at::Tensor ga, gb, gM;
  const at::Tensor g = grad.to(plan.scalar_type());
  if (mask[0]) ga = g.unsqueeze(-1) * (u - u.mean(-1, true));
  if (mask[1]) gb = g.unsqueeze(-1) * (v - v.mean(-1, true));
  if (mask[2]) gM = g.unsqueeze(-1).unsqueeze(-1) * plan;
  auto empty = [&] { return at::empty({0}, plan.options()); };
  return {ga.defined() ? ga : empty(), gb.defined() ? gb : empty(), gM.defined() ? gM : empty()};
}

using BackSig = Three(const at::Tensor&, const at::Tensor&, const at::Tensor&, const at::Tensor&, std::array<bool, 3>);

// The inputs of the forward (a, b, M) ride along unused, so that under create_graph the
// gradients are connected to them and differentiating again reaches backward() below.
struct EmdBackwardFunction : public torch::autograd::Function<EmdBackwardFunction> {
  static variable_list forward(AutogradContext*, const at::Tensor& grad, const at::Tensor& plan, const at::Tensor& u,
                               const at::Tensor& v, std::array<bool, 3> mask, const at::Tensor&, const at::Tensor&,
                               const at::Tensor&) {
    at::AutoDispatchBelowADInplaceOrView guard;
    static auto op = handle<BackSig>("torchpair::_emd_backward");
    auto [ga, gb, gM] = op.call(grad, plan, u, v, mask);
    return {ga, gb, gM};
  }
  static variable_list backward(AutogradContext*, variable_list) {
    TORCH_CHECK(false, "torchpair: second derivatives are not supported (torchpair::_emd_backward has no "
                "derivative). torchpair operators support first derivatives only.");
  }
};

struct EmdFunction : public torch::autograd::Function<EmdFunction> {
  static variable_list forward(AutogradContext* ctx, const at::Tensor& a, const at::Tensor& b, const at::Tensor& M,
                               int64_t max_iter, double mass_tol, bool warn) {
    at::AutoDispatchBelowADInplaceOrView guard;
    static auto op = handle<Five(const at::Tensor&, const at::Tensor&, const at::Tensor&, int64_t, double, bool)>(
        "torchpair::_emd");
    auto [plan, cost, u, v, status] = op.call(a, b, M, max_iter, mass_tol, warn);
    ctx->save_for_backward({plan, u, v, a, b, M});
    ctx->saved_data["dtypes"] = std::vector<int64_t>{int64_t(a.scalar_type()), int64_t(b.scalar_type()),
                                                     int64_t(M.scalar_type())};
    ctx->mark_non_differentiable({plan, u, v, status});
    return {plan, cost, u, v, status};
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const at::Tensor& g = grads[1];
    if (!g.defined()) return {at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor()};
    std::array<bool, 3> mask{ctx->needs_input_grad(0), ctx->needs_input_grad(1), ctx->needs_input_grad(2)};
    auto r = EmdBackwardFunction::apply(g, saved[0], saved[1], saved[2], mask, saved[3], saved[4], saved[5]);
    const auto dt = ctx->saved_data["dtypes"].toIntVector();
    auto cast = [&](size_t i) { return mask[i] ? r[i].to(at::ScalarType(dt[i])) : at::Tensor(); };
    return {cast(0), cast(1), cast(2), at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

Five emd_autograd(const at::Tensor& a, const at::Tensor& b, const at::Tensor& M, int64_t max_iter, double mass_tol,
                  bool warn) {
  auto r = EmdFunction::apply(a, b, M, max_iter, mass_tol, warn);
  return {r[0], r[1], r[2], r[3], r[4]};
}

Three emd_backward_autograd(const at::Tensor& grad, const at::Tensor& plan, const at::Tensor& u, const at::Tensor& v,
                            std::array<bool, 3> mask) {
  auto r = EmdBackwardFunction::apply(grad, plan, u, v, mask, plan, u, v);  // riders: the op's own inputs
  return {r[0], r[1], r[2]};
}

}  // namespace
}  // namespace tp::ops

TORCH_LIBRARY_FRAGMENT(torchpair, m) {
  const std::vector<at::Tag> tags{at::Tag::pt2_compliant_tag};
  // plan [..., n, m], cost [...], duals u [..., n], v [..., m], status [...] (0 optimal,
  // 1 stopped at max_iter). a / b None: uniform weights.
  m.def("emd(Tensor? a, Tensor? b, Tensor M, int? max_iter=None, bool normalize=False, float? mass_tol=None, "
        "bool warn=True) -> "
        "(Tensor plan, Tensor cost, Tensor u, Tensor v, Tensor status)",
        tags);
  // a [B, n], b [B, m], M [B, n, m]; max_iter < 0: no limit. warn: TORCH_WARN when a problem
  // stops at max_iter (the Python API warns itself in eager mode: a TORCH_WARN raised under
  // torch.ops does not reach Python's warnings module)
  m.def("_emd(Tensor a, Tensor b, Tensor M, int max_iter, float mass_tol, bool warn=True) -> "
        "(Tensor plan, Tensor cost, Tensor u, Tensor v, Tensor status)",
        tags);
  m.def("_emd_backward(Tensor grad, Tensor plan, Tensor u, Tensor v, bool[3] output_mask) -> "
        "(Tensor, Tensor, Tensor)",
        tags);
}

TORCH_LIBRARY_IMPL(torchpair, CompositeImplicitAutograd, m) { m.impl("emd", &tp::ops::emd_op); }
TORCH_LIBRARY_IMPL(torchpair, CPU, m) { m.impl("_emd", &tp::ops::emd_cpu); }
TORCH_LIBRARY_IMPL(torchpair, CompositeExplicitAutograd, m) {
  m.impl("_emd", &tp::ops::emd_other_device);
  m.impl("_emd_backward", &tp::ops::emd_backward);
}
TORCH_LIBRARY_IMPL(torchpair, Autograd, m) {
  m.impl("_emd", &tp::ops::emd_autograd);
  m.impl("_emd_backward", &tp::ops::emd_backward_autograd);
}
