#pragma once
// Memory for large results (dense and condensed outputs of the CPU consumers, numeric and
// edit-distance) and for the large per-call buffers written in full on every call (centred
// operands, packed panels).
#include <ATen/ATen.h>

namespace tp::engine {

// at::empty(sizes, options) for a CPU tensor, with one difference for tensors of at least
// 128 KiB: their memory comes from, and returns to, a small cache of freed result blocks
// instead of the OS. glibc maps a large block fresh on every allocation and unmaps it on
// free, and trims a smaller one off the top of its heap when a call frees several at once,
// so a call would fault in the pages of its result again; a reused block is already
// resident. The cache holds at most four blocks (a call's result, its two centred operands
// and a packed operand) and 256 MiB (TORCHPAIR_OUTPUT_CACHE_BYTES sets the byte limit, 0
// disables it).
// The tensor is an ordinary CPU tensor (resizable; its storage's allocator is the cache's).
at::Tensor empty_output(at::IntArrayRef sizes, const at::TensorOptions& options);

}  // namespace tp::engine
