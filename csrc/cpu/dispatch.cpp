// The CPU capability of this process (cpu/capability.h) and the consumers' entry points for
// it: each forwards to the copy compiled for this machine.
#include <cstdlib>
#include <cstring>
#include <string>

#include "cpu/capability.h"
#include "cpu/consumers.h"
#include "cpu/pdist.h"
#include "cpu/popcount.h"

namespace tp::cpu {

Capability capability() {
  static const Capability c = [] {
    Capability best = Capability::kDefault;
#if defined(__x86_64__) || defined(_M_X64)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) best = Capability::kAvx2;
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq"))
      best = Capability::kAvx512;
#endif
    if (const char* env = std::getenv("ATEN_CPU_CAPABILITY")) {
      std::string want(env);
      for (auto& ch : want) ch = char(std::tolower(ch));
      if (want == "default") return Capability::kDefault;
      if (want == "avx2" && best != Capability::kDefault) return Capability::kAvx2;
    }
    return best;
  }();
  return c;
}

const char* capability_name(Capability c) {
  switch (c) {
    case Capability::kAvx512:
      return "AVX512";
    case Capability::kAvx2:
      return "AVX2";
    default:
      return "DEFAULT";
  }
}

// The copies for this machine's capability.
#define TP_FORWARD(fn, ...) return TP_CPU_STUB(fn).get()(__VA_ARGS__);

namespace dispatch {
at::Tensor dense(const Request& req) { TP_FORWARD(dense, req) }
Grads4 dense_backward(const at::Tensor& grad, const Request& req, std::array<bool, 4> mask) {
  TP_FORWARD(dense_backward, grad, req, mask)
}
at::Tensor matmul(const Request& req, const at::Tensor& v) { TP_FORWARD(matmul, req, v) }
Grads5 matmul_backward(const at::Tensor& grad, const Request& req, const at::Tensor& v, std::array<bool, 5> mask) {
  TP_FORWARD(matmul_backward, grad, req, v, mask)
}
at::Tensor row_reduce(const Request& req, const RowReduce& reduction) { TP_FORWARD(row_reduce, req, reduction) }
Grads5 row_reduce_backward(const at::Tensor& grad, const Request& req, const RowReduce& reduction,
                           const at::Tensor& result, std::array<bool, 5> mask) {
  TP_FORWARD(row_reduce_backward, grad, req, reduction, result, mask)
}
std::tuple<at::Tensor, at::Tensor> topk(const Request& req, int64_t k, bool largest, bool nan_first) {
  TP_FORWARD(topk, req, k, largest, nan_first)
}
std::tuple<at::Tensor, at::Tensor> softmax_matmul(const Request& req, const at::Tensor& v) {
  TP_FORWARD(softmax_matmul, req, v)
}
Grads5 softmax_matmul_backward(const at::Tensor& grad, const Request& req, const at::Tensor& v,
                               const at::Tensor& out, const at::Tensor& lse, std::array<bool, 5> mask) {
  TP_FORWARD(softmax_matmul_backward, grad, req, v, out, lse, mask)
}
at::Tensor pdist(const Request& req) { TP_FORWARD(pdist, req) }
Grads4 pdist_backward(const at::Tensor& grad, const Request& req, std::array<bool, 4> mask) {
  TP_FORWARD(pdist_backward, grad, req, mask)
}
}  // namespace dispatch
#undef TP_FORWARD

// ---- the popcount engine's path (cpu/popcount.h) ----
namespace {
enum class PopPath { kScalar, kAvx2, kAvx512 };

// The best path of this machine: the capability's own, except that the AVX512 copy needs
// VPOPCNTDQ (without it, AVX512 machines use the AVX2 copy).
PopPath best_pop_path() {
  static const PopPath best = [] {
    switch (capability()) {
      case Capability::kAvx512:
#if defined(__x86_64__) || defined(_M_X64)
        if (__builtin_cpu_supports("avx512vpopcntdq")) return PopPath::kAvx512;
#endif
        return PopPath::kAvx2;
      case Capability::kAvx2:
        return PopPath::kAvx2;
      default:
        return PopPath::kScalar;
    }
  }();
  return best;
}

// TORCHPAIR_POPCOUNT=scalar|avx2|avx512 asks for a path; never more than the machine has.
PopPath pop_path() {
  const PopPath best = best_pop_path();
  const char* env = std::getenv("TORCHPAIR_POPCOUNT");
  if (!env || !*env) return best;
  std::string want(env);
  for (auto& ch : want) ch = char(std::tolower(ch));
  PopPath p;
  if (want == "scalar")
    p = PopPath::kScalar;
  else if (want == "avx2")
    p = PopPath::kAvx2;
  else if (want == "avx512")
    p = PopPath::kAvx512;
  else
    TORCH_CHECK_VALUE(false, "torchpair: environment variable TORCHPAIR_POPCOUNT must be one of scalar, avx2, avx512; got '",
                      env, "'");
  return std::min(p, best);
}

const char* pop_path_name(PopPath p) {
  switch (p) {
    case PopPath::kAvx512:
      return "avx512";
    case PopPath::kAvx2:
      return "avx2";
    default:
      return "scalar";
  }
}
}  // namespace

template <typename T>
PopcountKernel<T> popcount_kernel() {
  // The popcount paths are the capabilities' copies (scalar = DEFAULT's).
  using Fn = PopcountKernel<T>;
  const Stub<Fn> stub{{static_cast<Fn>(&isa_DEFAULT::popcount_tt), static_cast<Fn>(&isa_AVX2::popcount_tt),
                       static_cast<Fn>(&isa_AVX512::popcount_tt)}};
  return stub.get(static_cast<Capability>(pop_path()));
}
template PopcountKernel<float> popcount_kernel<float>();
template PopcountKernel<double> popcount_kernel<double>();

std::string popcount_path_name() { return pop_path_name(pop_path()); }

std::vector<std::string> popcount_paths() {
  std::vector<std::string> out;
  for (int p = 0; p <= int(best_pop_path()); ++p) out.emplace_back(pop_path_name(PopPath(p)));
  return out;
}

}  // namespace tp::cpu
