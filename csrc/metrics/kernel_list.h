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
  _(snr_direct, SnrDirect)

#define TORCHPAIR_INNER_PRODUCT_KERNELS(_) \
  _(sqeuclidean_gemm, SqEuclideanGemm)     \
  _(euclidean_gemm, EuclideanGemm)         \
  _(rbf_gemm, RbfGemm)                     \
  _(linear_gemm, LinearGemm)               \
  _(polynomial_gemm, PolynomialGemm)       \
  _(sigmoid_gemm, SigmoidGemm)             \
  _(matern_gemm, MaternGemm)               \
  _(rational_quadratic_gemm, RationalQuadraticGemm) \
  _(cosine_gemm, CosineGemm)
