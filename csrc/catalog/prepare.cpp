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

// ---- native no-grad fast paths (issue 3 performance) -------------------------------------
// The preparation of the GEMM-family metrics is a few passes over [B, n, D] operands. As ATen
// ops each pass is an OpenMP region (the inputs are above ATen's grain size), which costs
// milliseconds when the cores are busy; as plain loops, split across threads only above
// kNativeGrain elements per thread, they cost microseconds. They run where no gradient can
// flow (no grad mode, or no input requiring one, no forward-mode tangent) on real CPU
// tensors; otherwise — and always under torch.compile/export (fake/functional tensors) —
// the ATen compositions below, which autograd differentiates, are used. Both give the same
// values up to rounding.
namespace {
constexpr int64_t kNativeGrain = int64_t(1) << 16;

bool native_ready(const at::Tensor& t) {
  if (!t.defined()) return true;
  if (!t.device().is_cpu() || t.is_meta() || t.layout() != at::kStrided || !t.is_contiguous() || t.dim() != 3)
    return false;
  if (t.scalar_type() != at::kFloat && t.scalar_type() != at::kDouble) return false;
  const c10::DispatchKeySet wrapped({c10::DispatchKey::Python, c10::DispatchKey::PythonTLSSnapshot,
                                     c10::DispatchKey::Functionalize, c10::DispatchKey::FuncTorchBatched,
                                     c10::DispatchKey::FuncTorchGradWrapper, c10::DispatchKey::Conjugate,
                                     c10::DispatchKey::Negative});
  if (t.key_set().has_any(wrapped)) return false;
  if (c10::GradMode::is_enabled() && t.requires_grad()) return false;
  if (t._fw_grad(/*level=*/0).defined()) return false;
  return true;
}

int64_t row_grain(int64_t d) { return std::max<int64_t>(1, kNativeGrain / std::max<int64_t>(d, 1)); }

template <typename T>
void inverse_norms_loop(const T* x, T* out, int64_t rows, int64_t d) {
  at::parallel_for(0, rows, row_grain(d), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const T* xr = x + r * d;
      double s = 0;
      for (int64_t k = 0; k < d; ++k) s += double(xr[k]) * double(xr[k]);
      out[r] = s > 0 ? T(1.0 / std::sqrt(s)) : T(0);  // NaN and inf norms: 0, as below
    }
  });
}

// ctr[b, k] = mean over rows of ref[b, :, k], non-finite means replaced by 0 (nan_to_num).
template <typename T>
void row_mean_loop(const T* ref, T* ctr, int64_t B, int64_t n, int64_t d) {
  at::parallel_for(0, B, std::max<int64_t>(1, kNativeGrain / std::max<int64_t>(n * d, 1)), [&](int64_t b0, int64_t b1) {
    std::vector<double> acc(size_t(std::max<int64_t>(d, 1)));
    for (int64_t b = b0; b < b1; ++b) {
      std::fill(acc.begin(), acc.end(), 0.0);
      for (int64_t r = 0; r < n; ++r)
        for (int64_t k = 0; k < d; ++k) acc[k] += double(ref[(b * n + r) * d + k]);
      for (int64_t k = 0; k < d; ++k) {
        const T m = n > 0 ? T(acc[k] / double(n)) : T(0);
        ctr[b * d + k] = std::isfinite(m) ? m : T(0);
      }
    }
  });
}

// xc = x - ctr (per batch element), sq[b, r] = |xc[b, r]|^2.
template <typename T>
void centre_loop(const T* x, const T* ctr, T* xc, T* sq, int64_t B, int64_t n, int64_t d) {
  at::parallel_for(0, B * n, row_grain(d), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const T* c = ctr + (r / std::max<int64_t>(n, 1)) * d;
      double s = 0;
      for (int64_t k = 0; k < d; ++k) {
        const T v = x[r * d + k] - c[k];
        xc[r * d + k] = v;
        s += double(v) * double(v);
      }
      sq[r] = T(s);
    }
  });
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
  AT_DISPATCH_FLOATING_TYPES(in.x.scalar_type(), "torchpair_centre", [&] {
    at::Tensor ctr = at::empty({B, d}, in.x.options());
    row_mean_loop<scalar_t>(ref.data_ptr<scalar_t>(), ctr.data_ptr<scalar_t>(), B, ref.size(1), d);
    auto centre = [&](const at::Tensor& t, at::Tensor& out, at::Tensor& sq) {
      out = at::empty_like(t);
      sq = at::empty({t.size(0), t.size(1)}, t.options());
      centre_loop<scalar_t>(t.data_ptr<scalar_t>(), ctr.data_ptr<scalar_t>(), out.data_ptr<scalar_t>(),
                            sq.data_ptr<scalar_t>(), t.size(0), t.size(1), d);
    };
    centre(in.x, p.x, p.a);
    if (in.symmetric) {
      p.y = p.x;
      p.b = p.a;
    } else {
      centre(in.y, p.y, p.b);
    }
  });
  return p;
}
}  // namespace

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
  p.kernel = base + "_gemm";
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
    const int64_t rows = x.size(0) * x.size(1), d = x.size(2);
    AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "torchpair_centre_rows", [&] {
      const scalar_t* src = x.data_ptr<scalar_t>();
      scalar_t* dst = out.data_ptr<scalar_t>();
      at::parallel_for(0, rows, row_grain(d), [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r) {
          double s = 0;
          for (int64_t k = 0; k < d; ++k) s += double(src[r * d + k]);
          const scalar_t m = scalar_t(s / double(std::max<int64_t>(d, 1)));
          for (int64_t k = 0; k < d; ++k) dst[r * d + k] = src[r * d + k] - m;
        }
      });
    });
    return out;
  }
  return x - x.mean(-1, /*keepdim=*/true);
}

at::Tensor inverse_row_norms(const at::Tensor& x) {
  if (native_ready(x)) {
    at::Tensor out = at::empty({x.size(0), x.size(1)}, x.options());
    AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "torchpair_inverse_norms", [&] {
      inverse_norms_loop<scalar_t>(x.data_ptr<scalar_t>(), out.data_ptr<scalar_t>(), x.size(0) * x.size(1), x.size(2));
    });
    return out;
  }
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
