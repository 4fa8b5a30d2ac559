#pragma once
// Multi-pattern bit-parallel kernels: one SIMD lane (64 bits) per pattern of at most 64
// tokens, at::vec::Vectorized<int64_t>::size() patterns against one text at a time (4 with
// AVX2, 8 with AVX512). The same recurrences as seq_metrics.h (Hyyro 2003, bit-parallel LCS,
// Hyyro's OSA), evaluated lane-wise; the group's masks for a token are one vector load.
// Included only by the per-capability translation unit (csrc/cpu/sequences_cpu.cpp).
#include <ATen/cpu/vec/vec.h>

#include <functional>
#include <limits>
#include <type_traits>
#include <vector>

#include "sequences/seq_metrics.h"

namespace tp::seq {
inline namespace CPU_CAPABILITY {

using VecI = at::vec::Vectorized<int64_t>;

// The bit-parallel algorithms add and subtract bit vectors and rely on two's-complement
// wraparound. The AVX2/AVX-512 Vectorized operators are intrinsics and wrap; the DEFAULT
// (scalar) ones are signed C++ arithmetic, where overflow is undefined behaviour (UBSan
// reported it under `make sanitize`). There the lanes are added as unsigned integers.
#if defined(CPU_CAPABILITY_DEFAULT)
template <class V, class Op>
inline V unsigned_lanes(const V& a, const V& b, Op op) {
  using T = typename V::value_type;
  using U = std::make_unsigned_t<T>;
  __at_align__ T x[V::size()], y[V::size()];
  a.store(x);
  b.store(y);
  for (int i = 0; i < V::size(); ++i) x[i] = static_cast<T>(op(static_cast<U>(x[i]), static_cast<U>(y[i])));
  return V::loadu(x);
}
template <class V> inline V wrap_add(const V& a, const V& b) { return unsigned_lanes(a, b, std::plus<>()); }
template <class V> inline V wrap_sub(const V& a, const V& b) { return unsigned_lanes(a, b, std::minus<>()); }
#else
template <class V> inline V wrap_add(const V& a, const V& b) { return a + b; }
template <class V> inline V wrap_sub(const V& a, const V& b) { return a - b; }
#endif
constexpr int kLanes = VecI::size();

// Patterns of up to kMaxGroupWords * 64 tokens run in groups.
constexpr int64_t kMaxGroupWords = 8;

// For every token, the bit masks of its positions in each lane's pattern: words() blocks
// of kLanes int64 (word w of every lane), so word w of a token is one vector load.
class GroupMatch {
 public:
  // rows[l], lens[l] for l < lanes (<= kLanes, lengths <= kMaxGroupWords * 64).
  void build(const int64_t* const* rows, const int64_t* lens, int lanes) {
    clear();
    lanes_ = lanes;
    int64_t words = 1, total = 0;
    for (int l = 0; l < lanes; ++l) {
      rows_[l] = rows[l];
      lens_[l] = lens[l];
      words = std::max(words, words_for(lens[l]));
      total += lens[l];
    }
    words_ = words;
    stride_ = words * kLanes;
    if (int64_t(ascii_.size()) < 256 * stride_) ascii_.assign(256 * stride_, 0);
    if (int64_t(zeros_.size()) < stride_) zeros_.assign(stride_, 0);
    int64_t cap = 16;
    while (cap < 2 * total) cap <<= 1;
    cap_ = cap;
    shift_ = 64 - __builtin_ctzll(uint64_t(cap));
    if (int64_t(used_.size()) < cap) {
      used_.assign(cap, 0);
      keys_.assign(cap, 0);
    }
    if (int64_t(vals_.size()) < cap * stride_) vals_.assign(cap * stride_, 0);
    for (int l = 0; l < lanes; ++l)
      for (int64_t i = 0; i < lens[l]; ++i)
        slot_for_insert(rows[l][i])[(i >> 6) * kLanes + l] |= int64_t(uint64_t(1) << (i & 63));
  }
  int64_t words() const { return words_; }
  const int64_t* get(int64_t ch) const {
    if (uint64_t(ch) < 256) return &ascii_[ch * stride_];
    int64_t i = int64_t((uint64_t(ch) * 0x9E3779B97F4A7C15ull) >> shift_);
    while (used_[i]) {
      if (keys_[i] == ch) return &vals_[i * stride_];
      i = (i + 1) & (cap_ - 1);
    }
    return zeros_.data();
  }

 private:
  int64_t* slot_for_insert(int64_t ch) {
    if (uint64_t(ch) < 256) return &ascii_[ch * stride_];
    int64_t i = int64_t((uint64_t(ch) * 0x9E3779B97F4A7C15ull) >> shift_);
    while (used_[i]) {
      if (keys_[i] == ch) return &vals_[i * stride_];
      i = (i + 1) & (cap_ - 1);
    }
    used_[i] = 1;
    keys_[i] = ch;
    std::fill_n(&vals_[i * stride_], stride_, int64_t(0));
    return &vals_[i * stride_];
  }
  void clear() {
    for (int l = 0; l < lanes_; ++l)
      for (int64_t i = 0; i < lens_[l]; ++i)
        if (uint64_t(rows_[l][i]) < 256) std::fill_n(&ascii_[rows_[l][i] * stride_], stride_, int64_t(0));
    if (cap_) std::fill_n(used_.begin(), cap_, uint8_t(0));
    lanes_ = 0;
  }

  const int64_t* rows_[kLanes] = {};
  int64_t lens_[kLanes] = {};
  int lanes_ = 0;
  int64_t words_ = 1, stride_ = kLanes, cap_ = 0;
  int shift_ = 60;
  std::vector<int64_t> ascii_, vals_, zeros_, keys_;
  std::vector<uint8_t> used_;
};

// Per-group constants of the recurrences, computed once per group.
struct GroupInfo {
  int lanes = 0;
  int64_t words = 1;
  alignas(64) int64_t lens[kLanes] = {};
  alignas(64) int64_t last[kMaxGroupWords][kLanes] = {};  // the lane's last pattern bit, in its last word

  void set(const int64_t* m, int n_lanes, int64_t n_words) {
    lanes = n_lanes;
    words = n_words;
    for (int l = 0; l < kLanes; ++l) {
      lens[l] = l < n_lanes ? m[l] : 0;
      for (int64_t w = 0; w < kMaxGroupWords; ++w) last[w][l] = 0;
      if (l < n_lanes && m[l] > 0) last[(m[l] - 1) >> 6][l] = int64_t(uint64_t(1) << ((m[l] - 1) & 63));
    }
  }
};

// Which recurrence a group runs.
enum class GroupKernel { none, levenshtein, lcs, osa, jaro, damerau };

inline GroupKernel group_kernel(const Params& p) {
  switch (p.metric) {
    case Metric::levenshtein:
      if (p.ins == p.del && p.ins != 0) {
        if (p.ins == p.sub) return GroupKernel::levenshtein;
        if (p.sub >= p.ins + p.del) return GroupKernel::lcs;
      }
      return GroupKernel::none;
    case Metric::indel:
    case Metric::lcs:
      return GroupKernel::lcs;
    case Metric::osa:
      return GroupKernel::osa;
    case Metric::jaro:
    case Metric::jaro_winkler:
      return GroupKernel::jaro;
    case Metric::damerau_levenshtein:
      return GroupKernel::damerau;  // seq_damerau.h
    default:
      return GroupKernel::none;
  }
}

// Raw distances of the group's patterns against text t[0, n): out[l].
inline void group_distances(const Params& p, GroupKernel kind, const GroupMatch& gm, const GroupInfo& g,
                            const int64_t* t, int64_t n, int64_t* out) {
  alignas(64) int64_t buf[kMaxGroupWords][kLanes];
  const VecI zero(0), one(1), ones(-1);
  const int64_t words = g.words;
  if (kind == GroupKernel::levenshtein || kind == GroupKernel::osa) {
    VecI dist = VecI::loadu(g.lens);
    if (words == 1) {
      const VecI last = VecI::loadu(g.last[0]);
      VecI vp = ones, vn = zero;
      if (kind == GroupKernel::levenshtein) {
        for (int64_t j = 0; j < n; ++j) {
          const VecI pm = VecI::loadu(gm.get(t[j]));
          const VecI x = pm | vn;
          const VecI d0 = (wrap_add(x & vp, vp) ^ vp) | x;
          VecI hp = vn | ~(d0 | vp);
          VecI hn = vp & d0;
          dist = dist - ((hp & last) != zero) + ((hn & last) != zero);  // masks are -1
          hp = (hp << one) | one;
          hn = hn << one;
          vp = hn | ~(d0 | hp);
          vn = hp & d0;
        }
      } else {
        VecI d0 = zero, pm_old = zero;
        for (int64_t j = 0; j < n; ++j) {
          const VecI pm = VecI::loadu(gm.get(t[j]));
          const VecI tr = ((((~d0) & pm) << one) & pm_old);
          d0 = (wrap_add(pm & vp, vp) ^ vp) | pm | vn | tr;
          VecI hp = vn | ~(d0 | vp);
          VecI hn = d0 & vp;
          dist = dist - ((hp & last) != zero) + ((hn & last) != zero);
          hp = (hp << one) | one;
          hn = hn << one;
          vp = hn | ~(d0 | hp);
          vn = hp & d0;
          pm_old = pm;
        }
      }
    } else {
      // Blocked: word w of every lane in one vector; carries flow from word w to w + 1
      // (a lane's words past its last one compute values nobody reads).
      const VecI c63(63);
      VecI VP[kMaxGroupWords], VN[kMaxGroupWords], D0[kMaxGroupWords], PMo[kMaxGroupWords], LAST[kMaxGroupWords];
      for (int64_t w = 0; w < words; ++w) {
        VP[w] = ones;
        VN[w] = zero;
        D0[w] = zero;
        PMo[w] = zero;
        LAST[w] = VecI::loadu(g.last[w]);
      }
      const bool osa = kind == GroupKernel::osa;
      for (int64_t j = 0; j < n; ++j) {
        const int64_t* pmj = gm.get(t[j]);
        VecI hp_carry = one, hn_carry = zero, tr_carry = zero;
        for (int64_t w = 0; w < words; ++w) {
          const VecI pm = VecI::loadu(pmj + w * kLanes);
          const VecI vp = VP[w], vn = VN[w];
          VecI x = pm | hn_carry;
          VecI d0 = (wrap_add(x & vp, vp) ^ vp) | x | vn;
          if (osa) {
            const VecI base = (~D0[w]) & pm;
            d0 = d0 | (((base << one) | tr_carry) & PMo[w]);
            tr_carry = (base >> c63) & one;
            D0[w] = d0;
            PMo[w] = pm;
          }
          VecI hp = vn | ~(d0 | vp);
          VecI hn = d0 & vp;
          dist = dist - ((hp & LAST[w]) != zero) + ((hn & LAST[w]) != zero);
          const VecI hpc = (hp >> c63) & one, hnc = (hn >> c63) & one;
          hp = (hp << one) | hp_carry;
          hn = (hn << one) | hn_carry;
          hp_carry = hpc;
          hn_carry = hnc;
          VP[w] = hn | ~(d0 | hp);
          VN[w] = hp & d0;
        }
      }
    }
    dist.store(buf[0]);
    for (int l = 0; l < g.lanes; ++l) out[l] = g.lens[l] == 0 ? n : buf[0][l];
    if (p.metric == Metric::levenshtein)
      for (int l = 0; l < g.lanes; ++l) out[l] *= p.ins;
    return;
  }
  // LCS (bit-parallel; blocked: the addition's carry flows from word w to w + 1)
  if (words == 1) {
    VecI s = ones;
    for (int64_t j = 0; j < n; ++j) {
      const VecI u = s & VecI::loadu(gm.get(t[j]));
      s = wrap_add(s, u) | wrap_sub(s, u);
    }
    s.store(buf[0]);
  } else {
    const VecI sign(std::numeric_limits<int64_t>::min());
    VecI S[kMaxGroupWords];
    for (int64_t w = 0; w < words; ++w) S[w] = ones;
    for (int64_t j = 0; j < n; ++j) {
      const int64_t* pmj = gm.get(t[j]);
      VecI carry = zero;
      for (int64_t w = 0; w < words; ++w) {
        const VecI sw = S[w];
        const VecI u = sw & VecI::loadu(pmj + w * kLanes);
        const VecI x = wrap_add(sw, u);
        const VecI x2 = wrap_add(x, carry);
        // unsigned x < sw, x2 < x: signed compares with the sign bit flipped
        carry = (((x ^ sign) < (sw ^ sign)) | ((x2 ^ sign) < (x ^ sign))) & one;
        S[w] = x2 | wrap_sub(sw, u);
      }
    }
    for (int64_t w = 0; w < words; ++w) S[w].store(buf[w]);
  }
  for (int l = 0; l < g.lanes; ++l) {
    const int64_t m = g.lens[l];
    int64_t lcs = 0;
    for (int64_t w = 0; w * 64 < m; ++w) {
      uint64_t v = ~uint64_t(buf[w][l]);
      if (m - w * 64 < 64) v &= (uint64_t(1) << (m - w * 64)) - 1;
      lcs += popcount(v);
    }
    switch (p.metric) {
      case Metric::lcs:
        out[l] = std::max(m, n) - lcs;
        break;
      case Metric::indel:
        out[l] = m + n - 2 * lcs;
        break;
      default:  // levenshtein with sub >= ins + del, ins == del
        out[l] = (m + n - 2 * lcs) * p.ins;
    }
  }
}

// Jaro (or Jaro-Winkler) similarities of the group's patterns (lens[l] <= 64) and a text of
// n <= 64 tokens: the matching of jaro_similarity_bp, lane-wise; the window of text position
// j is kept as two masks shifted once per step.
inline void group_jaro(const Params& p, const GroupMatch& gm, const int64_t* const* s1, const int64_t* lens,
                       int lanes, const int64_t* t, int64_t n, double* sim) {
  alignas(64) int64_t bound[kLanes] = {}, hi0[kLanes] = {}, cs[kLanes];
  for (int l = 0; l < lanes; ++l) {
    const int64_t b = std::max<int64_t>(std::max(lens[l], n) / 2 - 1, 0);
    bound[l] = b;
    hi0[l] = b >= 63 ? -1 : int64_t((uint64_t(1) << (b + 1)) - 1);
  }
  const VecI zero(0), one(1);
  const VecI boundv = VecI::loadu(bound);
  VecI hi = VecI::loadu(hi0), lo = zero, f1 = zero, f2 = zero, common = zero;
  for (int64_t j = 0; j < n; ++j) {
    const VecI pm = VecI::loadu(gm.get(t[j]));
    const VecI cand = pm & hi & ~(lo | f1);
    const VecI nz = cand != zero;  // -1 where some position matches
    f1 = f1 | (cand & (zero - cand));
    f2 = f2 | (nz & VecI(int64_t(uint64_t(1) << j)));
    common = common - nz;
    hi = (hi << one) | one;
    lo = (lo << one) | (VecI(VecI(j) >= boundv) & one);
  }
  // Transpositions, lane-wise: the k-th flagged text position pairs with the k-th flagged
  // pattern position; walking the text again, a flagged position j takes the lowest pattern
  // flag left, and counts when the pattern token there differs from t[j] (its mask lacks
  // that bit).
  VecI a = f1, trans = zero;
  for (int64_t j = 0; j < n; ++j) {
    const VecI take = (f2 & VecI(int64_t(uint64_t(1) << j))) != zero;
    const VecI lowa = a & (zero - a) & take;
    trans = trans - (((VecI::loadu(gm.get(t[j])) & lowa) == zero) & take);
    a = a ^ lowa;
  }
  alignas(64) int64_t ts[kLanes];
  trans.store(ts);
  common.store(cs);
  for (int l = 0; l < lanes; ++l) {
    const int64_t m = lens[l];
    double s;
    if (m == 0 && n == 0) {
      s = 1.0;
    } else if (m == 0 || n == 0) {
      s = 0.0;
    } else if (m == 1 && n == 1) {
      s = s1[l][0] == t[0] ? 1.0 : 0.0;
    } else if (cs[l] == 0) {
      s = 0.0;
    } else {
      const double c = double(cs[l]);
      s = (c / double(m) + c / double(n) + (c - double(ts[l] / 2)) / c) / 3.0;
    }
    if (p.metric == Metric::jaro_winkler) s = jaro_winkler_from(s, s1[l], m, t, n, p.prefix_weight);
    sim[l] = s;
  }
}

// ---- Narrow lanes: patterns of at most 16 (int16) or 32 (int32) tokens -----------------
// Two (four) times the patterns per vector for short sequences; single-word recurrences.
constexpr int kMaxLanes = at::vec::Vectorized<int16_t>::size();

template <typename Lane>
class NarrowGroup {
 public:
  using Vec = at::vec::Vectorized<Lane>;
  static constexpr int lanes_max = Vec::size();
  static constexpr int64_t bits = 8 * sizeof(Lane);

  void build(const int64_t* const* rows, const int64_t* lens, int lanes) {
    clear();
    lanes_ = lanes;
    int64_t total = 0;
    for (int l = 0; l < lanes_max; ++l) {
      rows_[l] = l < lanes ? rows[l] : nullptr;
      lens_[l] = l < lanes ? lens[l] : 0;
      last_[l] = (l < lanes && lens[l] > 0) ? Lane(uint64_t(1) << (lens[l] - 1)) : Lane(0);
      lenv_[l] = Lane(lens_[l]);
      mask_[l] = Lane((uint64_t(1) << lens_[l]) - 1);  // lens <= bits
      total += lens_[l];
    }
    if (ascii_.empty()) ascii_.assign(256 * lanes_max, 0);
    if (zeros_.empty()) zeros_.assign(lanes_max, 0);
    int64_t cap = 16;
    while (cap < 2 * total) cap <<= 1;
    cap_ = cap;
    shift_ = 64 - __builtin_ctzll(uint64_t(cap));
    if (int64_t(used_.size()) < cap) {
      used_.assign(cap, 0);
      keys_.assign(cap, 0);
      vals_.assign(cap * lanes_max, 0);
    }
    for (int l = 0; l < lanes; ++l)
      for (int64_t i = 0; i < lens[l]; ++i) slot_for_insert(rows[l][i])[l] |= Lane(uint64_t(1) << i);
  }
  const Lane* get(int64_t ch) const {
    if (uint64_t(ch) < 256) return &ascii_[ch * lanes_max];
    int64_t i = int64_t((uint64_t(ch) * 0x9E3779B97F4A7C15ull) >> shift_);
    while (used_[i]) {
      if (keys_[i] == ch) return &vals_[i * lanes_max];
      i = (i + 1) & (cap_ - 1);
    }
    return zeros_.data();
  }

  // Raw distances against the text t[0, n) (n < 2^(bits-1) - bits for the counters).
  void distances(const Params& p, GroupKernel kind, const int64_t* t, int64_t n, int64_t* out) const {
    alignas(64) Lane buf[lanes_max];
    const Vec zero(0), one(1), ones(Lane(-1));
    if (kind == GroupKernel::lcs) {
      Vec s = ones;
      for (int64_t j = 0; j < n; ++j) {
        const Vec u = s & Vec::loadu(get(t[j]));
        s = wrap_add(s, u) | wrap_sub(s, u);
      }
      // the LCS lengths: the pattern bits left clear, counted lane-wise (SWAR popcount)
      popcount_lanes(~s & Vec::loadu(mask_)).store(buf);
      switch (p.metric) {
        case Metric::lcs:
          for (int l = 0; l < lanes_; ++l) out[l] = std::max(lens_[l], n) - buf[l];
          break;
        case Metric::indel:
          for (int l = 0; l < lanes_; ++l) out[l] = lens_[l] + n - 2 * int64_t(buf[l]);
          break;
        default:
          for (int l = 0; l < lanes_; ++l) out[l] = (lens_[l] + n - 2 * int64_t(buf[l])) * p.ins;
      }
      return;
    }
    const Vec last = Vec::loadu(last_);
    Vec vp = ones, vn = zero, dist = Vec::loadu(lenv_);
    if (kind == GroupKernel::levenshtein) {
      for (int64_t j = 0; j < n; ++j) {
        const Vec pm = Vec::loadu(get(t[j]));
        const Vec x = pm | vn;
        const Vec d0 = (wrap_add(x & vp, vp) ^ vp) | x;
        Vec hp = vn | ~(d0 | vp);
        Vec hn = vp & d0;
        dist = dist - ((hp & last) != zero) + ((hn & last) != zero);
        hp = (hp << one) | one;
        hn = hn << one;
        vp = hn | ~(d0 | hp);
        vn = hp & d0;
      }
    } else {
      Vec d0 = zero, pm_old = zero;
      for (int64_t j = 0; j < n; ++j) {
        const Vec pm = Vec::loadu(get(t[j]));
        const Vec tr = ((((~d0) & pm) << one) & pm_old);
        d0 = (wrap_add(pm & vp, vp) ^ vp) | pm | vn | tr;
        Vec hp = vn | ~(d0 | vp);
        Vec hn = d0 & vp;
        dist = dist - ((hp & last) != zero) + ((hn & last) != zero);
        hp = (hp << one) | one;
        hn = hn << one;
        vp = hn | ~(d0 | hp);
        vn = hp & d0;
        pm_old = pm;
      }
    }
    dist.store(buf);
    for (int l = 0; l < lanes_; ++l) out[l] = lens_[l] == 0 ? n : int64_t(buf[l]);
    if (p.metric == Metric::levenshtein)
      for (int l = 0; l < lanes_; ++l) out[l] *= p.ins;
  }

 private:
  // Set bits of every lane (SWAR: pairs, nibbles, bytes, then the lane's bytes summed).
  static Vec popcount_lanes(Vec x) {
    const Vec m1(Lane(0x5555555555555555ull)), m2(Lane(0x3333333333333333ull)), m4(Lane(0x0f0f0f0f0f0f0f0full));
    x = x - ((x >> Vec(1)) & m1);
    x = (x & m2) + ((x >> Vec(2)) & m2);
    x = (x + (x >> Vec(4))) & m4;
    x = x + (x >> Vec(8));
    if constexpr (sizeof(Lane) >= 4) x = x + (x >> Vec(16));
    return x & Vec(Lane(0x7f));
  }
  Lane* slot_for_insert(int64_t ch) {
    if (uint64_t(ch) < 256) return &ascii_[ch * lanes_max];
    int64_t i = int64_t((uint64_t(ch) * 0x9E3779B97F4A7C15ull) >> shift_);
    while (used_[i]) {
      if (keys_[i] == ch) return &vals_[i * lanes_max];
      i = (i + 1) & (cap_ - 1);
    }
    used_[i] = 1;
    keys_[i] = ch;
    std::fill_n(&vals_[i * lanes_max], lanes_max, Lane(0));
    return &vals_[i * lanes_max];
  }
  void clear() {
    for (int l = 0; l < lanes_; ++l)
      for (int64_t i = 0; i < lens_[l]; ++i)
        if (uint64_t(rows_[l][i]) < 256) std::fill_n(&ascii_[rows_[l][i] * lanes_max], lanes_max, Lane(0));
    if (cap_) std::fill_n(used_.begin(), cap_, uint8_t(0));
    lanes_ = 0;
  }

  const int64_t* rows_[lanes_max] = {};
  int64_t lens_[lanes_max] = {};
  alignas(64) Lane last_[lanes_max] = {};
  alignas(64) Lane lenv_[lanes_max] = {};
  alignas(64) Lane mask_[lanes_max] = {};  // the pattern's bits
  int lanes_ = 0;
  int64_t cap_ = 0;
  int shift_ = 60;
  std::vector<Lane> ascii_, vals_, zeros_;
  std::vector<int64_t> keys_;
  std::vector<uint8_t> used_;
};

}  // namespace CPU_CAPABILITY
}  // namespace tp::seq
