#pragma once
// Online logsumexp, the state of the logsumexp row reduction (weighted or not) and of the
// softmax-weighted product: a running maximum and the sum of exp(K - shift) under it.
// Written once over the row value type V (see tile.h): the CPU engine, the device-generic
// engine and the distributed merge all fold, merge and finalize through this definition.
#include "reductions/tile.h"

namespace tp::reductions {

template <class V>
struct LogSumExp {
  using Result = V;
  V max;  // running maximum: -inf while empty; NaN propagates
  V sum;  // sum of exp(K - shift()) over what was folded

  static LogSumExp empty(const V& like) {
    return {math::full_like(like, -math::infinity()), math::full_like(like, 0.0)};
  }
  // As a row reduction: its scale and weight are applied to the values the walk folds.
  template <class Args>
  static LogSumExp start(const V& zero, const Args&) {
    return empty(zero);
  }

  // exp's shift: the running maximum, 0 while it is not finite (as torch.logsumexp; a +inf
  // or NaN maximum then gives inf or NaN through the sum). The result does not depend on
  // it, so it is a constant for autograd (tensor merges are differentiated by autograd).
  static V shift_of(const V& max) {
    const V m = math::constant(max);
    return math::select(math::equal(m - m, math::full_like(m, 0.0)), m, math::full_like(m, 0.0));
  }
  V shift() const { return shift_of(max); }

  // Takes in a new maximum before a tile is folded; returns the factor earlier sums (and any
  // accumulator that scales with them) were multiplied by. An empty state's factor is 0, not
  // exp(0 - shift): that overflows to inf for a first tile below exp's range (about -709 in
  // double, -88 in float), and 0 * inf is NaN.
  V raise(const V& tile_max) {
    const V old_shift = shift();
    const auto was_empty = math::equal(max, math::full_like(max, -math::infinity()));
    max = math::maximum(max, tile_max);
    const V factor = math::select(was_empty, math::full_like(max, 0.0), math::exp(old_shift - shift()));
    sum = sum * factor;
    return factor;
  }

  // Folds a tile; its values become exp(value - shift) (the softmax product reuses them).
  // Returns the rescaling factor of raise().
  template <class Tile>
  V fold(Tile& tile) {
    const V factor = raise(TileOps<Tile>::max(tile));
    sum = sum + TileOps<Tile>::exp_sum(tile, shift());
    return factor;
  }

  // Combines a state of other columns (another chunk, another rank) into this one.
  void merge(const LogSumExp& other) {
    LogSumExp o = other;
    raise(o.max);
    o.raise(max);
    sum = sum + o.sum;
  }

  V finalize() const { return math::log(sum) + shift(); }
};

// The softmax weight of an entry with logsumexp argument `arg` in a row whose logsumexp is
// `lse`: exp(arg - lse), and 0 on rows that are empty (lse = -inf). Every logsumexp and
// softmax gradient is built from it.
template <class V>
TP_HOST_DEVICE inline V softmax_weight(const V& arg, const V& lse) {
  return math::select(math::equal(lse, math::full_like(lse, -math::infinity())), math::full_like(lse, 0.0),
                      math::exp(arg - lse));
}

}  // namespace tp::reductions
