#include "engines/output_memory.h"

#include <ATen/EmptyTensor.h>
#include <ATen/ops/empty_native.h>
#include <c10/core/Allocator.h>
#include <c10/core/CPUAllocator.h>

#include <cstdlib>
#include <cstring>
#include <mutex>
#include <vector>

namespace tp::engine {
namespace {

// glibc maps a block this large or larger (its initial M_MMAP_THRESHOLD) fresh from the
// kernel, or, once its threshold has adapted, takes it from the heap top, which free() trims
// back to the kernel when the freed top exceeds twice the largest block seen (a call that
// frees its result and its centred operands at once): either way a repeated call of the
// same shape faults its pages in again (docs/performance.md, "Where the time goes").
constexpr size_t kMinBytes = size_t(128) << 10;
constexpr size_t kMaxBlocks = 4;
constexpr size_t kAlignment = 64;

size_t cache_limit() {
  static const size_t limit = [] {
    if (const char* env = std::getenv("TORCHPAIR_OUTPUT_CACHE_BYTES")) return size_t(std::strtoull(env, nullptr, 10));
    return size_t(256) << 20;
  }();
  return limit;
}

struct Block {
  void* ptr;
  size_t bytes;
};

// Never destroyed: tensors holding its blocks may outlive static destruction at exit.
class OutputCache final : public c10::Allocator {
 public:
  c10::DataPtr allocate(size_t n) override {
    Block* b = take(n);
    if (!b) {
      void* p = nullptr;
      if (posix_memalign(&p, kAlignment, std::max<size_t>(n, 1)) != 0 || !p)
        TORCH_CHECK(false, "torchpair: could not allocate ", n, " bytes for a result");
      b = new Block{p, n};
    }
    return {b->ptr, b, &OutputCache::release, c10::Device(c10::DeviceType::CPU)};
  }

  c10::DeleterFnPtr raw_deleter() const override { return nullptr; }

  void copy_data(void* dest, const void* src, std::size_t count) const override {
    default_copy_data(dest, src, count);
  }

  static OutputCache& get() {
    static OutputCache* cache = new OutputCache();
    return *cache;
  }

 private:
  // A cached block of at least n bytes and at most n + n/8 (so a much larger block is not
  // pinned by a small result), or null.
  Block* take(size_t n) {
    std::lock_guard<std::mutex> lock(mutex_);
    for (size_t i = 0; i < blocks_.size(); ++i) {
      Block* b = blocks_[i];
      if (b->bytes >= n && b->bytes - n <= n / 8) {
        blocks_.erase(blocks_.begin() + int64_t(i));
        cached_bytes_ -= b->bytes;
        return b;
      }
    }
    return nullptr;
  }

  static void release(void* ctx) {
    auto* b = static_cast<Block*>(ctx);
    OutputCache& c = get();
    {
      std::lock_guard<std::mutex> lock(c.mutex_);
      const size_t limit = cache_limit();
      if (b->bytes <= limit) {
        // Newest first; the oldest blocks leave to make room.
        while (!c.blocks_.empty() && (c.blocks_.size() >= kMaxBlocks || c.cached_bytes_ + b->bytes > limit)) {
          Block* old = c.blocks_.back();
          c.blocks_.pop_back();
          c.cached_bytes_ -= old->bytes;
          std::free(old->ptr);
          delete old;
        }
        c.blocks_.insert(c.blocks_.begin(), b);
        c.cached_bytes_ += b->bytes;
        return;
      }
    }
    std::free(b->ptr);
    delete b;
  }

  std::mutex mutex_;
  std::vector<Block*> blocks_;
  size_t cached_bytes_ = 0;
};

}  // namespace

at::Tensor empty_output(at::IntArrayRef sizes, const at::TensorOptions& options) {
  int64_t numel = 1;
  for (int64_t s : sizes) numel *= s;
  const size_t bytes = size_t(numel) * options.dtype().itemsize();
  if (!options.device().is_cpu()) return at::empty(sizes, options);
  // Callers hold resolved CPU operands (a CPU kernel, or a native path that already ruled out
  // wrapped tensors), so the allocation goes straight to ATen's CPU kernel: the dispatcher
  // round trip is a measurable part of a small call.
  if (bytes < kMinBytes || cache_limit() == 0)
    return at::native::empty_cpu(sizes, c10::typeMetaToScalarType(options.dtype()), options.layout(),
                                 options.device(), options.pinned_memory(), options.memory_format_opt());
  // A resizable storage (as at::empty's), so resize_ on a result works as on any tensor.
  return at::detail::empty_generic(sizes, &OutputCache::get(), c10::DispatchKeySet(c10::DispatchKey::CPU),
                                   c10::typeMetaToScalarType(options.dtype()), options.memory_format_opt());
}

}  // namespace tp::engine
