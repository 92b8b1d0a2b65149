// Harness: XNNPACK's operator API (Debian trixie riscv64 libxnnpack0.20241108) (//peers).
//
// Which operator, per B layout (the zoo shapes' roles, peers/shapes.py):
// - B[N][K] (trans_b 1: a linear layer's weights, constant in the model): the fully-connected
//   operator, xnn_create_fully_connected_nc_f32 with B as its kernel ([output_channels]
//   [input_channels] is its own layout) and A as its [batch][input_channels] input. XNNPACK
//   packs the kernel when the operator is created, as TFLite's delegate does for constant
//   weights: that packing is outside the window.
// - B[K][N] (trans_b 0: an im2col convolution's matmul, whose B is the image, not a weight):
//   the batch-matrix-multiply operator with a dynamic B (xnn_create_batch_matrix_multiply_nc_f32,
//   one batch), which packs B into its workspace on every run: that packing is inside the
//   window, as it is in OpenBLAS's and BLIS's sgemm.
// Create, reshape and setup happen on the first (untimed) call of peer_main.c; the call in the
// window only runs xnn_run_operator. No threadpool: one thread, like the other peers.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/auxv.h>

#include "external/peers_riscv64/include/xnnpack/xnnpack.h"
#include "peers/harness/peer.h"

const char peer_name[] = "xnnpack";

static void check(enum xnn_status status, const char* what) {
  if (status != xnn_status_success) {
    fprintf(stderr, "xnnpack: %s failed: status %d\n", what, (int)status);
    exit(2);
  }
}

void peer_info(void) {
  check(xnn_initialize(NULL), "xnn_initialize");
  // XNNPACK's riscv hardware config enables its RVV kernels when AT_HWCAP has the V bit (it
  // then reads vlenb); which GEMM microkernel it picked is not exposed by the public API, so the
  // plugin's vector share and vector FMA count of the window say whether they ran.
  unsigned long hwcap = getauxval(AT_HWCAP);
  printf("info hwcap_v %d\n", (int)((hwcap >> ('V' - 'A')) & 1));
}

static xnn_operator_t op = NULL;
static void* workspace = NULL;
static const float* op_a = NULL;
static const float* op_b = NULL;
static float* op_c = NULL;

static void prepare(long m, long n, long k, int trans_b, const float* a, const float* b, float* c) {
  if (trans_b) {
    check(xnn_create_fully_connected_nc_f32((size_t)k, (size_t)n, (size_t)k, (size_t)n, b, NULL, -INFINITY,
                                            INFINITY, 0, NULL, NULL, &op),
          "xnn_create_fully_connected_nc_f32");
    check(xnn_reshape_fully_connected_nc_f32(op, (size_t)m, NULL), "xnn_reshape_fully_connected_nc_f32");
    check(xnn_setup_fully_connected_nc_f32(op, a, c), "xnn_setup_fully_connected_nc_f32");
    printf("info operator fully_connected_nc_f32 (B[N][K] packed at create)\n");
  } else {
    check(xnn_create_batch_matrix_multiply_nc_f32(0, &op), "xnn_create_batch_matrix_multiply_nc_f32");
    size_t batch = 1, size = 0, alignment = 0;
    check(xnn_reshape_batch_matrix_multiply_nc_f32(op, 1, &batch, &batch, (size_t)m, (size_t)k, (size_t)n, &size,
                                                   &alignment, NULL),
          "xnn_reshape_batch_matrix_multiply_nc_f32");
    if (size) {
      if (posix_memalign(&workspace, alignment < sizeof(void*) ? sizeof(void*) : alignment, size) != 0) {
        fprintf(stderr, "xnnpack: workspace: out of memory\n");
        exit(2);
      }
    }
    check(xnn_setup_batch_matrix_multiply_nc_f32(op, workspace, a, b, c), "xnn_setup_batch_matrix_multiply_nc_f32");
    printf("info operator batch_matrix_multiply_nc_f32 (B[K][N] packed in each run)\n");
  }
  op_a = a, op_b = b, op_c = c;
}

void peer_gemm(long m, long n, long k, int trans_b, const float* a, const float* b, float* c) {
  if (op == NULL) prepare(m, n, k, trans_b, a, b, c);
  if (a != op_a || b != op_b || c != op_c) {
    fprintf(stderr, "xnnpack: operands moved after setup\n");
    exit(2);
  }
  check(xnn_run_operator(op, NULL), "xnn_run_operator");
}
