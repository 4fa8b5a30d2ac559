#include "engines/kernel_id.h"

#include <c10/util/Exception.h>

#include "metrics/elementwise.h"
#include "metrics/inner_product.h"
#include "metrics/kernels.h"
#include "metrics/distances.h"
#include "metrics/kernel_list.h"

namespace tp::engine {
namespace {
struct KernelRow {
  const char* name;
  metrics::Family family;
  int64_t scalars;
};
#define TP_EW_ROW(id, def) KernelRow{#id, metrics::Family::Elementwise, metrics::def::kScalars},
#define TP_IP_ROW(id, def) KernelRow{#id, metrics::Family::InnerProduct, metrics::def::kScalars},
const KernelRow kKernels[] = {TORCHPAIR_ELEMENTWISE_KERNELS(TP_EW_ROW) TORCHPAIR_INNER_PRODUCT_KERNELS(TP_IP_ROW)};
#undef TP_EW_ROW
#undef TP_IP_ROW
static_assert(sizeof(kKernels) / sizeof(kKernels[0]) == size_t(KernelId::kCount), "kernel table out of sync");
}  // namespace

KernelId kernel_from_name(const std::string& kernel) {
  for (int i = 0; i < int(KernelId::kCount); ++i)
    if (kernel == kKernels[i].name) return KernelId(i);
  TORCH_CHECK_VALUE(false, "torchpair: unknown engine kernel '", kernel, "' (argument 'kernel')");
}

const char* kernel_name(KernelId id) { return kKernels[int(id)].name; }
metrics::Family kernel_family(KernelId id) { return kKernels[int(id)].family; }
int64_t kernel_scalar_count(KernelId id) { return kKernels[int(id)].scalars; }
bool kernel_has_floating_operands(KernelId id) {
  const auto f = kKernels[int(id)].family;
  return f == metrics::Family::Elementwise || f == metrics::Family::InnerProduct;
}

}  // namespace tp::engine
