#pragma once
// Damerau-Levenshtein (unrestricted transpositions) for a group of patterns against one
// text: Zhao, Sahni et al.'s O(len1 * len2) algorithm (the one rapidfuzz runs), one SIMD
// lane per pattern (int16 lanes when every length and id fits, else int32), so a cell of
// the dynamic programme costs about one vector instruction per lane-width patterns.
//
// Zhao's recurrence (D[i][j] over text position i and pattern position j) keeps, per column
// j, the last text row k whose token equals pattern token j (a hash map of the text's tokens
// in the scalar algorithm; here K[j], updated in the cells where the tokens are equal, so
// no lookup), FR[j] = D[k-1][j-2] saved at that cell, and along the row the last column l
// with a token equal to the text token and T = D[i-2][l-1]. Where the tokens differ, a
// transposition is considered when l = j - 1 (FR[j] + i - k) or else when k = i - 1
// (T + j - l). Every branch of the scalar algorithm is a lane-wise blend.
//
// Pattern positions past a lane's length compute values nobody reads: a cell only depends
// on cells of lower or equal column. The lanes' distances are read at their lengths.
#include <ATen/cpu/vec/vec.h>

#include <algorithm>
#include <vector>

namespace tp::seq {
inline namespace CPU_CAPABILITY {

template <typename Lane>
class DamerauGroup {
 public:
  using Vec = at::vec::Vectorized<Lane>;
  static constexpr int lanes_max = Vec::size();

  // rows[l]: the pattern's token ids (int32, TokenIds), lens[l] its length, l < lanes.
  void build(const int32_t* const* rows, const int64_t* lens, int lanes) {
    lanes_ = lanes;
    L_ = 0;
    for (int l = 0; l < lanes; ++l) {
      lens_[l] = lens[l];
      L_ = std::max(L_, lens[l]);
    }
    P_.assign(std::max<int64_t>(L_, 1) * lanes_max, Lane(0));
    for (int l = 0; l < lanes; ++l)
      for (int64_t j = 0; j < lens[l]; ++j) P_[j * lanes_max + l] = Lane(rows[l][j]);
    const int64_t cells = (L_ + 2) * lanes_max;
    if (int64_t(ra_.size()) < cells) {
      ra_.resize(cells);
      rb_.resize(cells);
      fr_.resize(cells);
      k_.resize(cells);
    }
  }

  // Distances of the lanes' patterns to the text t[0, n) (int32 ids): out[l].
  void distances(const int32_t* t, int64_t n, int64_t* out) {
    const int64_t L = L_;
    const Vec one(Lane(1)), minus1(Lane(-1));
    const Vec maxv(Lane(std::max(n, L) + 1));  // "infinity": above every distance
    // Arrays indexed by column j in [-1, L]: element j at (j + 1) * lanes_max.
    Lane* A = ra_.data();
    Lane* Bv = rb_.data();
    Lane* FR = fr_.data();
    Lane* K = k_.data();
    auto at = [](Lane* a, int64_t j) { return a + (j + 1) * lanes_max; };
    for (int64_t j = -1; j <= L; ++j) {
      maxv.store(at(FR, j));
      maxv.store(at(Bv, j));                                  // R1: the row before the first
      (j < 0 ? maxv : Vec(Lane(j))).store(at(A, j));          // R: row 0
      minus1.store(at(K, j));
    }
    Lane* R = A;
    Lane* R1 = Bv;
    const Lane* P = P_.data();
    for (int64_t i = 1; i <= n; ++i) {
      std::swap(R, R1);
      const Vec c(Lane(t[i - 1]));
      const Vec iv = Vec(Lane(i));
      Vec last_col = minus1;
      Vec last_i2l1 = Vec::loadu(at(R, 0));
      Vec T = maxv;
      Vec left = iv;                          // R[j - 1]
      Vec r1_jm2 = Vec::loadu(at(R1, -1));    // R1[j - 2]
      Vec r1_jm1 = Vec::loadu(at(R1, 0));     // R1[j - 1]
      iv.store(at(R, 0));
      Vec jv = one;
      for (int64_t j = 1; j <= L; ++j) {
        const Vec eq = Vec::loadu(P + (j - 1) * lanes_max) == c;  // -1 where equal
        const Vec up = Vec::loadu(at(R1, j));
        Vec temp = at::vec::minimum(at::vec::minimum(r1_jm1 + one + eq, left + one), up + one);
        const Vec k = Vec::loadu(at(K, j));
        const Vec fr = Vec::loadu(at(FR, j));
        const Vec dj = jv - last_col, di = iv - k;
        const Vec c1 = (dj == one), c2 = (di == one);
        const Vec tr = Vec::blendv(Vec::blendv(maxv, T + dj, c2), fr + di, c1);
        temp = Vec::blendv(at::vec::minimum(temp, tr), temp, eq);
        // the equal cells: remember this column / row / the saved values
        last_col = Vec::blendv(last_col, jv, eq);
        Vec::blendv(fr, r1_jm2, eq).store(at(FR, j));
        T = Vec::blendv(T, last_i2l1, eq);
        Vec::blendv(k, iv, eq).store(at(K, j));
        last_i2l1 = Vec::loadu(at(R, j));
        temp.store(at(R, j));
        left = temp;
        r1_jm2 = r1_jm1;
        r1_jm1 = up;
        jv = jv + one;
      }
    }
    for (int l = 0; l < lanes_; ++l) out[l] = int64_t(at(R, lens_[l])[l]);
  }

 private:
  int lanes_ = 0;
  int64_t L_ = 0;
  int64_t lens_[lanes_max] = {};
  std::vector<Lane> P_, ra_, rb_, fr_, k_;
};

}  // namespace CPU_CAPABILITY
}  // namespace tp::seq
