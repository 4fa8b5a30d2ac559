#pragma once
// Small row-major GEMMs on raw pointers for tile loops. Calls the BLAS that libtorch
// carries (MKL's sgemm_/dgemm_, single-threaded inside a parallel region) and falls back
// to at::mm_out on wrapped buffers where that symbol is absent.
#include <cstddef>
#include <cstdint>

namespace tp::engine {

// C[m x n] = alpha * A[m x k] * B[n x k]^T + beta * C     (row-major, leading dims given)
template <typename T>
void gemm_nt(int64_t m, int64_t n, int64_t k, T alpha, const T* a, int64_t lda, const T* b, int64_t ldb,
             T beta, T* c, int64_t ldc);

// C[m x n] = alpha * A[m x k] * B[k x n] + beta * C
template <typename T>
void gemm_nn(int64_t m, int64_t n, int64_t k, T alpha, const T* a, int64_t lda, const T* b, int64_t ldb,
             T beta, T* c, int64_t ldc);

// C[m x n] = alpha * A[k x m]^T * B[k x n] + beta * C
template <typename T>
void gemm_tn(int64_t m, int64_t n, int64_t k, T alpha, const T* a, int64_t lda, const T* b, int64_t ldb,
             T beta, T* c, int64_t ldc);

}  // namespace tp::engine
