// torchpair._C: typed Python entry points to public operators. They call the dispatcher
// operator unboxed, through the C++ API, instead of the boxed torch.ops call; which calls
// may take them, and why, is torchpair/_fast.py. This module links libtorch_python;
// libtorchpair.so does not.
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
