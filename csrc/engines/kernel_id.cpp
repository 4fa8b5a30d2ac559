#include "engines/kernel_id.h"

#include <c10/util/Exception.h>

#include <cmath>

#include "metrics/elementwise.h"
#include "metrics/inner_product.h"
#include "metrics/kernels.h"
#include "metrics/distances.h"
#include "metrics/boolean.h"
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
#define TP_PK_ROW(id, def) KernelRow{#id, metrics::Family::Packed, 1},
#define TP_EQ_ROW(id, def) KernelRow{#id, metrics::Family::Equality, 1},
const KernelRow kKernels[] = {TORCHPAIR_ELEMENTWISE_KERNELS(TP_EW_ROW) TORCHPAIR_INNER_PRODUCT_KERNELS(TP_IP_ROW)
                                  TORCHPAIR_PACKED_KERNELS(TP_PK_ROW) TORCHPAIR_EQUALITY_KERNELS(TP_EQ_ROW)};
#undef TP_EW_ROW
#undef TP_IP_ROW
#undef TP_PK_ROW
#undef TP_EQ_ROW
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

c10::ScalarType kernel_operand_type(KernelId id) {
  switch (kernel_family(id)) {
    case metrics::Family::Packed:
      return c10::ScalarType::Long;
    case metrics::Family::Equality:
      return c10::ScalarType::Double;
    default:
      return c10::ScalarType::Undefined;
  }
}

void check_kernel_scalars(KernelId id, const std::vector<double>& scalars, int64_t d, const char* op) {
  const auto family = kernel_family(id);
  if (family == metrics::Family::Packed) {
    // scalars[0] = D, the number of features packed into d words of 64
    const double D = scalars[0];
    TORCH_CHECK_VALUE(D == std::floor(D) && D >= 0 && D <= 64.0 * double(d) && D > 64.0 * double(d - 1), "torchpair.",
                      op, ": kernel '", kernel_name(id), "' needs scalars = [D] with D features packed in the ", d,
                      " words of 'x' (64 (d - 1) < D <= 64 d), got ", D, " (argument 'scalars')");
  } else if (family == metrics::Family::Equality) {
    // scalars[0] = 1 when the operands are [values | weights]
    const double w = scalars[0];
    TORCH_CHECK_VALUE(w == 0 || (w == 1 && d % 2 == 0), "torchpair.", op, ": kernel '", kernel_name(id),
                      "' needs scalars = [0] (unweighted) or [1] (weighted: an even number of features, values then "
                      "weights), got ", w, " with ", d, " features (argument 'scalars')");
  }
}

}  // namespace tp::engine
