// Harness: naive C loops (naive_kernel.c) autovectorized by clang-19 (//peers).
#include <stdio.h>

#include "peers/harness/peer.h"

void naive_gemm_nn(long m, long n, long k, const float* a, const float* b, float* c);
void naive_gemm_nt(long m, long n, long k, const float* a, const float* b, float* c);

const char peer_name[] = "autovec";

void peer_info(void) { printf("info kernel naive_kernel.c (clang-19 -O3 -ffast-math, rv64gcv)\n"); }

void peer_gemm(long m, long n, long k, int trans_b, const float* a, const float* b, float* c) {
  if (trans_b) {
    naive_gemm_nt(m, n, k, a, b, c);
  } else {
    naive_gemm_nn(m, n, k, a, b, c);
  }
}
