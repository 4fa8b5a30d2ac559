// The C++ API called from several std::threads at once (run by tests/test_cpp_threads.py).
//
//   torchpair_cpp_threads [threads] [rounds] [perturb]
//
// ("perturb": thread 1 changes one of its results by one ulp, which must be reported — the
// check that the comparison can fail.)
//
// Every operation below is run once serially, then by `threads` std::threads at the same
// time, `rounds` times each, each thread in its own rotated order (so different operations
// overlap); every concurrent result must be bitwise equal (values, dtype, shape) to the
// serial one. A second phase builds one materialized (lazy = false) expression per round
// and has all threads make its first consumer calls at the same moment (the matrix is
// computed once, under a mutex) — the results must again equal the serial ones.
// The serial results are checked against dense torch formulas first (an independent
// oracle), so the comparison is against right answers. Exit 0 when everything matches.
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <c10/util/Exception.h>
#include <torch/csrc/autograd/autograd.h>

#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <limits>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <torchpair/torchpair.h>

namespace {

using Results = std::vector<at::Tensor>;
struct Op {
  std::string name;
  std::function<Results()> run;
};

constexpr int kIntraOpThreads = 2;  // every thread uses the same intra-op thread count

std::mutex failures_mutex;
std::vector<std::string> failures;

void fail(const std::string& what) {
  std::lock_guard<std::mutex> lock(failures_mutex);
  if (failures.size() < 50) failures.push_back(what);
}

// Bitwise: same dtype, shape and bytes (NaN-free inputs, so at::equal is bitwise).
bool same(const Results& a, const Results& b, std::string* why) {
  if (a.size() != b.size()) {
    *why = "different number of results";
    return false;
  }
  for (size_t i = 0; i < a.size(); ++i) {
    std::ostringstream os;
    if (a[i].scalar_type() != b[i].scalar_type() || a[i].sizes() != b[i].sizes()) {
      os << "result " << i << ": " << a[i].scalar_type() << a[i].sizes() << " vs " << b[i].scalar_type()
         << b[i].sizes();
    } else if (!at::equal(a[i], b[i])) {
      os << "result " << i << " differs by " << (a[i].to(at::kDouble) - b[i].to(at::kDouble)).abs().max().item<double>();
    }
    if (!os.str().empty()) {
      *why = os.str();
      return false;
    }
  }
  return true;
}

void check_close(const std::string& name, const at::Tensor& got, const at::Tensor& want, double tol) {
  if (got.sizes() != want.sizes() || !at::allclose(got, want, tol, tol))
    fail("oracle: " + name + " differs from the dense torch formula");
}

at::Tensor sqdist(const at::Tensor& x, const at::Tensor& y) {
  return (x.unsqueeze(-2) - y.unsqueeze(-3)).pow(2).sum(-1);
}

// Starts n threads at the same moment (a one-shot gate) and joins them.
void run_together(int n, const std::function<void(int)>& body) {
  std::mutex m;
  std::condition_variable cv;
  bool open = false;
  std::vector<std::thread> threads;
  for (int t = 0; t < n; ++t) {
    threads.emplace_back([&, t] {
      at::set_num_threads(kIntraOpThreads);
      {
        std::unique_lock<std::mutex> lock(m);
        cv.wait(lock, [&] { return open; });
      }
      try {
        body(t);
      } catch (const std::exception& e) {
        fail(std::string("thread ") + std::to_string(t) + " threw: " + e.what());
      }
    });
  }
  {
    std::lock_guard<std::mutex> lock(m);
    open = true;
  }
  cv.notify_all();
  for (auto& th : threads) th.join();
}

}  // namespace

int main(int argc, char** argv) {
  const int n_threads = argc > 1 ? std::atoi(argv[1]) : 4;
  const int rounds = argc > 2 ? std::atoi(argv[2]) : 5;
  const bool perturb = argc > 3 && std::string(argv[3]) == "perturb";
  if (n_threads < 1 || rounds < 1 || (argc > 3 && !perturb)) {
    std::cerr << "usage: " << argv[0] << " [threads >= 1] [rounds >= 1] [perturb]\n";
    return 2;
  }
  at::set_num_threads(kIntraOpThreads);
  at::manual_seed(11);
  const auto f64 = at::TensorOptions().dtype(at::kDouble);
  // Large enough for several row tiles and a parallel split; small enough to be quick.
  const at::Tensor X = at::randn({300, 16}, f64), Y = at::randn({257, 16}, f64), V = at::randn({257, 3}, f64);
  const at::Tensor W = at::randn({300, 2}, f64);
  const at::Tensor Xf = X.to(at::kFloat), Yf = Y.to(at::kFloat);
  const at::Tensor A = at::randn({120, 5}, f64), B = at::randn({90, 5}, f64) + 0.5;
  const at::Tensor a = at::rand({40}, f64) + 0.1, b = at::rand({35}, f64) + 0.1;
  const at::Tensor wa = a / a.sum(), wb = b / b.sum();
  const at::Tensor M = sqdist(A.slice(0, 0, 40), B.slice(0, 0, 35));
  const at::Tensor S = at::randint(0, 4, {60, 14}, at::kLong), SL = at::randint(0, 15, {60}, at::kLong);
  const at::Tensor T = at::randint(0, 4, {45, 11}, at::kLong), TL = at::randint(0, 12, {45}, at::kLong);

  tp::PairwiseOperationOptions g3;
  g3.comparison.gamma = 0.3;

  std::vector<Op> ops = {
      {"pairwise rbf f64", [&] { return Results{tp::pairwise(X, Y, "rbf", g3)}; }},
      {"pairwise euclidean f32", [&] { return Results{tp::pairwise(Xf, Yf, "euclidean")}; }},
      {"pairwise self cosine", [&] { return Results{tp::pairwise(X, std::nullopt, "cosine")}; }},
      {"lazy consumers",
       [&] {
         auto K = tp::pairwise_expression(X, Y, "rbf", true, g3);
         auto [tv, ti] = K.topk(5, -1, false);
         auto [mv, mi] = K.min(-2);
         return Results{K.matmul(V),       K.sum(-1),      K.sum(-2), K.sum(),  K.mean(-1), K.logsumexp(-1),
                        K.logsumexp(),     tv,             ti,        mv,       mi,         K.argmax(-1),
                        K.softmax_matmul(V), K.softmax_matmul(W, -2), K.t().matmul(W)};
       }},
      {"lazy consumers f32 manhattan",
       [&] {
         auto K = tp::pairwise_expression(Xf, Yf, "cityblock");
         auto [tv, ti] = K.topk(3);
         return Results{K.sum(-1), K.sum(-2), tv, ti, K.argmin(-1)};
       }},
      {"materialized consumers",
       [&] {
         auto K = tp::pairwise_expression(X, Y, "rbf", false, g3);
         auto [tv, ti] = K.topk(5, -1, false);
         return Results{K.matmul(V), K.sum(-1), K.logsumexp(), tv, ti, K.softmax_matmul(V), K.t().matmul(W)};
       }},
      {"gradients",
       [&] {
         const at::Tensor x = X.clone().requires_grad_(true), y = Y.clone().requires_grad_(true);
         const at::Tensor v = V.clone().requires_grad_(true);
         auto out = tp::pairwise_expression(x, y, "rbf", true, g3).matmul(v);
         auto g = torch::autograd::grad({(out * out).sum()}, {x, y, v});
         auto s = tp::pairwise_expression(x, Y, "euclidean").softmax_matmul(V).sum();
         auto gs = torch::autograd::grad({s}, {x});
         return Results{g[0], g[1], g[2], gs[0]};
       }},
      {"sets",
       [&] {
         auto [kv, ki] = tp::knn(A, B, 4);
         return Results{kv, ki, tp::hausdorff(A, B), tp::chamfer(A, B), tp::mmd(A, B), tp::energy_distance(A, B)};
       }},
      {"pdist", [&] { return Results{tp::pdist(A), tp::pdist(A, "cityblock"), tp::pdist(X, "cosine")}; }},
      {"emd",
       [&] {
         auto t = tp::emd(wa, wb, M);
         return Results{t.plan, t.cost, t.u, t.v, t.status, tp::emd2(std::nullopt, std::nullopt, M)};
       }},
      {"sequences",
       [&] {
         auto [tv, ti] = tp::seq::topk(S, SL, T, TL, 3, "levenshtein");
         return Results{tp::seq::pairwise(S, SL, T, TL, "levenshtein"), tp::seq::pairwise(S, SL, T, TL, "jaro_winkler"),
                        tp::seq::pdist(S, SL, "levenshtein"), tv, ti};
       }},
  };

  // Serial results, checked against dense torch formulas (an independent oracle).
  std::vector<Results> serial;
  try {
    for (const auto& op : ops) serial.push_back(op.run());
    const at::Tensor K = at::exp(-0.3 * sqdist(X, Y));
    check_close("pairwise rbf", serial[0][0], K, 1e-12);
    check_close("euclidean f32", serial[1][0], sqdist(X, Y).sqrt().to(at::kFloat), 1e-4);
    check_close("lazy matmul", serial[3][0], at::matmul(K, V), 1e-10);
    check_close("lazy sum", serial[3][1], K.sum(-1), 1e-10);
    check_close("lazy logsumexp", serial[3][5], at::logsumexp(K, -1), 1e-10);
    check_close("lazy softmax_matmul", serial[3][12], at::matmul(at::softmax(K, -1), V), 1e-10);
    check_close("materialized matmul", serial[5][0], at::matmul(K, V), 1e-10);
    check_close("lazy topk", serial[3][7], std::get<0>(at::topk(K, 5, -1, false)), 1e-12);
    check_close("pdist", serial[8][0], at::pdist(A), 1e-10);
    check_close("chamfer", serial[7][3],
                sqdist(A, B).amin(1).mean() + sqdist(A, B).amin(0).mean(), 1e-10);
    check_close("emd marginal", serial[9][0].sum(-1), wa, 1e-9);
  } catch (const std::exception& e) {
    std::cout << "serial run threw: " << e.what() << std::endl;
    return 1;
  }

  // Phase 1: every operation from all threads at once, in rotated orders.
  std::atomic<int64_t> comparisons{0};
  const int n_ops = int(ops.size());
  run_together(n_threads, [&](int t) {
    for (int r = 0; r < rounds; ++r) {
      for (int i = 0; i < n_ops; ++i) {
        const int k = (i + t * 3 + r) % n_ops;
        std::string why;
        Results got = ops[k].run();
        if (perturb && t == 1 && r == 0 && i == 0)
          got[0] = at::nextafter(got[0], at::full_like(got[0], std::numeric_limits<double>::infinity()));
        if (!same(got, serial[k], &why))
          fail("thread " + std::to_string(t) + " round " + std::to_string(r) + ": " + ops[k].name + ": " + why);
        ++comparisons;
      }
    }
  });

  // Phase 2: one lazy = false expression per round, shared by every thread, whose first
  // consumer calls (which compute and keep the matrix) happen at the same moment.
  const Results& want = serial[5];
  for (int r = 0; r < rounds * 4; ++r) {
    auto K = tp::pairwise_expression(X, Y, "rbf", false, g3);
    auto KT = K.t();  // shares the matrix with K
    run_together(n_threads, [&](int t) {
      Results got;
      if (t % 2 == 0) {
        auto [tv, ti] = K.topk(5, -1, false);
        got = {K.matmul(V), K.sum(-1), K.logsumexp(), tv, ti, K.softmax_matmul(V), KT.matmul(W)};
      } else {
        const at::Tensor m = KT.matmul(W);
        auto [tv, ti] = K.topk(5, -1, false);
        got = {K.matmul(V), K.sum(-1), K.logsumexp(), tv, ti, K.softmax_matmul(V), m};
      }
      std::string why;
      if (!same(got, want, &why))
        fail("shared materialized expression, thread " + std::to_string(t) + " round " + std::to_string(r) + ": " + why);
      ++comparisons;
    });
    if (K.dense().data_ptr() != KT.dense().data_ptr())
      fail("K and K.t() of a materialized expression do not share one matrix");
  }

  std::cout << n_ops << " operations x " << n_threads << " threads x " << rounds << " rounds, plus " << rounds * 4
            << " shared materialized expressions: " << comparisons.load() << " comparisons, " << failures.size()
            << " failures" << std::endl;
  for (const auto& f : failures) std::cout << "  FAIL " << f << std::endl;
  return failures.empty() ? 0 : 1;
}
