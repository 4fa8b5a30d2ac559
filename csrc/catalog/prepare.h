#pragma once
// Metric preparation: turns validated inputs and parameters into an engine call. These are
// ATen compositions (differentiable by autograd, traceable by compile/export); the heavy
// work happens in the core operators afterwards.
#include "catalog/catalog.h"

namespace tp::catalog {

// Feature dimension as a concrete integer (specializes a symbolic D in captured graphs:
// defaults such as gamma = 1 / D and the choice of engine depend on it).
int64_t feature_dim(const Inputs& in);

// Reads an optional float parameter, or its default; rejects non-finite values and values
// outside [lo, +inf) with a c10::ValueError naming the parameter.
double float_param(const std::optional<double>& value, double fallback, const char* name, const Inputs& in,
                   const std::string& metric, double lo = -std::numeric_limits<double>::infinity(),
                   bool lo_inclusive = true);

// The two engine kernels of one squared-distance definition: difference-based for small D,
// GEMM on centred operands with squared norms as side features otherwise.
struct DistanceKernels {
  const char* direct;
  const char* gemm;
};
inline constexpr DistanceKernels kEuclideanKernels{"euclidean_direct", "euclidean_gemm"};
inline constexpr DistanceKernels kSqEuclideanKernels{"sqeuclidean_direct", "sqeuclidean_gemm"};
inline constexpr DistanceKernels kRbfKernels{"rbf_direct", "rbf_gemm"};
inline constexpr DistanceKernels kMaternKernels{"matern_direct", "matern_gemm"};
inline constexpr DistanceKernels kRationalQuadraticKernels{"rational_quadratic_direct", "rational_quadratic_gemm"};
inline constexpr DistanceKernels kExpSineSquaredKernels{"exp_sine_squared_direct", "exp_sine_squared_gemm"};

// The squared-distance family (euclidean, sqeuclidean, rbf, ...): `kernels.direct` for small
// D, `kernels.gemm` otherwise; in.compute_mode forces either.
Prepared distance_family(const Inputs& in, const DistanceKernels& kernels, std::vector<double> scalars);

// 1 / |x| per row ([..., n] from [..., n, D]), 0 for a row of norm 0 (gradient 0 there): the
// side features of the cosine kernel, one pass over the operand.
at::Tensor inverse_row_norms(const at::Tensor& x);
// x / |x| per row; rows of norm 0 (or a non-finite norm) are scaled by 0, as sklearn's normalize.
at::Tensor normalized_rows(const at::Tensor& x);
// x minus its row means (correlation's centring), natively where no gradient can flow.
at::Tensor centred_rows(const at::Tensor& x);

// The pseudo-inverse of covariance matrices [..., D, D], by eigendecomposition (they are
// symmetric; two thirds of the SVD's cost). A matrix with a non-finite entry (NaN or inf in
// the data) gives an all-NaN inverse, so every distance is NaN as with scipy's inv (LAPACK
// would fail to converge on it).
at::Tensor covariance_pinv(const at::Tensor& cov);
// mahalanobis' operands natively where no gradient can flow (nullopt otherwise): VI_given
// undefined means the default VI, the pseudo-inverse of the covariance of x's rows, stacked
// with y's when stack_y (scipy's cdist; pdist has x only).
std::optional<Prepared> mahalanobis_native(const Inputs& in, const at::Tensor& VI_given, bool stack_y);

// ---- the catalog rows, one table per family --------------------------------------------
// Each prepare*.cpp file defines its metrics' prepare functions (file-local) and returns their
// catalog rows here; catalog.cpp concatenates the tables in this order (the order of
// tp.metrics()). A metric that needs no new parameter or vocabulary is its kernel definition,
// its kernel_list.h line, and its prepare function and row in its family's file.
std::vector<MetricInfo> squared_distance_rows();  // prepare.cpp: euclidean, sqeuclidean, rbf
std::vector<MetricInfo> kernel_rows();            // prepare_kernels.cpp: sklearn's kernels
std::vector<MetricInfo> distance_rows();          // prepare_distances.cpp: scipy's numeric distances
// Boolean family (prepare_boolean.cpp; bit-packed counts, equality counts): inputs of any
// bool/integer/floating dtype (nonzero = True); operands are detached, so the results never
// carry a gradient. Values are float32, float64 if an input is float64.
std::vector<MetricInfo> boolean_rows();

// sklearn's gamma (rbf and the sklearn kernels).
inline const ParamInfo kGammaParam{"gamma", "float", "1 / n_features", "kernel width; must be finite and >= 0"};

// x [B, n, D] -> [B, n, ceil(D / 64)] int64 words of the nonzero pattern (native on eager CPU
// tensors, ATen ops otherwise: any device, traced graphs).
at::Tensor pack_bits(const at::Tensor& x);

}  // namespace tp::catalog
