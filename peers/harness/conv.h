// What each per-library convolution harness defines for conv_main.c (//peers, issue 58).
#ifndef PEERS_HARNESS_CONV_H_
#define PEERS_HARNESS_CONV_H_

// One 2-D convolution: input NHWC [n][h][w][c], filter [oc][kh][kw][c / groups] (XNNPACK's own
// order: per group its output channels, each [kh][kw][group input channels]), output NHWC
// [n][oh][ow][oc], zero padding, no bias. A depthwise convolution is groups == c == oc.
struct conv_shape {
  long n, h, w, c;
  long kh, kw, sh, sw;
  long pad_top, pad_left, pad_bottom, pad_right;
  long oc, groups;
  long oh, ow;  // derived by conv_main.c
};

// The library's name, as the report prints it.
extern const char peer_name[];

// Prints `info KEY VALUE` lines: what the library selected at run time.
void peer_info(void);

// out = conv(in, filter) for `s`; out overwritten.
void peer_conv(const struct conv_shape* s, const float* in, const float* filter, float* out);

#endif  // PEERS_HARNESS_CONV_H_
