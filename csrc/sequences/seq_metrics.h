#pragma once
// Edit distances between token sequences (rapidfuzz semantics), one definition per metric.
//
// A pair is (s1, s2): s1 is the "pattern" (a row of x), s2 the "text" (a row of y). The
// bit-parallel metrics preprocess the pattern once (PatternMatch: for every token the
// bit mask of its positions, in ceil(len1 / 64) 64-bit words) and then walk the text once
// per pair: O(ceil(len1 / 64) * len2) word operations.
//   levenshtein (unit weights)  Hyyro 2003 (Myers 1999), blocked beyond 64 tokens
//   indel / lcs                 bit-parallel LCS (Allison-Dix / Hyyro), blocked
//   osa                         Hyyro 2003 with transpositions, blocked
//   jaro / jaro_winkler         bit-parallel matching of the search window, blocked
//   damerau_levenshtein         Lowrance-Wagner dynamic programme, O(len1 * len2)
//   levenshtein (other weights) Wagner-Fischer dynamic programme, O(len1 * len2)
//   hamming / prefix / postfix  one linear scan
// Every index is int64_t; tokens are int64_t (any integer dtype is widened first).
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "sequences/seq_params.h"

// Compiled per CPU capability (csrc/cpu/sequences_cpu.cpp): every copy in its own inline
// namespace, so the AVX512 and DEFAULT copies never mix.
namespace tp::seq {
inline namespace CPU_CAPABILITY {

inline int64_t words_for(int64_t len) { return (len + 63) / 64; }

// For every token of a pattern, the bit mask of its positions. Tokens in [0, 256) are
// looked up in a direct table, others in an open-addressing hash table (linear probing).
class PatternMatch {
 public:
  void build(const int64_t* s, int64_t len) {
    clear();
    s_ = s;
    len_ = len;
    words_ = words_for(len);
    if (int64_t(ascii_.size()) < 256 * words_) ascii_.assign(256 * words_, 0);
    if (int64_t(zeros_.size()) < words_) zeros_.assign(words_, 0);
    int64_t cap = 16;
    while (cap < 2 * len) cap <<= 1;
    cap_ = cap;
    shift_ = 64 - __builtin_ctzll(uint64_t(cap));
    if (int64_t(used_.size()) < cap) {
      used_.assign(cap, 0);
      keys_.assign(cap, 0);
    }
    if (int64_t(vals_.size()) < cap * words_) vals_.assign(cap * words_, 0);
    for (int64_t i = 0; i < len; ++i) {
      const int64_t ch = s[i];
      uint64_t* row = slot_for_insert(ch);
      row[i >> 6] |= uint64_t(1) << (i & 63);
    }
  }
  int64_t words() const { return words_; }
  int64_t size() const { return len_; }
  const int64_t* data() const { return s_; }

  // The masks of token ch: words() words (zeros when ch does not occur).
  const uint64_t* get(int64_t ch) const {
    if (uint64_t(ch) < 256) return &ascii_[ch * words_];
    int64_t i = hash(ch);
    while (used_[i]) {
      if (keys_[i] == ch) return &vals_[i * words_];
      i = (i + 1) & (cap_ - 1);
    }
    return zeros_.data();
  }
  uint64_t get1(int64_t ch) const { return get(ch)[0]; }

 private:
  int64_t hash(int64_t ch) const { return int64_t((uint64_t(ch) * 0x9E3779B97F4A7C15ull) >> shift_); }
  uint64_t* slot_for_insert(int64_t ch) {
    if (uint64_t(ch) < 256) return &ascii_[ch * words_];
    int64_t i = hash(ch);
    while (used_[i]) {
      if (keys_[i] == ch) return &vals_[i * words_];
      i = (i + 1) & (cap_ - 1);
    }
    used_[i] = 1;
    keys_[i] = ch;
    std::fill_n(&vals_[i * words_], words_, uint64_t(0));
    return &vals_[i * words_];
  }
  void clear() {
    for (int64_t i = 0; i < len_; ++i)
      if (uint64_t(s_[i]) < 256) std::fill_n(&ascii_[s_[i] * words_], words_, uint64_t(0));
    std::fill_n(used_.begin(), std::min<int64_t>(cap_, int64_t(used_.size())), uint8_t(0));
  }

  const int64_t* s_ = nullptr;
  int64_t len_ = 0, words_ = 0, cap_ = 0;
  int shift_ = 60;
  std::vector<uint64_t> ascii_, vals_, zeros_;
  std::vector<int64_t> keys_;
  std::vector<uint8_t> used_;
};

// Per-thread working memory.
struct Scratch {
  std::vector<uint64_t> a, b, c, d, e, f;
  std::vector<int64_t> i64;
  std::vector<int32_t> i32;
  std::vector<int64_t> keys;
  std::vector<uint8_t> used;
  std::vector<int64_t> vals;
};

inline int64_t popcount(uint64_t x) { return __builtin_popcountll(x); }

// ---- Levenshtein, unit weights: Hyyro 2003 -------------------------------------------
inline int64_t levenshtein_bp(const PatternMatch& pm, const int64_t* t, int64_t n, Scratch& sc) {
  const int64_t m = pm.size();
  if (m == 0) return n;
  if (n == 0) return m;
  const int64_t words = pm.words();
  const uint64_t last = uint64_t(1) << ((m - 1) & 63);
  int64_t dist = m;
  if (words == 1) {
    uint64_t vp = ~uint64_t(0), vn = 0;
    for (int64_t j = 0; j < n; ++j) {
      const uint64_t pmj = pm.get1(t[j]);
      const uint64_t x = pmj | vn;
      const uint64_t d0 = (((x & vp) + vp) ^ vp) | x;
      uint64_t hp = vn | ~(d0 | vp);
      uint64_t hn = vp & d0;
      dist += (hp & last) ? 1 : 0;
      dist -= (hn & last) ? 1 : 0;
      hp = (hp << 1) | 1;
      hn = hn << 1;
      vp = hn | ~(d0 | hp);
      vn = hp & d0;
    }
    return dist;
  }
  sc.a.assign(words, ~uint64_t(0));
  sc.b.assign(words, 0);
  uint64_t* VP = sc.a.data();
  uint64_t* VN = sc.b.data();
  for (int64_t j = 0; j < n; ++j) {
    const uint64_t* pmj = pm.get(t[j]);
    uint64_t hp_carry = 1, hn_carry = 0;
    for (int64_t w = 0; w < words; ++w) {
      const uint64_t vn = VN[w], vp = VP[w];
      const uint64_t x = pmj[w] | hn_carry;
      const uint64_t d0 = (((x & vp) + vp) ^ vp) | x | vn;
      uint64_t hp = vn | ~(d0 | vp);
      uint64_t hn = d0 & vp;
      const uint64_t hpc_in = hp_carry, hnc_in = hn_carry;
      if (w < words - 1) {
        hp_carry = hp >> 63;
        hn_carry = hn >> 63;
      } else {
        hp_carry = (hp & last) ? 1 : 0;
        hn_carry = (hn & last) ? 1 : 0;
      }
      hp = (hp << 1) | hpc_in;
      hn = (hn << 1) | hnc_in;
      VP[w] = hn | ~(d0 | hp);
      VN[w] = hp & d0;
    }
    dist += int64_t(hp_carry) - int64_t(hn_carry);
  }
  return dist;
}

// ---- Longest common subsequence: bit-parallel ----------------------------------------
inline int64_t lcs_bp(const PatternMatch& pm, const int64_t* t, int64_t n, Scratch& sc) {
  const int64_t m = pm.size();
  if (m == 0 || n == 0) return 0;
  const int64_t words = pm.words();
  if (words == 1) {
    uint64_t s = ~uint64_t(0);
    for (int64_t j = 0; j < n; ++j) {
      const uint64_t u = s & pm.get1(t[j]);
      s = (s + u) | (s - u);
    }
    const uint64_t mask = (m == 64) ? ~uint64_t(0) : ((uint64_t(1) << m) - 1);
    return popcount(~s & mask);
  }
  sc.a.assign(words, ~uint64_t(0));
  uint64_t* S = sc.a.data();
  for (int64_t j = 0; j < n; ++j) {
    const uint64_t* pmj = pm.get(t[j]);
    unsigned long long carry = 0;
    for (int64_t w = 0; w < words; ++w) {
      const uint64_t s = S[w];
      const uint64_t u = s & pmj[w];
      unsigned long long sum;
      unsigned long long c1 = __builtin_uaddll_overflow(s, u, &sum);
      unsigned long long c2 = __builtin_uaddll_overflow(sum, carry, &sum);
      carry = c1 | c2;
      S[w] = sum | (s - u);
    }
  }
  int64_t r = 0;
  for (int64_t w = 0; w < words; ++w) {
    uint64_t v = ~S[w];
    if (w == words - 1 && (m & 63)) v &= (uint64_t(1) << (m & 63)) - 1;
    r += popcount(v);
  }
  return r;
}

// ---- Optimal string alignment: Hyyro 2003 with transpositions --------------------------
inline int64_t osa_bp(const PatternMatch& pm, const int64_t* t, int64_t n, Scratch& sc) {
  const int64_t m = pm.size();
  if (m == 0) return n;
  if (n == 0) return m;
  const int64_t words = pm.words();
  const uint64_t last = uint64_t(1) << ((m - 1) & 63);
  int64_t dist = m;
  if (words == 1) {
    uint64_t vp = ~uint64_t(0), vn = 0, d0 = 0, pm_old = 0;
    for (int64_t j = 0; j < n; ++j) {
      const uint64_t pmj = pm.get1(t[j]);
      const uint64_t tr = (((~d0) & pmj) << 1) & pm_old;
      d0 = (((pmj & vp) + vp) ^ vp) | pmj | vn;
      d0 |= tr;
      uint64_t hp = vn | ~(d0 | vp);
      uint64_t hn = d0 & vp;
      dist += (hp & last) ? 1 : 0;
      dist -= (hn & last) ? 1 : 0;
      hp = (hp << 1) | 1;
      hn = hn << 1;
      vp = hn | ~(d0 | hp);
      vn = hp & d0;
      pm_old = pmj;
    }
    return dist;
  }
  sc.a.assign(words, ~uint64_t(0));  // VP
  sc.b.assign(words, 0);             // VN
  sc.c.assign(words, 0);             // D0 of the previous text token
  sc.d.assign(words, 0);             // PM of the previous text token
  uint64_t *VP = sc.a.data(), *VN = sc.b.data(), *D0 = sc.c.data(), *PMo = sc.d.data();
  for (int64_t j = 0; j < n; ++j) {
    const uint64_t* pmj = pm.get(t[j]);
    uint64_t hp_carry = 1, hn_carry = 0;
    uint64_t tr_carry = 0;  // top bit of (~D0_old & PM_new) of the previous word
    for (int64_t w = 0; w < words; ++w) {
      const uint64_t vn = VN[w], vp = VP[w], d0_old = D0[w], pm_w = pmj[w];
      const uint64_t base = (~d0_old) & pm_w;
      const uint64_t tr = ((base << 1) | tr_carry) & PMo[w];
      tr_carry = base >> 63;
      const uint64_t x = pm_w | hn_carry;
      const uint64_t d0 = (((x & vp) + vp) ^ vp) | x | vn | tr;
      uint64_t hp = vn | ~(d0 | vp);
      uint64_t hn = d0 & vp;
      const uint64_t hpc_in = hp_carry, hnc_in = hn_carry;
      if (w < words - 1) {
        hp_carry = hp >> 63;
        hn_carry = hn >> 63;
      } else {
        hp_carry = (hp & last) ? 1 : 0;
        hn_carry = (hn & last) ? 1 : 0;
      }
      hp = (hp << 1) | hpc_in;
      hn = (hn << 1) | hnc_in;
      VP[w] = hn | ~(d0 | hp);
      VN[w] = hp & d0;
      D0[w] = d0;
      PMo[w] = pm_w;
    }
    dist += int64_t(hp_carry) - int64_t(hn_carry);
  }
  return dist;
}

// ---- Levenshtein with arbitrary weights: Wagner-Fischer ------------------------------
inline int64_t levenshtein_weighted(const int64_t* s1, int64_t m, const int64_t* s2, int64_t n, int64_t ins,
                                    int64_t del, int64_t sub, Scratch& sc) {
  sc.i64.resize(m + 1);
  int64_t* cache = sc.i64.data();
  for (int64_t i = 0; i <= m; ++i) cache[i] = i * del;
  for (int64_t j = 0; j < n; ++j) {
    int64_t temp = cache[0];
    cache[0] += ins;
    const int64_t ch2 = s2[j];
    for (int64_t i = 0; i < m; ++i) {
      if (s1[i] != ch2) temp = std::min({cache[i] + del, cache[i + 1] + ins, temp + sub});
      std::swap(cache[i + 1], temp);
    }
  }
  return cache[m];
}

// ---- Damerau-Levenshtein (unrestricted): Lowrance-Wagner -----------------------------
// The full (m + 2) x (n + 2) table (int32: lengths are far below 2^31 / 2 in practice, and
// checked by the caller), and for each column j the last row k <= i - 1 whose s1 token
// equals s2[j - 1] (updated after each row by one comparison per column, no hashing).
inline int64_t damerau_levenshtein(const int64_t* s1, int64_t m, const int64_t* s2, int64_t n, Scratch& sc) {
  if (m == 0) return n;
  if (n == 0) return m;
  const int64_t W = n + 2;
  sc.i32.resize((m + 2) * W + (n + 1));
  int32_t* d = sc.i32.data();
  int32_t* lastrow = d + (m + 2) * W;  // [n + 1], index j
  std::fill_n(lastrow, n + 1, int32_t(0));
  auto D = [&](int64_t i, int64_t j) -> int32_t& { return d[(i + 1) * W + (j + 1)]; };  // i, j >= -1
  const int32_t maxdist = int32_t(m + n);
  D(-1, -1) = maxdist;
  for (int64_t i = 0; i <= m; ++i) {
    D(i, -1) = maxdist;
    D(i, 0) = int32_t(i);
  }
  for (int64_t j = 0; j <= n; ++j) {
    D(-1, j) = maxdist;
    D(0, j) = int32_t(j);
  }
  for (int64_t i = 1; i <= m; ++i) {
    int64_t db = 0;
    const int64_t a = s1[i - 1];
    const int32_t* prev = &D(i - 1, 0);
    int32_t* cur = &D(i, 0);
    for (int64_t j = 1; j <= n; ++j) {
      const int64_t k = lastrow[j];
      const int64_t l = db;
      int32_t cost = 1;
      if (a == s2[j - 1]) {
        cost = 0;
        db = j;
      }
      int32_t v = std::min({prev[j - 1] + cost, cur[j - 1] + 1, prev[j] + 1});
      if (k > 0 && l > 0) v = std::min<int32_t>(v, int32_t(D(k - 1, l - 1) + (i - k - 1) + 1 + (j - l - 1)));
      cur[j] = v;
    }
    for (int64_t j = 1; j <= n; ++j)
      if (s2[j - 1] == a) lastrow[j] = int32_t(i);
  }
  return D(m, n);
}

// ---- Jaro: bit-parallel matching in the search window --------------------------------
// rapidfuzz's definition: search range max(len1, len2) / 2 - 1; for every token of s1 in
// order, the first unmatched equal token of s2 inside the window is its match.
// The pattern masks here are those of s1; the text loop walks s1 and looks for s2 tokens
// through a mask of s2 built per pair (s2 flags as bits).
inline double jaro_similarity(const int64_t* s1, int64_t m, const int64_t* s2, int64_t n, Scratch& sc) {
  if (m == 0 && n == 0) return 1.0;
  if (m == 0 || n == 0) return 0.0;
  if (m == 1 && n == 1) return s1[0] == s2[0] ? 1.0 : 0.0;
  const int64_t bound = std::max<int64_t>(std::max(m, n) / 2 - 1, 0);
  const int64_t words2 = words_for(n);
  sc.e.assign(words2, 0);  // s2 flags
  sc.f.assign(words_for(m), 0);  // s1 flags
  uint64_t* f2 = sc.e.data();
  uint64_t* f1 = sc.f.data();
  int64_t common = 0;
  for (int64_t i = 0; i < m; ++i) {
    const int64_t lo = std::max<int64_t>(0, i - bound);
    const int64_t hi = std::min<int64_t>(i + bound, n - 1);
    if (lo > hi) continue;
    const int64_t ch = s1[i];
    for (int64_t j = lo; j <= hi; ++j) {
      if (!((f2[j >> 6] >> (j & 63)) & 1) && s2[j] == ch) {
        f2[j >> 6] |= uint64_t(1) << (j & 63);
        f1[i >> 6] |= uint64_t(1) << (i & 63);
        ++common;
        break;
      }
    }
  }
  if (common == 0) return 0.0;
  int64_t trans = 0, k = 0;
  for (int64_t i = 0; i < m; ++i) {
    if (!((f1[i >> 6] >> (i & 63)) & 1)) continue;
    while (!((f2[k >> 6] >> (k & 63)) & 1)) ++k;
    if (s1[i] != s2[k]) ++trans;
    ++k;
  }
  trans /= 2;
  double sim = 0.0;
  sim += double(common) / double(m);
  sim += double(common) / double(n);
  sim += double(common - trans) / double(common);
  return sim / 3.0;
}

// Bit-parallel Jaro with the masks of s1 (pattern) and the text s2: for every token of s1
// (in order), the first unflagged s2 position in the window with an equal token. With
// the pattern masks we walk the text instead: the flags of the greedy s1-ordered matching
// equal those of the text-ordered one (both give the lexicographically first maximal
// matching of the band; tested exhaustively against rapidfuzz).
inline double jaro_similarity_bp(const PatternMatch& pm, const int64_t* s2, int64_t n, Scratch& sc) {
  const int64_t m = pm.size();
  const int64_t* s1 = pm.data();
  if (m == 0 && n == 0) return 1.0;
  if (m == 0 || n == 0) return 0.0;
  if (m == 1 && n == 1) return s1[0] == s2[0] ? 1.0 : 0.0;
  const int64_t bound = std::max<int64_t>(std::max(m, n) / 2 - 1, 0);
  const int64_t words1 = pm.words();
  const int64_t words2 = words_for(n);
  int64_t common = 0;
  if (words1 == 1 && words2 == 1) {
    uint64_t f1 = 0, f2 = 0;
    for (int64_t j = 0; j < n; ++j) {
      const int64_t lo = std::max<int64_t>(0, j - bound);
      const int64_t hi = std::min<int64_t>(j + bound, m - 1);
      if (lo > hi) continue;
      const uint64_t win = ((hi == 63) ? ~uint64_t(0) : ((uint64_t(1) << (hi + 1)) - 1)) & (~uint64_t(0) << lo);
      const uint64_t cand = pm.get1(s2[j]) & win & ~f1;
      if (cand) {
        f1 |= cand & (~cand + 1);
        f2 |= uint64_t(1) << j;
        ++common;
      }
    }
    if (common == 0) return 0.0;
    int64_t trans = 0;
    uint64_t a = f1, b = f2;
    while (b) {
      const int64_t j = __builtin_ctzll(b);
      const uint64_t lowa = a & (~a + 1);
      if (!(pm.get1(s2[j]) & lowa)) ++trans;
      a ^= lowa;
      b &= b - 1;
    }
    trans /= 2;
    return (double(common) / double(m) + double(common) / double(n) + double(common - trans) / double(common)) / 3.0;
  }
  sc.e.assign(words1, 0);  // s1 flags
  sc.f.assign(words2, 0);  // s2 flags
  uint64_t* f1 = sc.e.data();
  uint64_t* f2 = sc.f.data();
  for (int64_t j = 0; j < n; ++j) {
    const int64_t lo = std::max<int64_t>(0, j - bound);
    const int64_t hi = std::min<int64_t>(j + bound, m - 1);
    if (lo > hi) continue;
    const uint64_t* pmj = pm.get(s2[j]);
    for (int64_t w = lo >> 6; w <= (hi >> 6); ++w) {
      uint64_t win = ~uint64_t(0);
      if (w == (lo >> 6)) win &= ~uint64_t(0) << (lo & 63);
      if (w == (hi >> 6) && (hi & 63) != 63) win &= (uint64_t(1) << ((hi & 63) + 1)) - 1;
      const uint64_t cand = pmj[w] & win & ~f1[w];
      if (cand) {
        f1[w] |= cand & (~cand + 1);
        f2[j >> 6] |= uint64_t(1) << (j & 63);
        ++common;
        break;
      }
    }
  }
  if (common == 0) return 0.0;
  int64_t trans = 0, wa = 0;
  uint64_t a = f1[0];
  for (int64_t wb = 0; wb < words2; ++wb) {
    uint64_t b = f2[wb];
    while (b) {
      const int64_t j = wb * 64 + __builtin_ctzll(b);
      while (!a) a = f1[++wa];
      const int64_t i = wa * 64 + __builtin_ctzll(a);
      if (s1[i] != s2[j]) ++trans;
      a &= a - 1;
      b &= b - 1;
    }
  }
  trans /= 2;
  return (double(common) / double(m) + double(common) / double(n) + double(common - trans) / double(common)) / 3.0;
}

inline double jaro_winkler_from(double sim, const int64_t* s1, int64_t m, const int64_t* s2, int64_t n,
                                double prefix_weight) {
  if (sim > 0.7) {
    const int64_t max_prefix = std::min<int64_t>(std::min(m, n), 4);
    int64_t prefix = 0;
    while (prefix < max_prefix && s1[prefix] == s2[prefix]) ++prefix;
    sim += double(prefix) * prefix_weight * (1.0 - sim);
  }
  return sim;
}

// ---- The largest value of each raw distance (rapidfuzz's normalization) --------------
inline int64_t maximum(const Params& p, int64_t m, int64_t n) {
  switch (p.metric) {
    case Metric::levenshtein: {
      int64_t mx = m * p.del + n * p.ins;
      if (m >= n)
        mx = std::min(mx, n * p.sub + (m - n) * p.del);
      else
        mx = std::min(mx, m * p.sub + (n - m) * p.ins);
      return mx;
    }
    case Metric::indel:
      return m + n;
    default:
      return std::max(m, n);
  }
}

// One pair. pm is the pattern built from s1 when p.uses_pattern().
inline int64_t distance_int(const Params& p, const PatternMatch& pm, const int64_t* s1, int64_t m, const int64_t* s2,
                            int64_t n, Scratch& sc) {
  switch (p.metric) {
    case Metric::levenshtein: {
      if (p.ins == p.del) {
        if (p.ins == 0) return 0;
        if (p.ins == p.sub) return levenshtein_bp(pm, s2, n, sc) * p.ins;
        if (p.sub >= p.ins + p.del) return (m + n - 2 * lcs_bp(pm, s2, n, sc)) * p.ins;
      }
      return levenshtein_weighted(s1, m, s2, n, p.ins, p.del, p.sub, sc);
    }
    case Metric::osa:
      return osa_bp(pm, s2, n, sc);
    case Metric::damerau_levenshtein:
      return damerau_levenshtein(s1, m, s2, n, sc);
    case Metric::indel:
      return m + n - 2 * lcs_bp(pm, s2, n, sc);
    case Metric::lcs:
      return std::max(m, n) - lcs_bp(pm, s2, n, sc);
    case Metric::hamming: {
      const int64_t k = std::min(m, n);
      int64_t d = std::max(m, n);
      for (int64_t i = 0; i < k; ++i) d -= (s1[i] == s2[i]);
      return d;
    }
    case Metric::prefix: {
      const int64_t k = std::min(m, n);
      int64_t i = 0;
      while (i < k && s1[i] == s2[i]) ++i;
      return std::max(m, n) - i;
    }
    case Metric::postfix: {
      const int64_t k = std::min(m, n);
      int64_t i = 0;
      while (i < k && s1[m - 1 - i] == s2[n - 1 - i]) ++i;
      return std::max(m, n) - i;
    }
    default:
      return 0;
  }
}

inline double distance_float(const Params& p, const PatternMatch& pm, const int64_t* s1, int64_t m,
                             const int64_t* s2, int64_t n, Scratch& sc) {
  if (p.metric == Metric::jaro || p.metric == Metric::jaro_winkler) {
    double sim = jaro_similarity_bp(pm, s2, n, sc);
    if (p.metric == Metric::jaro_winkler) sim = jaro_winkler_from(sim, s1, m, s2, n, p.prefix_weight);
    return 1.0 - sim;
  }
  const int64_t d = distance_int(p, pm, s1, m, s2, n, sc);
  const int64_t mx = maximum(p, m, n);
  return mx ? double(d) / double(mx) : 0.0;
}

}  // namespace CPU_CAPABILITY
}  // namespace tp::seq
