// Runs an AOTInductor package (torch._inductor.aoti_compile_and_package) from C++.
//
//   aoti_run <package.pt2> <data.pt> [<libtorchpair.so>]
//
// data.pt (torch.save of a dict) holds the inputs "in0", "in1", ... and the expected output
// "expected". With a third argument the program dlopen()s the torchpair native library
// first, which registers the torchpair operators with the dispatcher; without it the package
// cannot run, and the program prints the loader's error (which names the missing operator).
// Built as aoti_run it does not link libtorchpair.so (LibTorch only). Built as aoti_run_linked
// (TORCHPAIR_LINKED) it links torchpair::torchpair and uses a tp:: symbol, so the library
// (and its operator registrations) is loaded at start-up on any linker.
#include <ATen/ATen.h>
#include <c10/util/Exception.h>
#include <dlfcn.h>
#include <torch/csrc/inductor/aoti_package/model_package_loader.h>
#include <torch/csrc/jit/serialization/pickle.h>

#include <fstream>
#include <iostream>
#include <iterator>
#include <map>
#include <string>
#include <vector>

#ifdef TORCHPAIR_LINKED
#include <torchpair/torchpair.h>
#endif

int main(int argc, char** argv) {
  if (argc < 3) {
    std::cerr << "usage: " << argv[0] << " <package.pt2> <data.pt> [<libtorchpair.so>]\n";
    return 2;
  }
#ifdef TORCHPAIR_LINKED
  std::cerr << "aoti_run: linked with torchpair (built against torch " << tp::built_torch_version() << ")\n";
#endif
  if (argc > 3) {
    if (dlopen(argv[3], RTLD_NOW | RTLD_GLOBAL) == nullptr) {
      std::cerr << "aoti_run: cannot load " << argv[3] << ": " << dlerror() << "\n";
      return 2;
    }
  }
  std::map<std::string, at::Tensor> data;
  {
    std::ifstream in(argv[2], std::ios::binary);
    std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    for (const auto& item : torch::jit::pickle_load(bytes).toGenericDict())
      data[item.key().toStringRef()] = item.value().toTensor();
  }
  std::vector<at::Tensor> inputs;
  for (int i = 0; data.count("in" + std::to_string(i)); ++i) inputs.push_back(data.at("in" + std::to_string(i)));
  try {
    torch::inductor::AOTIModelPackageLoader loader(argv[1]);
    const std::vector<at::Tensor> outputs = loader.run(inputs);
    const at::Tensor& expected = data.at("expected");
    if (outputs.size() != 1 || outputs[0].sizes() != expected.sizes()) {
      std::cerr << "aoti_run: unexpected outputs (" << outputs.size() << ")\n";
      return 1;
    }
    const double err = (outputs[0] - expected).abs().max().item<double>();
    const bool ok = at::allclose(outputs[0], expected, 1e-5, 1e-5);
    std::cout << (ok ? "OK" : "MISMATCH") << " shape " << outputs[0].sizes() << " max_abs_diff " << err << std::endl;
    return ok ? 0 : 1;
  } catch (const c10::Error& e) {
    std::cerr << "aoti_run: the package failed to run: " << e.what_without_backtrace() << std::endl;
    return 1;
  }
}
