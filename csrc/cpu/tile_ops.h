#pragma once
// The CPU engine's side of the reduction seam (reductions/tile.h): a fold sees one tile row
// at a time, and its statistics are vectorized loops over the row. Compiled per CPU
// capability with the consumers (include after cpu/sources.h).
#include <algorithm>
#include <limits>

#include "cpu/sources.h"
#include "reductions/tile.h"

namespace tp::cpu {
inline namespace CPU_CAPABILITY {

// One tile row: n values at p (a fold may overwrite them).
template <typename T>
struct Row {
  T* p;
  int64_t n;
};

}  // namespace CPU_CAPABILITY
}  // namespace tp::cpu

namespace tp::reductions {

template <typename T>
struct TileOps<cpu::Row<T>> {
  using V = at::vec::Vectorized<T>;
  static constexpr int64_t L = V::size();

  static T max(const cpu::Row<T>& row) {
    const V ninf(-std::numeric_limits<T>::infinity());
    V vmax = ninf;
    for (int64_t c = 0; c < row.n; c += L) {
      const int64_t count = std::min<int64_t>(L, row.n - c);
      const V t = V::loadu(row.p + c, count);
      vmax = at::vec::maximum(vmax, count == L ? t : V::blendv(ninf, t, cpu::lane_mask<T>(count)));
    }
    alignas(64) T lanes[V::size()];
    vmax.store(lanes);
    T m = -std::numeric_limits<T>::infinity();
    for (int64_t i = 0; i < L; ++i) m = math::maximum(m, lanes[i]);
    return m;
  }

  static T sum(const cpu::Row<T>& row) {
    V s(T(0));
    for (int64_t c = 0; c < row.n; c += L) s = s + V::loadu(row.p + c, std::min<int64_t>(L, row.n - c));
    return cpu::hsum(s);
  }

  // The full vectors by a compare and a popcount of the lane mask, the tail one by one.
  static int64_t count_le(const cpu::Row<T>& row, double threshold) {
    const T t = T(threshold);
    const V tv(t);
    int64_t n = 0, c = 0;
    for (; c + L <= row.n; c += L) {
      const int zero = (V::loadu(row.p + c) <= tv).zero_mask();  // bit i set: lane i failed
      n += L - __builtin_popcountll(static_cast<unsigned long long>(static_cast<unsigned>(zero)));
    }
    for (; c < row.n; ++c) n += row.p[c] <= t;
    return n;
  }

  static T exp_sum(cpu::Row<T>& row, T shift) {
    V s(T(0));
    const V sv(shift);
    for (int64_t c = 0; c < row.n; c += L) {
      const int64_t count = std::min<int64_t>(L, row.n - c);
      const V e = math::exp(V::loadu(row.p + c, count) - sv);
      e.store(row.p + c, count);
      s = s + (count == L ? e : V::blendv(V(T(0)), e, cpu::lane_mask<T>(count)));
    }
    return cpu::hsum(s);
  }
};

}  // namespace tp::reductions
