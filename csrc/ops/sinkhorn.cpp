// The debiased Sinkhorn divergence between point clouds, one CompositeImplicitAutograd
// operator (schema below), so eager Python, torch.compile, torch.export and C++
// (tp::sinkhorn_divergence) run this one loop:
//
//   sinkhorn_divergence(x, y, a?, b?, exponent, blur, scaling, reach?, metric?, diameter?, debias,
//                       tol?, max_iter, unrolled, eager, mass_tol?, warn, <metric params>)
//       -> (value, err, niter, f_ba, g_ab, f_aa, g_bb)
//
// GeomLoss' SamplesLoss("sinkhorn") semantics: epsilon_schedule, sinkhorn_loop (symmetric,
// averaged updates), the last extrapolation with the weights and the other potential
// detached (envelope theorem), sinkhorn_cost. Every soft-min is one streamed, scaled and
// weighted logsumexp of the lazy engine (torchpair::lazy_reduce), so nothing is N x M; in
// eager mode on the CPU, the loop's soft-mins on the (squared) euclidean cost take the fused
// kernel of cpu/sinkhorn.h instead (FusedSoftmin below), all four of an iteration in one call.
// `eager` enables what needs the data on the host: the diameter default, the mass check,
// early stopping at `tol` and the warning when it is not reached; callers that trace pass
// false (the schedule is then fixed by `diameter`, and with `tol` all max_iter run). `warn`:
// TORCH_WARN when `tol` is not reached (Python passes false and warns through its warnings module).
// Conventions: docs/conventions.md, "Entropic optimal transport".
#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/library.h>

#include <cmath>
#include <limits>

#include "cpu/capability.h"
#include "cpu/sinkhorn.h"
#include "ops/ops.h"

namespace tp::cpu {
namespace {
// the copy of the fused soft-min compiled for this machine's capability
std::vector<at::Tensor> sinkhorn_lse_here(at::TensorList x, at::TensorList y, at::TensorList h, at::TensorList shift,
                                          double scale, bool euclidean) {
  return TP_CPU_STUB(sinkhorn_lse).get()(x, y, h, shift, scale, euclidean);
}
}  // namespace
}  // namespace tp::cpu

namespace tp::ops {
namespace {

using Opt = std::optional<at::Tensor>;
using Seven = std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor, at::Tensor, at::Tensor, at::Tensor>;
constexpr const char* kOp = "torchpair.sinkhorn_divergence: ";

template <typename Sig>
c10::TypedOperatorHandle<Sig> handle(const char* name) {
  return c10::Dispatcher::singleton().findSchemaOrThrow(name, "").typed<Sig>();
}

// The cost C = scale * metric(x, y): metric none is GeomLoss' |x - y|^p / p (p = 1 or 2).
struct Cost {
  std::string metric;
  double scale;
  ComparisonOptions opts;
};

// f_i = -eps log sum_j exp(h_j - C(x_i, y_j) / eps)   (dim -1, h [..., M], f [..., N])
// g_j = -eps log sum_i exp(h_i - C(x_i, y_j) / eps)   (dim -2, h [..., N], g [..., M])
at::Tensor softmin(double eps, const at::Tensor& x, const at::Tensor& y, const at::Tensor& h, int64_t dim,
                   const Cost& c) {
  return lazy_reduce(x, y, c.metric, "logsumexp", dim, false, c.opts, -c.scale / eps, h) * (-eps);
}

bool any_param(const ComparisonOptions& o);

// The envelope-mode loop's soft-mins on the CPU for the (squared) euclidean cost: the fused
// kernel of cpu/sinkhorn.h, fed each row's previous potential as its shift. Only for real,
// plain CPU tensors in eager mode (tracing, fake and functional tensors, vmap and other
// devices take lazy_reduce, which every backend implements).
struct FusedSoftmin {
  bool on = false;
  bool euclidean = false;
  double scale = 0;  // the cost is scale * |x - y|^2 (or scale * |x - y|)
  std::vector<int64_t> batch;
  at::Tensor x, y;  // [B, N, D], [B, M, D] contiguous, detached

  static bool plain(const at::Tensor& t) {
    constexpr c10::DispatchKeySet wrapped({c10::DispatchKey::Python, c10::DispatchKey::PythonTLSSnapshot,
                                           c10::DispatchKey::Functionalize, c10::DispatchKey::FuncTorchBatched,
                                           c10::DispatchKey::FuncTorchGradWrapper,
                                           c10::DispatchKey::BatchedNestedTensor, c10::DispatchKey::PreDispatch});
    return t.is_cpu() && t.layout() == at::kStrided && !t.is_nested() && !t.key_set().has_any(wrapped) &&
           (t.scalar_type() == at::kFloat || t.scalar_type() == at::kDouble);
  }

  FusedSoftmin(const at::Tensor& xd, const at::Tensor& yd, const Cost& c, bool eager, bool unrolled,
               c10::SymIntArrayRef batch_sym) {
    if (!eager || unrolled || any_param(c.opts) || (c.metric != "sqeuclidean" && c.metric != "euclidean")) return;
    if (!plain(xd) || !plain(yd) || xd.scalar_type() != yd.scalar_type()) return;
    if (xd.size(-2) == 0 || yd.size(-2) == 0 || xd.size(-1) != yd.size(-1)) return;
    for (const auto& s : batch_sym) batch.push_back(s.expect_int());
    auto flat = [&](const at::Tensor& t) {
      std::vector<int64_t> shape(batch);
      shape.push_back(t.size(-2));
      shape.push_back(t.size(-1));
      return t.expand(shape).reshape({-1, t.size(-2), t.size(-1)}).contiguous();
    };
    x = flat(xd);
    y = flat(yd);
    euclidean = c.metric == "euclidean";
    scale = c.scale;
    on = true;
  }

  // One soft-min: -eps log sum_j exp(h_j - C(p_i, q_j) / eps) (p, q: the flattened x or y),
  // with -prev / eps as each row's shift (prev: the potential it updates, undefined: none).
  struct Job {
    const at::Tensor* p;
    const at::Tensor* q;
    at::Tensor h, prev;
  };
  // all of one iteration's soft-mins in one call (one parallel region)
  std::vector<at::Tensor> operator()(double eps, const std::vector<Job>& jobs) const {
    std::vector<at::Tensor> ps, qs, hs, shifts;
    for (const Job& j : jobs) {
      const int64_t B = j.p->size(0);
      ps.push_back(*j.p);
      qs.push_back(*j.q);
      hs.push_back(j.h.reshape({B, j.q->size(1)}).contiguous());
      shifts.push_back(j.prev.defined() ? (j.prev * (-1.0 / eps)).reshape({B, j.p->size(1)}).contiguous()
                                        : at::Tensor());
    }
    std::vector<at::Tensor> out = tp::cpu::sinkhorn_lse_here(ps, qs, hs, shifts, -scale / eps, euclidean);
    for (size_t k = 0; k < out.size(); ++k) {
      std::vector<int64_t> shape(batch);
      shape.push_back(jobs[k].p->size(1));
      out[k] = out[k].view(shape) * (-eps);
    }
    return out;
  }
};

// GeomLoss' log_weights: log w, with -100000 (a finite stand-in for -inf) where w is 0
at::Tensor log_weights(const at::Tensor& w) {
  const at::Tensor pos = w > 0;
  return at::where(pos, at::log(at::where(pos, w, at::ones_like(w))), at::full_like(w, -100000.0));
}

// GeomLoss' epsilon_schedule: diameter^p, then numpy.arange(p log diameter, p log blur,
// p log scaling) exponentiated (numpy fills start + i * ((start + step) - start)), then blur^p.
std::vector<double> schedule(double p, double diameter, double blur, double scaling) {
  std::vector<double> eps{std::pow(diameter, p)};
  const double start = p * std::log(diameter), stop = p * std::log(blur), step = p * std::log(scaling);
  const double n = std::ceil((stop - start) / step);
  const double delta = (start + step) - start;
  for (int64_t i = 0; i < static_cast<int64_t>(n > 0 ? n : 0); ++i) {
    eps.push_back(std::exp(i == 0 ? start : i == 1 ? start + step : start + static_cast<double>(i) * delta));
  }
  eps.push_back(std::pow(blur, p));
  return eps;
}

// sum_i w_i |exp((f_i - ft_i) / eps) - 1|: the L1 error of the marginal on that side
at::Tensor marginal_error(const at::Tensor& w, const at::Tensor& f, const at::Tensor& ft, double eps) {
  return (w * at::expm1((f - ft) / eps).abs()).sum(-1);
}

at::Tensor weights(const Opt& w, const at::Tensor& points, const char* name, const char* of) {
  const auto rows = points.sym_size(-2);
  if (!w.has_value() || !w->defined()) {
    std::vector<c10::SymInt> shape(points.sym_sizes().begin(), points.sym_sizes().end() - 1);
    const double value = rows == 0 ? 0.0 : 1.0;
    at::Tensor u = at::full_symint(shape, value, points.options());
    return rows == 0 ? u : u.div(c10::Scalar(rows));
  }
  TORCH_CHECK_TYPE(at::isFloatingType(w->scalar_type()) || at::isIntegralType(w->scalar_type(), false), kOp, "'",
                   name, "' must be a real tensor, got ", w->scalar_type());
  TORCH_CHECK_VALUE(w->dim() >= 1 && w->sym_size(-1) == rows, kOp, "'", name, "' must have shape [..., ", rows,
                    "] (one weight per row of '", of, "'), got ", w->sym_sizes());
  TORCH_CHECK_VALUE(w->device() == points.device(), kOp, "'", name, "' is on ", w->device(), " but '", of,
                    "' is on ", points.device());
  return w->to(points.scalar_type());
}

void check_weights_eager(const at::Tensor& w, const char* name) {
  if (w.numel() == 0) return;
  const at::Tensor flat = w.detach().flatten();
  const at::Tensor bad = at::logical_or(at::logical_not(at::isfinite(flat)), flat < 0);
  if (bad.any().item<bool>()) {
    const int64_t i = bad.nonzero()[0][0].item<int64_t>();
    TORCH_CHECK_VALUE(false, kOp, "'", name, "' must be non-negative and finite, got ", flat[i].item<double>(),
                      " at flat index ", i);
  }
}

// whether any metric parameter is set
bool any_param(const ComparisonOptions& o) {
  bool any = false;
#define TP_ANY(name) any = any || o.name.has_value();
  TORCHPAIR_SCALAR_PARAMS(TP_ANY)
  TORCHPAIR_TENSOR_PARAMS(TP_ANY)
#undef TP_ANY
  return any;
}

double default_mass_tol(at::ScalarType t) { return t == at::kDouble ? 1e-7 : 1e-4; }

// GeomLoss' max_diameter (bounding-box diagonal of both clouds), or for a catalog metric
// the largest cost between them (a streamed max), raised to 1/p.
double default_diameter(const at::Tensor& x, const at::Tensor& y, const Cost& c, double p, bool geomloss_cost) {
  at::NoGradGuard no_grad;
  if (geomloss_cost) {
    const auto d = x.size(-1);
    const at::Tensor xs = x.reshape({-1, d}), ys = y.reshape({-1, d});
    const at::Tensor lo = at::minimum(std::get<0>(xs.min(0)), std::get<0>(ys.min(0)));
    const at::Tensor hi = at::maximum(std::get<0>(xs.max(0)), std::get<0>(ys.max(0)));
    return (hi - lo).norm().item<double>();
  }
  const at::Tensor top = std::get<0>(lazy_topk(x, y, c.metric, 1, -1, true, true, false, "propagate", c.opts));
  return std::pow(std::max(top.max().item<double>() * c.scale, 0.0), 1.0 / p);
}

// exponent: the transport exponent p (the schema cannot call it p: that is the minkowski parameter)
Seven divergence(const at::Tensor& x, const at::Tensor& y, const Opt& a_in, const Opt& b_in, double exponent,
                 double blur, double scaling, std::optional<double> reach, std::optional<c10::string_view> metric,
                 std::optional<double> diameter_in, bool debias, std::optional<double> tol, int64_t max_iter,
                 bool unrolled, bool eager, std::optional<double> mass_tol, bool warn, const ComparisonOptions& opts);

// float16/bfloat16 points (outside autocast, which promotes them before this operator runs)
// are computed in float32; the value and the potentials come back in the points' dtype, and
// so do the gradients (through the casts).
Seven sinkhorn_divergence_op(const at::Tensor& x, const at::Tensor& y, const Opt& a_in, const Opt& b_in,
                             double exponent,
                             double blur, double scaling, std::optional<double> reach,
                             std::optional<c10::string_view> metric, std::optional<double> diameter_in, bool debias,
                             std::optional<double> tol, int64_t max_iter, bool unrolled, bool eager,
                             std::optional<double> mass_tol, bool warn TP_PARAM_DECLS) {
  TP_PACK_PARAMS(opts);
  const bool floating = x.defined() && y.defined() && at::isFloatingType(x.scalar_type()) &&
                        at::isFloatingType(y.scalar_type());
  const at::ScalarType common = floating ? at::promote_types(x.scalar_type(), y.scalar_type()) : at::kFloat;
  if (!floating || (common != at::kHalf && common != at::kBFloat16)) {
    return divergence(x, y, a_in, b_in, exponent, blur, scaling, reach, metric, diameter_in, debias, tol, max_iter,
                      unrolled, eager, mass_tol, warn, opts);
  }
  auto up = [](const Opt& w) -> Opt {
    if (!w.has_value() || !w->defined()) return w;
    return at::isFloatingType(w->scalar_type()) && w->scalar_type() != at::kDouble ? w->to(at::kFloat) : *w;
  };
  Seven r = divergence(x.to(at::kFloat), y.to(at::kFloat), up(a_in), up(b_in), exponent, blur, scaling, reach, metric,
                       diameter_in, debias, tol, max_iter, unrolled, eager, mass_tol, warn, opts);
  auto down = [&](const at::Tensor& t) { return t.to(common); };
  return {down(std::get<0>(r)), down(std::get<1>(r)), std::get<2>(r), down(std::get<3>(r)), down(std::get<4>(r)),
          down(std::get<5>(r)), down(std::get<6>(r))};
}

Seven divergence(const at::Tensor& x, const at::Tensor& y, const Opt& a_in, const Opt& b_in, double exponent,
                 double blur, double scaling, std::optional<double> reach, std::optional<c10::string_view> metric,
                 std::optional<double> diameter_in, bool debias, std::optional<double> tol, int64_t max_iter,
                 bool unrolled, bool eager, std::optional<double> mass_tol, bool warn, const ComparisonOptions& opts) {
  TORCH_CHECK_VALUE(x.defined() && x.dim() >= 2, kOp, "'X' must have shape [..., N, D]");
  TORCH_CHECK_VALUE(y.defined() && y.dim() >= 2, kOp, "'Y' must have shape [..., M, D]");
  TORCH_CHECK_TYPE(at::isFloatingType(x.scalar_type()) && at::isFloatingType(y.scalar_type()), kOp,
                   "'X' and 'Y' must be floating tensors, got ", x.scalar_type(), " and ", y.scalar_type());
  TORCH_CHECK_VALUE(std::isfinite(exponent) && exponent > 0, kOp, "'p' must be finite and > 0, got ", exponent);
  const bool geomloss_cost = !metric.has_value();
  TORCH_CHECK_VALUE(!geomloss_cost || exponent == 1.0 || exponent == 2.0, kOp,
                    "with metric=None the cost is |x - y|^p / p for p = 1 or 2 (GeomLoss), got p = ", exponent,
                    "; pass a catalog metric for another cost");
  TORCH_CHECK_VALUE(std::isfinite(blur) && blur > 0, kOp, "'blur' must be finite and > 0, got ", blur);
  TORCH_CHECK_VALUE(scaling > 0 && scaling < 1, kOp, "'scaling' must be in (0, 1), got ", scaling);
  TORCH_CHECK_VALUE(!reach.has_value() || (std::isfinite(*reach) && *reach > 0), kOp,
                    "'reach' must be finite and > 0 or None, got ", reach.value_or(0));
  TORCH_CHECK_VALUE(!tol.has_value() || (std::isfinite(*tol) && *tol > 0), kOp, "'tol' must be finite and > 0 or "
                    "None, got ", tol.value_or(0));
  TORCH_CHECK_VALUE(max_iter >= 0, kOp, "'max_iter' must be >= 0, got ", max_iter);
  TORCH_CHECK_VALUE(!diameter_in.has_value() || (std::isfinite(*diameter_in) && *diameter_in > 0), kOp,
                    "'diameter' must be finite and > 0 or None, got ", diameter_in.value_or(0));
  const Cost cost{geomloss_cost ? (exponent == 1.0 ? "euclidean" : "sqeuclidean") : std::string(*metric),
                  geomloss_cost && exponent == 2.0 ? 0.5 : 1.0, opts};
  TORCH_CHECK_VALUE(!geomloss_cost || !any_param(opts), kOp,
                    "metric parameters need a 'metric' (metric=None is |x - y|^p / p)");
  if (!geomloss_cost) metric_kind(cost.metric, "sinkhorn_divergence");  // unknown names: a clear error

  const at::Tensor a0 = weights(a_in, x, "a", "X"), b0 = weights(b_in, y, "b", "Y");
  std::vector<c10::SymInt> xb(x.sym_sizes().begin(), x.sym_sizes().end() - 2);
  std::vector<c10::SymInt> yb(y.sym_sizes().begin(), y.sym_sizes().end() - 2);
  std::vector<c10::SymInt> ab(a0.sym_sizes().begin(), a0.sym_sizes().end() - 1);
  std::vector<c10::SymInt> bb(b0.sym_sizes().begin(), b0.sym_sizes().end() - 1);
  auto batch = at::infer_size_symdimvector(at::infer_size_symdimvector(xb, yb),
                                           at::infer_size_symdimvector(ab, bb));
  auto with = [&](const c10::SymInt& last) {
    std::vector<c10::SymInt> s(batch.begin(), batch.end());
    s.push_back(last);
    return s;
  };
  const at::Tensor a = a0.expand_symint(with(x.sym_size(-2)));
  const at::Tensor b = b0.expand_symint(with(y.sym_size(-2)));
  const std::optional<double> rho =
      reach.has_value() ? std::optional<double>(std::pow(*reach, exponent)) : std::nullopt;

  if (eager) {
    check_weights_eager(a, "a");
    check_weights_eager(b, "b");
    if (!rho.has_value()) {
      at::NoGradGuard no_grad;
      const at::Tensor sa = a.sum(-1), sb = b.sum(-1);
      const double rel = mass_tol.value_or(default_mass_tol(x.scalar_type()));
      const at::Tensor off = (sa - sb).abs() > at::maximum(sa, sb) * rel;
      if (off.any().item<bool>()) {
        const at::Tensor first = off.dim() ? off.flatten().nonzero()[0][0] : at::zeros({}, at::kLong);
        const int64_t i = first.item<int64_t>();
        TORCH_CHECK_VALUE(false, kOp, "'a' and 'b' must have the same total mass for balanced transport, got sum(a) = ",
                          sa.flatten()[i].item<double>(), " and sum(b) = ", sb.flatten()[i].item<double>(),
                          "; normalize them, or pass 'reach' (unbalanced)");
      }
    }
  }
  const bool empty = x.sym_size(-2) == 0 || y.sym_size(-2) == 0;
  if (empty && !rho.has_value()) {  // equal masses, so both are 0: nothing to transport
    const at::Tensor zero = (a.sum(-1) + b.sum(-1)) * 0.0;
    return {zero, zero, at::zeros({}, x.options().dtype(at::kLong)), a * 0, b * 0, a * 0, b * 0};
  }
  double diameter;
  if (diameter_in.has_value()) {
    diameter = *diameter_in;
  } else {
    TORCH_CHECK_VALUE(eager, kOp, "under torch.compile / torch.export pass 'diameter' (the length of the epsilon "
                      "schedule depends on it, and it is data-dependent otherwise)");
    diameter = empty ? blur : default_diameter(x, y, cost, exponent, geomloss_cost);
  }
  // a zero diameter (all points equal) starts the schedule at blur instead of log(0)
  const std::vector<double> eps_list = schedule(exponent, std::max(diameter, blur), blur, scaling);
  auto damp = [&](double eps) { return rho.has_value() ? 1.0 / (1.0 + eps / *rho) : 1.0; };

  // envelope mode: the loop runs without autograd; the last extrapolation differentiates
  // through C(x_i, .) with the other cloud, the weights and the potentials detached
  const at::Tensor xd = x.detach(), yd = y.detach();
  at::Tensor f_ba, g_ab, f_aa, g_bb, err;
  int64_t niter = 0;
  double eps = eps_list.front();
  at::Tensor a_log, b_log;
  {
    c10::AutoGradMode grad_mode(unrolled && at::GradMode::is_enabled());
    const at::Tensor& xi = unrolled ? x : xd;
    const at::Tensor& yi = unrolled ? y : yd;
    a_log = log_weights(unrolled ? a : a.detach());
    b_log = log_weights(unrolled ? b : b.detach());
    const FusedSoftmin fused(xd, yd, cost, eager, unrolled, batch);
    // The soft-mins of one step: f_ba from h_b, g_ab from h_a, f_aa from h_aa, g_bb from h_bb
    // (h_aa, h_bb undefined without debias). prev: the potentials they update (the fused
    // kernel's shifts, which are in units of its result -eps lse: hence the division by damp).
    auto step = [&](double e, const at::Tensor& h_b, const at::Tensor& h_a, const at::Tensor& h_aa,
                    const at::Tensor& h_bb, bool shifted) {
      std::vector<at::Tensor> out;
      if (fused.on) {
        auto prev = [&](const at::Tensor& f) { return shifted ? f / damp(e) : at::Tensor(); };
        std::vector<FusedSoftmin::Job> jobs{{&fused.x, &fused.y, h_b, prev(f_ba)}, {&fused.y, &fused.x, h_a, prev(g_ab)}};
        if (debias) {
          jobs.push_back({&fused.x, &fused.x, h_aa, prev(f_aa)});
          jobs.push_back({&fused.y, &fused.y, h_bb, prev(g_bb)});
        }
        out = fused(e, jobs);
      } else {
        out.push_back(softmin(e, xi, yi, h_b, -1, cost));
        out.push_back(softmin(e, xi, yi, h_a, -2, cost));
        if (debias) {
          out.push_back(softmin(e, xi, unrolled ? x : xd, h_aa, -1, cost));
          out.push_back(softmin(e, yi, unrolled ? y : yd, h_bb, -1, cost));
        }
      }
      for (auto& t : out) t = t * damp(e);
      return out;
    };
    {
      const std::vector<at::Tensor> first = step(eps, b_log, a_log, a_log, b_log, false);
      f_ba = first[0];
      g_ab = first[1];
      if (debias) {
        f_aa = first[2];
        g_bb = first[3];
      }
    }
    const int64_t scheduled = static_cast<int64_t>(eps_list.size());
    const int64_t total = scheduled + (tol.has_value() ? max_iter : 0);
    for (int64_t i = 0; i < total; ++i) {
      if (i >= scheduled && eager && err.defined() && (err < *tol).all().item<bool>()) break;
      eps = eps_list[std::min(i, scheduled - 1)];
      const std::vector<at::Tensor> t =
          step(eps, b_log + g_ab / eps, a_log + f_ba / eps, debias ? a_log + f_aa / eps : at::Tensor(),
               debias ? b_log + g_bb / eps : at::Tensor(), true);
      const at::Tensor& ft_ba = t[0];
      const at::Tensor& gt_ab = t[1];
      at::Tensor ft_aa, gt_bb;
      if (debias) {
        ft_aa = t[2];
        gt_bb = t[3];
      }
      // marginal error of the plan (f, g) before the update: its x-marginal is
      // a_i exp((f_i - ft_i) / eps), likewise on y
      err = marginal_error(a, f_ba, ft_ba, eps) + marginal_error(b, g_ab, gt_ab, eps);
      if (debias) {
        err = at::maximum(err, 2 * marginal_error(a, f_aa, ft_aa, eps));
        err = at::maximum(err, 2 * marginal_error(b, g_bb, gt_bb, eps));
      }
      f_ba = (f_ba + ft_ba) * 0.5;
      g_ab = (g_ab + gt_ab) * 0.5;
      if (debias) {
        f_aa = (f_aa + ft_aa) * 0.5;
        g_bb = (g_bb + gt_bb) * 0.5;
      }
      ++niter;
    }
  }
  if (!unrolled) {
    const at::Tensor h_b = (b_log + g_ab / eps).detach(), h_a = (a_log + f_ba / eps).detach();
    at::Tensor new_f = softmin(eps, x, yd, h_b, -1, cost) * damp(eps);
    at::Tensor new_g = softmin(eps, xd, y, h_a, -2, cost) * damp(eps);
    f_ba = new_f;
    g_ab = new_g;
    if (debias) {
      f_aa = softmin(eps, x, xd, (a_log + f_aa / eps).detach(), -1, cost) * damp(eps);
      g_bb = softmin(eps, y, yd, (b_log + g_bb / eps).detach(), -1, cost) * damp(eps);
    }
  }
  const double final_eps = eps_list.back();
  at::Tensor value;
  if (!rho.has_value()) {
    value = (a * (debias ? f_ba - f_aa : f_ba)).sum(-1) + (b * (debias ? g_ab - g_bb : g_ab)).sum(-1);
  } else {  // GeomLoss' UnbalancedWeight: (rho + eps / 2) * (...)
    const double w = *rho + final_eps / 2, r = *rho;
    auto e = [&](const at::Tensor& f) { return at::exp(-f / r); };
    if (debias) {
      value = (a * w * (e(f_aa) - e(f_ba))).sum(-1) + (b * w * (e(g_bb) - e(g_ab))).sum(-1);
    } else {
      value = (a * w * (1 - e(f_ba))).sum(-1) + (b * w * (1 - e(g_ab))).sum(-1);
    }
  }
  if (!err.defined()) err = at::zeros_like(value);
  if (eager && warn && tol.has_value() && !(err < *tol).all().item<bool>()) {
    TORCH_WARN(kOp, "the marginal error ", err.max().item<double>(), " is still above tol = ", *tol,
               " after max_iter = ", max_iter, " iterations at eps = blur^p; raise max_iter or blur");
  }
  if (!debias) {
    f_aa = at::zeros_like(f_ba);
    g_bb = at::zeros_like(g_ab);
  }
  return {value, err.detach(), at::scalar_tensor(niter, x.options().dtype(at::kLong)), f_ba, g_ab, f_aa, g_bb};
}

}  // namespace

Seven sinkhorn_divergence(const at::Tensor& x, const at::Tensor& y, const std::optional<at::Tensor>& a,
                          const std::optional<at::Tensor>& b, double exponent, double blur, double scaling,
                          std::optional<double> reach, const std::optional<std::string>& metric,
                          std::optional<double> diameter, bool debias, std::optional<double> tol, int64_t max_iter,
                          bool unrolled, bool eager, std::optional<double> mass_tol, bool warn,
                          const ComparisonOptions& o) {
  static auto op = handle<Seven(const at::Tensor&, const at::Tensor&, const Opt&, const Opt&, double, double, double,
                                std::optional<double>, std::optional<c10::string_view>, std::optional<double>, bool,
                                std::optional<double>, int64_t, bool, bool, std::optional<double>, bool TP_PARAM_TYPES)>(
      "torchpair::sinkhorn_divergence");
  std::optional<c10::string_view> m;
  if (metric.has_value()) m = c10::string_view(*metric);
  return op.call(x, y, a, b, exponent, blur, scaling, reach, m, diameter, debias, tol, max_iter, unrolled, eager,
                 mass_tol, warn TP_PARAM_FIELDS);
}

}  // namespace tp::ops

TORCH_LIBRARY_FRAGMENT(torchpair, m) {
  const std::vector<at::Tag> tags{at::Tag::pt2_compliant_tag};
  m.def(("sinkhorn_divergence(Tensor x, Tensor y, Tensor? a=None, Tensor? b=None, float exponent=2, float blur=0.05, "
         "float scaling=0.5, float? reach=None, str? metric=None, float? diameter=None, bool debias=True, "
         "float? tol=None, int max_iter=1000, bool unrolled=False, bool eager=True, float? mass_tol=None, bool warn=True" +
         tp::ops::params_schema() +
         ") -> (Tensor value, Tensor err, Tensor niter, Tensor f_ba, Tensor g_ab, Tensor f_aa, Tensor g_bb)")
            .c_str(),
        tags);
}

TORCH_LIBRARY_IMPL(torchpair, CompositeImplicitAutograd, m) {
  m.impl("sinkhorn_divergence", &tp::ops::sinkhorn_divergence_op);
}
