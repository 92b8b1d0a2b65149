// Harness: the naive convolution loops (naive_conv_kernel.c), compiled alone by clang-19 -O3
// -ffast-math for rv64gcv: what the autovectorizer makes of a plain direct convolution (//peers).
#include "peers/harness/conv.h"

const char peer_name[] = "autovec";

void naive_conv(long n, long h, long w, long c, long kh, long kw, long sh, long sw, long pad_top, long pad_left,
                long oc, long groups, long oh, long ow, const float* in, const float* filter, float* out);

void peer_info(void) {}

void peer_conv(const struct conv_shape* s, const float* in, const float* filter, float* out) {
  naive_conv(s->n, s->h, s->w, s->c, s->kh, s->kw, s->sh, s->sw, s->pad_top, s->pad_left, s->oc, s->groups, s->oh,
             s->ow, in, filter, out);
}
