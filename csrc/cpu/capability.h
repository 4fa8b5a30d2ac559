#pragma once
// The CPU capability of this process and the one mechanism that picks a per-capability copy
// of a function (ATen's DispatchStub idea, without its registration step).
//
// Inner loops that are vectorized are compiled once per capability (DEFAULT, AVX2, AVX512)
// into the namespaces isa_DEFAULT / isa_AVX2 / isa_AVX512 (CMakeLists.txt). A caller picks
// the copy for this machine with TP_CPU_STUB(fn), which is an index into a three-entry table
// built at compile time: no string compares, no per-call feature tests.
#include <cstdint>

namespace tp::cpu {

// Ordered: a capability includes every lesser one.
enum class Capability : int { kDefault = 0, kAvx2 = 1, kAvx512 = 2 };

// The best the machine supports, unless ATEN_CPU_CAPABILITY (the variable ATen itself
// honours) asks for less. Detected once per process.
Capability capability();
// "DEFAULT", "AVX2" or "AVX512".
const char* capability_name(Capability c);
inline const char* cpu_capability_name() { return capability_name(capability()); }

// One function pointer per capability; `get(c)` is the copy compiled for c.
template <typename Fn>
struct Stub {
  Fn copies[3];
  Fn get(Capability c) const { return copies[static_cast<int>(c)]; }
  Fn get() const { return get(capability()); }
};

}  // namespace tp::cpu

// The per-capability copies of `fn` (declared in the three isa_ namespaces of the enclosing
// namespace). Overloaded names need a cast to pick one overload first.
#define TP_CPU_STUB(fn) \
  (::tp::cpu::Stub<decltype(&isa_DEFAULT::fn)>{{&isa_DEFAULT::fn, &isa_AVX2::fn, &isa_AVX512::fn}})

// Inside a per-capability translation unit: the namespace (isa_DEFAULT, isa_AVX2, isa_AVX512)
// its entry points are defined in.
#define TP_CAT_(a, b) a##b
#define TP_CAT(a, b) TP_CAT_(a, b)
#define TP_ISA_NAMESPACE TP_CAT(isa_, CPU_CAPABILITY)
