// C++ autograd for the core operators (registered to the Autograd key, so LibTorch users
// get gradients exactly as Python users do). Each backward is itself a core operator
// (_dense_backward, ...) that streams over tiles; saved state is the inputs (and small
// per-row results such as a logsumexp), never an N x M buffer. Backward operators are
// registered as non-differentiable: asking for a second derivative raises a clear error.
#include <torch/autograd.h>
#include <torch/library.h>

#include <ATen/core/dispatch/Dispatcher.h>

#include "ops/ops.h"

namespace tp::ops {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;
using Opt = std::optional<at::Tensor>;
using Dtype = std::optional<at::ScalarType>;
using Back4 = std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor>;
using Back5 = std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor, at::Tensor>;
using Mask4 = std::array<bool, 4>;
using Mask5 = std::array<bool, 5>;

template <typename Sig>
c10::TypedOperatorHandle<Sig> handle(const char* name) {
  return c10::Dispatcher::singleton().findSchemaOrThrow(name, "").typed<Sig>();
}

Opt maybe(const at::Tensor& t) { return t.defined() ? Opt(t) : Opt(); }
at::Tensor grad_or_none(bool needed, const at::Tensor& g) { return needed ? g : at::Tensor(); }

// Whether a call must record a graph node. Inference calls (grad mode off, or no operand
// that requires grad) go straight to the kernel below autograd: a Function::apply costs an
// autograd node, the saved operands and the engine arguments copied into saved_data, for
// nothing; on a small or memory-cold call that was a visible share of the whole operator.
bool requires_grad(const at::Tensor& t) { return t.defined() && t.requires_grad(); }
bool requires_grad(const Opt& t) { return t.has_value() && requires_grad(*t); }
template <typename... T>
bool records_graph(const T&... operands) {
  return at::GradMode::is_enabled() && (requires_grad(operands) || ...);
}

// The core operator `Name` called below the autograd key (its CPU / fake / ... kernel).
template <const char* Name, typename Sig>
struct BelowAutograd;
template <const char* Name, typename Ret, typename... Args>
struct BelowAutograd<Name, Ret(Args...)> {
  static Ret call(Args... args) {
    at::AutoDispatchBelowADInplaceOrView guard;
    static auto op = handle<Ret(Args...)>(Name);
    return op.call(args...);
  }
};

// needs_input_grad() counts only the tensors actually passed (absent optionals have no
// edge): map it back onto argument positions.
template <size_t N>
std::array<bool, N> needed(AutogradContext* ctx, const std::array<bool, N>& present) {
  std::array<bool, N> out{};
  size_t edge = 0;
  for (size_t i = 0; i < N; ++i) out[i] = present[i] ? ctx->needs_input_grad(edge++) : false;
  return out;
}

// The engine arguments every core operator carries, saved for its backward.
struct Engine {
  std::string kernel;
  std::vector<double> scalars;
  bool symmetric = false, transpose = false;
  Dtype dtype;

  void save(AutogradContext* ctx) const {
    ctx->saved_data["kernel"] = kernel;
    ctx->saved_data["scalars"] = scalars;
    ctx->saved_data["symmetric"] = symmetric;
    ctx->saved_data["transpose"] = transpose;
    ctx->saved_data["dtype"] = dtype.has_value() ? c10::IValue(int64_t(*dtype)) : c10::IValue();
  }
  static Engine load(AutogradContext* ctx) {
    const auto& d = ctx->saved_data["dtype"];
    return {ctx->saved_data["kernel"].toStringRef(), ctx->saved_data["scalars"].toDoubleVector(),
            ctx->saved_data["symmetric"].toBool(), ctx->saved_data["transpose"].toBool(),
            d.isNone() ? Dtype() : Dtype(at::ScalarType(d.toInt()))};
  }
};

Engine engine_of(c10::string_view kernel, at::ArrayRef<double> scalars, bool symmetric, bool transpose, Dtype dtype) {
  return {std::string(kernel), scalars.vec(), symmetric, transpose, dtype};
}

void save_operands(AutogradContext* ctx, const at::Tensor& x, const at::Tensor& y, const Opt& a, const Opt& b,
                   std::vector<at::Tensor> extra = {}) {
  std::vector<at::Tensor> all{x, y, a.value_or(at::Tensor()), b.value_or(at::Tensor())};
  all.insert(all.end(), extra.begin(), extra.end());
  ctx->save_for_backward(all);
}

variable_list four_then_none(const Mask4& mask, const Back4& g, size_t nones) {
  variable_list out{grad_or_none(mask[0], std::get<0>(g)), grad_or_none(mask[1], std::get<1>(g)),
                    grad_or_none(mask[2], std::get<2>(g)), grad_or_none(mask[3], std::get<3>(g))};
  out.resize(4 + nones);
  return out;
}

constexpr char kDense[] = "torchpair::_dense";
constexpr char kRowReduce[] = "torchpair::_row_reduce";
constexpr char kMatmul[] = "torchpair::_matmul";
constexpr char kSoftmaxMatmul[] = "torchpair::_softmax_matmul";
constexpr char kPaired[] = "torchpair::_paired";

// ---- _dense -----------------------------------------------------------------------------
using DenseSig = at::Tensor(const at::Tensor&, const at::Tensor&, const Opt&, const Opt&, c10::string_view,
                            at::ArrayRef<double>, bool, bool, Dtype);
using DenseBackSig = Back4(const at::Tensor&, const at::Tensor&, const at::Tensor&, const Opt&, const Opt&,
                           c10::string_view, at::ArrayRef<double>, bool, bool, Dtype, Mask4);

struct DenseFunction : public torch::autograd::Function<DenseFunction> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, const at::Tensor& y, const Opt& a,
                            const Opt& b, c10::string_view kernel, at::ArrayRef<double> scalars, bool symmetric,
                            bool transpose, Dtype dtype) {
    save_operands(ctx, x, y, a, b);
    engine_of(kernel, scalars, symmetric, transpose, dtype).save(ctx);
    return BelowAutograd<kDense, DenseSig>::call(x, y, a, b, kernel, scalars, symmetric, transpose, dtype);
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto s = ctx->get_saved_variables();
    const Engine e = Engine::load(ctx);
    const auto mask = needed<4>(ctx, {true, true, s[2].defined(), s[3].defined()});
    static auto op = handle<DenseBackSig>("torchpair::_dense_backward");
    return four_then_none(mask, op.call(grads[0], s[0], s[1], maybe(s[2]), maybe(s[3]), e.kernel, e.scalars,
                                        e.symmetric, e.transpose, e.dtype, mask),
                          5);
  }
};

// ---- _row_reduce ------------------------------------------------------------------------
using ReduceSig = at::Tensor(const at::Tensor&, const at::Tensor&, const Opt&, const Opt&, c10::string_view,
                             c10::string_view, at::ArrayRef<double>, bool, bool, Dtype, double, const Opt&, double);
using ReduceBackSig = Back5(const at::Tensor&, const at::Tensor&, const at::Tensor&, const Opt&, const Opt&,
                            c10::string_view, const at::Tensor&, c10::string_view, at::ArrayRef<double>, bool, bool,
                            Dtype, double, const Opt&, Mask5);

struct RowReduceFunction : public torch::autograd::Function<RowReduceFunction> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, const at::Tensor& y, const Opt& a,
                            const Opt& b, c10::string_view reduction, c10::string_view kernel,
                            at::ArrayRef<double> scalars, bool symmetric, bool transpose, Dtype dtype, double scale,
                            const Opt& weight, double threshold) {
    const at::Tensor result = BelowAutograd<kRowReduce, ReduceSig>::call(x, y, a, b, reduction, kernel, scalars,
                                                                         symmetric, transpose, dtype, scale, weight,
                                                                         threshold);
    save_operands(ctx, x, y, a, b, {result, weight.value_or(at::Tensor())});
    engine_of(kernel, scalars, symmetric, transpose, dtype).save(ctx);
    ctx->saved_data["reduction"] = std::string(reduction);
    ctx->saved_data["scale"] = scale;
    return result;
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto s = ctx->get_saved_variables();
    const Engine e = Engine::load(ctx);
    const auto mask = needed<5>(ctx, {true, true, s[2].defined(), s[3].defined(), s[5].defined()});
    static auto op = handle<ReduceBackSig>("torchpair::_row_reduce_backward");
    auto [dx, dy, da, db, dw] =
        op.call(grads[0], s[0], s[1], maybe(s[2]), maybe(s[3]), ctx->saved_data["reduction"].toStringRef(), s[4],
                e.kernel, e.scalars, e.symmetric, e.transpose, e.dtype, ctx->saved_data["scale"].toDouble(),
                maybe(s[5]), mask);
    variable_list out{grad_or_none(mask[0], dx), grad_or_none(mask[1], dy), grad_or_none(mask[2], da),
                      grad_or_none(mask[3], db)};
    out.resize(13);
    out[11] = grad_or_none(mask[4], dw);
    return out;
  }
};

// ---- _matmul ----------------------------------------------------------------------------
using MatmulSig = at::Tensor(const at::Tensor&, const at::Tensor&, const Opt&, const Opt&, const at::Tensor&,
                             c10::string_view, at::ArrayRef<double>, bool, bool, Dtype);
using MatmulBackSig = Back5(const at::Tensor&, const at::Tensor&, const at::Tensor&, const Opt&, const Opt&,
                            const at::Tensor&, c10::string_view, at::ArrayRef<double>, bool, bool, Dtype, Mask5);

struct MatmulFunction : public torch::autograd::Function<MatmulFunction> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, const at::Tensor& y, const Opt& a,
                            const Opt& b, const at::Tensor& v, c10::string_view kernel, at::ArrayRef<double> scalars,
                            bool symmetric, bool transpose, Dtype dtype) {
    save_operands(ctx, x, y, a, b, {v});
    engine_of(kernel, scalars, symmetric, transpose, dtype).save(ctx);
    return BelowAutograd<kMatmul, MatmulSig>::call(x, y, a, b, v, kernel, scalars, symmetric, transpose, dtype);
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto s = ctx->get_saved_variables();
    const Engine e = Engine::load(ctx);
    const auto mask = needed<5>(ctx, {true, true, s[2].defined(), s[3].defined(), true});
    static auto op = handle<MatmulBackSig>("torchpair::_matmul_backward");
    auto [dx, dy, da, db, dv] = op.call(grads[0], s[0], s[1], maybe(s[2]), maybe(s[3]), s[4], e.kernel, e.scalars,
                                        e.symmetric, e.transpose, e.dtype, mask);
    variable_list out{grad_or_none(mask[0], dx), grad_or_none(mask[1], dy), grad_or_none(mask[2], da),
                      grad_or_none(mask[3], db), grad_or_none(mask[4], dv)};
    out.resize(10);
    return out;
  }
};

// ---- _softmax_matmul (outputs: out, and the rows' logsumexp, which is not differentiable) --
using SoftmaxSig = std::tuple<at::Tensor, at::Tensor>(const at::Tensor&, const at::Tensor&, const Opt&, const Opt&,
                                                      const at::Tensor&, c10::string_view, at::ArrayRef<double>, bool,
                                                      bool, Dtype);
using SoftmaxBackSig = Back5(const at::Tensor&, const at::Tensor&, const at::Tensor&, const Opt&, const Opt&,
                             const at::Tensor&, const at::Tensor&, const at::Tensor&, c10::string_view,
                             at::ArrayRef<double>, bool, bool, Dtype, Mask5);

struct SoftmaxMatmulFunction : public torch::autograd::Function<SoftmaxMatmulFunction> {
  static variable_list forward(AutogradContext* ctx, const at::Tensor& x, const at::Tensor& y, const Opt& a,
                               const Opt& b, const at::Tensor& v, c10::string_view kernel,
                               at::ArrayRef<double> scalars, bool symmetric, bool transpose, Dtype dtype) {
    auto [out, lse] =
        BelowAutograd<kSoftmaxMatmul, SoftmaxSig>::call(x, y, a, b, v, kernel, scalars, symmetric, transpose, dtype);
    save_operands(ctx, x, y, a, b, {v, out, lse});
    engine_of(kernel, scalars, symmetric, transpose, dtype).save(ctx);
    ctx->mark_non_differentiable({lse});
    return {out, lse};
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto s = ctx->get_saved_variables();
    const Engine e = Engine::load(ctx);
    const auto mask = needed<5>(ctx, {true, true, s[2].defined(), s[3].defined(), true});
    const at::Tensor g = grads[0].defined() ? grads[0] : at::zeros_like(s[5]);
    static auto op = handle<SoftmaxBackSig>("torchpair::_softmax_matmul_backward");
    auto [dx, dy, da, db, dv] = op.call(g, s[0], s[1], maybe(s[2]), maybe(s[3]), s[4], s[5], s[6], e.kernel,
                                        e.scalars, e.symmetric, e.transpose, e.dtype, mask);
    variable_list out{grad_or_none(mask[0], dx), grad_or_none(mask[1], dy), grad_or_none(mask[2], da),
                      grad_or_none(mask[3], db), grad_or_none(mask[4], dv)};
    out.resize(10);
    return out;
  }
};

// ---- _paired ----------------------------------------------------------------------------
using PairedSig = at::Tensor(const at::Tensor&, const at::Tensor&, const Opt&, const Opt&, const Opt&,
                             c10::string_view, at::ArrayRef<double>, Dtype);
using PairedBackSig = Back4(const at::Tensor&, const at::Tensor&, const at::Tensor&, const Opt&, const Opt&,
                            const Opt&, c10::string_view, at::ArrayRef<double>, Dtype, Mask4);

struct PairedFunction : public torch::autograd::Function<PairedFunction> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, const at::Tensor& y, const Opt& a,
                            const Opt& b, const Opt& self_mask, c10::string_view kernel, at::ArrayRef<double> scalars,
                            Dtype dtype) {
    save_operands(ctx, x, y, a, b, {self_mask.value_or(at::Tensor())});
    engine_of(kernel, scalars, false, false, dtype).save(ctx);
    return BelowAutograd<kPaired, PairedSig>::call(x, y, a, b, self_mask, kernel, scalars, dtype);
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto s = ctx->get_saved_variables();
    const Engine e = Engine::load(ctx);
    // self_mask is bool, it never needs a gradient (and has an edge only when given)
    const auto mask = needed<4>(ctx, {true, true, s[2].defined(), s[3].defined()});
    static auto op = handle<PairedBackSig>("torchpair::_paired_backward");
    return four_then_none(mask, op.call(grads[0], s[0], s[1], maybe(s[2]), maybe(s[3]), maybe(s[4]), e.kernel,
                                        e.scalars, e.dtype, mask),
                          4);
  }
};

// ---- _topk: not differentiable (like argmax); outputs carry no graph ---------------------
using TopkSig = std::tuple<at::Tensor, at::Tensor>(const at::Tensor&, const at::Tensor&, const Opt&, const Opt&,
                                                   int64_t, bool, bool, c10::string_view, at::ArrayRef<double>, bool,
                                                   bool, Dtype);

std::tuple<at::Tensor, at::Tensor> topk_autograd(const at::Tensor& x, const at::Tensor& y, const Opt& a,
                                                 const Opt& b, int64_t k, bool largest, bool nan_first,
                                                 c10::string_view kernel, at::ArrayRef<double> scalars,
                                                 bool symmetric, bool transpose, Dtype dtype) {
  at::AutoDispatchBelowADInplaceOrView guard;
  static auto op = handle<TopkSig>("torchpair::_topk");
  return op.call(x, y, a, b, k, largest, nan_first, kernel, scalars, symmetric, transpose, dtype);
}

// ---- backward operators: forward through, and a clear error if differentiated again ------
[[noreturn]] void second_derivative_error(const char* name) {
  TORCH_CHECK(false, "torchpair: second derivatives are not supported (", name,
              " has no derivative). torchpair operators support first derivatives only.");
}

template <const char* Name, typename Ret, typename... Args>
struct NoDoubleBackward : public torch::autograd::Function<NoDoubleBackward<Name, Ret, Args...>> {
  static variable_list forward(AutogradContext*, Args... args) {
    at::AutoDispatchBelowADInplaceOrView guard;
    static auto op = handle<Ret(Args...)>(Name);
    return std::apply([](auto&&... t) { return variable_list{t...}; }, op.call(args...));
  }
  static variable_list backward(AutogradContext*, variable_list) { second_derivative_error(Name); }
};

template <const char* Name, typename Ret, typename... Args>
Ret no_double_backward(Args... args) {
  auto r = NoDoubleBackward<Name, Ret, Args...>::apply(args...);
  Ret out;
  std::apply([&](auto&... t) {
    size_t i = 0;
    ((t = r[i++]), ...);
  }, out);
  return out;
}

constexpr char kDenseBackward[] = "torchpair::_dense_backward";
constexpr char kReduceBackward[] = "torchpair::_row_reduce_backward";
constexpr char kMatmulBackward[] = "torchpair::_matmul_backward";
constexpr char kSoftmaxBackward[] = "torchpair::_softmax_matmul_backward";
constexpr char kPairedBackward[] = "torchpair::_paired_backward";

}  // namespace
}  // namespace tp::ops

TORCH_LIBRARY_IMPL(torchpair, Autograd, m) {
  using namespace tp::ops;
  using at::Tensor;
  using Opt = std::optional<at::Tensor>;
  using Dtype = std::optional<at::ScalarType>;
  m.impl("_dense", [](const Tensor& x, const Tensor& y, const Opt& a, const Opt& b, c10::string_view kernel,
                      at::ArrayRef<double> scalars, bool symmetric, bool transpose, Dtype dtype) {
    if (!records_graph(x, y, a, b))
      return BelowAutograd<kDense, DenseSig>::call(x, y, a, b, kernel, scalars, symmetric, transpose, dtype);
    return DenseFunction::apply(x, y, a, b, kernel, scalars, symmetric, transpose, dtype);
  });
  m.impl("_row_reduce", [](const Tensor& x, const Tensor& y, const Opt& a, const Opt& b, c10::string_view reduction,
                           c10::string_view kernel, at::ArrayRef<double> scalars, bool symmetric, bool transpose,
                           Dtype dtype, double scale, const Opt& weight, double threshold) {
    // a count (int64) has no gradient: no graph, whatever requires grad
    if (reduction == "count" || !records_graph(x, y, a, b, weight))
      return BelowAutograd<kRowReduce, ReduceSig>::call(x, y, a, b, reduction, kernel, scalars, symmetric, transpose,
                                                        dtype, scale, weight, threshold);
    return RowReduceFunction::apply(x, y, a, b, reduction, kernel, scalars, symmetric, transpose, dtype, scale, weight,
                                    threshold);
  });
  m.impl("_matmul", [](const Tensor& x, const Tensor& y, const Opt& a, const Opt& b, const Tensor& v,
                       c10::string_view kernel, at::ArrayRef<double> scalars, bool symmetric, bool transpose,
                       Dtype dtype) {
    if (!records_graph(x, y, a, b, v))
      return BelowAutograd<kMatmul, MatmulSig>::call(x, y, a, b, v, kernel, scalars, symmetric, transpose, dtype);
    return MatmulFunction::apply(x, y, a, b, v, kernel, scalars, symmetric, transpose, dtype);
  });
  m.impl("_softmax_matmul", [](const Tensor& x, const Tensor& y, const Opt& a, const Opt& b, const Tensor& v,
                               c10::string_view kernel, at::ArrayRef<double> scalars, bool symmetric, bool transpose,
                               Dtype dtype) {
    if (!records_graph(x, y, a, b, v))
      return BelowAutograd<kSoftmaxMatmul, SoftmaxSig>::call(x, y, a, b, v, kernel, scalars, symmetric, transpose,
                                                              dtype);
    auto r = SoftmaxMatmulFunction::apply(x, y, a, b, v, kernel, scalars, symmetric, transpose, dtype);
    return std::make_tuple(r[0], r[1]);
  });
  m.impl("_paired", [](const Tensor& x, const Tensor& y, const Opt& a, const Opt& b, const Opt& self_mask,
                       c10::string_view kernel, at::ArrayRef<double> scalars, Dtype dtype) {
    if (!records_graph(x, y, a, b))
      return BelowAutograd<kPaired, PairedSig>::call(x, y, a, b, self_mask, kernel, scalars, dtype);
    return PairedFunction::apply(x, y, a, b, self_mask, kernel, scalars, dtype);
  });
  m.impl("_topk", &topk_autograd);

  using Back4 = std::tuple<Tensor, Tensor, Tensor, Tensor>;
  using Back5 = std::tuple<Tensor, Tensor, Tensor, Tensor, Tensor>;
  using CT = const Tensor&;
  using CO = const Opt&;
  using SV = c10::string_view;
  using AR = at::ArrayRef<double>;
  m.impl("_dense_backward", &no_double_backward<kDenseBackward, Back4, CT, CT, CT, CO, CO, SV, AR, bool, bool, Dtype,
                                                std::array<bool, 4>>);
  m.impl("_row_reduce_backward", &no_double_backward<kReduceBackward, Back5, CT, CT, CT, CO, CO, SV, CT, SV, AR, bool,
                                                     bool, Dtype, double, CO, std::array<bool, 5>>);
  m.impl("_matmul_backward", &no_double_backward<kMatmulBackward, Back5, CT, CT, CT, CO, CO, CT, SV, AR, bool, bool,
                                                 Dtype, std::array<bool, 5>>);
  m.impl("_softmax_matmul_backward", &no_double_backward<kSoftmaxBackward, Back5, CT, CT, CT, CO, CO, CT, CT, CT, SV,
                                                         AR, bool, bool, Dtype, std::array<bool, 5>>);
  m.impl("_paired_backward",
         &no_double_backward<kPairedBackward, Back4, CT, CT, CT, CO, CO, CO, SV, AR, Dtype, std::array<bool, 4>>);
}

// ---- _pdist -------------------------------------------------------------------------------
namespace tp::ops {
namespace {

constexpr char kPdist[] = "torchpair::_pdist";
using PdistSig = at::Tensor(const at::Tensor&, const at::Tensor&, const Opt&, const Opt&, c10::string_view,
                            at::ArrayRef<double>, bool, Dtype);
using PdistBackSig = Back4(const at::Tensor&, const at::Tensor&, const at::Tensor&, const Opt&, const Opt&,
                           c10::string_view, at::ArrayRef<double>, bool, Dtype, Mask4);

struct PdistFunction : public torch::autograd::Function<PdistFunction> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, const at::Tensor& y, const Opt& a,
                            const Opt& b, c10::string_view kernel, at::ArrayRef<double> scalars, bool symmetric,
                            Dtype dtype) {
    save_operands(ctx, x, y, a, b);
    engine_of(kernel, scalars, symmetric, false, dtype).save(ctx);
    return BelowAutograd<kPdist, PdistSig>::call(x, y, a, b, kernel, scalars, symmetric, dtype);
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto s = ctx->get_saved_variables();
    const Engine e = Engine::load(ctx);
    const auto mask = needed<4>(ctx, {true, true, s[2].defined(), s[3].defined()});
    static auto op = handle<PdistBackSig>("torchpair::_pdist_backward");
    return four_then_none(mask, op.call(grads[0], s[0], s[1], maybe(s[2]), maybe(s[3]), e.kernel, e.scalars,
                                        e.symmetric, e.dtype, mask),
                          4);
  }
};

constexpr char kPdistBackward[] = "torchpair::_pdist_backward";

}  // namespace
}  // namespace tp::ops

TORCH_LIBRARY_IMPL(torchpair, Autograd, m) {
  using namespace tp::ops;
  using at::Tensor;
  using Opt = std::optional<at::Tensor>;
  using Dtype = std::optional<at::ScalarType>;
  using Back4 = std::tuple<Tensor, Tensor, Tensor, Tensor>;
  using CT = const Tensor&;
  using CO = const Opt&;
  using SV = c10::string_view;
  using AR = at::ArrayRef<double>;
  m.impl("_pdist", [](const Tensor& x, const Tensor& y, const Opt& a, const Opt& b, c10::string_view kernel,
                      at::ArrayRef<double> scalars, bool symmetric, Dtype dtype) {
    if (!records_graph(x, y, a, b))
      return BelowAutograd<kPdist, PdistSig>::call(x, y, a, b, kernel, scalars, symmetric, dtype);
    return PdistFunction::apply(x, y, a, b, kernel, scalars, symmetric, dtype);
  });
  m.impl("_pdist_backward",
         &no_double_backward<kPdistBackward, Back4, CT, CT, CT, CO, CO, SV, AR, bool, Dtype, std::array<bool, 4>>);
}
