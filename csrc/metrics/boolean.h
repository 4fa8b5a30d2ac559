#pragma once
// Boolean-family kernel definitions: one tiny formula per metric over the four counts of a
// pair of rows, TT = #(x_k & y_k), TF = #(x_k & !y_k), FT = #(!x_k & y_k), FF = #(!x_k & !y_k)
// (nonzero = True). The engines produce the counts; a definition only says what to do with
// them (see kernel_traits.h, "Boolean family"):
//   - the bit-packed engine counts TT with popcount(x_w & y_w) over 64-feature words and
//     derives TF = |x| - TT, FT = |y| - TT, FF = D - |x| - |y| + TT;
//   - the equality engine (hamming / equal on non-Boolean values) counts matching positions
//     (weighted when w is given) and hands them over as TT = matches, TF = mismatches,
//     FT = FF = 0, which is all the equality formulas read.
// Every 0/0 case has a value here; docs/conventions.md lists them and why.
#include "metrics/kernel_traits.h"
#include "metrics/math.h"

namespace tp::metrics {
#if !defined(TP_SCALAR_MATH_ONLY)
using math::operator*;  // Vectorized<T> (op) double (math_host.h)
using math::operator+;
using math::operator-;
using math::operator/;
#endif

namespace boolean_detail {
// num / den, or `fallback` where den == 0.
template <class V>
TP_HOST_DEVICE inline V ratio_or(const V& num, const V& den, double fallback) {
  return math::select(math::is_zero(den), math::full_like(num, fallback), num / den);
}
}  // namespace boolean_detail

// (TF + FT) / (2 TT + TF + FT); 0 for two all-False rows (scipy: NaN).
struct Dice {
  template <class V> TP_HOST_DEVICE static V value(const V& tt, const V& tf, const V& ft, const V&) {
    const V n = tf + ft;
    return boolean_detail::ratio_or(n, tt + tt + n, 0.0);
  }
};

// (TF + FT) / (TT + TF + FT); 0 for two all-False rows (scipy's value).
struct Jaccard {
  template <class V> TP_HOST_DEVICE static V value(const V& tt, const V& tf, const V& ft, const V&) {
    const V n = tf + ft;
    return boolean_detail::ratio_or(n, tt + n, 0.0);
  }
};

// Similarity 1 - jaccard = TT / (TT + TF + FT); 1 for two all-False rows.
struct Tanimoto {
  template <class V> TP_HOST_DEVICE static V value(const V& tt, const V& tf, const V& ft, const V&) {
    return boolean_detail::ratio_or(tt, tt + tf + ft, 1.0);
  }
};

// TT / (TF + FT); +inf where TF + FT = 0 (identical rows; scipy <= 1.13 gave inf or NaN).
struct Kulczynski1 {
  template <class V> TP_HOST_DEVICE static V value(const V& tt, const V& tf, const V& ft, const V&) {
    return boolean_detail::ratio_or(tt, tf + ft, math::infinity());
  }
};

// R / (TT + FF + R), R = 2 (TF + FT) (also scipy's sokalmichener); 0 for D = 0.
struct RogersTanimoto {
  template <class V> TP_HOST_DEVICE static V value(const V& tt, const V& tf, const V& ft, const V& ff) {
    const V r = (tf + ft) * 2.0;
    return boolean_detail::ratio_or(r, tt + ff + r, 0.0);
  }
};

// (D - TT) / D; 0 for D = 0.
struct RussellRao {
  template <class V> TP_HOST_DEVICE static V value(const V& tt, const V& tf, const V& ft, const V& ff) {
    const V d = tt + tf + ft + ff;
    return boolean_detail::ratio_or(d - tt, d, 0.0);
  }
};

// R / (TT + R), R = 2 (TF + FT); 0 for two all-False rows (scipy: NaN).
struct SokalSneath {
  template <class V> TP_HOST_DEVICE static V value(const V& tt, const V& tf, const V& ft, const V&) {
    const V r = (tf + ft) * 2.0;
    return boolean_detail::ratio_or(r, tt + r, 0.0);
  }
};

// 2 TF FT / (TT FF + TF FT); 0 where TF FT = 0 (scipy's value).
struct Yule {
  template <class V> TP_HOST_DEVICE static V value(const V& tt, const V& tf, const V& ft, const V& ff) {
    const V h = tf * ft;
    return math::select(math::is_zero(h), math::full_like(h, 0.0), (h + h) / (tt * ff + h));
  }
};

// Fraction (or weighted fraction) of positions that differ: (TF + FT) / (TT + TF + FT + FF);
// 0 for D = 0 (and for weights summing to 0).
struct Hamming {
  template <class V> TP_HOST_DEVICE static V value(const V& tt, const V& tf, const V& ft, const V& ff) {
    const V n = tf + ft;
    return boolean_detail::ratio_or(n, tt + n + ff, 0.0);
  }
};

// 1 where the rows are identical (TF + FT = 0), else 0; the public operator returns bool.
struct Equal {
  template <class V> TP_HOST_DEVICE static V value(const V& tt, const V& tf, const V& ft, const V&) {
    return math::select(math::is_zero(tf + ft), math::full_like(tt, 1.0), math::full_like(tt, 0.0));
  }
};

}  // namespace tp::metrics
