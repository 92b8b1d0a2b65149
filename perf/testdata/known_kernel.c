// A hand-written RVV kernel with a known dynamic instruction count, run inside
// the same dispatch window hal_runner opens (see perf/qemu_plugin/insn_classes.c).
//
//   known_kernel ITERATIONS
//
// Inside the window it executes exactly, per iteration: vsetvli (e32, m2),
// vle32.v, vfmacc.vv, vse32.v, addi, bnez; then one `jal` to close the window:
// 6 * ITERATIONS + 1 instructions. perf/plugin_test.py checks the plugin's
// counts against these numbers.
#include <stdio.h>
#include <stdlib.h>

__attribute__((naked, noinline)) static void perf_window_begin(void) {
  __asm__ volatile("slti x0, x0, 0x5a1\n\tret");
}
__attribute__((naked, noinline)) static void perf_window_end(void) {
  __asm__ volatile("slti x0, x0, 0x5a0\n\tret");
}

// run_kernel(iterations, avl, src, dst)
__attribute__((naked, noinline)) static void run_kernel(long iterations, long avl,
                                                        const float* src, float* dst) {
  __asm__ volatile(
      ".option push\n\t"
      ".option norvc\n\t"
      "mv t6, ra\n\t"
      "jal ra, %0\n\t"
      "1:\n\t"
      "vsetvli t1, a1, e32, m2, ta, ma\n\t"
      "vle32.v v0, (a2)\n\t"
      "vfmacc.vv v4, v0, v0\n\t"
      "vse32.v v4, (a3)\n\t"
      "addi a0, a0, -1\n\t"
      "bnez a0, 1b\n\t"
      "jal ra, %1\n\t"
      "mv ra, t6\n\t"
      "ret\n\t"
      ".option pop\n\t"
      :
      : "i"(perf_window_begin), "i"(perf_window_end));
}

int main(int argc, char** argv) {
  long iterations = argc > 1 ? strtol(argv[1], NULL, 10) : 10;
  if (iterations < 1) {
    fprintf(stderr, "known_kernel: ITERATIONS must be >= 1\n");
    return 2;
  }
  static float src[16], dst[16];
  for (int i = 0; i < 16; ++i) src[i] = (float)i;
  run_kernel(iterations, 8, src, dst);
  printf("%g\n", (double)dst[7]);
  return 0;
}
