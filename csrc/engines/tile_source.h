#pragma once
// The tile producer interface every engine kernel implements, and every consumer uses.
//
// A TileSource is one [rows x cols] operator K (or K^T when transposed) over one batch element:
//   produce()  writes the values of a [nr x nc] block,
//   vjp()      accumulates, for a block and an upstream gradient dL/dK on it, the gradients
//              with respect to the row operand and/or the column operand (and their per-row
//              side features), recomputing the block's values once for both.
// A backward pass is a streamed sweep that recomputes tiles; nothing N x M is kept.
#include <cstdint>
#include <memory>
#include <vector>

#include "engines/kernel_id.h"

namespace tp::engine {

// Where a source reads its operands (one batch element), row-major and contiguous. The
// element type is the kernel's operand type: the tile value type T for floating kernels,
// something else for kernels over other data (bit-packed words, tokens) — each source
// casts to what it reads.
struct Operands {
  const void* x = nullptr;  // [n, d]
  const void* y = nullptr;  // [m, d]
  const void* a = nullptr;  // [n] side feature of x rows, or null
  const void* b = nullptr;  // [m] side feature of y rows, or null
  int64_t n = 0, m = 0, d = 0;
  int64_t batch = 1;  // batch elements of this geometry in the call (one source each)

  template <typename U>
  static const U* as(const void* p) { return static_cast<const U*>(p); }
};

struct SourceSpec {
  KernelId kernel;
  std::vector<double> scalars;
  bool symmetric = false;  // y is x: the diagonal holds exact self-comparisons
  bool transposed = false;    // rows come from y, columns from x (the operator K^T)
  bool selects = false;       // the consumer offers its tiles to select() first
};

// The consumer's side of a selection of each row's smallest values (TileSource::select).
// bars[r] (r relative to the block's first row) is the key a candidate of row r must fall
// below to enter the row's selection: the key of the candidate the consumer would now let a
// new one displace, or NaN while the row takes every candidate.
template <typename T>
struct Selection {
  const T* bars = nullptr;
  // Row r's values (and keys) of columns [c0, c0 + nc): the consumer ranks them by value.
  virtual void take(int64_t r, int64_t c0, int64_t nc, const T* values, const T* keys) = 0;

 protected:
  ~Selection() = default;
};

template <typename T>
class TileSource {
 public:
  virtual ~TileSource() = default;
  int64_t rows() const { return rows_; }
  int64_t cols() const { return cols_; }
  int64_t dim() const { return dim_; }
  // Column blocks handed to produce()/vjp() must start at a multiple of col_block()
  // and span at most col_block() columns.
  int64_t col_block() const { return col_block_; }
  int64_t row_block() const { return row_block_; }
  // produce() writes exactly columns [0, nc) of each row (so it may write into a larger
  // matrix in place); otherwise it may also write scratch values up to col_block().
  virtual bool writes_exact_columns() const { return false; }
  // A dense consumer's whole result as one product call, where that is the faster way and
  // keeps the result independent of the thread count (the call spreads over the threads
  // itself, with no per-tile setup). Returns false, writing nothing, where the tiles are
  // the way.
  virtual bool product_all(T* /*out*/, int64_t /*ldo*/) const { return false; }

  // out[r * ldo + c], r < nr, c < nc: K(r0 + r, c0 + c). Columns c in [nc, ldo) may be
  // overwritten with scratch values.
  virtual void produce(int64_t r0, int64_t nr, int64_t c0, int64_t nc, T* out, int64_t ldo) const = 0;

  // With g = gup[r * ldg + c] = dL/dK(r0 + r, c0 + c), accumulates (each output optional):
  //   drow[r * dim + k] += sum_c g * dK / d row(r0 + r)_k      rside[r] += sum_c g * dK / d side_r
  //   dcol[c * dim + k] += sum_r g * dK / d col(c0 + c)_k      cside[c] += sum_r g * dK / d side_c
  //   values[r * ldv + c] = K(r0 + r, c0 + c)
  virtual void vjp(int64_t r0, int64_t nr, int64_t c0, int64_t nc, const T* gup, int64_t ldg, T* drow, T* rside,
                   T* dcol, T* cside, T* values, int64_t ldv) const = 0;

  // A selection of the smallest values that skips what cannot enter it: for the block
  // [r0, r0 + nr) x [c0, c0 + nc), calls sel.take(r, ...) for row segments that may hold a
  // value below the row's bar, with every value a take() sees exact (as produce() writes it)
  // and keyed by a quantity the value never falls with (a candidate whose key is not below
  // bars[r] cannot rank before the bar). Segments it does not hand over hold no such value.
  // Returns false where the source has no cheaper way than produce() (the consumer then
  // produces the block and ranks it); scratch holds row_block() x col_block() values.
  virtual bool select(int64_t /*r0*/, int64_t /*nr*/, int64_t /*c0*/, int64_t /*nc*/, T* /*scratch*/,
                      int64_t /*ld*/, Selection<T>& /*sel*/) const {
    return false;
  }

 protected:
  int64_t rows_ = 0, cols_ = 0, dim_ = 0, col_block_ = 256, row_block_ = 64;
};

template <typename T>
using SourcePtr = std::unique_ptr<TileSource<T>>;

}  // namespace tp::engine
