// Eigen 3.4's GEMM on row-major maps, compiled alone by clang-19 for rv64gcv (//peers:eigen_kernel_o).
//
// Eigen 3.4 has no RISC-V vector packet backend: its "packets" for float are scalars here, and
// whatever vector code the object holds is clang's (the SLP vectorizer turns the GEBP
// micro-kernel's 4 scalar columns into 4-lane vfmul.vv + vfadd.vv: no -ffast-math, so no
// contraction into vfmacc). eigen_simd() says what Eigen itself compiled for.
#include <Eigen/Core>

using RowMajor = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

extern "C" const char* eigen_simd(void) { return Eigen::SimdInstructionSetsInUse(); }

extern "C" void eigen_gemm(long m, long n, long k, int trans_b, const float* a, const float* b, float* c) {
  Eigen::Map<const RowMajor> A(a, m, k);
  Eigen::Map<RowMajor> C(c, m, n);
  if (trans_b) {
    C.noalias() = A * Eigen::Map<const RowMajor>(b, n, k).transpose();
  } else {
    C.noalias() = A * Eigen::Map<const RowMajor>(b, k, n);
  }
}
