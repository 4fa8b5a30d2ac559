#pragma once
// Engine kernel ids, generated from the kernel list (metrics/kernel_list.h).
#include <cstdint>
#include <string>

#include "metrics/kernel_traits.h"

namespace tp::engine {

enum class KernelId : int {
#define TP_KERNEL_ENUM(id, def) id,
#include "engines/kernel_list_all.inc"
#undef TP_KERNEL_ENUM
  kCount
};

// Throws a c10::ValueError naming `kernel` if it is not a known kernel id.
KernelId kernel_from_name(const std::string& kernel);
const char* kernel_name(KernelId id);
metrics::Family kernel_family(KernelId id);
// How many resolved scalar parameters the kernel reads.
int64_t kernel_scalar_count(KernelId id);
// Whether the kernel reads floating operands of the tile value dtype (the elementwise and
// inner-product families). Kernels over other operands (bit-packed words, tokens) validate
// their operands themselves and need an explicit value dtype.
bool kernel_has_floating_operands(KernelId id);

}  // namespace tp::engine
