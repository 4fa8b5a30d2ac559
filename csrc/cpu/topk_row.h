#pragma once
// The k best candidates of one row, for the CPU walkers that select per row: the streamed
// top-k consumer (consumers_cpu.cpp: TopkRows hands it a tile row's candidates that beat the
// bar, in vectors) and the sequence engine's top-k (sequences_cpu.cpp, through offer()).
// The rule is reductions::TopkOrder: the value, then the lower column; NaN first or last.
// Values are floating point, or signed integers (the sequence engine's edit distances).
#include "reductions/topk.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

namespace tp::cpu {
inline namespace CPU_CAPABILITY {

using reductions::TopkOrder;

// The k best candidates of one row so far, and the bar a new one must beat (the worst kept
// one, once there are k). Up to kSortedMax, the kept candidates stay sorted, best first: an
// entrant is inserted in place (on average k/2 moves of a few cache lines) and the bar is
// always the k-th best, so as few candidates as possible enter. Past it, a buffer of up to
// 2k candidates is cut back to its k best whenever it fills: an entrant costs an append and
// a share of the next cut, where insertion would move k/2 candidates. The cuts and the final
// sort rank by buckets of the values' order, and compare only within a bucket: the
// candidates arrive in no order, so comparison-based selection (nth_element, sort)
// mispredicts about half its branches, and at k = 100 on rows of 1000 columns it was most of
// a kNN call (docs/performance.md, "k-nearest neighbours").
template <typename T>
struct TopkRow {
  static constexpr int64_t kSortedMax = 24;
  // A value's key: unsigned, in the rule's order (smaller = better) for every non-NaN value;
  // -0 and +0 share one key, as they compare equal.
  using Key = std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>;
  static_assert(std::is_floating_point_v<T> || (std::is_integral_v<T> && std::is_signed_v<T>));
  static constexpr int kBucketBits = 8;

  struct Candidate {
    T v;
    T key;  // the source's key where it selects (TileSource::select), else unused
    int64_t j;
  };
  Candidate* buf = nullptr;  // 2k slots
  // the buckets' scratch, shared by a row block's rows: 2k candidates and 2k keys
  Candidate* spare = nullptr;
  Key* keys = nullptr;
  int64_t size = 0, k = 0;
  bool barred = false;  // bar holds the k-th best so far (after the first cut)
  bool nan = false;     // a NaN was ever buffered
  Candidate bar{};

  // A candidate from a walker in scalar code: dropped at once when it cannot enter.
  void offer(const TopkOrder<T>& ord, T v, int64_t j) {
    if (!barred || ord.better(v, j, bar.v, bar.j)) push(ord, v, T(0), j);
  }
  // Every candidate of the row so far counted, none kept: the row can be reused.
  void clear() {
    size = 0;
    barred = nan = false;
  }
  void push(const TopkOrder<T>& ord, T v, T key, int64_t j) {
    nan = nan || math::is_nan(v);
    if (k <= kSortedMax) return insert(ord, Candidate{v, key, j});
    buf[size++] = Candidate{v, key, j};
    if (size == 2 * k) cut(ord);
  }
  // Keeps the k best; the k-th of them becomes the bar.
  void cut(const TopkOrder<T>& ord) {
    if (nan || !bucket_cut(ord))  // NaN has no key; a few equal values need the rule alone
      with_order(ord, [&](const auto& better) { std::nth_element(buf, buf + (k - 1), buf + size, better); });
    size = k;
    bar = buf[k - 1];
    barred = true;
  }
  // The kept candidates, best first.
  void finish(const TopkOrder<T>& ord) {
    if (k <= kSortedMax) return;  // kept sorted
    if (size > k) cut(ord);
    if (nan || !bucket_sort(ord)) with_order(ord, [&](const auto& better) { std::sort(buf, buf + size, better); });
  }

 private:
  static Key key_of(T v, bool largest) {
    constexpr Key sign = Key(1) << (8 * sizeof(Key) - 1);
    Key ordered;
    if constexpr (std::is_floating_point_v<T>) {
      Key bits;
      std::memcpy(&bits, &v, sizeof(bits));
      bits = bits == sign ? Key(0) : bits;  // -0 is +0
      ordered = (bits & sign) ? ~bits : (bits | sign);
    } else {
      ordered = Key(v) ^ sign;  // two's complement: flipping the sign bit orders as unsigned
    }
    return largest ? ~ordered : ordered;
  }
  // The buffer's candidates by buckets of their keys' range (no NaN in the buffer): keys[i]
  // is candidate i's key, bucket q holds the keys in [lo + q 2^shift, lo + (q + 1) 2^shift).
  struct Buckets {
    Key lo;
    int shift;
    int64_t count[1 << kBucketBits];
    int64_t of(Key u) const { return int64_t((u - lo) >> shift); }
  };
  void bucket(const TopkOrder<T>& ord, Buckets& bk) {
    Key lo = std::numeric_limits<Key>::max(), hi = 0;
    for (int64_t i = 0; i < size; ++i) {
      const Key u = key_of(buf[i].v, ord.largest);
      keys[i] = u;
      lo = std::min(lo, u);
      hi = std::max(hi, u);
    }
    bk.lo = lo;
    bk.shift = 0;
    while (((hi - lo) >> bk.shift) >= (Key(1) << kBucketBits)) ++bk.shift;
    std::fill(bk.count, bk.count + (1 << kBucketBits), int64_t(0));
    for (int64_t i = 0; i < size; ++i) ++bk.count[bk.of(keys[i])];
  }
  // The cut by buckets: the histogram finds the bucket the k-th best falls in; the
  // candidates of better buckets are kept as they are, and only that bucket's few are ranked
  // by the rule. Each candidate is written to both lists and only its list's count advances:
  // no branch depends on its value. False (nothing done) where one bucket holds most of the
  // buffer (values too close to spread, or equal): the caller ranks by the rule.
  bool bucket_cut(const TopkOrder<T>& ord) {
    Buckets bk;
    bucket(ord, bk);
    int64_t b = 0, before = 0;  // the k-th best is in bucket b, after `before` better ones
    for (; before + bk.count[b] < k; ++b) before += bk.count[b];
    if (bk.count[b] > 2 * k / 3) return false;
    int64_t kept = 0, tied = 0;
    Candidate* tie = spare;
    for (int64_t i = 0; i < size; ++i) {
      const int64_t q = bk.of(keys[i]);
      buf[kept] = buf[i];  // kept <= i: read before written
      tie[tied] = buf[i];
      kept += q < b;
      tied += q == b;
    }
    const int64_t need = k - before;  // of the bucket's `tied`, the best `need`
    with_order(ord, [&](const auto& better) { std::nth_element(tie, tie + (need - 1), tie + tied, better); });
    std::copy(tie, tie + need, buf + before);
    return true;
  }
  // The final sort by buckets (a counting sort of the keys' buckets, then the rule within
  // each bucket, which holds one or two candidates when the values spread). False where one
  // bucket holds most of the candidates: the caller sorts by the rule.
  bool bucket_sort(const TopkOrder<T>& ord) {
    Buckets bk;
    bucket(ord, bk);
    int64_t start[1 << kBucketBits];
    int64_t at = 0;
    for (int q = 0; q < (1 << kBucketBits); ++q) {
      if (bk.count[q] > size / 2 + 1) return false;
      start[q] = at;
      at += bk.count[q];
    }
    for (int64_t i = 0; i < size; ++i) spare[start[bk.of(keys[i])]++] = buf[i];
    with_order(ord, [&](const auto& better) {
      int64_t first = 0;  // bucket q is now [first, start[q])
      for (int q = 0; q < (1 << kBucketBits); first = start[q++])
        if (start[q] - first > 1) std::sort(spare + first, spare + start[q], better);
    });
    std::copy(spare, spare + size, buf);
    return true;
  }
  // Sorted insertion (k <= kSortedMax): c goes after every kept candidate it does not beat
  // (a tie goes after: its column is later); when k are kept, c replaces the worst, which it
  // must beat.
  void insert(const TopkOrder<T>& ord, const Candidate& c) {
    with_order(ord, [&](const auto& better) {
      int64_t i = size;
      if (size == k) {
        if (!better(c, buf[k - 1])) return;
        i = k - 1;
      } else {
        ++size;
      }
      for (; i > 0 && better(c, buf[i - 1]); --i) buf[i] = buf[i - 1];
      buf[i] = c;
    });
    if (size == k) {
      bar = buf[k - 1];
      barred = true;
    }
  }
  // f(better): the rule as a comparison of candidates; without NaN it reduces to the value,
  // then the column, which the selection runs several times faster.
  template <typename F>
  void with_order(const TopkOrder<T>& ord, const F& f) const {
    if (nan)
      return f([&](const Candidate& p, const Candidate& q) { return ord.better(p.v, p.j, q.v, q.j); });
    if (ord.largest)
      return f([](const Candidate& p, const Candidate& q) { return p.v > q.v || (p.v == q.v && p.j < q.j); });
    f([](const Candidate& p, const Candidate& q) { return p.v < q.v || (p.v == q.v && p.j < q.j); });
  }
};

// The selections of nr rows and their storage: 2k slots per row, and the buckets' scratch
// (2k candidates and keys, only past kSortedMax) that the rows share, as one row is cut at a
// time.
template <typename T>
struct TopkRowSet {
  std::vector<typename TopkRow<T>::Candidate> slots, spare;
  std::vector<typename TopkRow<T>::Key> keys;
  std::vector<TopkRow<T>> rows;

  TopkRowSet(int64_t nr, int64_t k)
      : slots(size_t(nr * 2 * k)),
        spare(size_t(k > TopkRow<T>::kSortedMax ? 2 * k : 0)),
        keys(spare.size()),
        rows(size_t(nr)) {
    for (int64_t r = 0; r < nr; ++r) {
      rows[r].buf = slots.data() + r * 2 * k;
      rows[r].spare = spare.data();
      rows[r].keys = keys.data();
      rows[r].k = k;
    }
  }
  TopkRow<T>& operator[](int64_t r) { return rows[size_t(r)]; }
};

}  // namespace CPU_CAPABILITY
}  // namespace tp::cpu
