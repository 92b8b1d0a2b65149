// A direct 2-D convolution as a user writes it (layouts in conv.h): per output element, the dot
// product of its window and its filter, input channels innermost (contiguous in both). Compiled
// alone by clang-19 -O3 -ffast-math for rv64gcv (peers/BUILD.bazel): nothing is hand-tuned.
void naive_conv(long n, long h, long w, long c, long kh, long kw, long sh, long sw, long pad_top, long pad_left,
                long oc, long groups, long oh, long ow, const float* in, const float* filter, float* out) {
  long gic = c / groups, goc = oc / groups;
  for (long b = 0; b < n; b++)
    for (long y = 0; y < oh; y++)
      for (long x = 0; x < ow; x++)
        for (long o = 0; o < oc; o++) {
          long g = o / goc;
          float acc = 0.0f;
          for (long i = 0; i < kh; i++) {
            long iy = y * sh + i - pad_top;
            if (iy < 0 || iy >= h) continue;
            for (long j = 0; j < kw; j++) {
              long ix = x * sw + j - pad_left;
              if (ix < 0 || ix >= w) continue;
              const float* a = in + ((b * h + iy) * w + ix) * c + g * gic;
              const float* f = filter + ((o * kh + i) * kw + j) * gic;
              for (long k = 0; k < gic; k++) acc += a[k] * f[k];
            }
          }
          out[((b * oh + y) * ow + x) * oc + o] = acc;
        }
}
