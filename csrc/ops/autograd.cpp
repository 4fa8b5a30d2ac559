// C++ autograd for the core operators (registered to the Autograd key, so LibTorch users
// get gradients exactly as Python users do). Each backward is itself a core operator
// (_dense_backward, ...) that streams over tiles; saved state is the inputs only, never an
// N x M buffer. Backward operators are registered as non-differentiable: asking for a
// second derivative raises a clear error.
#include <torch/autograd.h>
#include <torch/library.h>

#include <ATen/core/dispatch/Dispatcher.h>

#include "ops/ops.h"

namespace tp::ops {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;
using Opt = std::optional<at::Tensor>;

template <typename Sig>
c10::TypedOperatorHandle<Sig> handle(const char* name) {
  return c10::Dispatcher::singleton().findSchemaOrThrow(name, "").typed<Sig>();
}

using Dtype = std::optional<at::ScalarType>;
using CoreSig = at::Tensor(const at::Tensor&, const at::Tensor&, const Opt&, const Opt&, c10::string_view,
                           at::ArrayRef<double>, bool, bool, Dtype);
using CoreVSig = at::Tensor(const at::Tensor&, const at::Tensor&, const Opt&, const Opt&, const at::Tensor&,
                            c10::string_view, at::ArrayRef<double>, bool, bool, Dtype);
using Back4 = std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor>;
using Back5 = std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor, at::Tensor>;
using BackSig = Back4(const at::Tensor&, const at::Tensor&, const at::Tensor&, const Opt&, const Opt&,
                      c10::string_view, at::ArrayRef<double>, bool, bool, Dtype, std::array<bool, 4>);
using BackVSig = Back5(const at::Tensor&, const at::Tensor&, const at::Tensor&, const Opt&, const Opt&,
                       const at::Tensor&, c10::string_view, at::ArrayRef<double>, bool, bool, Dtype,
                       std::array<bool, 5>);

Opt maybe(const at::Tensor& t) { return t.defined() ? Opt(t) : Opt(); }

// needs_input_grad() counts only the tensors actually passed (absent optionals have no
// edge): map it back onto argument positions.
template <size_t N>
std::array<bool, N> needed(AutogradContext* ctx, const std::array<bool, N>& present) {
  std::array<bool, N> out{};
  size_t edge = 0;
  for (size_t i = 0; i < N; ++i) out[i] = present[i] ? ctx->needs_input_grad(edge++) : false;
  return out;
}
at::Tensor grad_or_none(bool needed, const at::Tensor& g) { return needed ? g : at::Tensor(); }

void save_engine(AutogradContext* ctx, c10::string_view kernel, at::ArrayRef<double> scalars, bool symmetric,
                 bool transpose, Dtype dtype) {
  ctx->saved_data["kernel"] = std::string(kernel);
  ctx->saved_data["scalars"] = scalars.vec();
  ctx->saved_data["symmetric"] = symmetric;
  ctx->saved_data["transpose"] = transpose;
  ctx->saved_data["dtype"] = dtype.has_value() ? c10::IValue(int64_t(*dtype)) : c10::IValue();
}

struct Engine {
  std::string kernel;
  std::vector<double> scalars;
  bool symmetric, transpose;
  Dtype dtype;
};
Engine load_engine(AutogradContext* ctx) {
  const auto& d = ctx->saved_data["dtype"];
  return {ctx->saved_data["kernel"].toStringRef(), ctx->saved_data["scalars"].toDoubleVector(),
          ctx->saved_data["symmetric"].toBool(), ctx->saved_data["transpose"].toBool(),
          d.isNone() ? Dtype() : Dtype(at::ScalarType(d.toInt()))};
}

// A core operator (by name) whose gradient is its named backward operator.
template <const char* Forward, const char* Backward>
struct OperatorFunction : public torch::autograd::Function<OperatorFunction<Forward, Backward>> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, const at::Tensor& y, const Opt& a,
                            const Opt& b, c10::string_view kernel, at::ArrayRef<double> scalars, bool symmetric,
                            bool transpose, Dtype dtype) {
    ctx->save_for_backward({x, y, a.value_or(at::Tensor()), b.value_or(at::Tensor())});
    save_engine(ctx, kernel, scalars, symmetric, transpose, dtype);
    at::AutoDispatchBelowADInplaceOrView guard;
    static auto op = handle<CoreSig>(Forward);
    return op.call(x, y, a, b, kernel, scalars, symmetric, transpose, dtype);
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const Engine e = load_engine(ctx);
    const auto mask = needed<4>(ctx, {true, true, saved[2].defined(), saved[3].defined()});
    static auto op = handle<BackSig>(Backward);
    auto [dx, dy, da, db] = op.call(grads[0], saved[0], saved[1], maybe(saved[2]), maybe(saved[3]), e.kernel,
                                    e.scalars, e.symmetric, e.transpose, e.dtype, mask);
    return {grad_or_none(mask[0], dx), grad_or_none(mask[1], dy), grad_or_none(mask[2], da),
            grad_or_none(mask[3], db), at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

constexpr char kDense[] = "torchpair::_dense";
constexpr char kDenseBackward[] = "torchpair::_dense_backward";
constexpr char kRowSum[] = "torchpair::_row_sum";
constexpr char kRowSumBackward[] = "torchpair::_row_sum_backward";

struct MatmulFunction : public torch::autograd::Function<MatmulFunction> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, const at::Tensor& y, const Opt& a,
                            const Opt& b, const at::Tensor& v, c10::string_view kernel, at::ArrayRef<double> scalars,
                            bool symmetric, bool transpose, Dtype dtype) {
    ctx->save_for_backward({x, y, a.value_or(at::Tensor()), b.value_or(at::Tensor()), v});
    save_engine(ctx, kernel, scalars, symmetric, transpose, dtype);
    at::AutoDispatchBelowADInplaceOrView guard;
    static auto op = handle<CoreVSig>("torchpair::_matmul");
    return op.call(x, y, a, b, v, kernel, scalars, symmetric, transpose, dtype);
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const Engine e = load_engine(ctx);
    const auto mask = needed<5>(ctx, {true, true, saved[2].defined(), saved[3].defined(), true});
    static auto op = handle<BackVSig>("torchpair::_matmul_backward");
    auto [dx, dy, da, db, dv] = op.call(grads[0], saved[0], saved[1], maybe(saved[2]), maybe(saved[3]), saved[4],
                                        e.kernel, e.scalars, e.symmetric, e.transpose, e.dtype, mask);
    return {grad_or_none(mask[0], dx), grad_or_none(mask[1], dy), grad_or_none(mask[2], da),
            grad_or_none(mask[3], db), grad_or_none(mask[4], dv), at::Tensor(), at::Tensor(), at::Tensor(),
            at::Tensor(), at::Tensor()};
  }
};

// Backward operators: forward through, and a clear error if differentiated again.
[[noreturn]] void second_derivative_error(const char* name) {
  TORCH_CHECK(false, "torchpair: second derivatives are not supported (", name,
              " has no derivative). torchpair operators support first derivatives only.");
}

template <const char* Name, typename... Args>
struct NoDoubleBackward4 : public torch::autograd::Function<NoDoubleBackward4<Name, Args...>> {
  static variable_list forward(AutogradContext*, Args... args) {
    at::AutoDispatchBelowADInplaceOrView guard;
    static auto op = handle<Back4(Args...)>(Name);
    auto [a, b, c, d] = op.call(args...);
    return {a, b, c, d};
  }
  static variable_list backward(AutogradContext*, variable_list) { second_derivative_error(Name); }
};

template <const char* Name, typename... Args>
struct NoDoubleBackward5 : public torch::autograd::Function<NoDoubleBackward5<Name, Args...>> {
  static variable_list forward(AutogradContext*, Args... args) {
    at::AutoDispatchBelowADInplaceOrView guard;
    static auto op = handle<Back5(Args...)>(Name);
    auto [a, b, c, d, e] = op.call(args...);
    return {a, b, c, d, e};
  }
  static variable_list backward(AutogradContext*, variable_list) { second_derivative_error(Name); }
};

constexpr char kMatmulBackward[] = "torchpair::_matmul_backward";

template <const char* Name>
Back4 back4_autograd(const at::Tensor& grad, const at::Tensor& x, const at::Tensor& y, const Opt& a, const Opt& b,
                     c10::string_view kernel, at::ArrayRef<double> scalars, bool symmetric, bool transpose,
                     Dtype dtype, std::array<bool, 4> mask) {
  using F = NoDoubleBackward4<Name, const at::Tensor&, const at::Tensor&, const at::Tensor&, const Opt&, const Opt&,
                              c10::string_view, at::ArrayRef<double>, bool, bool, Dtype, std::array<bool, 4>>;
  auto r = F::apply(grad, x, y, a, b, kernel, scalars, symmetric, transpose, dtype, mask);
  return {r[0], r[1], r[2], r[3]};
}

Back5 matmul_backward_autograd(const at::Tensor& grad, const at::Tensor& x, const at::Tensor& y, const Opt& a,
                               const Opt& b, const at::Tensor& v, c10::string_view kernel,
                               at::ArrayRef<double> scalars, bool symmetric, bool transpose, Dtype dtype,
                               std::array<bool, 5> mask) {
  using F = NoDoubleBackward5<kMatmulBackward, const at::Tensor&, const at::Tensor&, const at::Tensor&, const Opt&,
                              const Opt&, const at::Tensor&, c10::string_view, at::ArrayRef<double>, bool, bool, Dtype,
                              std::array<bool, 5>>;
  auto r = F::apply(grad, x, y, a, b, v, kernel, scalars, symmetric, transpose, dtype, mask);
  return {r[0], r[1], r[2], r[3], r[4]};
}

template <const char* F, const char* B>
at::Tensor operator_autograd(const at::Tensor& x, const at::Tensor& y, const Opt& a, const Opt& b,
                             c10::string_view kernel, at::ArrayRef<double> scalars, bool symmetric, bool transpose,
                             Dtype dtype) {
  return OperatorFunction<F, B>::apply(x, y, a, b, kernel, scalars, symmetric, transpose, dtype);
}

at::Tensor matmul_autograd(const at::Tensor& x, const at::Tensor& y, const Opt& a, const Opt& b, const at::Tensor& v,
                           c10::string_view kernel, at::ArrayRef<double> scalars, bool symmetric, bool transpose,
                           Dtype dtype) {
  return MatmulFunction::apply(x, y, a, b, v, kernel, scalars, symmetric, transpose, dtype);
}

}  // namespace
}  // namespace tp::ops

TORCH_LIBRARY_IMPL(torchpair, Autograd, m) {
  using namespace tp::ops;
  m.impl("_dense", &operator_autograd<kDense, kDenseBackward>);
  m.impl("_row_sum", &operator_autograd<kRowSum, kRowSumBackward>);
  m.impl("_matmul", &matmul_autograd);
  m.impl("_dense_backward", &back4_autograd<kDenseBackward>);
  m.impl("_row_sum_backward", &back4_autograd<kRowSumBackward>);
  m.impl("_matmul_backward", &matmul_backward_autograd);
}
