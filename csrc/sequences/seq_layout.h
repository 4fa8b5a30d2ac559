#pragma once
// Shared pieces of the per-capability sequence engines (csrc/cpu/sequences_cpu.cpp):
//   Side        one operand's int64 tokens [B, rows, L] and lengths [B, rows]
//   TokenIds    equality-preserving narrow ids for the int64 tokens of both operands
//               (int32 always, int16 when they fit), built once per call
//   TaskQueue   dynamic work distribution over at::parallel_for's threads
//   any_set     whether any bit of a vector is set (an early exit of the SIMD loops)
// Included only by the per-capability translation unit.
#include <ATen/Parallel.h>
#include <ATen/cpu/vec/vec.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <limits>
#include <vector>

namespace tp::seq {
inline namespace CPU_CAPABILITY {

struct Side {
  const int64_t* tok;
  const int64_t* len;
  int64_t rows, L;
  const int64_t* row(int64_t b, int64_t i) const { return tok + (b * rows + i) * L; }
  int64_t length(int64_t b, int64_t i) const { return len[b * rows + i]; }
};

// Narrow ids of tokens: only equality matters to every sequence metric, so a token can be
// replaced by any id that keeps equal tokens equal and different ones different. When every
// valid token (inside its sequence's length) of both operands fits in int32 (tp.encode's
// vocabulary ids, characters, ...) the id is the token itself; otherwise its rank among the
// distinct valid tokens (sorted once, looked up by binary search). fits16: every id fits in
// int16 (narrow SIMD lanes may compare tokens).
class TokenIds {
 public:
  // each(f) calls f(token) for every token that will be looked up (it is called up to twice).
  template <class ForEach>
  void build(const ForEach& each) {
    int64_t lo = std::numeric_limits<int64_t>::max(), hi = std::numeric_limits<int64_t>::min();
    each([&](int64_t v) {
      lo = std::min(lo, v);
      hi = std::max(hi, v);
    });
    direct_ = lo >= std::numeric_limits<int32_t>::min() && hi <= std::numeric_limits<int32_t>::max();
    if (direct_) {
      fits16_ = lo > hi || (lo >= std::numeric_limits<int16_t>::min() && hi <= std::numeric_limits<int16_t>::max());
      return;
    }
    sorted_.clear();
    each([&](int64_t v) { sorted_.push_back(v); });
    std::sort(sorted_.begin(), sorted_.end());
    sorted_.erase(std::unique(sorted_.begin(), sorted_.end()), sorted_.end());
    fits16_ = int64_t(sorted_.size()) <= int64_t(std::numeric_limits<int16_t>::max()) + 1;
  }
  // The valid tokens (inside their sequence's length) of sides[0, count).
  void build(const Side* sides, int count, int64_t B) {
    build([&](auto&& f) {
      for (int s = 0; s < count; ++s)
        for (int64_t q = 0; q < B * sides[s].rows; ++q)
          for (int64_t t = 0; t < sides[s].len[q]; ++t) f(sides[s].tok[q * sides[s].L + t]);
    });
  }
  bool fits16() const { return fits16_; }
  // The id of a token given to build (any value for others: never compared).
  int32_t operator()(int64_t tok) const {
    if (direct_) return int32_t(tok);
    const auto it = std::lower_bound(sorted_.begin(), sorted_.end(), tok);
    return int32_t(it - sorted_.begin());
  }

 private:
  bool direct_ = true, fits16_ = true;
  std::vector<int64_t> sorted_;
};

// Whether any lane of v has a bit set.
template <typename Lane>
inline bool any_set(const at::vec::Vectorized<Lane>& v) {
#if defined(CPU_CAPABILITY_AVX512)
  const __m512i r = v;
  return _mm512_test_epi64_mask(r, r) != 0;
#elif defined(CPU_CAPABILITY_AVX2)
  const __m256i r = v;
  return !_mm256_testz_si256(r, r);
#else
  alignas(64) Lane buf[at::vec::Vectorized<Lane>::size()];
  v.store(buf);
  for (int l = 0; l < at::vec::Vectorized<Lane>::size(); ++l)
    if (buf[l]) return true;
  return false;
#endif
}

// Tasks [0, tasks) claimed in chunks from a shared counter by at::parallel_for's threads:
// a slower (or descheduled) thread does not hold up the others, and tasks of unequal cost
// (units of long and short patterns) balance. Usage:
//   TaskQueue q(tasks, chunk, max_workers);
//   at::parallel_for(0, q.workers(), 1, [&](int64_t, int64_t) {
//     per-thread state; int64_t t0, t1;
//     while (q.next(t0, t1)) for (int64_t t = t0; t < t1; ++t) ...;
//   });
// (Nested inside another parallel region, at::parallel_for runs inline: one worker drains.)
class TaskQueue {
 public:
  // max_workers: the most threads worth waking for the call (see workers_for).
  TaskQueue(int64_t tasks, int64_t chunk, int64_t max_workers)
      : tasks_(tasks), chunk_(std::max<int64_t>(chunk, 1)), max_workers_(std::max<int64_t>(max_workers, 1)) {}
  int64_t workers() const {
    return std::max<int64_t>(
        1, std::min<int64_t>({int64_t(at::get_num_threads()), max_workers_, (tasks_ + chunk_ - 1) / chunk_}));
  }
  bool next(int64_t& t0, int64_t& t1) {
    t0 = next_.fetch_add(chunk_, std::memory_order_relaxed);
    if (t0 >= tasks_) return false;
    t1 = std::min(tasks_, t0 + chunk_);
    return true;
  }

 private:
  int64_t tasks_, chunk_, max_workers_;
  std::atomic<int64_t> next_{0};
};

}  // namespace CPU_CAPABILITY
}  // namespace tp::seq
