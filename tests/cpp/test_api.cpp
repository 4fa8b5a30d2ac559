// C++ tests of the LibTorch API (tp::...), built against the INSTALLED CMake package and run
// by tests/test_cpp.py (so by `make test`), or by ctest in the build directory.
//
//   torchpair_cpp_tests <refs.pt> [case ...]
//
// refs.pt is written by tests/test_cpp.py with torch.save: the inputs ("in/<name>"), the
// independent oracles ("oracle/<name>": dense torch / scipy formulas) and the Python API's
// results ("python/<name>"). Every result the C++ API computes here is compared with both,
// and a result without its two references is a failure, so no case can pass by omission.
// Plain executable (no test framework to install): exit 0 when every case passes.
#include <algorithm>
#include <ATen/ATen.h>
#include <ATen/autocast_mode.h>
#include <c10/util/Exception.h>
#include <torch/csrc/autograd/autograd.h>
#include <torch/csrc/jit/serialization/pickle.h>

#include <array>
#include <fstream>
#include <functional>
#include <iostream>
#include <iterator>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <torchpair/torchpair.h>

namespace {

using Refs = std::map<std::string, at::Tensor>;
using Results = std::map<std::string, at::Tensor>;

struct Failure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

#define CHECK_THAT(cond, msg)                                                          \
  do {                                                                                 \
    if (!(cond)) {                                                                     \
      std::ostringstream os_;                                                          \
      os_ << __FILE__ << ":" << __LINE__ << ": " << #cond << ": " << msg;              \
      throw Failure(os_.str());                                                        \
    }                                                                                  \
  } while (0)

Refs load_refs(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  CHECK_THAT(in.good(), "cannot open " << path);
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const c10::IValue value = torch::jit::pickle_load(bytes);
  Refs refs;
  for (const auto& item : value.toGenericDict()) refs[item.key().toStringRef()] = item.value().toTensor();
  return refs;
}

const at::Tensor& get(const Refs& refs, const std::string& key) {
  auto it = refs.find(key);
  CHECK_THAT(it != refs.end(), "reference '" << key << "' is missing from refs.pt");
  return it->second;
}

// Compares one C++ result with the oracle (tolerance) and with the Python API's result
// (same operators, so equal up to rounding). Integer results must be equal.
void compare(const Refs& refs, const std::string& name, const at::Tensor& cpp, double oracle_tol = 1e-9) {
  for (const char* source : {"oracle/", "python/"}) {
    const at::Tensor& ref = get(refs, source + name);
    CHECK_THAT(cpp.sizes() == ref.sizes(), name << ": shape " << cpp.sizes() << " != " << source << " " << ref.sizes());
    CHECK_THAT(cpp.scalar_type() == ref.scalar_type(),
               name << ": dtype " << cpp.scalar_type() << " != " << source << " " << ref.scalar_type());
    if (at::isIntegralType(cpp.scalar_type(), /*includeBool=*/true)) {
      CHECK_THAT(at::equal(cpp, ref), name << ": indices differ from " << source << "\n" << cpp << "\n" << ref);
    } else {
      const bool python = std::string(source) == "python/";
      const double rtol = python ? 1e-12 : oracle_tol, atol = rtol;
      const bool ok = at::allclose(cpp, ref, rtol, atol, /*equal_nan=*/true);
      CHECK_THAT(ok, name << ": differs from " << source << " by " << (cpp - ref).abs().max().item<double>());
    }
  }
}

// Runs f, which must throw c10::Error (or a subclass) whose message contains every word.
template <typename Error = c10::Error>
void expect_error(const std::string& what, const std::function<void()>& f, const std::vector<std::string>& words) {
  try {
    f();
  } catch (const Error& e) {
    const std::string msg = e.what_without_backtrace();
    for (const auto& w : words)
      CHECK_THAT(msg.find(w) != std::string::npos, what << ": message does not name '" << w << "': " << msg);
    std::cout << "    " << what << " -> " << msg.substr(0, msg.find('\n')) << "\n";
    return;
  } catch (const std::exception& e) {
    CHECK_THAT(false, what << ": threw the wrong exception type: " << e.what());
  }
  CHECK_THAT(false, what << ": did not throw");
}

// ---- cases ------------------------------------------------------------------------------

// The seed snippet, lazy and materialized.
void seed(const Refs& r) {
  const at::Tensor X = get(r, "in/X"), Y = get(r, "in/Y"), V = get(r, "in/V");
  tp::PairwiseOperationOptions options;
  options.comparison.gamma = 0.2;
  auto K = tp::pairwise_expression(X, Y, "rbf", true, options);
  CHECK_THAT(K.lazy() && K.sizes() == std::vector<int64_t>({X.size(0), Y.size(0)}), "metadata");
  compare(r, "seed", K.matmul(V));
  compare(r, "seed", tp::pairwise_expression(X, Y, "rbf", false, options).matmul(V));
  compare(r, "seed_dense", tp::pairwise(X, Y, "rbf", options));
  compare(r, "seed_dense", tp::cdist(X, Y, "rbf", options));
}

// Every consumer of the expression, lazy and materialized (the same numbers).
void consumers(const Refs& r) {
  const at::Tensor X = get(r, "in/X"), Y = get(r, "in/Y"), V = get(r, "in/V"), W = get(r, "in/W");
  tp::PairwiseOperationOptions options;
  options.comparison.gamma = 0.5;
  for (bool lazy : {true, false}) {
    auto K = tp::pairwise_expression(X, Y, "rbf", lazy, options);
    compare(r, "dense", K.dense());
    compare(r, "sum_rows", K.sum(-1));
    compare(r, "sum_cols", K.sum(-2));
    compare(r, "sum_all", K.sum());
    compare(r, "mean_rows", K.mean(1));
    compare(r, "mean_all", K.mean());
    compare(r, "logsumexp_cols", K.logsumexp(-2));
    compare(r, "logsumexp_all", K.logsumexp());
    auto [tv, ti] = K.topk(3, -1, /*largest=*/false);
    compare(r, "topk_values", tv);
    compare(r, "topk_indices", ti);
    auto [cv, ci] = K.topk(2, -2);
    compare(r, "topk_cols_values", cv);
    compare(r, "topk_cols_indices", ci);
    auto [mv, mi] = K.min(-1);
    compare(r, "min_values", mv);
    compare(r, "min_indices", mi);
    auto [xv, xi] = K.max(-2);
    compare(r, "max_cols_values", xv);
    compare(r, "max_cols_indices", xi);
    compare(r, "min_indices", K.argmin());
    compare(r, "argmax_rows", K.argmax(-1));
    compare(r, "softmax_matmul", K.softmax_matmul(V));
    compare(r, "softmax_matmul_cols", K.softmax_matmul(W, -2));
    auto KT = K.t();
    CHECK_THAT(KT.sizes() == std::vector<int64_t>({Y.size(0), X.size(0)}), "K.t() shape");
    compare(r, "t_matmul", KT.matmul(W));
    compare(r, "sum_cols", KT.sum(-1));
    compare(r, "t_dense", KT.dense());
    compare(r, "count_rows", K.count(0.3));
    compare(r, "count_cols", K.count(0.3, -2));
    compare(r, "lse_weighted", K.logsumexp(-1, -2.5, V.select(1, 0)));
  }
}

// Parameters (unset = the Python default: gamma = 1 / n_features), aliases, broadcast batch
// dimensions, Y = X.
void params_and_batches(const Refs& r) {
  const at::Tensor X = get(r, "in/X"), Y = get(r, "in/Y");
  compare(r, "rbf_default_gamma", tp::pairwise(X, Y, "rbf"));
  compare(r, "rbf_default_gamma_sum", tp::pairwise_expression(X, Y, "rbf").sum(-1));
  compare(r, "l2_alias", tp::pairwise(X, Y, "l2"));
  const at::Tensor Xb = get(r, "in/Xb"), Yb = get(r, "in/Yb");
  compare(r, "batched", tp::pairwise(Xb, Yb, "sqeuclidean"));
  auto K = tp::pairwise_expression(Xb, Yb, "sqeuclidean");
  CHECK_THAT(K.sizes() == std::vector<int64_t>({2, Xb.size(1), Yb.size(0)}), "batched sizes " << K.sizes());
  compare(r, "batched_min", std::get<0>(K.min(-1)));
  compare(r, "batched_sum_all", K.sum());  // every dimension, batch included
  compare(r, "batched_mean_all", K.mean());
  compare(r, "batched_logsumexp_all", K.logsumexp());
  compare(r, "batched_dense_sum_all", tp::pairwise_expression(Xb, Yb, "sqeuclidean", false).sum());
  compare(r, "self_euclidean", tp::pairwise(X, std::nullopt, "euclidean"));
  compare(r, "self_euclidean_sum", tp::pairwise_expression(X, std::nullopt, "euclidean").sum(-1));
  // compute_mode "donot_use_mm_for_euclid_dist": rows equal in x and y give exactly 0, as
  // scipy's cdist, at any D (here 40: the default would take the GEMM form)
  tp::PairwiseOperationOptions exact;
  exact.comparison.compute_mode = "donot_use_mm_for_euclid_dist";
  const at::Tensor W = at::rand({5, 40}, at::kDouble), Wc = W.clone();
  for (const char* metric : {"euclidean", "cosine", "correlation"})
    CHECK_THAT(at::equal(tp::pairwise(W, Wc, metric, exact).diagonal(), at::zeros({5}, at::kDouble)),
               "compute_mode: equal rows must give exactly 0 (" << metric << ")");
  tp::PairwiseOperationOptions bad_mode;
  bad_mode.comparison.compute_mode = "exact";
  expect_error<c10::ValueError>("unknown compute_mode", [&] { tp::pairwise(W, Wc, "euclidean", bad_mode); },
                                {"compute_mode"});
}

void sets(const Refs& r) {
  const at::Tensor A = get(r, "in/A"), B = get(r, "in/B");
  auto [kv, ki] = tp::knn(A, B, 3);
  compare(r, "knn_values", kv);
  compare(r, "knn_indices", ki);
  compare(r, "hausdorff", tp::hausdorff(A, B));
  compare(r, "hausdorff_directed", tp::hausdorff(A, B, "euclidean", true));
  compare(r, "chamfer", tp::chamfer(A, B));
  compare(r, "chamfer_sum", tp::chamfer(A, B, "sqeuclidean", "sum"));
  compare(r, "mmd", tp::mmd(A, B));
  tp::PairwiseOperationOptions options;
  options.comparison.gamma = 0.3;
  compare(r, "mmd_unbiased", tp::mmd(A, B, "rbf", true, options));
  compare(r, "energy_distance", tp::energy_distance(A, B));

  compare(r, "pdist", tp::pdist(A));
  compare(r, "pdist_cityblock", tp::pdist(A, "cityblock"));
  tp::PairwiseOperationOptions mink;
  mink.comparison.p = 3.0;
  mink.comparison.w = get(r, "in/w");
  compare(r, "minkowski_w", tp::pairwise(A, B, "minkowski", mink));
  const at::Tensor a = get(r, "in/a"), b = get(r, "in/b");
  const at::Tensor M = tp::pairwise(A, B, "sqeuclidean");
  compare(r, "emd2", tp::emd2(a, b, M));
  const tp::TransportResult t = tp::emd(a, b, M);
  CHECK_THAT(t.status.item<int64_t>() == 0, "emd status " << t.status);
  compare(r, "emd_plan_marginal", t.plan.sum(-1));
  tp::SinkhornDivergenceOptions sk;
  sk.blur = 0.3;
  compare(r, "sinkhorn_divergence", tp::sinkhorn_divergence(A, B, std::nullopt, std::nullopt, sk));
  tp::SinkhornDivergenceOptions unbalanced;
  unbalanced.blur = 0.2;
  unbalanced.scaling = 0.8;
  unbalanced.reach = 1.0;
  compare(r, "sinkhorn_divergence_weighted", tp::sinkhorn_divergence(A, B, a, b, unbalanced));

  const at::Tensor sx = get(r, "in/sx"), sxl = get(r, "in/sxl"), sy = get(r, "in/sy"), syl = get(r, "in/syl");
  compare(r, "seq_levenshtein", tp::seq::pairwise(sx, sxl, sy, syl, "levenshtein"));
  tp::seq::SequenceOptions weighted;
  weighted.weights = std::array<int64_t, 3>{1, 2, 3};
  compare(r, "seq_levenshtein_weights", tp::seq::pairwise(sx, sxl, sy, syl, "levenshtein", weighted));
  compare(r, "seq_jaro_winkler", tp::seq::pairwise(sx, sxl, sy, syl, "jaro_winkler"), 1e-12);
  compare(r, "seq_pdist", tp::seq::pdist(sx, sxl, "levenshtein"));
  auto [sv, si] = tp::seq::topk(sx, sxl, sy, syl, 2, "levenshtein");
  compare(r, "seq_topk_values", sv);
  compare(r, "seq_topk_indices", si);
  bool rejected = false;
  try {
    tp::seq::pairwise(sx, sxl, sy, syl, "osa", weighted);
  } catch (const c10::Error& e) {
    rejected = std::string(e.what()).find("'weights'") != std::string::npos;
  }
  CHECK_THAT(rejected, "tp::seq: a parameter the metric does not take must raise naming it");
  // values are checked by the catalog's resolve, the same check as Python's
  tp::seq::SequenceOptions bad_weight;
  bad_weight.prefix_weight = 1.5;
  rejected = false;
  try {
    tp::seq::pairwise(sx, sxl, sy, syl, "jaro_winkler", bad_weight);
  } catch (const c10::Error& e) {
    rejected = std::string(e.what()).find("'prefix_weight' must be in [0, 1]") != std::string::npos;
  }
  CHECK_THAT(rejected, "tp::seq: prefix_weight outside [0, 1] must raise naming it");
  // the sequence metrics are catalog rows
  const auto names = tp::metrics();
  CHECK_THAT(std::count(names.begin(), names.end(), "levenshtein") == 1 &&
                 std::count(names.begin(), names.end(), "hamming") == 1,
             "tp::metrics() lists every sequence metric once");
  CHECK_THAT(tp::metric_info_json("jaro_winkler").find("\"family\":\"sequence\"") != std::string::npos,
             "tp::metric_info_json(\"jaro_winkler\") describes the sequence metric");
}

// Gradients computed in C++ (through the operators' C++ autograd) against the oracle's.
void gradients(const Refs& r) {
  const at::Tensor X = get(r, "in/X").clone().requires_grad_(true);
  const at::Tensor Y = get(r, "in/Y"), V = get(r, "in/V").clone().requires_grad_(true);
  tp::PairwiseOperationOptions options;
  options.comparison.gamma = 0.2;
  for (bool lazy : {true, false}) {
    auto out = tp::pairwise_expression(X, Y, "rbf", lazy, options).matmul(V);
    auto grads = torch::autograd::grad({(out * out).sum()}, {X, V});
    compare(r, "grad_seed_x", grads[0]);
    compare(r, "grad_seed_v", grads[1]);
  }
  const at::Tensor A = get(r, "in/A").clone().requires_grad_(true), B = get(r, "in/B");
  compare(r, "grad_mmd_a", torch::autograd::grad({tp::mmd(A, B)}, {A})[0]);
  tp::PairwiseOperationOptions g5;
  g5.comparison.gamma = 0.5;
  auto K = tp::pairwise_expression(X, Y, "rbf", true, g5);
  compare(r, "grad_softmax_x", torch::autograd::grad({K.softmax_matmul(V.detach()).sum()}, {X})[0]);
  compare(r, "grad_topk_x", torch::autograd::grad({std::get<0>(K.topk(3, -1, false)).sum()}, {X})[0]);
}

// Under CPU autocast, bfloat16 inputs run in float32 (the operators' autocast kernels), as
// in Python.
void autocast(const Refs& r) {
  const at::Tensor X = get(r, "in/Xh").to(at::kBFloat16), Y = get(r, "in/Yh").to(at::kBFloat16);
  const at::Tensor V = get(r, "in/Vh").to(at::kBFloat16);
  tp::PairwiseOperationOptions options;
  options.comparison.gamma = 0.2;
  at::autocast::set_autocast_dtype(at::kCPU, at::kBFloat16);
  at::autocast::set_autocast_enabled(at::kCPU, true);
  at::Tensor out, sum;
  try {
    out = tp::pairwise_expression(X, Y, "rbf", true, options).matmul(V);
    sum = tp::pairwise_expression(X, Y, "rbf", true, options).sum(-1);
  } catch (...) {
    at::autocast::set_autocast_enabled(at::kCPU, false);
    throw;
  }
  at::autocast::set_autocast_enabled(at::kCPU, false);
  at::autocast::clear_cache();
  CHECK_THAT(out.scalar_type() == at::kFloat, "autocast result dtype " << out.scalar_type());
  compare(r, "autocast_seed", out, 1e-5);
  compare(r, "autocast_sum", sum, 1e-5);
}

// Bad input raises c10::Error (ValueError where Python raises ValueError) naming the argument,
// and never modifies the inputs.
void bad_input(const Refs& r) {
  const at::Tensor X = get(r, "in/X"), Y = get(r, "in/Y"), V = get(r, "in/V");
  const at::Tensor X0 = X.clone(), Y0 = Y.clone();
  expect_error<c10::ValueError>("unknown metric", [&] { tp::pairwise_expression(X, Y, "no_such_metric"); },
                                {"no_such_metric"});
  expect_error<c10::ValueError>("unknown metric (pairwise)", [&] { tp::pairwise(X, Y, "no_such_metric"); },
                                {"no_such_metric"});
  tp::PairwiseOperationOptions bad_param;
  bad_param.comparison.gamma = 0.1;
  expect_error<c10::TypeError>("parameter the metric does not take",
                                [&] { tp::pairwise_expression(X, Y, "euclidean", true, bad_param); }, {"gamma"});
  expect_error("feature mismatch", [&] { tp::pairwise_expression(X, Y.narrow(1, 0, 2), "rbf"); },
               {"'y'", "features"});
  expect_error<c10::ValueError>("1-D X", [&] { tp::pairwise_expression(X[0], Y, "rbf"); }, {"'X'"});
  auto K = tp::pairwise_expression(X, Y, "rbf");
  expect_error("V with the wrong rows", [&] { K.matmul(V.narrow(0, 0, 2)); }, {"'v'", "rows"});
  expect_error<c10::ValueError>("dim out of range", [&] { K.sum(5); }, {"dim"});
  expect_error<c10::ValueError>("dim not one of the last two", [&] {
    tp::pairwise_expression(get(r, "in/Xb"), get(r, "in/Yb"), "sqeuclidean").sum(0);
  }, {"dim"});
  expect_error("k larger than the rows", [&] { K.topk(Y.size(0) + 1); }, {"k"});
  expect_error("bad chamfer reduction", [&] { tp::chamfer(X, Y, "sqeuclidean", "median"); }, {"reduction"});
  expect_error("integer X", [&] { tp::pairwise(X.to(at::kLong), Y, "euclidean"); }, {"'x'"});
  CHECK_THAT(at::equal(X, X0) && at::equal(Y, Y0), "inputs were modified");
}

const std::map<std::string, std::function<void(const Refs&)>>& cases() {
  static const std::map<std::string, std::function<void(const Refs&)>> c{
      {"seed", seed},   {"consumers", consumers}, {"params_and_batches", params_and_batches},
      {"sets", sets},   {"gradients", gradients}, {"autocast", autocast},
      {"bad_input", bad_input},
  };
  return c;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: " << argv[0] << " <refs.pt> [case ...]\ncases:";
    for (const auto& [name, f] : cases()) std::cerr << " " << name;
    std::cerr << "\n";
    return 2;
  }
  Refs refs;
  try {
    refs = load_refs(argv[1]);
  } catch (const std::exception& e) {
    std::cerr << "cannot load " << argv[1] << ": " << e.what() << "\n";
    return 2;
  }
  std::vector<std::string> selected(argv + 2, argv + argc);
  if (selected.empty())
    for (const auto& [name, f] : cases()) selected.push_back(name);
  int failed = 0, passed = 0;
  for (const auto& name : selected) {
    auto it = cases().find(name);
    if (it == cases().end()) {
      std::cerr << "unknown case " << name << "\n";
      return 2;
    }
    std::cout << "[ RUN  ] " << name << std::endl;
    try {
      it->second(refs);
      std::cout << "[  OK  ] " << name << std::endl;
      ++passed;
    } catch (const std::exception& e) {
      std::cout << "[ FAIL ] " << name << ": " << e.what() << std::endl;
      ++failed;
    }
  }
  std::cout << passed << " passed, " << failed << " failed" << std::endl;
  return failed == 0 ? 0 : 1;
}
