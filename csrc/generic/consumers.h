#pragma once
// Device-generic consumers (ATen ops on tiles). Same contracts as cpu/consumers.h.
#include "engines/request.h"

namespace tp::generic {

at::Tensor dense(const engine::Request& req);
engine::Grads4 dense_backward(const at::Tensor& grad, const engine::Request& req, std::array<bool, 4> mask);
at::Tensor matmul(const engine::Request& req, const at::Tensor& v);
engine::Grads5 matmul_backward(const at::Tensor& grad, const engine::Request& req, const at::Tensor& v,
                               std::array<bool, 5> mask);
at::Tensor row_sum(const engine::Request& req);
engine::Grads4 row_sum_backward(const at::Tensor& grad, const engine::Request& req, std::array<bool, 4> mask);

}  // namespace tp::generic
