// The shared driver of the per-library GEMM harnesses (//peers, issue 50).
//
//   <harness> M N K TRANSB A.bin B.bin C.bin
//
// C[M][N] = A[M][K] x B, all row-major f32, with B[K][N] (TRANSB 0, the layout of an im2col
// convolution's matmul) or B[N][K] (TRANSB 1, a linear layer's weights, linalg's
// `(d1, d2)` map). A and B are read from the files, C is written to C.bin. The library's
// GEMM runs once untimed (lazy binding, the library's own first-call set-up), then once
// more between the perf window markers of perf/qemu_plugin/insn_classes.c: the plugin
// counts, prices and cache-simulates only that call, exactly as it does one IREE dispatch
// run by runtime/hal_runner (empty caches when the window opens, dirty lines written back
// when it closes). Lines `info KEY VALUE` on stdout say what the library chose at run time.
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "peers/harness/peer.h"

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

static long dim(const char* text, const char* what) {
  char* end = NULL;
  errno = 0;
  long v = strtol(text, &end, 10);
  if (errno || !end || *end || v <= 0 || v > (1L << 20)) fail(what, "not a positive dimension");
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
  if (argc != 8) {
    fprintf(stderr, "usage: %s M N K TRANSB A.bin B.bin C.bin\n", argv[0]);
    return 2;
  }
  long m = dim(argv[1], "M"), n = dim(argv[2], "N"), k = dim(argv[3], "K");
  if (strcmp(argv[4], "0") != 0 && strcmp(argv[4], "1") != 0) fail("TRANSB", "must be 0 or 1");
  int trans_b = argv[4][0] == '1';
  float* a = buffer((size_t)m * k);
  float* b = buffer((size_t)k * n);
  float* c = buffer((size_t)m * n);
  read_file(argv[5], a, (size_t)m * k);
  read_file(argv[6], b, (size_t)k * n);
  printf("info library %s\n", peer_name);
  peer_info();
  peer_gemm(m, n, k, trans_b, a, b, c);  // untimed: lazy binding and first-call set-up
  memset(c, 0, (size_t)m * n * sizeof(float));
  perf_window_begin();
  peer_gemm(m, n, k, trans_b, a, b, c);
  perf_window_end();
  FILE* f = fopen(argv[7], "wb");
  if (!f) fail(argv[7], strerror(errno));
  if (fwrite(c, sizeof(float), (size_t)m * n, f) != (size_t)m * n || fclose(f) != 0) fail(argv[7], "write failed");
  fflush(stdout);
  return 0;
}
