// Preparation of the Boolean family: inputs of any bool/integer/floating dtype become
//   - bit-packed int64 words (64 features each) for the popcount engine (packed_* kernels),
//     or
//   - float64 values (and weights) for the equality engine (hamming / equal on non-Boolean
//     values, weighted hamming),
// once per call, with ATen ops (so compile/export trace them and every device runs them).
// Operands are detached: these comparisons are not differentiable and their results never
// carry a gradient (like torch.argmax).
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <ATen/TensorSubclassLikeUtils.h>
#include <c10/util/Exception.h>

#include <cstring>

#include "catalog/prepare.h"

namespace tp::catalog {
namespace {

// float32 values, float64 if an input is float64.
at::ScalarType value_type(const Inputs& in) {
  return (in.x.scalar_type() == at::kDouble || in.y.scalar_type() == at::kDouble) ? at::kDouble : at::kFloat;
}

Prepared packed(const Inputs& in, const std::string& kernel) {
  const int64_t D = feature_dim(in);
  Prepared p;
  p.symmetric = in.symmetric;
  p.x = pack_bits(in.x);
  p.y = in.symmetric ? p.x : pack_bits(in.y);
  p.kernel = "packed_" + kernel;
  p.scalars = {double(D)};
  p.dtype = value_type(in);
  return p;
}

bool is_integral(at::ScalarType t) { return at::isIntegralType(t, /*includeBool=*/true); }

// Values as float64, preserving equality: floating and <= 32-bit integer values convert
// exactly; 64-bit integers (which float64 cannot hold exactly) are replaced by their rank
// among all values of their column (the same rank for the same value), computed jointly
// over x and y by a sort.
void equality_values(const Inputs& in, at::Tensor& xv, at::Tensor& yv) {
  const at::Tensor x = in.x.detach(), y = in.y.detach();
  const auto tx = x.scalar_type(), ty = y.scalar_type();
  const bool wide = tx == at::kLong || ty == at::kLong || tx == at::kUInt64 || ty == at::kUInt64;
  if (!(wide && is_integral(tx) && is_integral(ty))) {
    xv = x.to(at::kDouble);
    yv = in.symmetric ? xv : y.to(at::kDouble);
    return;
  }
  const auto common = (tx == at::kUInt64 && ty == at::kUInt64) ? at::kUInt64 : at::kLong;
  const at::Tensor z = in.symmetric ? x.to(common) : at::cat({x.to(common), y.to(common)}, 1);
  const auto [sorted, order] = z.sort(1);
  const at::Tensor changes = sorted.slice(1, 1).ne(sorted.slice(1, 0, -1)).to(at::kLong);
  const at::Tensor ranks = at::cat({at::zeros_like(sorted.slice(1, 0, 1), at::kLong), changes.cumsum(1)}, 1);
  const at::Tensor codes = at::empty_like(ranks).scatter_(1, order, ranks).to(at::kDouble);
  if (in.symmetric) {
    xv = yv = codes;
  } else {
    xv = codes.slice_symint(1, 0, x.sym_size(1)).contiguous();
    yv = codes.slice_symint(1, x.sym_size(1)).contiguous();
  }
}

// Validated per-feature weights [D] as float64 (scipy: finite, non-negative).
at::Tensor weights(const Inputs& in, const at::Tensor& w, const std::string& metric, int64_t D) {
  TORCH_CHECK_VALUE(w.dim() == 1 && w.size(0) == D, "torchpair.", in.op, ": parameter 'w' of metric '", metric,
                    "' must have shape [", D, "] (one weight per feature), got ", w.sizes());
  TORCH_CHECK_TYPE(!w.is_complex() && w.scalar_type() != at::kBool, "torchpair.", in.op, ": parameter 'w' of metric '",
                   metric, "' must be a real tensor, got ", w.scalar_type());
  TORCH_CHECK_VALUE(w.device() == in.x.device(), "torchpair.", in.op, ": parameter 'w' is on ", w.device(),
                    " but 'x' is on ", in.x.device());
  const at::Tensor wd = w.detach().to(at::kDouble);
  // Value checks need the data: eager tensors only (a traced graph keeps them symbolic).
  if (!at::isTensorSubclassLike(wd) && !wd.is_meta()) {
    TORCH_CHECK_VALUE(wd.isfinite().all().item<bool>(), "torchpair.", in.op, ": parameter 'w' of metric '", metric,
                      "' must be finite");
    TORCH_CHECK_VALUE(wd.ge(0).all().item<bool>(), "torchpair.", in.op, ": parameter 'w' of metric '", metric,
                      "' must be >= 0 (scipy's weights)");
  }
  return wd;
}

Prepared equality(const Inputs& in, const std::string& kernel, const std::optional<at::Tensor>& w,
                  const std::string& metric) {
  const int64_t D = feature_dim(in);
  Prepared p;
  p.symmetric = in.symmetric;
  equality_values(in, p.x, p.y);
  p.kernel = "equality_" + kernel;
  p.scalars = {w.has_value() ? 1.0 : 0.0};
  p.dtype = value_type(in);
  if (w.has_value()) {
    // operands [values | weights]: the engine reads the weights from its rows
    const at::Tensor wd = weights(in, *w, metric, D);
    auto with_w = [&](const at::Tensor& v) {
      return at::cat({v, wd.expand_symint({v.sym_size(0), v.sym_size(1), D})}, -1);
    };
    p.x = with_w(p.x);
    p.y = in.symmetric ? p.x : with_w(p.y);
  }
  return p;
}

bool both_bool(const Inputs& in) { return in.x.scalar_type() == at::kBool && in.y.scalar_type() == at::kBool; }

}  // namespace

namespace {

// Eight 0/1 bytes (byte i least significant first) -> one byte with bit i = byte i: the
// multiply moves byte i's bit to bit 56 + i without carries (all partial products distinct).
inline uint64_t gather8(const uint8_t* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return (v * 0x0102040810204080ULL) >> 56;
}

inline uint64_t pack_word(const uint8_t* p) {
  uint64_t w = 0;
  for (int j = 0; j < 8; ++j) w |= gather8(p + 8 * j) << (8 * j);
  return w;
}

// The native CPU pack: one pass over the 0/1 bytes, parallel over rows.
at::Tensor pack_bits_cpu(const at::Tensor& x, int64_t D, int64_t W) {
  const at::Tensor bits = (x.scalar_type() == at::kBool ? x : x.ne(0)).contiguous();
  at::Tensor out = at::empty({x.size(0), x.size(1), W}, x.options().dtype(at::kLong));
  const int64_t rows = x.size(0) * x.size(1), full = D / 64;
  const uint8_t* src = reinterpret_cast<const uint8_t*>(bits.data_ptr<bool>());
  uint64_t* dst = reinterpret_cast<uint64_t*>(out.data_ptr<int64_t>());
  at::parallel_for(0, rows, std::max<int64_t>(1, 4096 / std::max<int64_t>(W, 1)), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const uint8_t* row = src + r * D;
      uint64_t* o = dst + r * W;
      for (int64_t w = 0; w < full; ++w) o[w] = pack_word(row + 64 * w);
      if (full < W) {  // the last, partial word: zero padded
        uint8_t tail[64] = {};
        std::memcpy(tail, row + 64 * full, size_t(D - 64 * full));
        o[full] = pack_word(tail);
      }
    }
  });
  return out;
}

}  // namespace

at::Tensor pack_bits(const at::Tensor& x) {
  const int64_t D = x.sym_size(-1).guard_int(__FILE__, __LINE__);
  const int64_t W = (D + 63) / 64;
  if (W == 0) return at::empty_symint({x.sym_size(0), x.sym_size(1), 0}, x.options().dtype(at::kLong));
  // Eager CPU tensors: the native pack (a traced graph, another device or a subclass takes
  // the ATen formulation below, which gives the same words).
  if (x.device().is_cpu() && x.layout() == at::kStrided && !at::isTensorSubclassLike(x) && !x.is_meta())
    return pack_bits_cpu(x.detach(), D, W);
  at::Tensor bits = x.detach().ne(0).to(at::kByte);
  if (W * 64 != D) bits = at::constant_pad_nd(bits, {0, W * 64 - D}, 0);
  // 8 features -> one byte (feature 8j + i is bit i of byte j), 8 bytes -> one word
  bits = bits.reshape_symint({x.sym_size(0), x.sym_size(1), W * 8, 8});
  const at::Tensor shifts = at::arange(8, bits.options());
  const at::Tensor bytes = at::sum(bits.bitwise_left_shift(shifts), {-1}, false, at::kByte);
  return bytes.view(at::kLong);
}

namespace {

Prepared prepare_dice(const Inputs& in, const ComparisonOptions&) { return packed(in, "dice"); }
Prepared prepare_jaccard(const Inputs& in, const ComparisonOptions&) { return packed(in, "jaccard"); }
Prepared prepare_tanimoto(const Inputs& in, const ComparisonOptions&) { return packed(in, "tanimoto"); }
Prepared prepare_kulczynski1(const Inputs& in, const ComparisonOptions&) { return packed(in, "kulczynski1"); }
Prepared prepare_rogerstanimoto(const Inputs& in, const ComparisonOptions&) { return packed(in, "rogerstanimoto"); }
Prepared prepare_russellrao(const Inputs& in, const ComparisonOptions&) { return packed(in, "russellrao"); }
// scipy's sokalmichener is rogerstanimoto's formula
Prepared prepare_sokalmichener(const Inputs& in, const ComparisonOptions&) { return packed(in, "rogerstanimoto"); }
Prepared prepare_sokalsneath(const Inputs& in, const ComparisonOptions&) { return packed(in, "sokalsneath"); }
Prepared prepare_yule(const Inputs& in, const ComparisonOptions&) { return packed(in, "yule"); }
// sklearn's matching: the fraction of differing positions of the Boolean patterns
Prepared prepare_matching(const Inputs& in, const ComparisonOptions&) { return packed(in, "hamming"); }

Prepared prepare_hamming(const Inputs& in, const ComparisonOptions& o) {
  if (both_bool(in) && !o.w.has_value()) return packed(in, "hamming");
  return equality(in, "hamming", o.w, "hamming");
}

Prepared prepare_equal(const Inputs& in, const ComparisonOptions&) {
  if (both_bool(in)) return packed(in, "equal");
  return equality(in, "equal", std::nullopt, "equal");
}

}  // namespace

// Not differentiable, any bool/integer/floating input.
std::vector<MetricInfo> boolean_rows() {
  const std::string bin = "bool, integer or floating (nonzero = True)";
  const std::string bout = "float32 (float64 if an input is float64)";
  const std::string values = "any bool, integer or floating dtype (values compared)";
  std::vector<MetricInfo> rows;
  auto boolean = [&](const char* name, const char* kind, const char* doc, PrepareFn fn,
                     std::vector<ParamInfo> params = {}, const std::string& input = "",
                     OutputDtype output = OutputDtype::kFloat32OrFloat64) {
    rows.push_back({name, {}, Family::kBoolean, kind, std::move(params), false, input.empty() ? bin : input,
                    output == OutputDtype::kBool ? "bool" : bout, doc, fn, output});
  };
  boolean("dice", "distance", "(TF + FT) / (2 TT + TF + FT)", &prepare_dice);
  boolean("jaccard", "distance", "(TF + FT) / (TT + TF + FT)", &prepare_jaccard);
  boolean("kulczynski1", "similarity", "TT / (TF + FT)", &prepare_kulczynski1);
  boolean("rogerstanimoto", "distance", "R / (TT + FF + R), R = 2 (TF + FT)", &prepare_rogerstanimoto);
  boolean("russellrao", "distance", "(D - TT) / D", &prepare_russellrao);
  boolean("sokalmichener", "distance", "R / (TT + FF + R), R = 2 (TF + FT)", &prepare_sokalmichener);
  boolean("sokalsneath", "distance", "R / (TT + R), R = 2 (TF + FT)", &prepare_sokalsneath);
  boolean("yule", "distance", "2 TF FT / (TT FF + TF FT)", &prepare_yule);
  boolean("tanimoto", "similarity", "TT / (TT + TF + FT) = 1 - jaccard", &prepare_tanimoto);
  boolean("matching", "distance", "(TF + FT) / D (sklearn's name for Boolean hamming)", &prepare_matching);
  const ParamInfo kWeights{"w", "tensor", "None (all 1)", "per-feature weights [D], finite and >= 0 (scipy's w)"};
  boolean("hamming", "distance", "sum_k w_k [x_k != y_k] / sum_k w_k (values compared; NaN != NaN)", &prepare_hamming,
          {kWeights}, values);
  boolean("equal", "similarity", "all_k x_k == y_k (rows identical)", &prepare_equal, {}, values, OutputDtype::kBool);
  return rows;
}

}  // namespace tp::catalog
