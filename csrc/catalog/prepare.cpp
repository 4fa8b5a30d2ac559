#include "catalog/prepare.h"
#include "cpu/prepare_loops.h"
#include "engines/gemm.h"
#include "engines/output_memory.h"

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

// ---- native no-grad fast paths ----------------------------------------------------------------
// The preparation of the GEMM-family metrics is a few passes over [B, n, D] operands. As ATen
// ops each pass is an OpenMP region (the inputs are above ATen's grain size), which costs
// milliseconds when the cores are busy; as plain loops (cpu/prepare_loops.h, vectorized per
// CPU capability), split across threads only above a grain, they cost microseconds. They run
// where no gradient can flow (no grad mode, or no input requiring one, no forward-mode
// tangent) on real CPU tensors; otherwise — and always under torch.compile/export
// (fake/functional tensors) — the ATen compositions below, which autograd differentiates, are
// used. Both give the same values up to rounding.
bool untracked(const at::Tensor& t) {
  static const c10::DispatchKeySet wrapped({c10::DispatchKey::Python, c10::DispatchKey::PythonTLSSnapshot,
                                            c10::DispatchKey::Functionalize, c10::DispatchKey::FuncTorchBatched,
                                            c10::DispatchKey::FuncTorchGradWrapper, c10::DispatchKey::Conjugate,
                                            c10::DispatchKey::Negative});
  if (t.key_set().has_any(wrapped)) return false;
  if (c10::GradMode::is_enabled() && t.requires_grad()) return false;
  return !t._fw_grad(/*level=*/0).defined();
}

namespace {
// TP_CPU_STUB names the per-capability copies relative to the calling namespace.
namespace isa_DEFAULT = cpu::isa_DEFAULT;
namespace isa_AVX2 = cpu::isa_AVX2;
namespace isa_AVX512 = cpu::isa_AVX512;

bool native_ready(const at::Tensor& t) {
  if (!t.defined()) return true;
  if (!t.device().is_cpu() || t.is_meta() || t.layout() != at::kStrided || !t.is_contiguous() || t.dim() != 3)
    return false;
  if (t.scalar_type() != at::kFloat && t.scalar_type() != at::kDouble) return false;
  return untracked(t);
}

// The centred operands and their squared norms of distance_family, natively (nullopt when
// the native path does not apply).
std::optional<Prepared> centred_native(const Inputs& in) {
  if (!in.x.defined() || !native_ready(in.x)) return std::nullopt;
  if (!in.symmetric && (!in.y.defined() || !native_ready(in.y) || in.x.scalar_type() != in.y.scalar_type()))
    return std::nullopt;
  const at::Tensor& ref = in.symmetric ? in.x : in.y;
  const int64_t B = in.x.size(0), d = in.x.size(2);
  if (ref.size(0) != B || ref.size(2) != d) return std::nullopt;
  Prepared p;
  const at::Tensor ctr = at::empty({B, d}, in.x.options());
  TP_CPU_STUB(row_means).get()(ref, ctr);
  auto centre = [&](const at::Tensor& t, at::Tensor& out, at::Tensor& sq) {
    out = engine::empty_output(t.sizes(), t.options());
    sq = at::empty({t.size(0), t.size(1)}, t.options());
    TP_CPU_STUB(centre).get()(t, ctr, out, sq);
  };
  centre(in.x, p.x, p.a);
  if (in.symmetric) {
    p.y = p.x;
    p.b = p.a;
  } else {
    centre(in.y, p.y, p.b);
  }
  return p;
}

// inv(A) of a symmetric d x d matrix (row-major, double) by Cholesky, when that inverse is
// provably the pseudo-inverse covariance_pinv would give; false otherwise (not positive
// definite, non-finite, or an eigenvalue possibly under the pseudo-inverse's cutoff
// rtol * lambda_max). The certificate: lambda_min = 1 / ||A^-1||_2 >= 1 / ||A^-1||_F and
// lambda_max <= trace(A), so ||A^-1||_F trace(A) rtol < 1/4 (a factor 4 for the rounding of
// the computed inverse) keeps every eigenvalue above the cutoff. Well-conditioned
// covariances (the usual case) take ~d^3 flops here instead of LAPACK's eigendecomposition,
// whose call costs as much as the product itself at small d (docs/performance.md); the
// others keep that path. scipy's default VI is this inverse too (np.linalg.inv).
bool cholesky_inverse(std::vector<double>& A, int64_t d, double rtol) {
  // A = L L^T, L in the lower triangle
  double trace = 0;
  for (int64_t i = 0; i < d; ++i) trace += A[i * d + i];
  if (!std::isfinite(trace) || !(trace > 0)) return false;
  for (int64_t j = 0; j < d; ++j) {
    double djj = A[j * d + j];
    for (int64_t k = 0; k < j; ++k) djj -= A[j * d + k] * A[j * d + k];
    if (!(djj > 0) || !std::isfinite(djj)) return false;
    const double ljj = std::sqrt(djj);
    A[j * d + j] = ljj;
    for (int64_t i = j + 1; i < d; ++i) {
      double v = A[i * d + j];
      for (int64_t k = 0; k < j; ++k) v -= A[i * d + k] * A[j * d + k];
      A[i * d + j] = v / ljj;
    }
  }
  // W = L^-1 (lower), then A^-1 = W^T W
  std::vector<double> W(size_t(d * d), 0.0);
  for (int64_t j = 0; j < d; ++j) {
    W[j * d + j] = 1.0 / A[j * d + j];
    for (int64_t i = j + 1; i < d; ++i) {
      double v = 0;
      for (int64_t k = j; k < i; ++k) v -= A[i * d + k] * W[k * d + j];
      W[i * d + j] = v / A[i * d + i];
    }
  }
  double frob2 = 0;
  for (int64_t i = 0; i < d; ++i)
    for (int64_t j = 0; j <= i; ++j) {
      double v = 0;
      for (int64_t k = i; k < d; ++k) v += W[k * d + i] * W[k * d + j];
      A[i * d + j] = v;
      A[j * d + i] = v;
      frob2 += (i == j ? 1.0 : 2.0) * v * v;
    }
  return std::isfinite(frob2) && std::sqrt(frob2) * trace * rtol < 0.25;
}

// Above this many features the O(d^3) scalar Cholesky inverse is no longer negligible next
// to LAPACK's blocked eigendecomposition.
constexpr int64_t kCholeskyMaxFeatures = 256;
}  // namespace

at::Tensor covariance_pinv(const at::Tensor& cov) {
  const at::Tensor finite = at::isfinite(cov).all(-1, /*keepdim=*/true).all(-2, /*keepdim=*/true);
  const at::Tensor VI = at::linalg_pinv(at::where(finite, cov, at::zeros_like(cov)), std::optional<double>(),
                                        std::optional<double>(), /*hermitian=*/true);
  return at::where(finite, VI, at::full_like(VI, std::numeric_limits<double>::quiet_NaN()));
}

// mahalanobis on real CPU tensors where no gradient can flow: the stacked mean, the centred
// operands (one common centre: d^2 is translation invariant), the covariance of the stacked
// rows by GEMM (unless VI is given), its pseudo-inverse, symmetrised, and x.VI with the
// quadratic forms a = (x VI) . x, b = (y VI) . y. One ATen op (the pseudo-inverse) instead
// of ~18; the ATen composition in prepare_mahalanobis serves every other case.
std::optional<Prepared> mahalanobis_native(const Inputs& in, const at::Tensor& VI_given, bool stack_y) {
  if (!in.x.defined() || !native_ready(in.x)) return std::nullopt;
  const at::Tensor& y = in.symmetric ? in.x : in.y;
  if (!y.defined() || !native_ready(y) || y.scalar_type() != in.x.scalar_type()) return std::nullopt;
  const int64_t B = in.x.size(0), n = in.x.size(1), m = y.size(1), d = in.x.size(2);
  if (y.size(0) != B || y.size(2) != d || d == 0) return std::nullopt;
  const int64_t stacked_rows = n + (stack_y ? m : 0);
  if (!VI_given.defined() && stacked_rows < 2) return std::nullopt;  // ddof = 1 needs two rows
  if (VI_given.defined() && (!VI_given.device().is_cpu() || VI_given.is_meta() ||
                             (c10::GradMode::is_enabled() && VI_given.requires_grad()) ||
                             VI_given._fw_grad(/*level=*/0).defined()))
    return std::nullopt;
  Prepared p;
  p.symmetric = in.symmetric;
  p.kernel = "euclidean_gemm";
  AT_DISPATCH_FLOATING_TYPES(in.x.scalar_type(), "torchpair_mahalanobis", [&] {
    using T = scalar_t;
    const auto opts = in.x.options();
    // the common centre: the mean of the stacked rows (non-finite means: 0, as nan_to_num)
    at::Tensor ctr = at::empty({B, d}, opts);
    at::Tensor ctr_y = stack_y ? at::empty({B, d}, opts) : at::Tensor();
    TP_CPU_STUB(row_means).get()(in.x, ctr);
    if (stack_y) {
      TP_CPU_STUB(row_means).get()(y, ctr_y);
      T* c = ctr.data_ptr<T>();
      const T* cy = ctr_y.data_ptr<T>();
      for (int64_t i = 0; i < B * d; ++i) c[i] = T((double(c[i]) * n + double(cy[i]) * m) / double(n + m));
    }
    // (no squared norms: the quadratic forms below replace them)
    at::Tensor xc = at::empty_like(in.x);
    TP_CPU_STUB(centre).get()(in.x, ctr, xc, at::Tensor());
    at::Tensor yc = xc;
    if (!in.symmetric) {
      yc = at::empty_like(y);
      TP_CPU_STUB(centre).get()(y, ctr, yc, at::Tensor());
    }
    at::Tensor VI;
    if (VI_given.defined()) {
      VI = VI_given.to(in.x.scalar_type()).contiguous().expand({B, d, d});
    } else {
      // cov[b] = (xc^T xc + yc^T yc) / (rows - 1); xc is centred on the stacked mean here, so
      // this is the covariance of the stacked rows (the mean of y alone for pdist: no y).
      at::Tensor cov = at::empty({B, d, d}, opts);
      for (int64_t b = 0; b < B; ++b) {
        T* cb = cov.data_ptr<T>() + b * d * d;
        engine::gemm_tn<T>(d, d, n, T(1), xc.data_ptr<T>() + b * n * d, d, xc.data_ptr<T>() + b * n * d, d, T(0),
                           cb, d);
        if (stack_y)
          engine::gemm_tn<T>(d, d, m, T(1), yc.data_ptr<T>() + b * m * d, d, yc.data_ptr<T>() + b * m * d, d, T(1),
                             cb, d);
        const T scale = T(1.0 / double(stacked_rows - 1));
        for (int64_t i = 0; i < d * d; ++i) cb[i] *= scale;
      }
      // Cholesky inverse per batch where it is certified equal to the pseudo-inverse (same
      // cutoff as at::linalg_pinv's default: eps(T) * d); any other batch takes the
      // eigendecomposition for the whole tensor.
      bool all_fast = d <= kCholeskyMaxFeatures;
      if (all_fast) {
        VI = at::empty({B, d, d}, opts);
        const double rtol = double(std::numeric_limits<T>::epsilon()) * double(d);
        std::vector<double> work(size_t(d * d));
        for (int64_t b = 0; b < B && all_fast; ++b) {
          const T* cb = cov.data_ptr<T>() + b * d * d;
          for (int64_t i = 0; i < d * d; ++i) work[i] = double(cb[i]);
          all_fast = cholesky_inverse(work, d, rtol);
          T* vb = VI.data_ptr<T>() + b * d * d;
          for (int64_t i = 0; i < d * d && all_fast; ++i) vb[i] = T(work[i]);
        }
      }
      if (!all_fast) VI = covariance_pinv(cov);
    }
    // (VI + VI^T) / 2: the quadratic form only sees the symmetric part
    at::Tensor VIs = at::empty({B, d, d}, opts);
    for (int64_t b = 0; b < B; ++b) {
      const at::Tensor Vb = VI[b].contiguous();
      const T* v = Vb.data_ptr<T>();
      T* o = VIs.data_ptr<T>() + b * d * d;
      for (int64_t i = 0; i < d; ++i)
        for (int64_t j = 0; j < d; ++j) o[i * d + j] = T(0.5) * (v[i * d + j] + v[j * d + i]);
    }
    auto transform = [&](const at::Tensor& c, int64_t rows, at::Tensor& out, at::Tensor& quad) {
      out = at::empty_like(c);
      quad = at::empty({B, rows}, opts);
      for (int64_t b = 0; b < B; ++b)
        engine::gemm_nn<T>(rows, d, d, T(1), c.data_ptr<T>() + b * rows * d, d, VIs.data_ptr<T>() + b * d * d, d,
                           T(0), out.data_ptr<T>() + b * rows * d, d);
      TP_CPU_STUB(row_dots).get()(out, c, quad);
    };
    at::Tensor yVI;
    transform(xc, n, p.x, p.a);
    p.y = yc;
    if (in.symmetric)
      p.b = p.a;
    else
      transform(yc, m, yVI, p.b);
  });
  return p;
}

// Up to this many features the difference-based kernels are as fast as GEMM and exact for
// equal rows; above it the GEMM form wins (see docs/performance.md).
constexpr int64_t kDirectMaxFeatures = 16;
// torch.cdist's own rule: its GEMM path starts above 25 rows on either side. Below that a
// problem (one batch element of many, say) is too small for a product to pay for centring
// the operands and setting it up, and the difference-based kernel is exact besides.
constexpr int64_t kDirectMaxRows = 25;

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

Prepared distance_family(const Inputs& in, const DistanceKernels& kernels, std::vector<double> scalars) {
  Prepared p;
  p.symmetric = in.symmetric;
  p.scalars = std::move(scalars);
  // compute_mode (torch.cdist's): the default takes the direct kernel up to 16 features, or
  // when neither operand has more than 25 rows (a guard on the sizes, not a specialization)
  const auto few_rows = [&](const at::Tensor& t) {
    return !t.defined() || t.sym_size(-2).sym_le(kDirectMaxRows).guard_bool(__FILE__, __LINE__);
  };
  const bool direct = in.compute_mode == ComputeMode::kDirect ||
                      (in.compute_mode == ComputeMode::kIfNecessary &&
                       (feature_dim(in) <= kDirectMaxFeatures || (few_rows(in.x) && few_rows(in.y))));
  if (direct) {
    p.x = in.x;
    p.y = in.y;
    p.kernel = kernels.direct;
    return p;
  }
  // Squared distances are translation invariant, and the GEMM form |x|^2 + |y|^2 - 2 x.y
  // loses about eps * (|x|^2 + |y|^2) to cancellation: subtract a common centre first. The
  // centre is a constant for autograd (the distances do not depend on it).
  p.kernel = kernels.gemm;
  if (auto native = centred_native(in)) {
    p.x = native->x;
    p.y = native->y;
    p.a = native->a;
    p.b = native->b;
    return p;
  }
  const at::Tensor ref = in.symmetric ? in.x : in.y;
  const at::Tensor centre = at::nan_to_num(ref.detach().mean(1, /*keepdim=*/true), 0.0, 0.0, 0.0);
  p.x = in.x - centre;
  p.y = in.symmetric ? p.x : in.y - centre;
  // Squared norms in one reduction pass each (x.square().sum(-1) is two); the sqrt/square
  // round trip may differ from the sum of squares by an ulp.
  p.a = at::linalg_vector_norm(p.x, 2, {-1}, /*keepdim=*/false).square();
  p.b = in.symmetric ? p.a : at::linalg_vector_norm(p.y, 2, {-1}, /*keepdim=*/false).square();
  return p;
}

at::Tensor centred_rows(const at::Tensor& x) {
  if (native_ready(x)) {
    at::Tensor out = at::empty_like(x);
    TP_CPU_STUB(subtract_feature_means).get()(x, out);
    return out;
  }
  return x - x.mean(-1, /*keepdim=*/true);
}

at::Tensor inverse_row_norms(const at::Tensor& x) {
  if (native_ready(x)) {
    at::Tensor out = at::empty({x.size(0), x.size(1)}, x.options());
    TP_CPU_STUB(inverse_norms).get()(x, out);
    return out;
  }
  const at::Tensor norm = at::linalg_vector_norm(x, 2, {-1}, /*keepdim=*/false);
  const at::Tensor pos = norm > 0;
  return at::where(pos, at::reciprocal(at::where(pos, norm, at::ones_like(norm))), at::zeros_like(norm));
}

at::Tensor normalized_rows(const at::Tensor& x) { return x * inverse_row_norms(x).unsqueeze(-1); }

const char* squared_kernel(const std::string& kernel) {
  if (kernel == kEuclideanKernels.direct) return kSqEuclideanKernels.direct;
  if (kernel == kEuclideanKernels.gemm) return kSqEuclideanKernels.gemm;
  return nullptr;
}

namespace {

Prepared prepare_euclidean(const Inputs& in, const ComparisonOptions&) { return distance_family(in, kEuclideanKernels, {}); }

Prepared prepare_sqeuclidean(const Inputs& in, const ComparisonOptions&) {
  return distance_family(in, kSqEuclideanKernels, {});
}

Prepared prepare_rbf(const Inputs& in, const ComparisonOptions& o) {
  const int64_t d = feature_dim(in);
  // sklearn: gamma = 1 / n_features when omitted. With no features every distance is 0
  // and K = 1 for any gamma; 1.0 keeps the default finite.
  const double gamma = float_param(o.gamma, d > 0 ? 1.0 / double(d) : 1.0, "gamma", in, "rbf", 0.0);
  return distance_family(in, kRbfKernels, {gamma});
}

}  // namespace

std::vector<MetricInfo> squared_distance_rows() {
  const char* f = "float32/float64";
  const char* out = "input dtype";
  return {
      {"euclidean", {"l2"}, Family::kDistance, "distance", {}, true, f, out, "sqrt(sum_k (x_k - y_k)^2)",
       &prepare_euclidean},
      {"sqeuclidean", {}, Family::kDistance, "distance", {}, true, f, out, "sum_k (x_k - y_k)^2", &prepare_sqeuclidean},
      {"rbf", {}, Family::kKernel, "similarity", {kGammaParam}, true, f, out, "exp(-gamma * |x - y|^2)", &prepare_rbf},
  };
}

}  // namespace tp::catalog
