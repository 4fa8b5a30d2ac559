// The device-generic backend (ATen ops on tiles, generic/consumers_generic.cpp), registered
// once as the fallback of every device: CompositeExplicitAutograd is the key a dispatcher
// uses for any backend that has no impl of its own (CUDA, XPU, MPS, ... and the CPU for
// _paired). A backend that registers its own key (cpu/register.cpp: CPU) takes precedence.
#include "generic/consumers.h"
#include "ops/impls.h"

namespace tp::generic {
namespace {

using engine::Grads4;
using engine::Grads5;
using engine::Request;
using engine::RowReduce;
using engine::RowReduction;

struct Engine {
  static constexpr bool kPaired = true;
  static at::Tensor dense(const Request& r) { return generic::dense(r); }
  static Grads4 dense_backward(const at::Tensor& g, const Request& r, std::array<bool, 4> m) {
    return generic::dense_backward(g, r, m);
  }
  static at::Tensor matmul(const Request& r, const at::Tensor& v) { return generic::matmul(r, v); }
  static Grads5 matmul_backward(const at::Tensor& g, const Request& r, const at::Tensor& v, std::array<bool, 5> m) {
    return generic::matmul_backward(g, r, v, m);
  }
  static at::Tensor row_reduce(const Request& r, const RowReduce& red) { return generic::row_reduce(r, red); }
  static Grads5 row_reduce_backward(const at::Tensor& g, const Request& r, const RowReduce& red, const at::Tensor& res,
                                    std::array<bool, 5> m) {
    return generic::row_reduce_backward(g, r, red, res, m);
  }
  static std::tuple<at::Tensor, at::Tensor> topk(const Request& r, int64_t k, bool largest, bool nan_first) {
    return generic::topk(r, k, largest, nan_first);
  }
  static std::tuple<at::Tensor, at::Tensor> softmax_matmul(const Request& r, const at::Tensor& v) {
    return generic::softmax_matmul(r, v);
  }
  static Grads5 softmax_matmul_backward(const at::Tensor& g, const Request& r, const at::Tensor& v,
                                        const at::Tensor& out, const at::Tensor& lse, std::array<bool, 5> m) {
    return generic::softmax_matmul_backward(g, r, v, out, lse, m);
  }
  static at::Tensor pdist(const Request& r) { return generic::pdist(r); }
  static Grads4 pdist_backward(const at::Tensor& g, const Request& r, std::array<bool, 4> m) {
    return generic::pdist_backward(g, r, m);
  }
  static at::Tensor paired(const Request& r, const at::Tensor& self_mask) { return generic::paired(r, self_mask); }
  static Grads4 paired_backward(const at::Tensor& g, const Request& r, const at::Tensor& self_mask) {
    return generic::paired_backward(g, r, self_mask);
  }
};

}  // namespace
}  // namespace tp::generic

TORCH_LIBRARY_IMPL(torchpair, CompositeExplicitAutograd, m) {
  tp::ops::core::register_core_impls<tp::generic::Engine>(m);
}
