// Instantiates the CPU tile producers for every engine kernel (compiled per CPU capability).
#include "cpu/sources.h"
#include "cpu/boolean_sources.h"
#include "metrics/kernel_list.h"

namespace tp::cpu {
inline namespace CPU_CAPABILITY {

template <typename T>
engine::SourcePtr<T> make_source(const SourceSpec& spec, const Operands& ops) {
  using engine::KernelId;
  // Kernels over non-floating operands (bit-packed words, tokens) add their factories here.
  switch (spec.kernel) {
#define TP_ELEMENTWISE(id, def) \
  case KernelId::id:            \
    return std::make_unique<ElementwiseSource<T, metrics::def>>(spec, ops);
#define TP_INNER_PRODUCT(id, def) \
  case KernelId::id:              \
    return std::make_unique<InnerProductSource<T, metrics::def>>(spec, ops);
    TORCHPAIR_ELEMENTWISE_KERNELS(TP_ELEMENTWISE)
    TORCHPAIR_INNER_PRODUCT_KERNELS(TP_INNER_PRODUCT)
#undef TP_ELEMENTWISE
#undef TP_INNER_PRODUCT
#define TP_PACKED(id, def) \
  case KernelId::id:       \
    return std::make_unique<PackedSource<T, metrics::def>>(spec, ops);
#define TP_EQUALITY(id, def) \
  case KernelId::id:         \
    return std::make_unique<EqualitySource<T, metrics::def>>(spec, ops);
    TORCHPAIR_PACKED_KERNELS(TP_PACKED)
    TORCHPAIR_EQUALITY_KERNELS(TP_EQUALITY)
#undef TP_PACKED
#undef TP_EQUALITY
    default:
      break;
  }
  TORCH_CHECK(false, "torchpair: no CPU tile producer for kernel ", engine::kernel_name(spec.kernel));
}

template engine::SourcePtr<float> make_source<float>(const SourceSpec&, const Operands&);
template engine::SourcePtr<double> make_source<double>(const SourceSpec&, const Operands&);

}  // namespace CPU_CAPABILITY
}  // namespace tp::cpu
