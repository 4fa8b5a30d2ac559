#pragma once
// Exact discrete optimal transport by the primal network simplex, on the CPU, in float64.
//
//   minimize  sum_ij P_ij C_ij   subject to  P 1 = a,  P^T 1 = b,  P >= 0
//
// The transportation problem is solved as a min-cost flow on the complete bipartite graph
// (supply rows -> demand columns) plus an artificial root joined to every node. The basis is
// a spanning tree stored as parent / predecessor-arc / thread / depth arrays (the augmented
// threaded index of Glover, Klingman and Barr); the entering arc is chosen by block search
// (blocks of about sqrt(#arcs) arcs, the most negative reduced cost of the first block that
// has one); the leaving arc by Cunningham's rule, which keeps the tree strongly feasible and
// so rules out cycling on degenerate pivots. Rows and columns of zero weight are left out of
// the network (their plan entries are 0; their duals are set afterwards, see below).
// All index arithmetic is int64_t.
#include <cstdint>

namespace tp::transport {

enum Status : int64_t {
  kOptimal = 0,   // optimal plan and duals
  kMaxIter = 1,   // stopped after max_iter pivots: the plan is feasible, not necessarily optimal
};

struct Result {
  double cost = 0.0;
  int64_t iterations = 0;  // pivots
  Status status = kOptimal;
};

// a [n], b [m]: non-negative, finite, with equal sums (the caller checks; tiny rounding
// differences are tolerated). C [n, m] row-major: non-negative and finite. Writes plan [n, m]
// (row-major), alpha [n], beta [m] with alpha_i + beta_j <= C_ij for every pair and equality
// where plan_ij > 0 (for rows or columns of zero weight the dual is the largest feasible
// value: alpha_i = min_j C_ij - beta_j over the columns of positive weight, then
// beta_j = min_i C_ij - alpha_i over all rows). max_iter < 0: no limit.
Result solve(int64_t n, int64_t m, const double* a, const double* b, const double* C, double* plan, double* alpha,
             double* beta, int64_t max_iter);

}  // namespace tp::transport
