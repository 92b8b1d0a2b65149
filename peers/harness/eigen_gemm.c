// Harness: Eigen 3.4's product of Map<Matrix> (eigen_kernel.cc, Debian trixie libeigen3-dev
// 3.4.0, compiled by clang-19 -O3 for rv64gcv) (//peers).
#include <stdio.h>

#include "peers/harness/peer.h"

const char* eigen_simd(void);
void eigen_gemm(long m, long n, long k, int trans_b, const float* a, const float* b, float* c);

const char peer_name[] = "eigen";

void peer_info(void) {
  printf("info kernel eigen_kernel.cc (Eigen 3.4.0, clang-19 -O3, rv64gcv)\n");
  printf("info simd %s\n", eigen_simd());  // Eigen's own packet ISA ("None": scalar packets)
}

void peer_gemm(long m, long n, long k, int trans_b, const float* a, const float* b, float* c) {
  eigen_gemm(m, n, k, trans_b, a, b, c);
}
