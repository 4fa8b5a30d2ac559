#pragma once
// Top-k selection (min / max / argmin / argmax are k = 1): which candidate ranks first.
// The rule, written once: smaller (largest = false) or larger values first; equal values go
// to the lower column; NaN ranks first when nan_first (torch.min/max propagate it,
// torch.topk with largest=True puts it first), last otherwise (torch.topk, largest=False).
//   - TopkOrder::better: the rule on two candidates, for walkers that select per row
//     (the CPU engine; a device thread).
//   - merge_topk: the rule on candidate lists of tensors, for walkers that merge chunk
//     results (the device-generic engine) and for the distributed merge of per-rank lists.
#include "reductions/tile.h"

#include <cstdint>

#if !defined(TP_SCALAR_MATH_ONLY)
#include <ATen/ATen.h>
#include <tuple>
#endif

namespace tp::reductions {

template <typename T>
struct TopkOrder {
  bool largest, nan_first;
  TP_HOST_DEVICE bool better(T a, int64_t ia, T b, int64_t ib) const {
    const bool an = math::is_nan(a), bn = math::is_nan(b);
    if (an || bn) {
      if (an && bn) return ia < ib;
      return an ? nan_first : !nan_first;
    }
    if (a != b) return largest ? a > b : a < b;
    return ia < ib;
  }
};

#if !defined(TP_SCALAR_MATH_ONLY)
// The k best of candidate lists values/indices [..., n] (k <= n), best first, under the rule
// above. The candidates may come in any order: ties are settled by index. Differentiable
// in values (a gather).
inline std::tuple<at::Tensor, at::Tensor> merge_topk(const at::Tensor& values, const at::Tensor& indices, int64_t k,
                                                     bool largest, bool nan_first) {
  // stable sorts, last key first: index, then value, then the NaN class
  at::Tensor pos = std::get<1>(at::sort(indices, /*stable=*/true, -1, /*descending=*/false));
  at::Tensor v = values.detach().gather(-1, pos);
  at::Tensor order = std::get<1>(at::sort(v, /*stable=*/true, -1, /*descending=*/largest));
  pos = pos.gather(-1, order);
  v = v.gather(-1, order);
  const at::Tensor nan_key = nan_first ? at::isnan(v).logical_not() : at::isnan(v);
  order = std::get<1>(at::sort(nan_key.to(at::kByte), /*stable=*/true, -1, /*descending=*/false));
  pos = pos.gather(-1, order).narrow(-1, 0, k);
  return {values.gather(-1, pos), indices.gather(-1, pos)};
}
#endif

}  // namespace tp::reductions
