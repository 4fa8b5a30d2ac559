// The condensed (pdist) consumer on the CPU, compiled per CPU capability.
//
// The triangle walk of sweep.h (TriangleWalk: only the column blocks reaching above the
// diagonal, row blocks in balanced order). Forward: each tile row's columns c > r are copied
// into the row's contiguous condensed segment. Backward: the shared backward sweep with
// dL/dK = grad on c > r and 0 elsewhere (its transposed pass walks the lower triangle).
#include "cpu/sweep.h"
// sweep.h (through sources.h) must come first: it opens the inline capability namespace.
#include "cpu/consumers.h"
#include "cpu/pdist.h"

#include <algorithm>

namespace tp::cpu {
inline namespace CPU_CAPABILITY {
namespace {

// Offset of row i's first entry (column i + 1) in the condensed vector of an n-row set.
inline int64_t row_start(int64_t i, int64_t n) { return i * n - i * (i + 1) / 2; }

template <typename T>
at::Tensor pdist_impl(const Request& req) {
  const int64_t B = req.x.size(0), n = req.x.size(1);
  const int64_t P = n * (n - 1) / 2;
  at::Tensor out = at::empty({B, P}, req.value_options());
  if (out.numel() == 0) return out;
  engine::advise_huge_pages(out.data_ptr(), out.nbytes());
  auto src = make_sources<T>(req, false);
  T* o = out.data_ptr<T>();
  const TriangleWalk walk;
  walk.rows(src, [&](int64_t b, const TileSource<T>& s, int64_t r0, int64_t nr) {
    const int64_t ld = s.col_block();
    T* tile = scratch<T>(0, s.row_block() * ld);
    T* ob = o + b * P;
    walk.cols(s, r0, nr, true, [&](int64_t c0, int64_t nc) {
      s.produce(r0, nr, c0, nc, tile, ld);
      for (int64_t r = 0; r < nr; ++r) {
        const int64_t i = r0 + r;
        const int64_t cb = std::max(c0, i + 1), ce = c0 + nc;
        if (cb >= ce) continue;
        std::copy(tile + r * ld + (cb - c0), tile + r * ld + (ce - c0), ob + row_start(i, n) + (cb - i - 1));
      }
    });
  });
  return out;
}

// dL/dK on a tile of the upper orientation (rows i, columns j): grad where j > i, else 0.
template <typename T>
void upper_gup(const T* gb, int64_t n, int64_t r0, int64_t nr, int64_t c0, int64_t nc, T* buf, int64_t ld) {
  for (int64_t r = 0; r < nr; ++r) {
    const int64_t i = r0 + r;
    T* row = buf + r * ld;
    const int64_t cb = std::clamp<int64_t>(i + 1 - c0, 0, nc);
    std::fill(row, row + cb, T(0));
    if (cb < nc) std::copy(gb + row_start(i, n) + (c0 + cb - i - 1), gb + row_start(i, n) + (c0 + nc - i - 1), row + cb);
  }
}

// ... of the transposed orientation (rows j from y, columns i from x): grad(i, j) where i < j.
template <typename T>
void lower_gup(const T* gb, int64_t n, int64_t r0, int64_t nr, int64_t c0, int64_t nc, T* buf, int64_t ld) {
  for (int64_t r = 0; r < nr; ++r) {
    const int64_t j = r0 + r;
    T* row = buf + r * ld;
    for (int64_t c = 0; c < nc; ++c) {
      const int64_t i = c0 + c;
      row[c] = i < j ? gb[row_start(i, n) + (j - i - 1)] : T(0);
    }
  }
}

// The shared backward sweep (sweep.h) over the triangle: dL/dK is the condensed gradient on
// c > r and 0 elsewhere.
template <typename T>
Grads4 pdist_backward_impl(const at::Tensor& grad_in, const Request& req, std::array<bool, 4> mask) {
  const at::Tensor grad = grad_in.contiguous();
  const T* gp = grad.data_ptr<T>();
  const int64_t B = req.x.size(0), n = req.x.size(1);
  const int64_t P = n * (n - 1) / 2;
  if (B == 0 || n < 2) return Grads4();
  return backward<T>(
      req, mask, 0, nullptr,
      [&](int64_t b, bool transposed, int64_t r0, int64_t nr, int64_t c0, int64_t nc, T* buf, int64_t ld) {
        if (transposed)
          lower_gup<T>(gp + b * P, n, r0, nr, c0, nc, buf, ld);
        else
          upper_gup<T>(gp + b * P, n, r0, nr, c0, nc, buf, ld);
      },
      NoExtra{}, TriangleWalk{});
}

}  // namespace
}  // namespace CPU_CAPABILITY

namespace TP_ISA_NAMESPACE {

at::Tensor pdist(const Request& req) {
  return AT_DISPATCH_FLOATING_TYPES(req.value_type, "torchpair_pdist", [&] { return pdist_impl<scalar_t>(req); });
}
Grads4 pdist_backward(const at::Tensor& grad, const Request& req, std::array<bool, 4> mask) {
  return AT_DISPATCH_FLOATING_TYPES(req.value_type, "torchpair_pdist_backward",
                                    [&] { return pdist_backward_impl<scalar_t>(grad, req, mask); });
}

}  // namespace TP_ISA_NAMESPACE
}  // namespace tp::cpu
