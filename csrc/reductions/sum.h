#pragma once
// The additive row reductions: the sum of a row's values, and the count of its values at or
// below a threshold (radius-neighbour counts). Their merge is an addition, so a chunked or
// distributed result is the sum of the partial ones.
#include <cstdint>
#include <type_traits>

#include "reductions/tile.h"

namespace tp::reductions {

template <class V>
struct Sum {
  using Result = V;
  V sum;
  template <class Args>
  static Sum start(const V& zero, const Args&) {
    return {zero};
  }
  template <class Tile>
  void fold(const Tile& tile) {
    sum = sum + TileOps<Tile>::sum(tile);
  }
  void merge(const Sum& other) { sum = sum + other.sum; }
  V finalize() const { return sum; }
};

// V: the row value type; the count is int64_t for a row, a Long tensor for a tensor of
// rows. No gradient: a count is piecewise constant. Its tile statistic (reductions/tile.h):
//   Result   count_le(const Tile&, double)   how many columns are <= a threshold (NaN never)
template <class V>
struct Count {
  using Result = std::conditional_t<std::is_arithmetic_v<V>, int64_t, V>;
  Result count;
  double threshold;
  // zero: a zero count of the result type; args.threshold: what counts.
  template <class Args>
  static Count start(const Result& zero, const Args& args) {
    return {zero, args.threshold};
  }
  template <class Tile>
  void fold(const Tile& tile) {
    count = count + TileOps<Tile>::count_le(tile, threshold);
  }
  void merge(const Count& other) { count = count + other.count; }
  Result finalize() const { return count; }
};

}  // namespace tp::reductions
