// Prepare functions of the numeric distances: parameter defaults and validation (messages
// name the parameter), operand transformations (scaling, centring, normalisation,
// whitening) as ATen compositions — so autograd flows through them to X, Y and the tensor
// parameters w, V, VI — and the choice of engine kernel (csrc/metrics/distances.h).
#include <c10/core/DispatchKeySet.h>
#include <c10/util/Exception.h>

#include <cmath>
#include <limits>

#include "catalog/prepare.h"

namespace tp::catalog {
namespace {

// Whether the tensor holds real data (value checks would be data-dependent on the fake or
// functional tensors of a captured graph, where they are skipped).
bool concrete(const at::Tensor& t) {
  const auto ks = t.key_set();
  return !t.is_meta() && !ks.has(c10::DispatchKey::Python) && !ks.has(c10::DispatchKey::Functionalize) &&
         !ks.has(c10::DispatchKey::PythonTLSSnapshot);
}

// A tensor parameter: floating, of the given shape, on x's device; returned in x's dtype.
// Values must be finite (and >= 0 when nonnegative).
at::Tensor tensor_param(const at::Tensor& t, const char* name, const Inputs& in, const std::string& metric,
                        at::IntArrayRef shape, bool nonnegative) {
  TORCH_CHECK_TYPE(at::isFloatingType(t.scalar_type()), "torchpair.", in.op, ": parameter '", name, "' of metric '",
                   metric, "' must be a floating tensor, got ", t.scalar_type());
  TORCH_CHECK_VALUE(t.sizes() == shape, "torchpair.", in.op, ": parameter '", name, "' of metric '", metric,
                    "' must have shape ", shape, " (n_features = ", feature_dim(in), "), got ", t.sizes());
  TORCH_CHECK_VALUE(t.device() == in.x.device(), "torchpair.", in.op, ": parameter '", name, "' is on ", t.device(),
                    " but 'x' is on ", in.x.device());
  if (concrete(t)) {
    TORCH_CHECK_VALUE(at::isfinite(t).all().item<bool>(), "torchpair.", in.op, ": parameter '", name,
                      "' of metric '", metric, "' must be finite");
    if (nonnegative)
      TORCH_CHECK_VALUE((t >= 0).all().item<bool>(), "torchpair.", in.op, ": parameter '", name, "' of metric '",
                        metric, "' must be >= 0");
  }
  return t.to(in.x.scalar_type());
}

Prepared operands(const Inputs& in, const at::Tensor& x, const at::Tensor& y, const std::string& kernel,
                  std::vector<double> scalars = {}) {
  Prepared p;
  p.x = x;
  p.y = in.symmetric ? x : y;
  p.kernel = kernel;
  p.scalars = std::move(scalars);
  p.symmetric = in.symmetric;
  return p;
}

// The same inputs with transformed operands (y transformed by the same function).
template <typename F>
Inputs transformed(const Inputs& in, const F& f) {
  Inputs out = in;
  out.x = f(in.x);
  out.y = in.symmetric ? out.x : f(in.y);
  return out;
}

// The rows whose statistics give the default V / VI: x alone when the comparison is x with
// itself (Y = None, pdist: scipy's pdist and sklearn's pairwise_distances(X)), so that
// pairwise(X, None) is squareform(pdist(X)); x and y stacked for two sets (scipy's cdist,
// also cdist(X, X) with X passed twice).
at::Tensor stacked(const Inputs& in) {
  if (in.symmetric) return in.x;
  return at::cat({in.x, in.y}, 1);
}

Prepared cosine_of(const Inputs& in, const at::Tensor& x, const at::Tensor& y) {
  if (in.compute_mode == ComputeMode::kDirect) {
    // |x/|x| - y/|y||^2 / 2 on the normalised rows: exactly 0 for equal rows (the GEMM form
    // 1 - x.y / (|x| |y|) leaves rounding noise there), no cancellation for close rows.
    const at::Tensor xn = normalized_rows(x);
    return operands(in, xn, in.symmetric ? xn : normalized_rows(y), "cosine_direct");
  }
  // The normalisation is the kernel's epilogue: side features 1 / |row| (0 for a zero row),
  // one pass over each operand; the GEMM reads the operands themselves.
  Prepared p = operands(in, x, y, "cosine_gemm");
  p.a = inverse_row_norms(x);
  p.b = in.symmetric ? p.a : inverse_row_norms(y);
  return p;
}

// sqrt(x) with gradient 0 (not inf) at x = 0; NaN for negative x.
at::Tensor safe_sqrt(const at::Tensor& x) {
  const at::Tensor zero = x == 0;
  return at::where(zero, at::zeros_like(x), at::sqrt(at::where(zero, at::ones_like(x), x)));
}

Prepared prepare_cityblock(const Inputs& in, const ComparisonOptions&) {
  return operands(in, in.x, in.y, "cityblock_direct");
}

Prepared prepare_chebyshev(const Inputs& in, const ComparisonOptions&) {
  return operands(in, in.x, in.y, "chebyshev_direct");
}

Prepared prepare_minkowski(const Inputs& in, const ComparisonOptions& o) {
  const double p = o.p.value_or(2.0);
  TORCH_CHECK_VALUE(!std::isnan(p) && p >= 1.0, "torchpair.", in.op,
                    ": parameter 'p' of metric 'minkowski' must be >= 1 (or inf), got ", p);
  const int64_t d = feature_dim(in);
  Inputs scaled = in;
  if (o.w.has_value()) {
    const at::Tensor w = tensor_param(*o.w, "w", in, "minkowski", {d}, /*nonnegative=*/true);
    // sum_k w_k |x_k - y_k|^p = sum_k |s_k x_k - s_k y_k|^p with s = w^(1/p); for p = inf,
    // scipy keeps the features with w_k > 0. Gradient w.r.t. w_k at w_k = 0: 0.
    const at::Tensor pos = w > 0;
    const at::Tensor s = std::isinf(p) ? pos.to(w.scalar_type())
                                       : at::where(pos, at::pow(at::where(pos, w, at::ones_like(w)), 1.0 / p),
                                                   at::zeros_like(w));
    scaled = transformed(in, [&](const at::Tensor& t) { return t * s; });
  }
  if (std::isinf(p)) return operands(scaled, scaled.x, scaled.y, "chebyshev_direct");
  if (p == 1.0) return operands(scaled, scaled.x, scaled.y, "cityblock_direct");
  if (p == 2.0) return distance_family(scaled, kEuclideanKernels, {});
  return operands(scaled, scaled.x, scaled.y, "minkowski_direct", {p});
}

Prepared prepare_seuclidean(const Inputs& in, const ComparisonOptions& o) {
  const int64_t d = feature_dim(in);
  // scipy: V defaults to the variances (ddof = 1) of the rows (see stacked()).
  const at::Tensor V = o.V.has_value() ? tensor_param(*o.V, "V", in, "seuclidean", {d}, /*nonnegative=*/true)
                                       : at::var(stacked(in), at::IntArrayRef{1}, /*unbiased=*/true, /*keepdim=*/true);
  // A zero variance drops its feature (its coordinates are equal wherever V is the default).
  const at::Tensor pos = V > 0;
  const at::Tensor s = at::where(pos, at::rsqrt(at::where(pos, V, at::ones_like(V))), at::zeros_like(V));
  return distance_family(transformed(in, [&](const at::Tensor& t) { return t * s; }), kEuclideanKernels, {});
}

Prepared prepare_mahalanobis(const Inputs& in, const ComparisonOptions& o) {
  const int64_t d = feature_dim(in);
  at::Tensor VI;
  if (o.VI.has_value()) VI = tensor_param(*o.VI, "VI", in, "mahalanobis", {d, d}, /*nonnegative=*/false);
  const bool stack_y = !in.symmetric;  // the rows of the default VI: see stacked()
  if (auto native = mahalanobis_native(in, VI, stack_y)) return *native;
  if (!VI.defined()) {
    // scipy: the inverse of the covariance of the stacked rows; the pseudo-inverse here, so
    // a singular covariance works.
    const at::Tensor z = stacked(in);
    const at::Tensor zc = z - z.mean(1, /*keepdim=*/true);
    VI = covariance_pinv(at::matmul(zc.transpose(1, 2), zc).div(c10::Scalar(z.sym_size(1) - 1)));
  }
  const at::Tensor VIs = (VI + VI.transpose(-1, -2)) * 0.5;
  // d^2 = (x - y) VI (x - y)^T = a + b - 2 g with g = (x VI) . y, a = x VI x, b = y VI y,
  // on operands centred first (the GEMM form loses eps * (a + b) to cancellation).
  const at::Tensor ref = in.symmetric ? in.x : in.y;
  const at::Tensor centre = at::nan_to_num(ref.detach().mean(1, /*keepdim=*/true), 0.0, 0.0, 0.0);
  const at::Tensor xc = in.x - centre;
  const at::Tensor yc = in.symmetric ? xc : in.y - centre;
  Prepared p;
  p.symmetric = in.symmetric;
  p.x = at::matmul(xc, VIs);
  p.y = yc;
  p.a = (p.x * xc).sum(-1);
  p.b = in.symmetric ? p.a : (at::matmul(yc, VIs) * yc).sum(-1);
  p.kernel = "euclidean_gemm";
  return p;
}

Prepared prepare_cosine(const Inputs& in, const ComparisonOptions&) { return cosine_of(in, in.x, in.y); }

Prepared prepare_correlation(const Inputs& in, const ComparisonOptions&) {
  const Inputs c = transformed(in, [](const at::Tensor& t) { return centred_rows(t); });
  return cosine_of(c, c.x, c.y);
}

Prepared prepare_braycurtis(const Inputs& in, const ComparisonOptions&) {
  return operands(in, in.x, in.y, "braycurtis_direct");
}

Prepared prepare_canberra(const Inputs& in, const ComparisonOptions&) {
  return operands(in, in.x, in.y, "canberra_direct");
}

Prepared prepare_jensenshannon(const Inputs& in, const ComparisonOptions& o) {
  double scale = 1.0;
  if (o.base.has_value()) {
    const double base = *o.base;
    TORCH_CHECK_VALUE(std::isfinite(base) && base > 0.0 && base != 1.0, "torchpair.", in.op,
                      ": parameter 'base' of metric 'jensenshannon' must be finite, > 0 and != 1, got ", base);
    scale = 1.0 / std::log(base);
  }
  // scipy normalises each row to sum 1. A row with a negative entry is not a probability
  // vector: scipy's cdist/pdist give +inf for every pair with one; its entries become -1, the
  // kernel's mark for that (a constant: no gradient flows to such a row).
  const Inputs p = transformed(in, [](const at::Tensor& t) {
    const at::Tensor negative = (t < 0).any(-1, /*keepdim=*/true);
    const at::Tensor sum = at::where(negative, at::ones({}, t.options()), t.sum(-1, /*keepdim=*/true));
    return at::where(negative, at::full({}, -1.0, t.options()), t / sum);
  });
  return operands(p, p.x, p.y, "jensenshannon_direct", {scale});
}

Prepared prepare_haversine(const Inputs& in, const ComparisonOptions&) {
  const int64_t d = feature_dim(in);
  TORCH_CHECK_VALUE(d == 2, "torchpair.", in.op,
                    ": metric 'haversine' needs 2 features (latitude, longitude in radians) in 'x' and 'y', got ", d);
  // Unit vectors on the sphere; the great-circle distance is 2 asin(|u - v| / 2).
  const Inputs u = transformed(in, [](const at::Tensor& t) {
    const at::Tensor lat = t.select(-1, 0), lon = t.select(-1, 1);
    return at::stack({at::cos(lat) * at::cos(lon), at::cos(lat) * at::sin(lon), at::sin(lat)}, -1);
  });
  return operands(u, u.x, u.y, "haversine_direct");
}

Prepared prepare_nan_euclidean(const Inputs& in, const ComparisonOptions&) {
  return operands(in, in.x, in.y, "nan_euclidean_direct", {double(feature_dim(in))});
}

Prepared prepare_hellinger(const Inputs& in, const ComparisonOptions&) {
  // sqrt(sum_k (sqrt x_k - sqrt y_k)^2 / 2) = euclidean on sqrt(x / 2).
  return distance_family(transformed(in, [](const at::Tensor& t) { return safe_sqrt(t * 0.5); }), kEuclideanKernels, {});
}

Prepared prepare_snr(const Inputs& in, const ComparisonOptions&) {
  // var(x - y) / var(x) = |xc - yc|^2 / |xc|^2 on rows centred to mean 0.
  const Inputs c = transformed(in, [](const at::Tensor& t) { return t - t.mean(-1, /*keepdim=*/true); });
  return operands(c, c.x, c.y, "snr_direct");
}

}  // namespace

// scipy's names and defaults.
std::vector<MetricInfo> distance_rows() {
  const ParamInfo kP{"p", "float", "2", "the order of the norm; >= 1, or inf", "2"};
  const ParamInfo kW{"w", "tensor", "None (all 1)", "per-feature weights [n_features], >= 0, differentiable"};
  const ParamInfo kV{"V", "tensor", "variances (ddof=1) of X's rows (Y None, pdist), of [X; Y] for two sets (scipy)",
                     "per-feature variances [n_features], >= 0, differentiable"};
  const ParamInfo kVI{"VI", "tensor",
                      "pseudo-inverse of the covariance of X's rows (Y None, pdist), of [X; Y] for two sets",
                      "inverse covariance [n_features, n_features], differentiable"};
  const ParamInfo kBase{"base", "float", "e", "logarithm base; > 0 and != 1", "2.718281828459045"};
  std::vector<MetricInfo> rows;
  auto dist = [&](const char* name, std::vector<std::string> aliases, std::vector<ParamInfo> params, const char* input,
                  const char* doc, PrepareFn fn) {
    rows.push_back({name, std::move(aliases), Family::kDistance, "distance", std::move(params), true, input,
                    "input dtype", doc, fn});
  };
  const char* fp = "float32/float64";
  dist("cityblock", {"manhattan", "l1"}, {}, fp, "sum_k |x_k - y_k|", &prepare_cityblock);
  dist("chebyshev", {"linf"}, {}, fp, "max_k |x_k - y_k|", &prepare_chebyshev);
  dist("minkowski", {}, {kP, kW}, fp, "(sum_k w_k |x_k - y_k|^p)^(1/p)", &prepare_minkowski);
  dist("seuclidean", {}, {kV}, fp, "sqrt(sum_k (x_k - y_k)^2 / V_k)", &prepare_seuclidean);
  dist("mahalanobis", {}, {kVI}, fp, "sqrt((x - y) VI (x - y)^T)", &prepare_mahalanobis);
  dist("cosine", {}, {}, fp, "1 - x.y / (|x| |y|)", &prepare_cosine);
  dist("correlation", {}, {}, fp, "cosine distance of the rows centred to mean 0", &prepare_correlation);
  dist("braycurtis", {}, {}, fp, "sum_k |x_k - y_k| / sum_k |x_k + y_k|", &prepare_braycurtis);
  dist("canberra", {}, {}, fp, "sum_k |x_k - y_k| / (|x_k| + |y_k|)", &prepare_canberra);
  dist("jensenshannon", {}, {kBase}, "float32/float64 (non-negative; rows are normalised to sum 1)",
       "sqrt(JS divergence of the normalised rows / log(base))", &prepare_jensenshannon);
  dist("haversine", {}, {}, "float32/float64 [..., 2] (latitude, longitude in radians)",
       "great-circle distance on the unit sphere", &prepare_haversine);
  dist("nan_euclidean", {}, {}, "float32/float64 (NaN marks a missing value)",
       "sqrt(D / present * sum over present coordinates (x_k - y_k)^2)", &prepare_nan_euclidean);
  dist("hellinger", {}, {}, "float32/float64 (non-negative)", "sqrt(sum_k (sqrt(x_k) - sqrt(y_k))^2 / 2)",
       &prepare_hellinger);
  dist("snr", {}, {}, fp, "var(x - y) / var(x) (signal-to-noise ratio distance)", &prepare_snr);
  return rows;
}

}  // namespace tp::catalog
