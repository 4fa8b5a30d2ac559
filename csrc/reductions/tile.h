#pragma once
// The one seam between a reduction (csrc/reductions/*.h) and a walker (the CPU engine, the
// device-generic engine, a device kernel): the few statistics of a tile a fold needs.
//
// A reduction's state is written over the row value type V: one row's scalar (T) where a
// walker folds row by row (the CPU engine, a device thread), or a tensor of rows
// ([B, nr, 1], the device-generic engine). A walker hands a fold its tile as a `Tile`
// (the CPU engine: one tile row, a pointer and a length; the generic engine: the
// [B, nr, nc] tensor) and specialises TileOps<Tile> with the statistics shared by several
// reductions:
//   V        max(const Tile&)                NaN-propagating maximum over the columns (-inf if none)
//   V        sum(const Tile&)                sum over the columns
//   V        exp_sum(Tile&, const V& shift)  replaces the values by exp(value - shift), returns their sum
// and those of a single reduction, whose contract is written with that reduction's fold
// (reductions/<name>.h).
#include "metrics/math.h"

namespace tp::reductions {

template <class Tile>
struct TileOps;

}  // namespace tp::reductions
