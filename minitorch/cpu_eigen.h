#pragma once
/// \file cpu_eigen.h
/// Eigen for the CPU kernels. GCC 12 reports false -Wmaybe-uninitialized warnings inside Eigen's
/// AVX-512 packet code (its masked intrinsics); they are silenced for the files that include this.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <Eigen/Core>
