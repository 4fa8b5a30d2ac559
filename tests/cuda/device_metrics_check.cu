// Every metric definition compiled for the device. nvcc -c on this file instantiates a
// __global__ kernel per engine kernel of csrc/metrics/kernel_list.h, on float and double,
// that evaluates the definition's value and gradient through the scalar path only
// (TP_HOST_DEVICE functions of csrc/metrics/*.h; no ATen). A host-only call in a definition
// fails the compile. Run by tests/test_host_device.py and tools/cuda_check.sh:
//
//   nvcc -std=c++17 -c -I csrc -I <torch include dir> tests/cuda/device_metrics_check.cu
//
// Compiled as C++ instead (g++ -x c++ -DTP_SCALAR_MATH_ONLY -DTP_DEVICE_CHECK_MAIN), the same
// evaluation functions are plain host templates and main() prints the scalar path's values
// and gradients for tests/test_host_device.py to compare with scipy and dense torch.
#include <cstdint>

#include "metrics/boolean.h"
#include "metrics/distances.h"
#include "metrics/elementwise.h"
#include "metrics/inner_product.h"
#include "metrics/kernel_list.h"
#include "metrics/kernels.h"

namespace tp::metrics::device_check {

// Value and gradient of an elementwise definition for one pair of rows of d features:
// out[0] = value, out[1 + k] = d value / d x_k, out[1 + d + k] = d value / d y_k (for kMax
// kernels the derivative of the maximised term, before the engine's tie weight).
template <class M, class T>
TP_HOST_DEVICE void elementwise(const T* x, const T* y, int64_t d, const Scalars& s, T* out) {
  T acc[M::kAcc];
  for (int a = 0; a < M::kAcc; ++a) acc[a] = T(0);
  for (int64_t k = 0; k < d; ++k) {
    T t[M::kAcc];
    M::term(x[k], y[k], t, s);
    for (int a = 0; a < M::kAcc; ++a) acc[a] = M::kMax ? math::maximum(acc[a], t[a]) : T(acc[a] + t[a]);
  }
  const T value = M::finalize(acc, s);
  T ctx[M::kCtx > 0 ? M::kCtx : 1];
  M::grad_context(acc, value, ctx, s);
  out[0] = value;
  for (int64_t k = 0; k < d; ++k) {
    out[1 + k] = M::dx(x[k], y[k], ctx, s);
    out[1 + d + k] = M::dy(x[k], y[k], ctx, s);
  }
}

// Value and partial derivatives of an inner-product definition at (g, a, b): distance-based
// kernels at d2 = max(a + b - 2g, 0): out = [h, dh/dd2]; value kernels: out = [f, fg, fa, fb];
// then the exact self-comparison value where the kernel fixes it.
template <class M, class T>
TP_HOST_DEVICE void inner_product(T g, T a, T b, const Scalars& s, T* out) {
  if constexpr (M::kDistanceBased) {
    const T d2 = math::clamp_min(T(a + b - g - g), 0.0);
    out[0] = M::h(d2, s);
    out[1] = M::dh(d2, out[0], s);
    out[2] = out[3] = T(0);
  } else {
    out[0] = M::value(g, a, b, s);
    M::grad(g, a, b, out[0], out[1], out[2], out[3], s);
  }
  if constexpr (math::fixes_self<M>()) out[4] = math::self_value<M>(g, s);
}

// A Boolean-family formula at the counts (tt, tf, ft, ff).
template <class M, class T>
TP_HOST_DEVICE T boolean(T tt, T tf, T ft, T ff) {
  return M::value(tt, tf, ft, ff);
}

#if defined(__CUDACC__)
// One thread per pair (row i of x against row i of y).
template <class M, class T>
__global__ void elementwise_kernel(const T* x, const T* y, int64_t n, int64_t d, Scalars s, T* out) {
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) elementwise<M, T>(x + i * d, y + i * d, d, s, out + i * (1 + 2 * d));
}
template <class M, class T>
__global__ void inner_product_kernel(const T* g, const T* a, const T* b, int64_t n, Scalars s, T* out) {
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) inner_product<M, T>(g[i], a[i], b[i], s, out + 5 * i);
}
template <class M, class T>
__global__ void boolean_kernel(const T* counts, int64_t n, T* out) {
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) out[i] = boolean<M, T>(counts[4 * i], counts[4 * i + 1], counts[4 * i + 2], counts[4 * i + 3]);
}

#define TP_DEVICE_ELEMENTWISE(id, Def)                                                                      \
  template __global__ void elementwise_kernel<Def, float>(const float*, const float*, int64_t, int64_t,    \
                                                          Scalars, float*);                                  \
  template __global__ void elementwise_kernel<Def, double>(const double*, const double*, int64_t, int64_t, \
                                                           Scalars, double*);
#define TP_DEVICE_INNER_PRODUCT(id, Def)                                                                       \
  template __global__ void inner_product_kernel<Def, float>(const float*, const float*, const float*, int64_t, \
                                                            Scalars, float*);                                 \
  template __global__ void inner_product_kernel<Def, double>(const double*, const double*, const double*,     \
                                                             int64_t, Scalars, double*);
#define TP_DEVICE_BOOLEAN(id, Def)                                                          \
  template __global__ void boolean_kernel<Def, float>(const float*, int64_t, float*); \
  template __global__ void boolean_kernel<Def, double>(const double*, int64_t, double*);
TORCHPAIR_ELEMENTWISE_KERNELS(TP_DEVICE_ELEMENTWISE)
TORCHPAIR_INNER_PRODUCT_KERNELS(TP_DEVICE_INNER_PRODUCT)
TORCHPAIR_PACKED_KERNELS(TP_DEVICE_BOOLEAN)  // the equality kernels reuse two of these definitions
#endif

}  // namespace tp::metrics::device_check

#if defined(TP_DEVICE_CHECK_MAIN) && !defined(__CUDACC__)
// The scalar path on the host:  device_metrics_check <kernel id> <float|double> <d> [scalars...]
// reads lines from stdin and prints one line per input line, %.17g:
//   elementwise kernels: 2d numbers (x, y)      -> value, d value/d x (d), d value/d y (d)
//   inner-product kernels: 3 numbers (g, a, b)  -> the five numbers of inner_product()
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace dc = tp::metrics::device_check;

template <class M, class T>
int run_elementwise(int64_t d, const tp::metrics::Scalars& s) {
  std::vector<double> in(static_cast<size_t>(2 * d));
  std::vector<T> x(static_cast<size_t>(d)), y(static_cast<size_t>(d)), out(static_cast<size_t>(1 + 2 * d));
  for (;;) {
    for (int64_t k = 0; k < 2 * d; ++k)
      if (std::scanf("%lf", &in[size_t(k)]) != 1) return 0;
    for (int64_t k = 0; k < d; ++k) x[size_t(k)] = T(in[size_t(k)]), y[size_t(k)] = T(in[size_t(d + k)]);
    dc::elementwise<M, T>(x.data(), y.data(), d, s, out.data());
    for (size_t k = 0; k < out.size(); ++k) std::printf(k ? " %.17g" : "%.17g", double(out[k]));
    std::printf("\n");
  }
}

template <class M, class T>
int run_inner_product(const tp::metrics::Scalars& s) {
  double g, a, b;
  T out[5] = {};
  while (std::scanf("%lf %lf %lf", &g, &a, &b) == 3) {
    dc::inner_product<M, T>(T(g), T(a), T(b), s, out);
    std::printf("%.17g %.17g %.17g %.17g %.17g\n", double(out[0]), double(out[1]), double(out[2]), double(out[3]),
                double(out[4]));
  }
  return 0;
}

template <class T>
int dispatch(const char* id, int64_t d, const tp::metrics::Scalars& s) {
#define TP_HOST_ELEMENTWISE(kid, Def) \
  if (std::strcmp(id, #kid) == 0) return run_elementwise<tp::metrics::Def, T>(d, s);
#define TP_HOST_INNER_PRODUCT(kid, Def) \
  if (std::strcmp(id, #kid) == 0) return run_inner_product<tp::metrics::Def, T>(s);
  TORCHPAIR_ELEMENTWISE_KERNELS(TP_HOST_ELEMENTWISE)
  TORCHPAIR_INNER_PRODUCT_KERNELS(TP_HOST_INNER_PRODUCT)
  std::fprintf(stderr, "unknown kernel id %s\n", id);
  return 2;
}

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: %s <kernel id> <float|double> <d> [scalars...]\n", argv[0]);
    return 2;
  }
  std::vector<double> scalars;
  for (int i = 4; i < argc; ++i) scalars.push_back(std::strtod(argv[i], nullptr));
  const tp::metrics::Scalars s(scalars.data(), int64_t(scalars.size()));
  const int64_t d = std::strtoll(argv[3], nullptr, 10);
  return std::strcmp(argv[2], "float") == 0 ? dispatch<float>(argv[1], d, s) : dispatch<double>(argv[1], d, s);
}
#endif
