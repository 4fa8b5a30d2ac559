#pragma once
// The additive row reductions: the sum of a row's values, and the count of its values at or
// below a threshold (radius-neighbour counts). Their merge is an addition, so a chunked or
// distributed result is the sum of the partial ones.
#include "reductions/tile.h"

namespace tp::reductions {

template <class V>
struct Sum {
  V sum;
  static Sum empty(const V& like) { return {math::full_like(like, 0.0)}; }
  template <class Tile>
  void fold(const Tile& tile) {
    sum = sum + TileOps<Tile>::sum(tile);
  }
  void merge(const Sum& other) { sum = sum + other.sum; }
  V finalize() const { return sum; }
};

// C: the count type (int64_t for a row, a Long tensor of rows). No gradient: a count is
// piecewise constant.
template <class C>
struct Count {
  C count;
  double threshold;
  template <class Tile>
  void fold(const Tile& tile) {
    count = count + TileOps<Tile>::count_le(tile, threshold);
  }
  void merge(const Count& other) { count = count + other.count; }
  C finalize() const { return count; }
};

}  // namespace tp::reductions
