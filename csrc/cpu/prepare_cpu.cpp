// The preparation passes of csrc/cpu/prepare_loops.h, compiled once per CPU capability.
// Sums over a row's features run in eight double lanes (feature k in lane k mod 8), added in
// a fixed tree at the end: every capability vectorizes the same arithmetic (one AVX-512
// vector, two AVX2 vectors, four SSE2 vectors), and the lanes break the add-latency chain.
#include "cpu/prepare_loops.h"

#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>

#include <algorithm>
#include <cmath>
#include <vector>

namespace tp::cpu {
inline namespace CPU_CAPABILITY {
namespace {

// A pass is split across threads only above this many values per thread: below it, waking
// the pool costs more than the pass.
constexpr int64_t kGrain = int64_t(1) << 16;
// Row means sum chunks of about this many values each and add the chunk sums in order: one
// operand (B = 1) of many rows is not one thread's pass, and the result does not depend on
// the thread count.
constexpr int64_t kMeanChunk = int64_t(1) << 18;

int64_t row_grain(int64_t d) { return std::max<int64_t>(1, kGrain / std::max<int64_t>(d, 1)); }

constexpr int kLanes = 8;

// sum over k < d of term(k) (a double)
template <typename F>
inline double lane_sum(int64_t d, const F& term) {
  double acc[kLanes] = {};
  int64_t k = 0;
  for (; k + kLanes <= d; k += kLanes)
#pragma GCC unroll 8
    for (int j = 0; j < kLanes; ++j) acc[j] += term(k + j);
  for (int j = 0; k < d; ++k, ++j) acc[j] += term(k);
  return ((acc[0] + acc[4]) + (acc[2] + acc[6])) + ((acc[1] + acc[5]) + (acc[3] + acc[7]));
}

template <typename T>
void row_means_impl(const T* ref, T* ctr, int64_t B, int64_t n, int64_t d) {
  const int64_t dd = std::max<int64_t>(d, 1);
  const int64_t chunk_rows = std::max<int64_t>(1, kMeanChunk / dd);
  const int64_t chunks = std::max<int64_t>(1, (n + chunk_rows - 1) / chunk_rows);
  std::vector<double> part(size_t(B * chunks * dd), 0.0);
  const int64_t grain = std::max<int64_t>(1, kGrain / std::max<int64_t>(std::min(n, chunk_rows) * dd, 1));
  at::parallel_for(0, B * chunks, grain, [&](int64_t u0, int64_t u1) {
    for (int64_t u = u0; u < u1; ++u) {
      const int64_t b = u / chunks, r0 = u % chunks * chunk_rows, r1 = std::min(n, r0 + chunk_rows);
      double* acc = part.data() + u * dd;
      for (int64_t r = r0; r < r1; ++r) {
        const T* row = ref + (b * n + r) * d;
        for (int64_t k = 0; k < d; ++k) acc[k] += double(row[k]);
      }
    }
  });
  for (int64_t b = 0; b < B; ++b)
    for (int64_t k = 0; k < d; ++k) {
      double sum = 0;
      for (int64_t c = 0; c < chunks; ++c) sum += part[size_t((b * chunks + c) * dd + k)];
      const T m = n > 0 ? T(sum / double(n)) : T(0);
      ctr[b * d + k] = std::isfinite(m) ? m : T(0);
    }
}

template <typename T>
void centre_impl(const T* x, const T* ctr, T* xc, T* sq, int64_t B, int64_t n, int64_t d) {
  at::parallel_for(0, B * n, row_grain(d), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const T* c = ctr + (r / std::max<int64_t>(n, 1)) * d;
      const T* in = x + r * d;
      T* out = xc + r * d;
      for (int64_t k = 0; k < d; ++k) out[k] = in[k] - c[k];
      if (sq) sq[r] = T(lane_sum(d, [&](int64_t k) { return double(out[k]) * double(out[k]); }));
    }
  });
}

template <typename T>
void inverse_norms_impl(const T* x, T* out, int64_t rows, int64_t d) {
  at::parallel_for(0, rows, row_grain(d), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const T* xr = x + r * d;
      const double s = lane_sum(d, [&](int64_t k) { return double(xr[k]) * double(xr[k]); });
      out[r] = s > 0 ? T(1.0 / std::sqrt(s)) : T(0);  // NaN norms: 0; infinite ones give 0 too
    }
  });
}

template <typename T>
void row_dots_impl(const T* a, const T* b, T* out, int64_t rows, int64_t d) {
  at::parallel_for(0, rows, row_grain(d), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const T* ar = a + r * d;
      const T* br = b + r * d;
      out[r] = T(lane_sum(d, [&](int64_t k) { return double(ar[k]) * double(br[k]); }));
    }
  });
}

template <typename T>
void subtract_feature_means_impl(const T* src, T* dst, int64_t rows, int64_t d) {
  at::parallel_for(0, rows, row_grain(d), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const T* row = src + r * d;
      const T m = T(lane_sum(d, [&](int64_t k) { return double(row[k]); }) / double(std::max<int64_t>(d, 1)));
      T* out = dst + r * d;
      for (int64_t k = 0; k < d; ++k) out[k] = row[k] - m;
    }
  });
}

}  // namespace
}  // namespace CPU_CAPABILITY

namespace TP_ISA_NAMESPACE {
void row_means(const at::Tensor& ref, const at::Tensor& ctr) {
  AT_DISPATCH_FLOATING_TYPES(ref.scalar_type(), "torchpair_row_means", [&] {
    row_means_impl<scalar_t>(ref.data_ptr<scalar_t>(), ctr.data_ptr<scalar_t>(), ref.size(0), ref.size(1),
                             ref.size(2));
  });
}

void centre(const at::Tensor& x, const at::Tensor& ctr, const at::Tensor& xc, const at::Tensor& sq) {
  AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "torchpair_centre", [&] {
    centre_impl<scalar_t>(x.data_ptr<scalar_t>(), ctr.data_ptr<scalar_t>(), xc.data_ptr<scalar_t>(),
                          sq.defined() ? sq.data_ptr<scalar_t>() : nullptr, x.size(0), x.size(1), x.size(2));
  });
}

void inverse_norms(const at::Tensor& x, const at::Tensor& out) {
  AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "torchpair_inverse_norms", [&] {
    inverse_norms_impl<scalar_t>(x.data_ptr<scalar_t>(), out.data_ptr<scalar_t>(), x.size(0) * x.size(1), x.size(2));
  });
}

void row_dots(const at::Tensor& a, const at::Tensor& b, const at::Tensor& out) {
  AT_DISPATCH_FLOATING_TYPES(a.scalar_type(), "torchpair_row_dots", [&] {
    row_dots_impl<scalar_t>(a.data_ptr<scalar_t>(), b.data_ptr<scalar_t>(), out.data_ptr<scalar_t>(),
                            a.size(0) * a.size(1), a.size(2));
  });
}

void subtract_feature_means(const at::Tensor& x, const at::Tensor& out) {
  AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "torchpair_centre_rows", [&] {
    subtract_feature_means_impl<scalar_t>(x.data_ptr<scalar_t>(), out.data_ptr<scalar_t>(), x.size(0) * x.size(1),
                                          x.size(2));
  });
}
}  // namespace TP_ISA_NAMESPACE
}  // namespace tp::cpu
