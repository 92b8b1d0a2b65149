// The known case behind the host code model's loop-nest pricing (perf/code_model/machine.py,
// nest_cycles): IREE's direct convolution keeps one accumulator per output vector through
// 3 x 3 taps x 8 input channels, 72 chained FMAs, then starts a new chain. Timed natively, an
// out-of-order core overlaps successive vectors' chains; llvm-mca's steady state of the
// innermost block alone runs one chain forever.
//
//   bazel run //bench:chain_overlap
//
// Prints the core's clock (a chain of 1-cycle adds), its FMA latency (a chain of FMAs), the
// cycles per output vector of the convolution's nest, and that over 72 back-to-back FMAs.
#include <immintrin.h>
#include <stdio.h>
#include <time.h>

static double seconds(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

static float input[15 * 15 * 8 + 64], filter[3 * 3 * 8 * 16], output[13 * 13 * 16];

// One output vector per iteration: 9 taps x 8 channels into one accumulator, then a store.
__attribute__((noinline)) static void conv(long vectors) {
  for (long o = 0; o < vectors; o++) {
    __m256 acc = _mm256_setzero_ps();
    const float* x = input + (o % 169) * 8;
    const float* f = filter + (o & 1) * 8;
    for (int kh = 0; kh < 3; kh++)
      for (int kw = 0; kw < 3; kw++)
#pragma GCC unroll 8  // as IREE's code: the 8 channels' FMAs unrolled in the innermost loop
        for (int c = 0; c < 8; c++)
          acc = _mm256_fmadd_ps(_mm256_broadcast_ss(x + (kh * 15 + kw) * 8 + c),
                                _mm256_loadu_ps(f + (kh * 3 + kw) * 128 + c * 16), acc);
    _mm256_storeu_ps(output + (o % 169) * 16 + (o & 1) * 8, acc);
  }
}

__attribute__((noinline)) static __m256 fma_chain(long n, __m256 a, __m256 m, __m256 c) {
  for (long i = 0; i < n; i++) a = _mm256_fmadd_ps(a, m, c);
  return a;
}

int main(void) {
  const long adds = 1000000000, fmas = 200000000, vectors = 338L * 20000;
  for (int i = 0; i < (int)(sizeof input / sizeof *input); i++) input[i] = 1e-3f * (i % 97);
  for (int i = 0; i < (int)(sizeof filter / sizeof *filter); i++) filter[i] = 1e-3f * (i % 89);
  double t0 = seconds();
  long s = 0;
  for (long i = 0; i < adds; i++) __asm__ volatile("add $1, %0" : "+r"(s));
  double ns_per_cycle = (seconds() - t0) / adds * 1e9;
  t0 = seconds();
  __m256 r = fma_chain(fmas, _mm256_set1_ps(0.5f), _mm256_set1_ps(0.999f), _mm256_set1_ps(1e-4f));
  double latency = (seconds() - t0) / fmas * 1e9 / ns_per_cycle;
  double best = 0;
  for (int round = 0; round < 5; round++) {
    t0 = seconds();
    conv(vectors);
    double cycles = (seconds() - t0) / vectors * 1e9 / ns_per_cycle;
    if (round == 0 || cycles < best) best = cycles;
  }
  printf("clock %.2f GHz; FMA latency %.2f cycles (checksum %g)\n", 1 / ns_per_cycle, latency,
         (double)r[0] + output[0]);
  printf("direct convolution: %.1f cycles per output vector; 72 FMAs back to back: %.1f; "
         "ratio %.2f\n", best, 72 * latency, best / (72 * latency));
  return 0;
}
