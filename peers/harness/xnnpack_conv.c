// Harness: XNNPACK's NHWC convolution operator (Debian trixie riscv64 libxnnpack0.20241108)
// (//peers, issue 58): xnn_create_convolution2d_nhwc_f32 with the filter as its kernel (its own
// [groups][group output channels][kh][kw][group input channels] order), no bias, no clamp. A
// depthwise convolution (groups == channels, one input and output channel per group) runs its
// depthwise microkernels. The filter is packed when the operator is created, as TFLite's
// delegate does for constant weights: outside the window. Create, reshape and setup happen on
// the first (untimed) call of conv_main.c; the window runs xnn_run_operator alone. One thread.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/auxv.h>

#include "external/peers_riscv64/include/xnnpack/xnnpack.h"
#include "peers/harness/conv.h"

const char peer_name[] = "xnnpack";

static void check(enum xnn_status status, const char* what) {
  if (status != xnn_status_success) {
    fprintf(stderr, "xnnpack: %s failed: status %d\n", what, (int)status);
    exit(2);
  }
}

void peer_info(void) {
  check(xnn_initialize(NULL), "xnn_initialize");
  unsigned long hwcap = getauxval(AT_HWCAP);
  printf("info hwcap_v %d\n", (int)((hwcap >> ('V' - 'A')) & 1));
}

static xnn_operator_t op = NULL;
static void* workspace = NULL;
static const float* op_in = NULL;
static float* op_out = NULL;

static void prepare(const struct conv_shape* s, const float* in, const float* filter, float* out) {
  check(xnn_create_convolution2d_nhwc_f32((uint32_t)s->pad_top, (uint32_t)s->pad_right, (uint32_t)s->pad_bottom,
                                          (uint32_t)s->pad_left, (uint32_t)s->kh, (uint32_t)s->kw, (uint32_t)s->sh,
                                          (uint32_t)s->sw, 1, 1, (uint32_t)s->groups, (size_t)(s->c / s->groups),
                                          (size_t)(s->oc / s->groups), (size_t)s->c, (size_t)s->oc, filter, NULL,
                                          -INFINITY, INFINITY, 0, NULL, NULL, &op),
        "xnn_create_convolution2d_nhwc_f32");
  size_t size = 0, alignment = 0, oh = 0, ow = 0;
  check(xnn_reshape_convolution2d_nhwc_f32(op, (size_t)s->n, (size_t)s->h, (size_t)s->w, &size, &alignment, &oh, &ow,
                                           NULL),
        "xnn_reshape_convolution2d_nhwc_f32");
  if ((long)oh != s->oh || (long)ow != s->ow) {
    fprintf(stderr, "xnnpack: output %zux%zu, expected %ldx%ld\n", oh, ow, s->oh, s->ow);
    exit(2);
  }
  if (size && posix_memalign(&workspace, alignment < sizeof(void*) ? sizeof(void*) : alignment, size) != 0) {
    fprintf(stderr, "xnnpack: workspace: out of memory\n");
    exit(2);
  }
  check(xnn_setup_convolution2d_nhwc_f32(op, workspace, in, out), "xnn_setup_convolution2d_nhwc_f32");
  printf("info operator convolution2d_nhwc_f32 (%s, filter packed at create)\n",
         s->groups > 1 && s->groups == s->c && s->oc == s->c ? "depthwise" : "regular");
  op_in = in, op_out = out;
}

void peer_conv(const struct conv_shape* s, const float* in, const float* filter, float* out) {
  if (op == NULL) prepare(s, in, filter, out);
  if (in != op_in || out != op_out) {
    fprintf(stderr, "xnnpack: operands moved after setup\n");
    exit(2);
  }
  check(xnn_run_operator(op, NULL), "xnn_run_operator");
}
