// The CPU backend: the native engines (cpu/consumers_cpu.cpp, cpu/pdist_cpu.cpp, compiled per
// CPU capability) registered for the CPU dispatch key. Matched pairs (_paired) have no CPU
// engine of their own: they are O(P d), so the generic ATen form serves the CPU too.
#include <cstdlib>

#include "cpu/consumers.h"
#include "cpu/pdist.h"
#include "generic/consumers.h"
#include "ops/impls.h"

namespace tp::cpu {
namespace {

// TORCHPAIR_FORCE_GENERIC=1 runs the device-generic engines on CPU tensors: how the test
// suite checks that path (every other device's) on a machine without one. Read per call so
// a test can set it for one call.
bool forced_generic() {
  const char* force = std::getenv("TORCHPAIR_FORCE_GENERIC");
  return force && force[0] == '1';
}

#define TP_CPU_OR_GENERIC(fn, ...) return forced_generic() ? generic::fn(__VA_ARGS__) : dispatch::fn(__VA_ARGS__);

struct Engine {
  static constexpr bool kPaired = false;
  static at::Tensor dense(const Request& r) { TP_CPU_OR_GENERIC(dense, r) }
  static Grads4 dense_backward(const at::Tensor& g, const Request& r, std::array<bool, 4> m) {
    TP_CPU_OR_GENERIC(dense_backward, g, r, m)
  }
  static at::Tensor matmul(const Request& r, const at::Tensor& v) { TP_CPU_OR_GENERIC(matmul, r, v) }
  static Grads5 matmul_backward(const at::Tensor& g, const Request& r, const at::Tensor& v, std::array<bool, 5> m) {
    TP_CPU_OR_GENERIC(matmul_backward, g, r, v, m)
  }
  static at::Tensor row_reduce(const Request& r, const RowReduce& red) { TP_CPU_OR_GENERIC(row_reduce, r, red) }
  static Grads5 row_reduce_backward(const at::Tensor& g, const Request& r, const RowReduce& red, const at::Tensor& res,
                                    std::array<bool, 5> m) {
    TP_CPU_OR_GENERIC(row_reduce_backward, g, r, red, res, m)
  }
  static std::tuple<at::Tensor, at::Tensor> topk(const Request& r, int64_t k, bool largest, bool nan_first) {
    TP_CPU_OR_GENERIC(topk, r, k, largest, nan_first)
  }
  static std::tuple<at::Tensor, at::Tensor> softmax_matmul(const Request& r, const at::Tensor& v) {
    TP_CPU_OR_GENERIC(softmax_matmul, r, v)
  }
  static Grads5 softmax_matmul_backward(const at::Tensor& g, const Request& r, const at::Tensor& v,
                                        const at::Tensor& out, const at::Tensor& lse, std::array<bool, 5> m) {
    TP_CPU_OR_GENERIC(softmax_matmul_backward, g, r, v, out, lse, m)
  }
  static at::Tensor pdist(const Request& r) { TP_CPU_OR_GENERIC(pdist, r) }
  static Grads4 pdist_backward(const at::Tensor& g, const Request& r, std::array<bool, 4> m) {
    TP_CPU_OR_GENERIC(pdist_backward, g, r, m)
  }
};

#undef TP_CPU_OR_GENERIC

}  // namespace
}  // namespace tp::cpu

TORCH_LIBRARY_IMPL(torchpair, CPU, m) { tp::ops::core::register_core_impls<tp::cpu::Engine>(m); }
