// Autocast for every torchpair operator: under CPU or CUDA autocast, float16/bfloat16
// tensor arguments are promoted to float32 and the operator runs with autocast switched off
// below it, so its internal ATen calls (e.g. GEMMs) are not re-downcast. One boxed impl
// serves every schema. The core operators it covers are the TP_CORE_AUTOCAST rows of
// ops/core_ops.h; the public operators are listed here.
#include <ATen/autocast_mode.h>
#include <torch/library.h>

#include "ops/core_ops.h"

namespace tp::ops {
namespace {

at::Tensor promote(const at::Tensor& t) {
  if (t.defined() && (t.scalar_type() == at::kHalf || t.scalar_type() == at::kBFloat16)) return t.to(at::kFloat);
  return t;
}

void autocast_to_float32(const c10::OperatorHandle& op, c10::DispatchKeySet, torch::jit::Stack* stack) {
  const size_t n = op.schema().arguments().size();
  for (size_t i = stack->size() - n; i < stack->size(); ++i) {
    c10::IValue& v = (*stack)[i];
    if (v.isTensor()) {
      v = promote(v.toTensor());
    } else if (v.isTensorList()) {
      auto list = v.toTensorList();
      for (size_t j = 0; j < list.size(); ++j) list.set(j, promote(list.get(j)));
      v = list;
    }
  }
  c10::impl::ExcludeDispatchKeyGuard no_autocast(c10::autocast_dispatch_keyset);
  op.callBoxed(stack);
}

void register_autocast(torch::Library& m) {
  for (const char* name : {"pairwise", "lazy_matmul", "lazy_reduce", "lazy_topk", "lazy_softmax_matmul", "knn",
                           "hausdorff", "chamfer", "mmd", "energy_distance", "pdist", "sinkhorn_divergence"})
    m.impl(name, torch::CppFunction::makeFromBoxedFunction<&autocast_to_float32>());
#define TP_CORE_AUTOCAST_IMPL(id) \
  m.impl(core_op::id::qualified_name, torch::CppFunction::makeFromBoxedFunction<&autocast_to_float32>());
  TP_CORE_AUTOCAST(TP_CORE_AUTOCAST_IMPL)
#undef TP_CORE_AUTOCAST_IMPL
}

}  // namespace
}  // namespace tp::ops

TORCH_LIBRARY_IMPL(torchpair, AutocastCPU, m) { tp::ops::register_autocast(m); }
TORCH_LIBRARY_IMPL(torchpair, AutocastCUDA, m) { tp::ops::register_autocast(m); }
