// C++ autograd for the core operators (registered to the Autograd key, so LibTorch users
// get gradients exactly as Python users do), generated from the table in ops/core_ops.h.
// Each backward is itself a core operator (_dense_backward, ...) that streams over tiles;
// saved state is the inputs (and small per-row results such as a logsumexp), never an
// N x M buffer. Backward operators are registered as non-differentiable: asking for a
// second derivative raises a clear error.
#include <torch/autograd.h>
#include <torch/library.h>

#include "ops/core_ops.h"

namespace tp::ops {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;
using core_op::AR;
using core_op::CO;
using core_op::CT;
using core_op::Dtype;
using core_op::SV;
using Opt = std::optional<at::Tensor>;

// Whether a call must record a graph node. Inference calls (grad mode off, or no operand
// that requires grad) go straight to the kernel below autograd: a Function::apply costs an
// autograd node, the saved operands and the engine arguments copied into saved_data, for
// nothing; on a small or memory-cold call that was a visible share of the whole operator.
bool requires_grad(const at::Tensor& t) { return t.defined() && t.requires_grad(); }
bool requires_grad(const Opt& t) { return t.has_value() && requires_grad(*t); }
template <typename T>
bool requires_grad(const T&) {
  return false;
}
template <typename... T>
bool records_graph(const T&... args) {
  return at::GradMode::is_enabled() && (requires_grad(args) || ...);
}

// How an argument of C++ type T is saved for the backward and read back. Tensors go to
// save_for_backward (in argument order), the others to saved_data under their name.
// `edge`: the argument's position among the inputs that have a graph edge (a tensor, or a
// present optional tensor), -1 for the others; needs_input_grad() counts those edges only.
template <typename T>
struct Slot {  // bool, int64_t, double
  using Stored = T;
  static void save(AutogradContext* ctx, std::vector<at::Tensor>&, const char* key, T v) {
    ctx->saved_data[key] = v;
  }
  static Stored load(AutogradContext* ctx, const variable_list&, size_t&, int64_t&, int64_t& edge, const char* key) {
    edge = -1;
    return ctx->saved_data[key].to<T>();
  }
};
template <>
struct Slot<const at::Tensor&> {
  using Stored = at::Tensor;
  static void save(AutogradContext*, std::vector<at::Tensor>& saved, const char*, const at::Tensor& t) {
    saved.push_back(t);
  }
  static Stored load(AutogradContext*, const variable_list& s, size_t& i, int64_t& edges, int64_t& edge,
                     const char*) {
    edge = edges++;
    return s[i++];
  }
};
template <>
struct Slot<const Opt&> {
  using Stored = Opt;
  static void save(AutogradContext*, std::vector<at::Tensor>& saved, const char*, const Opt& t) {
    saved.push_back(t.value_or(at::Tensor()));
  }
  static Stored load(AutogradContext*, const variable_list& s, size_t& i, int64_t& edges, int64_t& edge,
                     const char*) {
    const at::Tensor& t = s[i++];
    edge = t.defined() ? edges++ : -1;
    return t.defined() ? Opt(t) : Opt();
  }
};
template <>
struct Slot<c10::string_view> {
  using Stored = std::string;
  static void save(AutogradContext* ctx, std::vector<at::Tensor>&, const char* key, c10::string_view v) {
    ctx->saved_data[key] = std::string(v);
  }
  static Stored load(AutogradContext* ctx, const variable_list&, size_t&, int64_t&, int64_t& edge, const char* key) {
    edge = -1;
    return ctx->saved_data[key].toStringRef();
  }
};
template <>
struct Slot<at::ArrayRef<double>> {
  using Stored = std::vector<double>;
  static void save(AutogradContext* ctx, std::vector<at::Tensor>&, const char* key, at::ArrayRef<double> v) {
    ctx->saved_data[key] = v.vec();
  }
  static Stored load(AutogradContext* ctx, const variable_list&, size_t&, int64_t&, int64_t& edge, const char* key) {
    edge = -1;
    return ctx->saved_data[key].toDoubleVector();
  }
};
template <>
struct Slot<Dtype> {
  using Stored = Dtype;
  static void save(AutogradContext* ctx, std::vector<at::Tensor>&, const char* key, Dtype v) {
    ctx->saved_data[key] = v.has_value() ? c10::IValue(int64_t(*v)) : c10::IValue();
  }
  static Stored load(AutogradContext* ctx, const variable_list&, size_t&, int64_t&, int64_t& edge, const char* key) {
    edge = -1;
    const auto& d = ctx->saved_data[key];
    return d.isNone() ? Dtype() : Dtype(at::ScalarType(d.toInt()));
  }
};

// An operator's outputs as a list, and back.
variable_list as_list(const at::Tensor& t) { return {t}; }
variable_list as_list(const variable_list& t) { return t; }
template <typename... T>
variable_list as_list(const std::tuple<T...>& t) {
  return std::apply([](const auto&... v) { return variable_list{v...}; }, t);
}
template <typename Ret>
Ret from_list(const variable_list& r) {
  if constexpr (std::is_same_v<Ret, at::Tensor>) {
    return r[0];
  } else {
    Ret out;
    std::apply([&](auto&... t) {
      size_t i = 0;
      ((t = r[i++]), ...);
    }, out);
    return out;
  }
}
// What Function::forward returns: a tensor stays a tensor, a tuple becomes a list.
template <typename Ret>
using ForwardResult = std::conditional_t<std::is_same_v<Ret, at::Tensor>, at::Tensor, variable_list>;
inline at::Tensor forward_result(const at::Tensor& t) { return t; }
template <typename... T>
variable_list forward_result(const std::tuple<T...>& t) {
  return as_list(t);
}
inline at::Tensor grad_or_none(bool needed, const at::Tensor& g) { return needed ? g : at::Tensor(); }

#define TP_SAVE_ARG(name, T, type, dflt, src) Slot<T>::save(ctx, tp_saved, #name, name);
#define TP_SAVE_OUT(name, index) tp_saved.push_back(tp_outs[index]);
#define TP_MARK_OUT(name, index) ctx->mark_non_differentiable({tp_outs[index]});
#define TP_LOAD_ARG(name, T, type, dflt, src)                                                          \
  [[maybe_unused]] int64_t name##_edge;                                                           \
  [[maybe_unused]] const Slot<T>::Stored name =                                                   \
      Slot<T>::load(ctx, tp_s, tp_i, tp_edges, name##_edge, #name);
#define TP_LOAD_OUT(name, index) const at::Tensor name = tp_s[tp_i++];
#define TP_COUNT(name) +1
#define TP_MASK_ENTRY(name) output_mask[tp_m++] = name##_edge >= 0 && ctx->needs_input_grad(name##_edge);
#define TP_GRAD_ENTRY(name) \
  tp_out[Index::name] = grad_or_none(output_mask[tp_m], tp_g[tp_m]); \
  ++tp_m;
#define TP_ENUM0(name, T, type, dflt, src) name
#define TP_ENUM(name, T, type, dflt, src) , name

// The autograd::Function of a differentiable core operator, and its Autograd-key kernel.
#define TP_CORE_FUNCTION(id, back, condition)                                                    \
  struct id##_function : public torch::autograd::Function<id##_function> {                        \
    using Op = core_op::id;                                                                       \
    using Back = core_op::back;                                                                   \
    struct Index {                                                                                \
      enum : size_t { TP_CORE_ARGS_##id(TP_ENUM0, TP_ENUM), count };                              \
    };                                                                                            \
    static ForwardResult<Op::Ret> forward(AutogradContext* ctx, TP_CORE_KERNEL_ARGS(id)) {       \
      auto tp_r = Op::call_below_autograd(TP_CORE_ARG_NAMES(id));                                \
      [[maybe_unused]] const variable_list tp_outs = as_list(tp_r);                               \
      std::vector<at::Tensor> tp_saved;                                                           \
      TP_CORE_ARGS_##id(TP_SAVE_ARG, TP_SAVE_ARG) TP_CORE_SAVED_##id(TP_SAVE_OUT)                 \
      ctx->save_for_backward(tp_saved);                                                           \
      TP_CORE_NONDIFF_##id(TP_MARK_OUT) return forward_result(tp_r);                              \
    }                                                                                             \
    static variable_list backward(AutogradContext* ctx, variable_list grads) {                   \
      const variable_list tp_s = ctx->get_saved_variables();                                      \
      size_t tp_i = 0;                                                                            \
      int64_t tp_edges = 0;                                                                       \
      TP_CORE_ARGS_##id(TP_LOAD_ARG, TP_LOAD_ARG) TP_CORE_SAVED_##id(TP_LOAD_OUT)                 \
      std::array<bool, 0 TP_CORE_DIFF_##id(TP_COUNT)> output_mask{};                              \
      size_t tp_m = 0;                                                                            \
      TP_CORE_DIFF_##id(TP_MASK_ENTRY)                                                            \
      const at::Tensor& grad = grads[0];                                                          \
      const variable_list tp_g = as_list(Back::call(TP_CORE_ARG_NAMES(back)));                    \
      variable_list tp_out(Index::count);                                                         \
      tp_m = 0;                                                                                   \
      TP_CORE_DIFF_##id(TP_GRAD_ENTRY) return tp_out;                                             \
    }                                                                                             \
    static Op::Ret autograd_kernel(TP_CORE_KERNEL_ARGS(id)) {                                              \
      if (!(condition) || !records_graph(TP_CORE_ARG_NAMES(id)))                                  \
        return Op::call_below_autograd(TP_CORE_ARG_NAMES(id));                                    \
      return from_list<Op::Ret>(as_list(apply(TP_CORE_ARG_NAMES(id))));                           \
    }                                                                                             \
  };
TP_CORE_AUTOGRAD(TP_CORE_FUNCTION)
#undef TP_CORE_FUNCTION

// ---- backward operators: forward through, and a clear error if differentiated again ------
[[noreturn]] void second_derivative_error(const char* name) {
  TORCH_CHECK(false, "torchpair: second derivatives are not supported (", name,
              " has no derivative). torchpair operators support first derivatives only.");
}

template <typename Op, typename Sig = typename Op::Sig>
struct NoDoubleBackward;
template <typename Op, typename Ret, typename... Args>
struct NoDoubleBackward<Op, Ret(Args...)> : public torch::autograd::Function<NoDoubleBackward<Op, Ret(Args...)>> {
  static variable_list forward(AutogradContext*, Args... args) {
    return as_list(Op::call_below_autograd(args...));
  }
  static variable_list backward(AutogradContext*, variable_list) { second_derivative_error(Op::qualified_name); }
  static Ret kernel(Args... args) { return from_list<Ret>(NoDoubleBackward::apply(args...)); }
};

// A core operator without a derivative: its kernel below autograd, no graph.
template <typename Op, typename Sig = typename Op::Sig>
struct NoGraph;
template <typename Op, typename Ret, typename... Args>
struct NoGraph<Op, Ret(Args...)> {
  static Ret kernel(Args... args) { return Op::call_below_autograd(args...); }
};

}  // namespace
}  // namespace tp::ops

TORCH_LIBRARY_IMPL(torchpair, Autograd, m) {
  using namespace tp::ops;
#define TP_REGISTER_AUTOGRAD(id, back, condition)                               \
  m.impl(core_op::id::qualified_name, &id##_function::autograd_kernel);                  \
  m.impl(core_op::back::qualified_name, &NoDoubleBackward<core_op::back>::kernel);
  TP_CORE_AUTOGRAD(TP_REGISTER_AUTOGRAD)
#undef TP_REGISTER_AUTOGRAD
#define TP_REGISTER_NO_GRAPH(id) m.impl(core_op::id::qualified_name, &NoGraph<core_op::id>::kernel);
  TP_CORE_NOT_DIFFERENTIABLE(TP_REGISTER_NO_GRAPH)
#undef TP_REGISTER_NO_GRAPH
}
