#pragma once
// The tile producer interface every engine kernel implements, and every consumer uses.
//
// A TileSource is one [rows x cols] operator K (or K^T when flipped) over one batch element:
//   produce()  writes the values of a [nr x nc] block,
//   vjp_rows() accumulates, for a block and an upstream gradient dL/dK on it, the gradient
//              with respect to the *row* operand (and its per-row side feature).
// The gradient with respect to the column operand is vjp_rows() of the flipped source, so
// a backward pass is two streamed sweeps that recompute tiles; nothing N x M is kept.
#include <cstdint>
#include <memory>
#include <vector>

#include "engines/kernel_id.h"

namespace tp::engine {

// Where a source reads its operands; all row-major and contiguous in the last two dims.
template <typename T>
struct Operands {
  const T* x = nullptr;  // [n, d]
  const T* y = nullptr;  // [m, d]
  const T* a = nullptr;  // [n] side feature of x rows, or null
  const T* b = nullptr;  // [m] side feature of y rows, or null
  int64_t n = 0, m = 0, d = 0;
};

struct SourceSpec {
  KernelId kernel;
  std::vector<double> scalars;
  bool symmetric = false;  // y is x: the diagonal holds exact self-comparisons
  bool flipped = false;    // rows come from y, columns from x (the operator K^T)
};

template <typename T>
class TileSource {
 public:
  virtual ~TileSource() = default;
  int64_t rows() const { return rows_; }
  int64_t cols() const { return cols_; }
  int64_t dim() const { return dim_; }
  // Column blocks handed to produce()/vjp_rows() must start at a multiple of col_block()
  // and span at most col_block() columns.
  int64_t col_block() const { return col_block_; }
  int64_t row_block() const { return row_block_; }

  // out[r * ldo + c], r < nr, c < nc: K(r0 + r, c0 + c). Columns c in [nc, ldo) may be
  // overwritten with scratch values.
  virtual void produce(int64_t r0, int64_t nr, int64_t c0, int64_t nc, T* out, int64_t ldo) const = 0;

  // drow[r * dim + k] += sum_c gup[r * ldg + c] * dK(r0 + r, c0 + c) / d row(r0 + r)_k
  // dside[r]          += sum_c gup[r * ldg + c] * dK / d side(r0 + r)     (if dside != null)
  // values[r * ldv + c] = K(r0 + r, c0 + c)                              (if values != null)
  virtual void vjp_rows(int64_t r0, int64_t nr, int64_t c0, int64_t nc, const T* gup, int64_t ldg,
                        T* drow, T* dside, T* values, int64_t ldv) const = 0;

 protected:
  int64_t rows_ = 0, cols_ = 0, dim_ = 0, col_block_ = 256, row_block_ = 64;
};

template <typename T>
using SourcePtr = std::unique_ptr<TileSource<T>>;

}  // namespace tp::engine
