#pragma once
// Engine kernel ids, generated from the kernel list (metrics/kernel_list.h).
#include <cstdint>
#include <string>
#include <vector>

#include <c10/core/ScalarType.h>

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
// The operand dtype of the other kernels: int64 words for the bit-packed Boolean kernels,
// float64 values for the equality kernels (Undefined for floating kernels).
c10::ScalarType kernel_operand_type(KernelId id);
// Kernel-specific checks of the scalars against the operands' feature count d (packed
// kernels: D fits the words; equality kernels: the weighted flag); c10::ValueError naming
// 'scalars' otherwise. Called after the scalar count has been checked.
void check_kernel_scalars(KernelId id, const std::vector<double>& scalars, int64_t d, const char* op);

}  // namespace tp::engine
