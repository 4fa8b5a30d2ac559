#include "engines/gemm.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <c10/util/Exception.h>
#include <c10/util/ParallelGuard.h>

#include <limits>

// Fortran BLAS entry points exported by libtorch_cpu (MKL). Weak, so a libtorch without
// them still loads and the at::mm fallback is used.
extern "C" {
void sgemm_(const char* ta, const char* tb, const int* m, const int* n, const int* k, const float* alpha,
            const float* a, const int* lda, const float* b, const int* ldb, const float* beta, float* c,
            const int* ldc) __attribute__((weak));
void dgemm_(const char* ta, const char* tb, const int* m, const int* n, const int* k, const double* alpha,
            const double* a, const int* lda, const double* b, const int* ldb, const double* beta, double* c,
            const int* ldc) __attribute__((weak));
// MKL's per-thread thread count (returns the previous value).
int MKL_Set_Num_Threads_Local(int n) __attribute__((weak));  // mkl_service.h: mkl_set_num_threads_local
}

namespace tp::engine {
namespace {

bool fits_int(int64_t v) { return v >= 0 && v <= std::numeric_limits<int>::max(); }

template <typename T>
at::ScalarType scalar_type_of();
template <>
at::ScalarType scalar_type_of<float>() { return at::kFloat; }
template <>
at::ScalarType scalar_type_of<double>() { return at::kDouble; }

// Column-major BLAS call: C[m x n] = alpha op(A) op(B) + beta C.
template <typename T>
bool blas_gemm(char ta, char tb, int64_t m, int64_t n, int64_t k, T alpha, const T* a, int64_t lda, const T* b,
               int64_t ldb, T beta, T* c, int64_t ldc) {
  if (!(fits_int(m) && fits_int(n) && fits_int(k) && fits_int(lda) && fits_int(ldb) && fits_int(ldc))) return false;
  int im = int(m), in = int(n), ik = int(k), ilda = int(lda), ildb = int(ldb), ildc = int(ldc);
  // Tile GEMMs run inside our own parallel region: keep MKL on the calling thread, or each
  // of our threads would start a team of its own and oversubscribe the cores. A walk small
  // enough to stay on the calling thread (at::parallel_for's serial path: a ParallelGuard)
  // keeps its GEMMs there too: MKL would otherwise wake its team for a few microseconds of
  // work. The thread's previous setting is restored, so later user calls are unaffected.
  const bool pin = MKL_Set_Num_Threads_Local && (at::in_parallel_region() || c10::ParallelGuard::is_enabled());
  const int previous = pin ? MKL_Set_Num_Threads_Local(1) : 0;
  if constexpr (std::is_same_v<T, float>) {
    if (!sgemm_) {
      if (pin) MKL_Set_Num_Threads_Local(previous);
      return false;
    }
    sgemm_(&ta, &tb, &im, &in, &ik, &alpha, a, &ilda, b, &ildb, &beta, c, &ildc);
  } else {
    if (!dgemm_) {
      if (pin) MKL_Set_Num_Threads_Local(previous);
      return false;
    }
    dgemm_(&ta, &tb, &im, &in, &ik, &alpha, a, &ilda, b, &ildb, &beta, c, &ildc);
  }
  if (pin) MKL_Set_Num_Threads_Local(previous);
  return true;
}

// Row-major C[m x n] = alpha * opA(A) * opB(B) + beta * C through at::addmm_out.
template <typename T>
void aten_gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, T alpha, const T* a, int64_t lda,
               const T* b, int64_t ldb, T beta, T* c, int64_t ldc) {
  auto opts = at::TensorOptions().dtype(scalar_type_of<T>());
  at::Tensor A = trans_a ? at::from_blob(const_cast<T*>(a), {k, m}, {lda, 1}, opts).t()
                         : at::from_blob(const_cast<T*>(a), {m, k}, {lda, 1}, opts);
  at::Tensor B = trans_b ? at::from_blob(const_cast<T*>(b), {n, k}, {ldb, 1}, opts).t()
                         : at::from_blob(const_cast<T*>(b), {k, n}, {ldb, 1}, opts);
  at::Tensor C = at::from_blob(c, {m, n}, {ldc, 1}, opts);
  if (beta == T(0)) {
    at::mm_out(C, A, B);
    if (alpha != T(1)) C.mul_(alpha);
  } else {
    C.mul_(beta).addmm_(A, B, 1, alpha);
  }
}

template <typename T>
void zero_or_scale(int64_t m, int64_t n, T beta, T* c, int64_t ldc) {
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) c[i * ldc + j] = beta == T(0) ? T(0) : beta * c[i * ldc + j];
}

}  // namespace

// Row-major C = A B^T is column-major C^T = B A^T: BLAS('T','N', n, m, k, B, A).
template <typename T>
void gemm_nt(int64_t m, int64_t n, int64_t k, T alpha, const T* a, int64_t lda, const T* b, int64_t ldb, T beta,
             T* c, int64_t ldc) {
  if (m == 0 || n == 0) return;
  if (k == 0) return zero_or_scale(m, n, beta, c, ldc);
  if (blas_gemm<T>('T', 'N', n, m, k, alpha, b, ldb, a, lda, beta, c, ldc)) return;
  aten_gemm<T>(false, true, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

// Row-major C = A B is column-major C^T = B^T A^T: BLAS('N','N', n, m, k, B, A).
template <typename T>
void gemm_nn(int64_t m, int64_t n, int64_t k, T alpha, const T* a, int64_t lda, const T* b, int64_t ldb, T beta,
             T* c, int64_t ldc) {
  if (m == 0 || n == 0) return;
  if (k == 0) return zero_or_scale(m, n, beta, c, ldc);
  if (blas_gemm<T>('N', 'N', n, m, k, alpha, b, ldb, a, lda, beta, c, ldc)) return;
  aten_gemm<T>(false, false, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

// Row-major C = A^T B is column-major C^T = B^T A: BLAS('N','T', n, m, k, B, A).
template <typename T>
void gemm_tn(int64_t m, int64_t n, int64_t k, T alpha, const T* a, int64_t lda, const T* b, int64_t ldb, T beta,
             T* c, int64_t ldc) {
  if (m == 0 || n == 0) return;
  if (k == 0) return zero_or_scale(m, n, beta, c, ldc);
  if (blas_gemm<T>('N', 'T', n, m, k, alpha, b, ldb, a, lda, beta, c, ldc)) return;
  aten_gemm<T>(true, false, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

#define TP_INSTANTIATE(T)                                                                                   \
  template void gemm_nt<T>(int64_t, int64_t, int64_t, T, const T*, int64_t, const T*, int64_t, T, T*, int64_t); \
  template void gemm_nn<T>(int64_t, int64_t, int64_t, T, const T*, int64_t, const T*, int64_t, T, T*, int64_t); \
  template void gemm_tn<T>(int64_t, int64_t, int64_t, T, const T*, int64_t, const T*, int64_t, T, T*, int64_t);
TP_INSTANTIATE(float)
TP_INSTANTIATE(double)
#undef TP_INSTANTIATE

}  // namespace tp::engine
