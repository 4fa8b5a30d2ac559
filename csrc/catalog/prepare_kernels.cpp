// Preparation of the sklearn kernels: parameter defaults and validation,
// operand transformations (normalisation, length scales), engine kernel choice. Kernel
// definitions: csrc/metrics/kernels.h.
#include <c10/core/DispatchKeySet.h>
#include <c10/util/Exception.h>

#include <cmath>
#include <limits>
#include <sstream>

#include "catalog/prepare.h"

namespace tp::catalog {
namespace {

// sklearn: gamma = 1 / n_features when omitted. With no features every inner product and
// distance is 0, so any gamma gives the same values; 1.0 keeps the default finite.
double gamma_param(const Inputs& in, const ComparisonOptions& o, const char* metric, double sklearn_default) {
  const int64_t d = feature_dim(in);
  const double fallback = sklearn_default > 0 ? sklearn_default : (d > 0 ? 1.0 / double(d) : 1.0);
  return float_param(o.gamma, fallback, "gamma", in, metric, 0.0);
}

Prepared gemm_call(const Inputs& in, const at::Tensor& x, const at::Tensor& y, const char* kernel,
                   std::vector<double> scalars) {
  Prepared p;
  p.symmetric = in.symmetric;
  p.x = x;
  p.y = in.symmetric ? x : y;
  p.kernel = kernel;
  p.scalars = std::move(scalars);
  return p;
}

Prepared direct_call(const Inputs& in, const char* kernel, std::vector<double> scalars) {
  return gemm_call(in, in.x, in.y, kernel, std::move(scalars));
}

// Data-dependent checks (sign of the inputs, of the length scales) read values: done on real
// tensors in eager mode, skipped on the fake/functional tensors of torch.compile and
// torch.export, where values are unknown (docs/conventions.md).
bool values_are_readable(const at::Tensor& t) {
  if (!t.defined() || t.is_meta()) return false;
  const c10::DispatchKeySet traced({c10::DispatchKey::Python, c10::DispatchKey::PythonTLSSnapshot,
                                    c10::DispatchKey::Functionalize});
  return !t.key_set().has_any(traced);
}

// sklearn's chi2 kernels are defined for non-negative features ("X contains negative
// values." otherwise): the same check, naming the argument.
void check_non_negative(const Inputs& in, const char* metric) {
  auto check = [&](const at::Tensor& t, const char* name) {
    if (!values_are_readable(t) || t.numel() == 0) return;
    TORCH_CHECK_VALUE(!(t < 0).any().item<bool>(), "torchpair.", in.op, ": metric '", metric,
                      "' needs non-negative features, but '", name, "' contains negative values");
  };
  check(in.x, "x");
  if (!in.symmetric) check(in.y, "y");
}

// Scalar length_scale (default 1.0, > 0), returned as 1 / length_scale^2; or one length
// scale per feature (tensor length_scales, [D] or 0-d, > 0) applied to the operands, which
// makes it differentiable. Not both.
double length_scale_param(Inputs& scaled, const Inputs& in, const ComparisonOptions& o, const char* metric) {
  if (!o.length_scales.has_value()) {
    const double ls = float_param(o.length_scale, 1.0, "length_scale", in, metric, 0.0, /*lo_inclusive=*/false);
    return 1.0 / (ls * ls);
  }
  TORCH_CHECK_VALUE(!o.length_scale.has_value(), "torchpair.", in.op, ": metric '", metric,
                    "' takes either 'length_scale' (one value) or 'length_scales' (one per feature), not both");
  const at::Tensor& ls = *o.length_scales;
  const int64_t d = feature_dim(in);
  TORCH_CHECK_TYPE(!ls.is_complex() && ls.scalar_type() != at::kBool, "torchpair.", in.op,
                   ": parameter 'length_scales' of metric '", metric, "' must be a real tensor, got ", ls.scalar_type());
  TORCH_CHECK_VALUE(ls.device() == in.x.device(), "torchpair.", in.op, ": parameter 'length_scales' is on ",
                    ls.device(), " but 'x' is on ", in.x.device());
  TORCH_CHECK_VALUE(ls.dim() == 0 || (ls.dim() == 1 && ls.sym_size(0) == d), "torchpair.", in.op,
                    ": parameter 'length_scales' of metric '", metric,
                    "' must have one value per feature (shape [", d, "]) or be a scalar, got shape ", ls.sym_sizes());
  if (values_are_readable(ls) && ls.numel() > 0) {
    const at::Tensor v = ls.detach();
    TORCH_CHECK_VALUE(at::isfinite(v).all().item<bool>() && (v > 0).all().item<bool>(), "torchpair.", in.op,
                      ": parameter 'length_scales' of metric '", metric, "' must be finite and > 0");
  }
  const at::Tensor lsx = ls.to(in.x.scalar_type());
  scaled.x = in.x / lsx;
  scaled.y = in.symmetric ? scaled.x : in.y / lsx;
  return 1.0;
}

constexpr double kPi = 3.14159265358979323846;

// A derived kernel scalar in the tile dtype's range (see float_param): a float kernel would
// turn a larger finite double into inf.
double tile_scalar(const Inputs& in, double v) {
  if (in.x.scalar_type() == at::kDouble) return v;
  constexpr double kMaxFloat = std::numeric_limits<float>::max();
  return std::max(-kMaxFloat, std::min(kMaxFloat, v));
}

// One positive hyperparameter as a 0-d tensor in x's dtype: the tensor given as `tensor_name`
// (an input: differentiable), else the float `name` (or its default) as a constant.
at::Tensor positive_hyperparameter(const std::optional<at::Tensor>& tensor, const std::optional<double>& value,
                                   const char* name, const char* tensor_name, const Inputs& in, const char* metric) {
  if (!tensor.has_value())
    return at::scalar_tensor(float_param(value, 1.0, name, in, metric, 0.0, /*lo_inclusive=*/false),
                             in.x.options().requires_grad(false));
  TORCH_CHECK_VALUE(!value.has_value(), "torchpair.", in.op, ": metric '", metric, "' takes either '", name,
                    "' (a number) or '", tensor_name, "' (a tensor), not both");
  const at::Tensor& t = *tensor;
  TORCH_CHECK_TYPE(!t.is_complex() && t.scalar_type() != at::kBool, "torchpair.", in.op, ": parameter '", name,
                   "' of metric '", metric, "' must be a real tensor, got ", t.scalar_type());
  TORCH_CHECK_VALUE(t.device() == in.x.device(), "torchpair.", in.op, ": parameter '", name, "' is on ", t.device(),
                    " but 'x' is on ", in.x.device());
  TORCH_CHECK_VALUE(t.dim() == 0, "torchpair.", in.op, ": parameter '", name, "' of metric '", metric,
                    "' must be one value (a number or a 0-d tensor), got shape ", t.sym_sizes());
  if (values_are_readable(t)) {
    const double v = t.detach().item<double>();
    TORCH_CHECK_VALUE(std::isfinite(v) && v > 0, "torchpair.", in.op, ": parameter '", name, "' of metric '", metric,
                      "' must be finite and > 0, got ", v);
  }
  return t.to(in.x.scalar_type());
}

Prepared prepare_linear(const Inputs& in, const ComparisonOptions&) {
  return direct_call(in, "linear_gemm", {});
}

Prepared prepare_cosine_similarity(const Inputs& in, const ComparisonOptions&) {
  // sklearn's normalize(X) @ normalize(Y).T: normalised copies of the operands (N x D; a
  // row of norm 0 stays 0) and the plain product, so a dense result is one multi-threaded
  // GEMM, as the torch formula. The gradient flows through the normalisation (autograd of
  // the ATen form when an operand requires grad): 0 for a zero row.
  const at::Tensor x = normalized_rows(in.x);
  return gemm_call(in, x, in.symmetric ? x : normalized_rows(in.y), "linear_gemm", {});
}

Prepared prepare_polynomial(const Inputs& in, const ComparisonOptions& o) {
  const double gamma = gamma_param(in, o, "polynomial", 0.0);
  const double coef0 = float_param(o.coef0, 1.0, "coef0", in, "polynomial");
  const double degree = float_param(o.degree, 3.0, "degree", in, "polynomial", 1.0);
  return direct_call(in, "polynomial_gemm", {gamma, coef0, degree});
}

Prepared prepare_sigmoid(const Inputs& in, const ComparisonOptions& o) {
  const double gamma = gamma_param(in, o, "sigmoid", 0.0);
  const double coef0 = float_param(o.coef0, 1.0, "coef0", in, "sigmoid");
  return direct_call(in, "sigmoid_gemm", {gamma, coef0});
}

Prepared prepare_laplacian(const Inputs& in, const ComparisonOptions& o) {
  return direct_call(in, "laplacian_direct", {gamma_param(in, o, "laplacian", 0.0)});
}

Prepared prepare_chi2(const Inputs& in, const ComparisonOptions& o) {
  const double gamma = gamma_param(in, o, "chi2", 1.0);
  check_non_negative(in, "chi2");
  return direct_call(in, "chi2_direct", {gamma});
}

Prepared prepare_additive_chi2(const Inputs& in, const ComparisonOptions&) {
  check_non_negative(in, "additive_chi2");
  return direct_call(in, "additive_chi2_direct", {});
}

Prepared prepare_matern(const Inputs& in, const ComparisonOptions& o) {
  const double nu = o.nu.value_or(1.5);
  TORCH_CHECK_VALUE(nu == 0.5 || nu == 1.5 || nu == 2.5 || nu == std::numeric_limits<double>::infinity(),
                    "torchpair.", in.op, ": parameter 'nu' of metric 'matern' must be one of 0.5, 1.5, 2.5 or inf, got ",
                    nu);
  Inputs scaled = in;
  const double inv_ls2 = length_scale_param(scaled, in, o, "matern");
  return distance_family(scaled, kMaternKernels, {nu, inv_ls2});
}

Prepared prepare_rational_quadratic(const Inputs& in, const ComparisonOptions& o) {
  const double alpha = float_param(o.alpha, 1.0, "alpha", in, "rational_quadratic", 0.0, /*lo_inclusive=*/false);
  Inputs scaled = in;
  const double inv_ls2 = length_scale_param(scaled, in, o, "rational_quadratic");
  return distance_family(scaled, kRationalQuadraticKernels, {alpha, inv_ls2});
}

// sklearn.gaussian_process.kernels.ExpSineSquared. Number parameters are kernel scalars
// (gamma = 2 / length_scale^2, omega = pi / periodicity) of the d2-kernel, through
// distance_family (difference-based up to 16 features). A tensor parameter (0-d) is an input:
// the operands are centred and scaled by pi / periodicity, and the GEMM value kernel takes
// gamma as a side feature, so autograd differentiates both parameters.
Prepared prepare_exp_sine_squared(const Inputs& in, const ComparisonOptions& o) {
  const char* metric = "exp_sine_squared";
  if (!o.length_scales.has_value() && !o.periodicities.has_value()) {
    const double ls = float_param(o.length_scale, 1.0, "length_scale", in, metric, 0.0, /*lo_inclusive=*/false);
    const double per = float_param(o.periodicity, 1.0, "periodicity", in, metric, 0.0, /*lo_inclusive=*/false);
    return distance_family(in, kExpSineSquaredKernels, {tile_scalar(in, 2.0 / (ls * ls)), tile_scalar(in, kPi / per)});
  }
  const at::Tensor ls =
      positive_hyperparameter(o.length_scales, o.length_scale, "length_scale", "length_scales", in, metric);
  const at::Tensor per =
      positive_hyperparameter(o.periodicities, o.periodicity, "periodicity", "periodicities", in, metric);
  // d2 is translation invariant: a common centre (a constant for autograd) keeps the GEMM
  // form's cancellation small, as in distance_family.
  const at::Tensor ref = in.symmetric ? in.x : in.y;
  const at::Tensor centre = at::nan_to_num(ref.detach().mean(1, /*keepdim=*/true), 0.0, 0.0, 0.0);
  const at::Tensor omega = at::reciprocal(per) * kPi;
  const at::Tensor u = (in.x - centre) * omega;
  const at::Tensor v = in.symmetric ? u : (in.y - centre) * omega;
  const at::Tensor uu = u.square().sum(-1, /*keepdim=*/true);
  const at::Tensor vv = in.symmetric ? uu : v.square().sum(-1, /*keepdim=*/true);
  Prepared p;
  p.symmetric = in.symmetric;  // the diagonal: exact self-comparisons (value 1)
  p.kernel = "exp_sine_squared_param_gemm";
  p.x = at::cat({u, uu}, -1);
  p.y = at::cat({v * -2.0, at::ones_like(vv)}, -1);
  p.a = (at::reciprocal(ls.square()) * 2.0).expand_symint({in.x.sym_size(0), in.x.sym_size(1)}).contiguous();
  p.b = vv.squeeze(-1);
  return p;
}

}  // namespace

// sklearn's names and defaults.
std::vector<MetricInfo> kernel_rows() {
  const ParamInfo coef0{"coef0", "float", "1", "additive constant; must be finite", "1"};
  const ParamInfo chi2_gamma{"gamma", "float", "1", "kernel width; must be finite and >= 0", "1"};
  const ParamInfo length_scale{"length_scale", "float", "1", "one length scale for all features; finite, > 0", "1"};
  const ParamInfo length_scales{"length_scales", "tensor", "none",
                                "one length scale per feature ([D]; Python: an array length_scale), > 0; "
                                "differentiable"};
  const char* f = "float32/float64";
  const char* out = "input dtype";
  std::vector<MetricInfo> rows;
  auto kernel = [&](const char* name, std::vector<std::string> aliases, std::vector<ParamInfo> params, const char* doc,
                    PrepareFn fn) {
    rows.push_back({name, std::move(aliases), Family::kKernel, "similarity", std::move(params), true, f, out, doc, fn});
  };
  kernel("linear", {}, {}, "x . y", &prepare_linear);
  kernel("polynomial", {"poly"},
         {{"degree", "float", "3", "exponent; finite, >= 1 (integers are exact for negative bases)", "3"}, kGammaParam,
          coef0},
         "(gamma * x . y + coef0)^degree", &prepare_polynomial);
  kernel("sigmoid", {}, {kGammaParam, coef0}, "tanh(gamma * x . y + coef0)", &prepare_sigmoid);
  kernel("cosine_similarity", {}, {}, "x . y / (|x| |y|); 0 for a row of norm 0 (sklearn)", &prepare_cosine_similarity);
  kernel("laplacian", {}, {kGammaParam}, "exp(-gamma * sum_k |x_k - y_k|)", &prepare_laplacian);
  kernel("chi2", {}, {chi2_gamma},
         "exp(-gamma * sum_k (x_k - y_k)^2 / (x_k + y_k)); terms with x_k + y_k = 0 are 0; features >= 0",
         &prepare_chi2);
  kernel("additive_chi2", {}, {}, "-sum_k (x_k - y_k)^2 / (x_k + y_k); terms with x_k + y_k = 0 are 0; features >= 0",
         &prepare_additive_chi2);
  kernel("matern", {}, {{"nu", "float", "1.5", "smoothness: 0.5, 1.5, 2.5 or inf", "1.5"}, length_scale, length_scales},
         "sklearn.gaussian_process.kernels.Matern(length_scale, nu)", &prepare_matern);
  kernel("rational_quadratic", {},
         {{"alpha", "float", "1", "scale mixture parameter; finite, > 0", "1"}, length_scale},
         "(1 + |x - y|^2 / (2 alpha length_scale^2))^(-alpha) (sklearn RationalQuadratic)",
         &prepare_rational_quadratic);
  kernel("exp_sine_squared", {},
         {{"length_scale", "float", "1", "finite, > 0 (a 0-d tensor: differentiable)"},
          {"periodicity", "float", "1", "finite, > 0 (a 0-d tensor: differentiable)"},
          {"length_scales", "tensor", "none", "length_scale as a 0-d tensor (Python: length_scale=tensor)"},
          {"periodicities", "tensor", "none", "periodicity as a 0-d tensor (Python: periodicity=tensor)"}},
         "exp(-2 sin^2(pi |x - y| / periodicity) / length_scale^2) (sklearn ExpSineSquared)",
         &prepare_exp_sine_squared);
  return rows;
}

}  // namespace tp::catalog
