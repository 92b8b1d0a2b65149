// Harness: OpenBLAS's cblas_sgemm (Debian trixie riscv64 libopenblas0-serial 0.3.29) (//peers).
#include <stdio.h>

#include "external/peers_riscv64/include/openblas/cblas.h"
#include "peers/harness/peer.h"

const char peer_name[] = "openblas";

void peer_info(void) {
  // A DYNAMIC_ARCH build picks its kernels at load time from the CPU it finds (under qemu:
  // the V extension and VLEN qemu emulates).
  printf("info corename %s\n", openblas_get_corename());
  printf("info config %s\n", openblas_get_config());
  printf("info threads %d\n", openblas_get_num_threads());
}

void peer_gemm(long m, long n, long k, int trans_b, const float* a, const float* b, float* c) {
  cblas_sgemm(CblasRowMajor, CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans, (blasint)m, (blasint)n,
              (blasint)k, 1.0f, a, (blasint)k, b, trans_b ? (blasint)k : (blasint)n, 0.0f, c, (blasint)n);
}
