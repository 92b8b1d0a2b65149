// Harness: BLIS's typed API bli_sgemm (Debian trixie riscv64 libblis4-serial 1.1) (//peers).
#include <stdio.h>

#include "external/peers_riscv64/include/blis/blis.h"
#include "peers/harness/peer.h"

const char peer_name[] = "blis";

void peer_info(void) {
  // BLIS picks a configuration (its kernels and blocksizes) at run time among those built in.
  printf("info version %s\n", bli_info_get_version_str());
  printf("info arch %s\n", bli_arch_string(bli_arch_query_id()));
}

void peer_gemm(long m, long n, long k, int trans_b, const float* a, const float* b, float* c) {
  float one = 1.0f, zero = 0.0f;
  // Row-major: row stride = row length, column stride 1. B[n][k] read as its transpose.
  bli_sgemm(BLIS_NO_TRANSPOSE, trans_b ? BLIS_TRANSPOSE : BLIS_NO_TRANSPOSE, (dim_t)m, (dim_t)n, (dim_t)k,
            &one, (float*)a, (inc_t)k, 1, (float*)b, trans_b ? (inc_t)k : (inc_t)n, 1, &zero, c, (inc_t)n, 1);
}
