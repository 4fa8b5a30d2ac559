#pragma once
// Device-generic consumers (ATen ops on tiles). Same contracts as cpu/consumers.h.
#include "engines/request.h"

namespace tp::generic {

at::Tensor dense(const engine::Request& req);
engine::Grads4 dense_backward(const at::Tensor& grad, const engine::Request& req, std::array<bool, 4> mask);
at::Tensor matmul(const engine::Request& req, const at::Tensor& v);
engine::Grads5 matmul_backward(const at::Tensor& grad, const engine::Request& req, const at::Tensor& v,
                               std::array<bool, 5> mask);
at::Tensor row_reduce(const engine::Request& req, const engine::RowReduce& reduction);
engine::Grads5 row_reduce_backward(const at::Tensor& grad, const engine::Request& req, const engine::RowReduce& reduction,
                                   const at::Tensor& result, std::array<bool, 5> mask);
std::tuple<at::Tensor, at::Tensor> topk(const engine::Request& req, int64_t k, bool largest, bool nan_first);
std::tuple<at::Tensor, at::Tensor> softmax_matmul(const engine::Request& req, const at::Tensor& v);
engine::Grads5 softmax_matmul_backward(const at::Tensor& grad, const engine::Request& req, const at::Tensor& v,
                                       const at::Tensor& out, const at::Tensor& lse, std::array<bool, 5> mask);
// Matched pairs K(x_p, y_p) (x, y [B, P, d]); every device, CPU included, runs this ATen
// form: it is O(P d), so a native loop would buy nothing.
at::Tensor paired(const engine::Request& req, const at::Tensor& self_mask);
engine::Grads4 paired_backward(const at::Tensor& grad, const engine::Request& req, const at::Tensor& self_mask);

}  // namespace tp::generic

namespace tp::generic {
// Condensed upper triangle K(x_i, y_j), i < j, in scipy's order: [B, n(n-1)/2] (x, y of
// the same shape). Walks only the tiles that reach above the diagonal.
at::Tensor pdist(const engine::Request& req);
engine::Grads4 pdist_backward(const at::Tensor& grad, const engine::Request& req, std::array<bool, 4> mask);
}  // namespace tp::generic
