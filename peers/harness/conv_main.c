// The shared driver of the per-library convolution harnesses (//peers, issue 58).
//
//   <harness> N H W C KH KW SH SW PAD_TOP PAD_LEFT PAD_BOTTOM PAD_RIGHT OC GROUPS IN.bin FILTER.bin OUT.bin
//
// Layouts in conv.h. As peer_main.c does for GEMMs: the convolution runs once untimed (lazy
// binding, the library's first-call set-up), then once more between the perf window markers of
// perf/qemu_plugin/insn_classes.c, which count, price and cache-simulate only that call, as
// they do one IREE dispatch. Lines `info KEY VALUE` on stdout say what the library chose.
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "peers/harness/conv.h"

#if defined(__riscv)
__attribute__((naked, noinline)) static void perf_window_begin(void) {
  __asm__ volatile("slti x0, x0, 0x5a1\n\tret");
}
__attribute__((naked, noinline)) static void perf_window_end(void) {
  __asm__ volatile("slti x0, x0, 0x5a0\n\tret");
}
#else
static void perf_window_begin(void) {}
static void perf_window_end(void) {}
#endif

static void fail(const char* what, const char* why) {
  fprintf(stderr, "%s: %s: %s\n", peer_name, what, why);
  exit(2);
}

static long number(const char* text, const char* what, long least) {
  char* end = NULL;
  errno = 0;
  long v = strtol(text, &end, 10);
  if (errno || !end || *end || v < least || v > (1L << 20)) fail(what, least ? "not a positive number" : "not a number >= 0");
  return v;
}

static float* buffer(size_t floats) {
  void* p = NULL;
  // 64-byte alignment, as IREE's allocator gives the dispatches' buffers.
  if (posix_memalign(&p, 64, floats * sizeof(float) + 64) != 0) fail("buffer", "out of memory");
  memset(p, 0, floats * sizeof(float));
  return (float*)p;
}

static void read_file(const char* path, float* out, size_t floats) {
  FILE* f = fopen(path, "rb");
  if (!f) fail(path, strerror(errno));
  size_t got = fread(out, sizeof(float), floats, f);
  int extra = fgetc(f);
  fclose(f);
  if (got != floats || extra != EOF) fail(path, "wrong size for the shape");
}

int main(int argc, char** argv) {
  if (argc != 18) {
    fprintf(stderr, "usage: %s N H W C KH KW SH SW PAD_TOP PAD_LEFT PAD_BOTTOM PAD_RIGHT OC GROUPS IN FILTER OUT\n",
            argv[0]);
    return 2;
  }
  struct conv_shape s;
  s.n = number(argv[1], "N", 1), s.h = number(argv[2], "H", 1), s.w = number(argv[3], "W", 1);
  s.c = number(argv[4], "C", 1), s.kh = number(argv[5], "KH", 1), s.kw = number(argv[6], "KW", 1);
  s.sh = number(argv[7], "SH", 1), s.sw = number(argv[8], "SW", 1);
  s.pad_top = number(argv[9], "PAD_TOP", 0), s.pad_left = number(argv[10], "PAD_LEFT", 0);
  s.pad_bottom = number(argv[11], "PAD_BOTTOM", 0), s.pad_right = number(argv[12], "PAD_RIGHT", 0);
  s.oc = number(argv[13], "OC", 1), s.groups = number(argv[14], "GROUPS", 1);
  if (s.c % s.groups || s.oc % s.groups) fail("GROUPS", "does not divide C and OC");
  long ph = s.h + s.pad_top + s.pad_bottom, pw = s.w + s.pad_left + s.pad_right;
  if (ph < s.kh || pw < s.kw) fail("KH/KW", "larger than the padded input");
  s.oh = (ph - s.kh) / s.sh + 1, s.ow = (pw - s.kw) / s.sw + 1;
  size_t in_n = (size_t)(s.n * s.h * s.w * s.c), f_n = (size_t)(s.oc * s.kh * s.kw * (s.c / s.groups));
  size_t out_n = (size_t)(s.n * s.oh * s.ow * s.oc);
  float* in = buffer(in_n);
  float* filter = buffer(f_n);
  float* out = buffer(out_n);
  read_file(argv[15], in, in_n);
  read_file(argv[16], filter, f_n);
  printf("info library %s\n", peer_name);
  peer_info();
  peer_conv(&s, in, filter, out);  // untimed: lazy binding and first-call set-up
  memset(out, 0, out_n * sizeof(float));
  perf_window_begin();
  peer_conv(&s, in, filter, out);
  perf_window_end();
  FILE* f = fopen(argv[17], "wb");
  if (!f) fail(argv[17], strerror(errno));
  if (fwrite(out, sizeof(float), out_n, f) != out_n || fclose(f) != 0) fail(argv[17], "write failed");
  fflush(stdout);
  return 0;
}
