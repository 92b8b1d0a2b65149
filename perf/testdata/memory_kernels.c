// Kernels whose data-memory traffic is known by arithmetic, run inside the
// dispatch window hal_runner opens (perf/qemu_plugin/insn_classes.c), to
// validate the plugin's cache simulation (perf/cache_sim_test.py).
//
//   memory_kernels copy N            vle32/vse32 copy of N floats, VLEN 128 m1
//   memory_kernels sweep BYTES PASSES  vle32 reads of a BYTES array, PASSES times
//   memory_kernels matmul N          C = A x B, N x N f32, scalar, naive
//   memory_kernels touch BYTES       one 4-byte store per 64-byte line of a BYTES array
//
// Every array is 4 KiB aligned and touched only inside the window, and the
// loops are written in assembly (copy, sweep) or keep everything in registers
// (matmul at -O2), so the window holds exactly the accesses described.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_BYTES (1 << 20)
static float g_a[MAX_BYTES / 4] __attribute__((aligned(4096)));
static float g_b[MAX_BYTES / 4] __attribute__((aligned(4096)));
static float g_c[MAX_BYTES / 4] __attribute__((aligned(4096)));

__attribute__((naked, noinline)) static void perf_window_begin(void) {
  __asm__ volatile("slti x0, x0, 0x5a1\n\tret");
}
__attribute__((naked, noinline)) static void perf_window_end(void) {
  __asm__ volatile("slti x0, x0, 0x5a0\n\tret");
}

// copy(n, src, dst): n a multiple of 4 (one m1 vector of e32 at VLEN 128).
__attribute__((naked, noinline)) static void copy(long n, const float* src, float* dst) {
  __asm__ volatile(
      "1:\n\t"
      "vsetvli t0, a0, e32, m1, ta, ma\n\t"
      "vle32.v v0, (a1)\n\t"
      "vse32.v v0, (a2)\n\t"
      "sub a0, a0, t0\n\t"
      "slli t1, t0, 2\n\t"
      "add a1, a1, t1\n\t"
      "add a2, a2, t1\n\t"
      "bnez a0, 1b\n\t"
      "ret\n\t");
}

// sweep(n, src, passes): reads n floats, `passes` times.
__attribute__((naked, noinline)) static void sweep(long n, const float* src, long passes) {
  __asm__ volatile(
      "2:\n\t"
      "mv t2, a0\n\t"
      "mv t3, a1\n\t"
      "1:\n\t"
      "vsetvli t0, t2, e32, m1, ta, ma\n\t"
      "vle32.v v0, (t3)\n\t"
      "sub t2, t2, t0\n\t"
      "slli t1, t0, 2\n\t"
      "add t3, t3, t1\n\t"
      "bnez t2, 1b\n\t"
      "addi a2, a2, -1\n\t"
      "bnez a2, 2b\n\t"
      "ret\n\t");
}

// touch(lines, dst): one `sw` per 64-byte line.
__attribute__((naked, noinline)) static void touch(long lines, float* dst) {
  __asm__ volatile(
      "1:\n\t"
      "sw zero, 0(a1)\n\t"
      "addi a1, a1, 64\n\t"
      "addi a0, a0, -1\n\t"
      "bnez a0, 1b\n\t"
      "ret\n\t");
}

__attribute__((noinline)) static void matmul(long n, const float* restrict a,
                                             const float* restrict b, float* restrict c) {
  for (long i = 0; i < n; ++i)
    for (long j = 0; j < n; ++j) {
      float acc = 0.0f;
      for (long k = 0; k < n; ++k) acc += a[i * n + k] * b[k * n + j];
      c[i * n + j] = acc;
    }
}

static long arg(int argc, char** argv, int i) {
  if (i >= argc) {
    fprintf(stderr, "memory_kernels: missing argument %d\n", i);
    exit(2);
  }
  return strtol(argv[i], NULL, 10);
}

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: memory_kernels copy N | sweep BYTES PASSES | matmul N | touch BYTES\n");
    return 2;
  }
  const char* kernel = argv[1];
  if (!strcmp(kernel, "copy")) {
    long n = arg(argc, argv, 2);
    if (n <= 0 || n % 4 || n * 4 > MAX_BYTES) return 2;
    perf_window_begin();
    copy(n, g_a, g_b);
    perf_window_end();
    printf("%g\n", (double)g_b[n - 1]);
  } else if (!strcmp(kernel, "sweep")) {
    long bytes = arg(argc, argv, 2), passes = arg(argc, argv, 3);
    if (bytes <= 0 || bytes % 16 || bytes > MAX_BYTES || passes <= 0) return 2;
    perf_window_begin();
    sweep(bytes / 4, g_a, passes);
    perf_window_end();
  } else if (!strcmp(kernel, "matmul")) {
    long n = arg(argc, argv, 2);
    if (n <= 0 || n * n * 4 > MAX_BYTES) return 2;
    perf_window_begin();
    matmul(n, g_a, g_b, g_c);
    perf_window_end();
    printf("%g\n", (double)g_c[n * n - 1]);
  } else if (!strcmp(kernel, "touch")) {
    long bytes = arg(argc, argv, 2);
    if (bytes <= 0 || bytes % 64 || bytes > MAX_BYTES) return 2;
    perf_window_begin();
    touch(bytes / 64, g_c);
    perf_window_end();
  } else {
    fprintf(stderr, "memory_kernels: unknown kernel %s\n", kernel);
    return 2;
  }
  return 0;
}
