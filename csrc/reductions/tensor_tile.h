#pragma once
// Tensor tiles (host only): the device-generic engine folds a [B, nr, nc] tile of a row
// chunk at once, and merges of partial results fold [..., n] partials; the statistics are
// taken over the last dimension and kept as [..., 1].
#include <ATen/ATen.h>

#include "reductions/tile.h"

namespace tp::reductions {

template <>
struct TileOps<at::Tensor> {
  static at::Tensor max(const at::Tensor& t) { return t.amax(-1, /*keepdim=*/true); }
  static at::Tensor sum(const at::Tensor& t) { return t.sum(-1, /*keepdim=*/true); }
  static at::Tensor count_le(const at::Tensor& t, double threshold) { return t.le(threshold).sum(-1, true); }
  static at::Tensor exp_sum(at::Tensor& t, const at::Tensor& shift) {
    t = at::exp(t - shift);
    return t.sum(-1, /*keepdim=*/true);
  }
};

}  // namespace tp::reductions
