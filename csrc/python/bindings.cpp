// torchpair._C: typed Python entry points to public operators, for plain eager calls.
//
// torch.ops.torchpair.pairwise(...) is a boxed call: every schema argument (x, y, the metric
// and the fifteen optional metric parameters) is parsed from Python into an IValue and
// unboxed again for the kernel, about half the cost of a small call. These bindings call
// the same dispatcher operator unboxed (through the C++ API), so every dispatch key still
// applies (autograd, autocast, fake and Python dispatch modes, functorch); what they skip is
// __torch_function__ and tracing by torch.compile, which torchpair/_fast.py routes to
// torch.ops instead. This module links libtorch_python; libtorchpair.so does not.
#include <torch/extension.h>

#include <optional>
#include <string>

#include "torchpair/functional.h"

namespace {

at::Tensor pairwise(const at::Tensor& x, const std::optional<at::Tensor>& y, const std::string& metric) {
  return tp::pairwise(x, y, metric);
}

}  // namespace

PYBIND11_MODULE(_C, m) {
  m.doc() = "torchpair's typed entry points for plain eager calls (see torchpair/_fast.py)";
  m.def("pairwise", torch::wrap_pybind_function_no_gil(pairwise), pybind11::arg("x"),
        pybind11::arg("y"), pybind11::arg("metric"));
}
