// Network simplex for the transportation problem (see network_simplex.h for the method).
//
// Nodes: supply rows 0..n1-1, demand columns n1..n1+m1-1 (only those of positive weight),
// the artificial root R = n1 + m1. Arcs: real arc e = i * m1 + j (row i -> column j, cost
// C_ij), artificial arc n1 * m1 + u joining node u and the root (cost ART, directed
// u -> root for rows and root -> u for columns, so it carries the node's weight at the start).
// Every non-tree arc is at its lower bound 0 (the network is uncapacitated), so only tree
// arcs carry flow, and a tree arc is stored at its lower end: pred[u], up[u] (the arc goes
// u -> parent[u]) and flow[u].
//
// Potentials pi: the reduced cost of arc s -> t is c + pi_s - pi_t (0 on tree arcs); at
// optimality every reduced cost is >= 0, so alpha_i = -pi_i, beta_j = pi_{n1+j} satisfy
// alpha_i + beta_j <= C_ij with equality on the tree.
#include "transport/network_simplex.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <utility>
#include <vector>

namespace tp::transport {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// min_j (row[j] - p[j]): the pricing inner loop (most of the solver's time), a SIMD min
// reduction compiled for AVX-512, AVX2 and the baseline, picked at load time (ifunc).
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target_clones("avx512f", "avx2", "default")))
#endif
double segment_min(const double* row, const double* p, int64_t len) {
  double mn = kInf;
#pragma omp simd reduction(min : mn)
  for (int64_t j = 0; j < len; ++j) mn = std::min(mn, row[j] - p[j]);
  return mn;
}

class NetworkSimplex {
 public:
  NetworkSimplex(int64_t n1, int64_t m1, const double* a, const double* b, const double* C, int64_t ldc)
      : n1_(n1), m1_(m1), C_(C), ldc_(ldc) {
    N_ = n1 + m1;
    R_ = N_;
    real_ = n1 * m1;
    total_ = real_ + N_;
    double cmax = 0.0;
    for (int64_t i = 0; i < n1; ++i) {
      const double* row = C + i * ldc;
      for (int64_t j = 0; j < m1; ++j) cmax = std::max(cmax, row[j]);
    }
    // An artificial path row -> root -> column costs 2 ART > C_ij, the direct arc: with a
    // complete bipartite graph no optimal flow uses the root.
    art_ = cmax + 1.0;
    // reduced costs above -tol are taken as >= 0 (rounding of the potentials)
    tol_ = std::ldexp(cmax + art_, -44);
    block_ = std::max<int64_t>(16, static_cast<int64_t>(std::ceil(std::sqrt(static_cast<double>(total_)))));

    const int64_t nodes = N_ + 1;
    parent_.assign(nodes, -1);
    pred_.assign(nodes, -1);
    up_.assign(nodes, 0);
    flow_.assign(nodes, 0.0);
    depth_.assign(nodes, 0);
    thread_.assign(nodes, 0);
    rev_.assign(nodes, 0);
    pi_.assign(nodes, 0.0);
    stem_index_.assign(nodes, -1);
    // the starting tree: every node hangs from the root by its artificial arc
    for (int64_t u = 0; u < N_; ++u) {
      parent_[u] = R_;
      pred_[u] = real_ + u;
      depth_[u] = 1;
      if (u < n1) {
        up_[u] = 1;
        flow_[u] = a[u];
        pi_[u] = -art_;
      } else {
        up_[u] = 0;
        flow_[u] = b[u - n1];
        pi_[u] = art_;
      }
    }
    // thread: R -> 0 -> 1 -> ... -> N-1 -> R
    for (int64_t u = 0; u < N_; ++u) link(u, u + 1 == N_ ? R_ : u + 1);
    link(R_, 0);
  }

  Result run(int64_t max_iter) {
    Result r;
    bool fresh = false;
    for (;;) {
      int64_t e = find_entering();
      if (e >= 0 && is_tree_arc(e)) {
        // rounding drift made a tree arc look improving: recompute the potentials exactly
        refresh_potentials();
        fresh = true;
        e = find_entering();
        if (e >= 0 && is_tree_arc(e)) throw std::runtime_error("torchpair.emd: network simplex lost its potentials");
      }
      if (e < 0) {
        if (fresh) break;
        // confirm optimality with potentials recomputed from the tree
        refresh_potentials();
        fresh = true;
        e = find_entering();
        if (e < 0) break;
      }
      if (max_iter >= 0 && r.iterations >= max_iter) {
        r.status = kMaxIter;
        break;
      }
      pivot(e);
      fresh = false;
      ++r.iterations;
    }
    if (!fresh) refresh_potentials();
    return r;
  }

  // plan / duals for the compact problem (caller scatters)
  template <typename F>
  void for_each_flow(F f) const {
    for (int64_t u = 0; u < N_; ++u) {
      const int64_t e = pred_[u];
      if (e < real_ && flow_[u] > 0) f(e / m1_, e % m1_, flow_[u]);
    }
  }
  // flow still routed through the root (only before optimality): f(node, amount), rows
  // sending to the root, columns receiving from it
  template <typename F>
  void for_each_artificial_flow(F f) const {
    for (int64_t u = 0; u < N_; ++u)
      if (pred_[u] >= real_ && flow_[u] > 0) f(u, flow_[u]);
  }
  double potential(int64_t u) const { return pi_[u]; }

 private:
  int64_t source(int64_t e) const { return e < real_ ? e / m1_ : (e - real_ < n1_ ? e - real_ : R_); }
  int64_t target(int64_t e) const { return e < real_ ? n1_ + e % m1_ : (e - real_ < n1_ ? R_ : e - real_); }
  double cost(int64_t e) const { return e < real_ ? C_[(e / m1_) * ldc_ + e % m1_] : art_; }
  double reduced(int64_t e) const { return cost(e) + pi_[source(e)] - pi_[target(e)]; }
  bool is_tree_arc(int64_t e) const {
    const int64_t s = source(e), t = target(e);
    return (s != R_ && pred_[s] == e) || (t != R_ && pred_[t] == e);
  }

  void refresh_potentials() {
    pi_[R_] = 0.0;
    for (int64_t u = thread_[R_]; u != R_; u = thread_[u]) {
      const double c = cost(pred_[u]);
      pi_[u] = up_[u] ? pi_[parent_[u]] - c : pi_[parent_[u]] + c;
    }
  }

  // Block search: scan the arcs cyclically from where the last search stopped, in blocks
  // of block_ arcs; return the arc of most negative reduced cost in the first block that has
  // one below -tol, or -1 when no arc has (optimal).
  int64_t find_entering() {
    double best = -tol_;
    int64_t best_e = -1;
    int64_t left = block_;
    int64_t e = next_arc_;
    const double* pd = pi_.data() + n1_;  // column potentials
    for (int64_t scanned = 0; scanned < total_;) {
      int64_t len;
      if (e < real_) {
        const int64_t i = e / m1_, j0 = e % m1_;
        len = std::min(m1_ - j0, left);
        const double* row = C_ + i * ldc_ + j0;
        const double* p = pd + j0;
        const double mn = segment_min(row, p, len);
        const double v = mn + pi_[i];
        if (v < best) {
          for (int64_t j = 0; j < len; ++j) {
            if (row[j] - p[j] == mn) {
              best = v;
              best_e = e + j;
              break;
            }
          }
        }
      } else {
        len = std::min(total_ - e, left);
        for (int64_t k = 0; k < len; ++k) {
          const double v = reduced(e + k);
          if (v < best && !is_tree_arc(e + k)) {
            best = v;
            best_e = e + k;
          }
        }
      }
      e += len;
      if (e == total_) e = 0;
      scanned += len;
      left -= len;
      if (left == 0) {
        if (best_e >= 0) break;
        left = block_;
      }
    }
    next_arc_ = e;
    return best_e;
  }

  void pivot(int64_t in) {
    const int64_t s = source(in), t = target(in);
    const double rc = reduced(in);
    // the apex (join) of the cycle
    int64_t u = s, v = t;
    while (u != v) {
      if (depth_[u] > depth_[v]) {
        u = parent_[u];
      } else if (depth_[v] > depth_[u]) {
        v = parent_[v];
      } else {
        u = parent_[u];
        v = parent_[v];
      }
    }
    const int64_t join = u;
    // Flow goes s -> t over the entering arc, t up to the join, the join down to s. Blocking
    // arcs are those whose flow decreases; Cunningham's rule takes the last one met when the
    // cycle is walked in the flow direction from the join (strict < on the s side, walked
    // against that direction; <= on the t side, walked along it).
    double delta = kInf;
    int64_t u_out = -1;
    bool out_on_s_side = false;
    for (int64_t w = s; w != join; w = parent_[w]) {
      if (up_[w] && flow_[w] < delta) {
        delta = flow_[w];
        u_out = w;
        out_on_s_side = true;
      }
    }
    for (int64_t w = t; w != join; w = parent_[w]) {
      if (!up_[w] && flow_[w] <= delta) {
        delta = flow_[w];
        u_out = w;
        out_on_s_side = false;
      }
    }
    if (u_out < 0) throw std::runtime_error("torchpair.emd: unbounded cycle in the network simplex");
    // augment
    if (delta > 0) {
      for (int64_t w = s; w != join; w = parent_[w]) flow_[w] += up_[w] ? -delta : delta;
      for (int64_t w = t; w != join; w = parent_[w]) flow_[w] += up_[w] ? delta : -delta;
    }
    const int64_t u_in = out_on_s_side ? s : t;
    const int64_t v_in = out_on_s_side ? t : s;
    // tree arc rc' = 0 after shifting the potentials of the subtree that moves
    const double sigma = u_in == s ? -rc : rc;
    retree(in, u_in, v_in, u_out, delta, sigma);
  }

  // Removes the tree arc above u_out and hangs the subtree of u_out (which contains u_in)
  // from v_in by the entering arc: the path u_in .. u_out (the stem) is reversed, the
  // subtree re-rooted at u_in, its thread rebuilt, depths and potentials updated. One pass
  // over the moving subtree.
  void retree(int64_t in, int64_t u_in, int64_t v_in, int64_t u_out, double delta, double sigma) {
    stem_.clear();
    for (int64_t w = u_in;; w = parent_[w]) {
      stem_.push_back(w);
      if (w == u_out) break;
    }
    const int64_t k = static_cast<int64_t>(stem_.size()) - 1;
    for (int64_t i = 0; i <= k; ++i) stem_index_[stem_[i]] = i;
    head_.assign(k + 1, -1);
    tail_.assign(k + 1, -1);
    const int64_t d0 = depth_[u_out];
    const int64_t base = depth_[v_in] + 1;  // new depth of u_in
    const int64_t before = rev_[u_out];
    // Walk the old thread of the subtree. Each node belongs to its deepest stem ancestor
    // s_c; the re-rooted preorder is the groups of s_0, s_1, ..., s_k in turn, each in old
    // order. New depth: base + c + (old depth - old depth of s_c).
    int64_t cur = k;
    int64_t w = u_out;
    int64_t after;
    for (;;) {
      const int64_t dw = depth_[w];
      if (w != u_out && dw <= d0) {
        after = w;
        break;
      }
      const int64_t next = thread_[w];
      const int64_t si = stem_index_[w];
      if (si >= 0) {
        cur = si;
      } else {
        while (dw <= d0 + (k - cur)) ++cur;  // left the subtree of s_cur
      }
      depth_[w] = base + cur + (dw - (d0 + (k - cur)));
      pi_[w] += sigma;
      if (head_[cur] < 0) {
        head_[cur] = w;
      } else {
        thread_[tail_[cur]] = w;
        rev_[w] = tail_[cur];
      }
      tail_[cur] = w;
      w = next;
    }
    for (int64_t i = 0; i < k; ++i) link(tail_[i], head_[i + 1]);
    // cut the old segment out, insert the new one right after v_in
    link(before, after);
    const int64_t nx = thread_[v_in];
    link(v_in, head_[0]);
    link(tail_[k], nx);
    // reverse the stem: s_i's new tree arc is s_{i-1}'s old one
    for (int64_t i = k; i >= 1; --i) {
      const int64_t si = stem_[i], sp = stem_[i - 1];
      parent_[si] = sp;
      pred_[si] = pred_[sp];
      up_[si] = !up_[sp];
      flow_[si] = flow_[sp];
    }
    parent_[u_in] = v_in;
    pred_[u_in] = in;
    up_[u_in] = u_in == source(in);
    flow_[u_in] = delta;
    for (int64_t i = 0; i <= k; ++i) stem_index_[stem_[i]] = -1;
  }

  void link(int64_t x, int64_t y) {
    thread_[x] = y;
    rev_[y] = x;
  }

  int64_t n1_, m1_;
  const double* C_;
  int64_t ldc_;
  int64_t N_, R_, real_, total_, block_;
  int64_t next_arc_ = 0;
  double art_, tol_;
  std::vector<int64_t> parent_, pred_, depth_, thread_, rev_, stem_index_, stem_, head_, tail_;
  std::vector<char> up_;
  std::vector<double> flow_, pi_;
};

}  // namespace

Result solve(int64_t n, int64_t m, const double* a, const double* b, const double* C, double* plan, double* alpha,
             double* beta, int64_t max_iter) {
  std::fill(plan, plan + n * m, 0.0);
  std::vector<int64_t> rows, cols;
  for (int64_t i = 0; i < n; ++i)
    if (a[i] > 0) rows.push_back(i);
  for (int64_t j = 0; j < m; ++j)
    if (b[j] > 0) cols.push_back(j);
  const int64_t n1 = static_cast<int64_t>(rows.size()), m1 = static_cast<int64_t>(cols.size());
  Result r;
  if (n1 == 0 || m1 == 0) {
    // no mass to move: cost 0; duals: 0 on one side, the tightest feasible on the other
    std::fill(alpha, alpha + n, 0.0);
    for (int64_t j = 0; j < m; ++j) {
      double v = n > 0 ? kInf : 0.0;
      for (int64_t i = 0; i < n; ++i) v = std::min(v, C[i * m + j]);
      beta[j] = v;
    }
    return r;
  }
  // the compact problem (a copy only when some weights are zero)
  std::vector<double> ca(n1), cb(m1), cc;
  for (int64_t i = 0; i < n1; ++i) ca[i] = a[rows[i]];
  for (int64_t j = 0; j < m1; ++j) cb[j] = b[cols[j]];
  const double* Cc = C;
  int64_t ldc = m;
  if (n1 != n || m1 != m) {
    cc.resize(n1 * m1);
    for (int64_t i = 0; i < n1; ++i)
      for (int64_t j = 0; j < m1; ++j) cc[i * m1 + j] = C[rows[i] * m + cols[j]];
    Cc = cc.data();
    ldc = m1;
  }
  NetworkSimplex ns(n1, m1, ca.data(), cb.data(), Cc, ldc);
  r = ns.run(max_iter);
  double total = 0.0;
  ns.for_each_flow([&](int64_t i, int64_t j, double f) {
    plan[rows[i] * m + cols[j]] = f;
    total += f * Cc[i * ldc + j];
  });
  if (r.status != kOptimal) {
    // Stopped early: mass may still go through the root. Ship it directly (north-west
    // corner rule on the leftovers) so the returned plan is feasible.
    std::vector<std::pair<int64_t, double>> left_rows, left_cols;
    ns.for_each_artificial_flow([&](int64_t u, double f) {
      if (u < n1) left_rows.emplace_back(u, f);
      else left_cols.emplace_back(u - n1, f);
    });
    size_t p = 0, q = 0;
    while (p < left_rows.size() && q < left_cols.size()) {
      auto& [i, fi] = left_rows[p];
      auto& [j, fj] = left_cols[q];
      const double amount = std::min(fi, fj);
      plan[rows[i] * m + cols[j]] += amount;
      total += amount * Cc[i * ldc + j];
      fi -= amount;
      fj -= amount;
      if (fi <= 0) ++p;
      if (fj <= 0) ++q;
    }
  }
  r.cost = total;
  // duals of the positive-weight rows / columns
  std::vector<char> row_in(n, 0), col_in(m, 0);
  for (int64_t i = 0; i < n1; ++i) {
    alpha[rows[i]] = -ns.potential(i);
    row_in[rows[i]] = 1;
  }
  for (int64_t j = 0; j < m1; ++j) {
    beta[cols[j]] = ns.potential(n1 + j);
    col_in[cols[j]] = 1;
  }
  // zero-weight rows, then columns: the largest dual that keeps every constraint feasible
  // (alpha_i = min over positive-weight columns of C_ij - beta_j; beta_j = min over all rows
  // of C_ij - alpha_i)
  for (int64_t i = 0; i < n; ++i) {
    if (row_in[i]) continue;
    double v = kInf;
    for (int64_t j : cols) v = std::min(v, C[i * m + j] - beta[j]);
    alpha[i] = v;
  }
  for (int64_t j = 0; j < m; ++j) {
    if (col_in[j]) continue;
    double v = kInf;
    for (int64_t i = 0; i < n; ++i) v = std::min(v, C[i * m + j] - alpha[i]);  // every row: all pairs feasible
    beta[j] = v;
  }
  return r;
}

}  // namespace tp::transport
