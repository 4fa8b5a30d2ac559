#pragma once
// The engine kernels, one line each: (kernel id, definition). The catalog
// (csrc/catalog/catalog.cpp) maps user-facing metric names and parameters onto these ids;
// the engines are instantiated once per line, per dtype, per CPU capability.
// Definitions live in metrics/elementwise.h and metrics/inner_product.h; this file only
// names them, so the kernel-id enum does not pull in the math headers.

#define TORCHPAIR_ELEMENTWISE_KERNELS(_)   \
  _(sqeuclidean_direct, SqEuclideanDirect) \
  _(euclidean_direct, EuclideanDirect)     \
  _(rbf_direct, RbfDirect)                 \
  _(laplacian_direct, LaplacianDirect)     \
  _(chi2_direct, Chi2Direct)               \
  _(additive_chi2_direct, AdditiveChi2Direct) \
  _(matern_direct, MaternDirect)           \
  _(rational_quadratic_direct, RationalQuadraticDirect) \
  _(cityblock_direct, CityblockDirect)     \
  _(chebyshev_direct, ChebyshevDirect)     \
  _(minkowski_direct, MinkowskiDirect)     \
  _(canberra_direct, CanberraDirect)       \
  _(braycurtis_direct, BrayCurtisDirect)   \
  _(jensenshannon_direct, JensenShannonDirect) \
  _(haversine_direct, HaversineDirect)     \
  _(nan_euclidean_direct, NanEuclideanDirect) \
  _(snr_direct, SnrDirect)                 \
  _(exp_sine_squared_direct, ExpSineSquaredDirect) \
  _(cosine_direct, CosineDirect)

#define TORCHPAIR_INNER_PRODUCT_KERNELS(_) \
  _(sqeuclidean_gemm, SqEuclideanGemm)     \
  _(euclidean_gemm, EuclideanGemm)         \
  _(rbf_gemm, RbfGemm)                     \
  _(linear_gemm, LinearGemm)               \
  _(polynomial_gemm, PolynomialGemm)       \
  _(sigmoid_gemm, SigmoidGemm)             \
  _(matern_gemm, MaternGemm)               \
  _(rational_quadratic_gemm, RationalQuadraticGemm) \
  _(cosine_gemm, CosineGemm)               \
  _(exp_sine_squared_gemm, ExpSineSquaredGemm) \
  _(exp_sine_squared_param_gemm, ExpSineSquaredParamGemm)

// Boolean family (metrics/boolean.h): one formula over the counts (TT, TF, FT, FF).
// packed_*: bit-packed operands (int64 words, 64 features each), counted by popcount; one
// scalar, the number of features D.
#define TORCHPAIR_PACKED_KERNELS(_)        \
  _(packed_dice, Dice)                     \
  _(packed_jaccard, Jaccard)               \
  _(packed_tanimoto, Tanimoto)             \
  _(packed_kulczynski1, Kulczynski1)       \
  _(packed_rogerstanimoto, RogersTanimoto) \
  _(packed_russellrao, RussellRao)         \
  _(packed_sokalsneath, SokalSneath)       \
  _(packed_yule, Yule)                     \
  _(packed_hamming, Hamming)               \
  _(packed_equal, Equal)

// equality_*: float64 operands compared by value (NaN != NaN, -0 == 0); one scalar, 1 when
// the operands carry per-feature weights as a second half of their features ([values | w]).
#define TORCHPAIR_EQUALITY_KERNELS(_) \
  _(equality_hamming, Hamming)        \
  _(equality_equal, Equal)
