// Operators over token sequences (edit distances): schemas, validation and kernels.
//
//   _seq_dense(x, x_lengths, y, y_lengths, metric, scalars, normalized)        -> [B, N, M]
//   _seq_pdist(x, x_lengths, metric, scalars, normalized)                      -> [B, N(N-1)/2]
//   _seq_topk(x, x_lengths, y, y_lengths, metric, scalars, normalized, k, largest)
//                                                                              -> ([B, N, k], [B, N, k])
// x [B, N, Lx], y [B, M, Ly]: integer token ids (any integer dtype); lengths int64 [B, N]
// / [B, M] with 0 <= length <= L. scalars: the metric's catalog parameters in order
// (csrc/catalog/sequences.cpp, which checks them). Results are int64 (raw edit distances) or float64 (normalized distances, jaro,
// jaro_winkler), never differentiable. The CPU engines run for every device (other devices'
// tensors are copied to the CPU and the result copied back).
#include <ATen/ATen.h>
#include <ATen/core/enum_tag.h>
#include <torch/library.h>

#include <cmath>
#include <string>

#include "catalog/sequences.h"
#include "cpu/consumers.h"
#include "sequences/seq_engine.h"

namespace tp::seq {
namespace {

// The engines compiled for this machine's CPU capability (cpu/capability.h).
#define TP_SEQ_FORWARD(fn, ...) return TP_CPU_STUB(fn).get()(__VA_ARGS__)

at::Tensor dense_cpu(const at::Tensor& x, const at::Tensor& xl, const at::Tensor& y, const at::Tensor& yl,
                     const Params& p) {
  TP_SEQ_FORWARD(dense_cpu, x, xl, y, yl, p);
}
at::Tensor pdist_cpu(const at::Tensor& x, const at::Tensor& xl, const Params& p) { TP_SEQ_FORWARD(pdist_cpu, x, xl, p); }
std::tuple<at::Tensor, at::Tensor> topk_cpu(const at::Tensor& x, const at::Tensor& xl, const at::Tensor& y,
                                            const at::Tensor& yl, const Params& p, int64_t k, bool largest) {
  TP_SEQ_FORWARD(topk_cpu, x, xl, y, yl, p, k, largest);
}
#undef TP_SEQ_FORWARD

// Metric names, parameter checks and defaults: the catalog (csrc/catalog/sequences.cpp).
Params resolve(const char* op, c10::string_view metric, at::ArrayRef<double> scalars, bool normalized) {
  return tp::catalog::resolve_sequence(op, metric, scalars, normalized);
}

// Checks one side and returns its (int64, contiguous, CPU) tokens and lengths.
std::pair<at::Tensor, at::Tensor> operand(const char* op, const char* name, const char* len_name,
                                          const at::Tensor& t, const at::Tensor& len) {
  TORCH_CHECK_VALUE(t.layout() == at::kStrided, "torchpair.", op, ": '", name, "' must be a dense (strided) tensor");
  TORCH_CHECK_TYPE(at::isIntegralType(t.scalar_type(), /*includeBool=*/false), "torchpair.", op, ": '", name,
                   "' must hold integer token ids, got dtype ", t.scalar_type());
  TORCH_CHECK_VALUE(t.dim() == 3, "torchpair.", op, ": '", name, "' must have shape [batch, rows, length], got ",
                    t.sizes());
  TORCH_CHECK_TYPE(len.scalar_type() == at::kLong, "torchpair.", op, ": '", len_name,
                   "' must be an int64 tensor, got ", len.scalar_type());
  TORCH_CHECK_VALUE(len.dim() == 2 && len.size(0) == t.size(0) && len.size(1) == t.size(1), "torchpair.", op, ": '",
                    len_name, "' must have shape [", t.size(0), ", ", t.size(1), "] (batch, rows of '", name,
                    "'), got ", len.sizes());
  TORCH_CHECK_VALUE(len.device() == t.device(), "torchpair.", op, ": '", len_name, "' is on ", len.device(),
                    " but '", name, "' is on ", t.device());
  auto tc = t.to(at::kCPU).to(at::kLong).contiguous();
  auto lc = len.to(at::kCPU).contiguous();
  if (lc.numel() > 0) {
    const int64_t lo = lc.min().item<int64_t>(), hi = lc.max().item<int64_t>();
    TORCH_CHECK_VALUE(lo >= 0, "torchpair.", op, ": '", len_name, "' must be non-negative, got ", lo);
    TORCH_CHECK_VALUE(hi <= t.size(2), "torchpair.", op, ": '", len_name, "' has a length ", hi,
                      " longer than the sequences of '", name, "' (", t.size(2), " tokens)");
  }
  return {tc, lc};
}

void check_hamming(const char* op, const Params& p, const at::Tensor& xl, const at::Tensor& yl) {
  if (p.metric != Metric::hamming || p.pad) return;
  auto all = yl.defined() ? at::cat({xl.flatten(), yl.flatten()}) : xl.flatten();
  if (all.numel() == 0) return;
  TORCH_CHECK_VALUE(all.min().item<int64_t>() == all.max().item<int64_t>(), "torchpair.", op,
                    ": metric 'hamming' needs sequences of equal length (lengths from ", all.min().item<int64_t>(),
                    " to ", all.max().item<int64_t>(), "); pass pad=True to count the length difference");
}

at::Tensor seq_dense(const at::Tensor& x, const at::Tensor& x_lengths, const at::Tensor& y,
                     const at::Tensor& y_lengths, c10::string_view metric, at::ArrayRef<double> scalars,
                     bool normalized) {
  const char* op = "_seq_dense";
  const Params p = resolve(op, metric, scalars, normalized);
  auto [xc, xl] = operand(op, "x", "x_lengths", x, x_lengths);
  auto [yc, yl] = operand(op, "y", "y_lengths", y, y_lengths);
  TORCH_CHECK_VALUE(x.device() == y.device(), "torchpair.", op, ": 'x' is on ", x.device(), " but 'y' is on ",
                    y.device());
  TORCH_CHECK_VALUE(x.size(0) == y.size(0), "torchpair.", op, ": 'x' and 'y' must have the same batch size, got ",
                    x.size(0), " and ", y.size(0));
  check_hamming(op, p, xl, yl);
  return dense_cpu(xc, xl, yc, yl, p).to(x.device());
}

at::Tensor seq_pdist(const at::Tensor& x, const at::Tensor& x_lengths, c10::string_view metric,
                     at::ArrayRef<double> scalars, bool normalized) {
  const char* op = "_seq_pdist";
  const Params p = resolve(op, metric, scalars, normalized);
  auto [xc, xl] = operand(op, "x", "x_lengths", x, x_lengths);
  check_hamming(op, p, xl, at::Tensor());
  return pdist_cpu(xc, xl, p).to(x.device());
}

std::tuple<at::Tensor, at::Tensor> seq_topk(const at::Tensor& x, const at::Tensor& x_lengths, const at::Tensor& y,
                                            const at::Tensor& y_lengths, c10::string_view metric,
                                            at::ArrayRef<double> scalars, bool normalized, int64_t k, bool largest) {
  const char* op = "_seq_topk";
  const Params p = resolve(op, metric, scalars, normalized);
  auto [xc, xl] = operand(op, "x", "x_lengths", x, x_lengths);
  auto [yc, yl] = operand(op, "y", "y_lengths", y, y_lengths);
  TORCH_CHECK_VALUE(x.device() == y.device(), "torchpair.", op, ": 'x' is on ", x.device(), " but 'y' is on ",
                    y.device());
  TORCH_CHECK_VALUE(x.size(0) == y.size(0), "torchpair.", op, ": 'x' and 'y' must have the same batch size, got ",
                    x.size(0), " and ", y.size(0));
  TORCH_CHECK_VALUE(k >= 0 && k <= y.size(1), "torchpair.", op, ": 'k' must be in [0, ", y.size(1),
                    "] (the number of candidate sequences), got ", k);
  check_hamming(op, p, xl, yl);
  auto [v, i] = topk_cpu(xc, xl, yc, yl, p, k, largest);
  return {v.to(x.device()), i.to(x.device())};
}

void register_kernels(torch::Library& m) {
  m.impl("_seq_dense", &seq_dense);
  m.impl("_seq_pdist", &seq_pdist);
  m.impl("_seq_topk", &seq_topk);
}

}  // namespace
}  // namespace tp::seq

TORCH_LIBRARY_FRAGMENT(torchpair, m) {
  const std::vector<at::Tag> tags{at::Tag::pt2_compliant_tag};
  const std::string common = "str metric, float[] scalars, bool normalized";
  m.def(("_seq_dense(Tensor x, Tensor x_lengths, Tensor y, Tensor y_lengths, " + common + ") -> Tensor").c_str(), tags);
  m.def(("_seq_pdist(Tensor x, Tensor x_lengths, " + common + ") -> Tensor").c_str(), tags);
  m.def(("_seq_topk(Tensor x, Tensor x_lengths, Tensor y, Tensor y_lengths, " + common +
         ", int k, bool largest) -> (Tensor values, Tensor indices)")
            .c_str(),
        tags);
}

// The CPU engines serve every device (other devices' tensors are copied to the CPU), so
// one registration for all of them.
TORCH_LIBRARY_IMPL(torchpair, CompositeExplicitAutograd, m) { tp::seq::register_kernels(m); }
