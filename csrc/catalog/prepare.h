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

// The squared-distance family (euclidean, sqeuclidean, rbf, ...): `kernels.direct` for small
// D, `kernels.gemm` otherwise.
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

Prepared prepare_euclidean(const Inputs& in, const ComparisonOptions& o);
Prepared prepare_sqeuclidean(const Inputs& in, const ComparisonOptions& o);
Prepared prepare_rbf(const Inputs& in, const ComparisonOptions& o);

// ---- issue 3b: kernels (csrc/catalog/prepare_kernels.cpp) ----
Prepared prepare_linear(const Inputs& in, const ComparisonOptions& o);
Prepared prepare_cosine_similarity(const Inputs& in, const ComparisonOptions& o);
Prepared prepare_polynomial(const Inputs& in, const ComparisonOptions& o);
Prepared prepare_sigmoid(const Inputs& in, const ComparisonOptions& o);
Prepared prepare_laplacian(const Inputs& in, const ComparisonOptions& o);
Prepared prepare_chi2(const Inputs& in, const ComparisonOptions& o);
Prepared prepare_additive_chi2(const Inputs& in, const ComparisonOptions& o);
Prepared prepare_matern(const Inputs& in, const ComparisonOptions& o);
Prepared prepare_rational_quadratic(const Inputs& in, const ComparisonOptions& o);
// ---- numeric distances (catalog/prepare_distances.cpp) ----
Prepared prepare_cityblock(const Inputs& in, const ComparisonOptions& o);
Prepared prepare_chebyshev(const Inputs& in, const ComparisonOptions& o);
Prepared prepare_minkowski(const Inputs& in, const ComparisonOptions& o);
Prepared prepare_seuclidean(const Inputs& in, const ComparisonOptions& o);
Prepared prepare_mahalanobis(const Inputs& in, const ComparisonOptions& o);
Prepared prepare_cosine(const Inputs& in, const ComparisonOptions& o);
Prepared prepare_correlation(const Inputs& in, const ComparisonOptions& o);
Prepared prepare_braycurtis(const Inputs& in, const ComparisonOptions& o);
Prepared prepare_canberra(const Inputs& in, const ComparisonOptions& o);
Prepared prepare_jensenshannon(const Inputs& in, const ComparisonOptions& o);
Prepared prepare_haversine(const Inputs& in, const ComparisonOptions& o);
Prepared prepare_nan_euclidean(const Inputs& in, const ComparisonOptions& o);
Prepared prepare_hellinger(const Inputs& in, const ComparisonOptions& o);
Prepared prepare_snr(const Inputs& in, const ComparisonOptions& o);
// ---- Boolean family (bit-packed counts, equality counts); csrc/catalog/prepare_boolean.cpp --
// Inputs of any bool/integer/floating dtype (nonzero = True); operands are detached, so the
// results never carry a gradient. Values are float32, float64 if an input is float64.
Prepared prepare_dice(const Inputs& in, const ComparisonOptions& o);
Prepared prepare_jaccard(const Inputs& in, const ComparisonOptions& o);
Prepared prepare_tanimoto(const Inputs& in, const ComparisonOptions& o);
Prepared prepare_kulczynski1(const Inputs& in, const ComparisonOptions& o);
Prepared prepare_rogerstanimoto(const Inputs& in, const ComparisonOptions& o);
Prepared prepare_russellrao(const Inputs& in, const ComparisonOptions& o);
Prepared prepare_sokalmichener(const Inputs& in, const ComparisonOptions& o);
Prepared prepare_sokalsneath(const Inputs& in, const ComparisonOptions& o);
Prepared prepare_yule(const Inputs& in, const ComparisonOptions& o);
Prepared prepare_matching(const Inputs& in, const ComparisonOptions& o);
// hamming / equal compare values (bool inputs without weights take the bit-packed path).
Prepared prepare_hamming(const Inputs& in, const ComparisonOptions& o);
Prepared prepare_equal(const Inputs& in, const ComparisonOptions& o);
// x [B, n, D] -> [B, n, ceil(D / 64)] int64 words of the nonzero pattern (native on eager CPU
// tensors, ATen ops otherwise: any device, traced graphs).
at::Tensor pack_bits(const at::Tensor& x);

}  // namespace tp::catalog
