#include "catalog/prepare.h"

#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>
#include <c10/core/DispatchKeySet.h>
#include <c10/core/GradMode.h>
#include <c10/util/Exception.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <sstream>
#include <vector>

namespace tp::catalog {

// Up to this many features the difference-based kernels are as fast as GEMM and exact for
// equal rows; above it the GEMM form wins (see docs/performance.md).
constexpr int64_t kDirectMaxFeatures = 16;

int64_t feature_dim(const Inputs& in) { return in.x.sym_size(-1).guard_int(__FILE__, __LINE__); }

double float_param(const std::optional<double>& value, double fallback, const char* name, const Inputs& in,
                   const std::string& metric, double lo, bool lo_inclusive) {
  const double v = value.has_value() ? *value : fallback;
  TORCH_CHECK_VALUE(std::isfinite(v), "torchpair.", in.op, ": parameter '", name, "' of metric '", metric,
                    "' must be finite, got ", v);
  const bool ok = lo_inclusive ? v >= lo : v > lo;
  TORCH_CHECK_VALUE(ok, "torchpair.", in.op, ": parameter '", name, "' of metric '", metric, "' must be ",
                    lo_inclusive ? ">= " : "> ", lo, ", got ", v);
  // Kernels evaluate scalars in the tile dtype: a finite double beyond float's range would
  // become inf there (and 0 * inf = NaN, e.g. rbf's exp(-gamma * 0)). The largest float
  // gives the same result as the double for every representable input.
  if (in.x.scalar_type() != at::kDouble) {
    constexpr double kMaxFloat = std::numeric_limits<float>::max();
    return std::max(-kMaxFloat, std::min(kMaxFloat, v));
  }
  return v;
}

Prepared distance_family(const Inputs& in, const std::string& base, std::vector<double> scalars) {
  Prepared p;
  p.symmetric = in.symmetric;
  p.scalars = std::move(scalars);
  if (feature_dim(in) <= kDirectMaxFeatures) {
    p.x = in.x;
    p.y = in.y;
    p.kernel = base + "_direct";
    return p;
  }
  // Squared distances are translation invariant, and the GEMM form |x|^2 + |y|^2 - 2 x.y
  // loses about eps * (|x|^2 + |y|^2) to cancellation: subtract a common centre first. The
  // centre is a constant for autograd (the distances do not depend on it).
  const at::Tensor ref = in.symmetric ? in.x : in.y;
  const at::Tensor centre = at::nan_to_num(ref.detach().mean(1, /*keepdim=*/true), 0.0, 0.0, 0.0);
  p.x = in.x - centre;
  p.y = in.symmetric ? p.x : in.y - centre;
  // Squared norms in one reduction pass each (x.square().sum(-1) is two; same rounding).
  p.a = at::linalg_vector_norm(p.x, 2, {-1}, /*keepdim=*/false).square();
  p.b = in.symmetric ? p.a : at::linalg_vector_norm(p.y, 2, {-1}, /*keepdim=*/false).square();
  p.kernel = base + "_gemm";
  return p;
}

at::Tensor inverse_row_norms(const at::Tensor& x) {
  const at::Tensor norm = at::linalg_vector_norm(x, 2, {-1}, /*keepdim=*/false);
  const at::Tensor pos = norm > 0;
  return at::where(pos, at::reciprocal(at::where(pos, norm, at::ones_like(norm))), at::zeros_like(norm));
}

Prepared prepare_euclidean(const Inputs& in, const ComparisonOptions&) { return distance_family(in, "euclidean", {}); }

Prepared prepare_sqeuclidean(const Inputs& in, const ComparisonOptions&) {
  return distance_family(in, "sqeuclidean", {});
}

Prepared prepare_rbf(const Inputs& in, const ComparisonOptions& o) {
  const int64_t d = feature_dim(in);
  // sklearn: gamma = 1 / n_features when omitted. With no features every distance is 0
  // and K = 1 for any gamma; 1.0 keeps the default finite.
  const double gamma = float_param(o.gamma, d > 0 ? 1.0 / double(d) : 1.0, "gamma", in, "rbf", 0.0);
  return distance_family(in, "rbf", {gamma});
}

}  // namespace tp::catalog
