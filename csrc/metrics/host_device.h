#pragma once
// TP_HOST_DEVICE marks the functions of the metric definitions and of the scalar math
// vocabulary (csrc/metrics/) that device code may call: C10_HOST_DEVICE (__host__ __device__)
// when nvcc compiles the translation unit, nothing otherwise, so host builds see plain
// inline functions. Code under it calls no host-only function: no std:: math (math.h maps
// the scalar functions), no std::vector, no TORCH_CHECK, no exceptions, no ATen.
#include <c10/macros/Macros.h>

#if defined(__CUDACC__)
#define TP_HOST_DEVICE C10_HOST_DEVICE
#else
#define TP_HOST_DEVICE
#endif

// TP_SCALAR_MATH_ONLY: the math vocabulary without its host-only overloads (Vectorized and
// Tensor, metrics/math_host.h). nvcc translation units always get it; a host translation unit
// that evaluates the scalar path alone may define it to skip ATen.
#if defined(__CUDACC__) && !defined(TP_SCALAR_MATH_ONLY)
#define TP_SCALAR_MATH_ONLY
#endif
