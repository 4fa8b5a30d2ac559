#pragma once
// The parameters of the token-sequence metrics (tp.seq), resolved and checked in one place:
// the catalog rows of csrc/catalog/sequences.cpp say which parameters a metric takes, their
// defaults and their order in the operators' scalar list; resolve_sequence checks the values.
#include <ATen/core/ATen_fwd.h>
#include <c10/util/ArrayRef.h>
#include <c10/util/string_view.h>

#include "sequences/seq_params.h"

namespace tp::catalog {

// The operators' `scalars` (the metric's catalog parameters in order; levenshtein's weights
// are three scalars, hamming's pad is 0/1) and `normalized` -> the engine's parameters.
// Unknown metrics, a wrong scalar count and out-of-range values raise c10::ValueError
// naming `op`.
seq::Params resolve_sequence(const char* op, c10::string_view metric, at::ArrayRef<double> scalars, bool normalized);

}  // namespace tp::catalog
