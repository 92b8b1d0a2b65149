// Naive GEMM loops, as a C programmer writes them for row-major data: no blocking, no
// intrinsics, no includes. Compiled alone by clang-19 (@clang19) for rv64gcv with the
// target's VLEN (peers/BUILD.bazel), so whatever vector code runs is the LLVM
// autovectorizer's. B[k][n]: the i-k-j order, whose inner loop is an axpy over a row of B
// and C (vectorizes without reassociating). B[n][k]: a dot product per output, a reduction
// over k (the autovectorizer needs -ffast-math's reassociation for it; see BUILD).
void naive_gemm_nn(long m, long n, long k, const float* restrict a, const float* restrict b,
                   float* restrict c) {
  for (long i = 0; i < m; ++i) {
    for (long j = 0; j < n; ++j) c[i * n + j] = 0.0f;
    for (long p = 0; p < k; ++p) {
      float aip = a[i * k + p];
      for (long j = 0; j < n; ++j) c[i * n + j] += aip * b[p * n + j];
    }
  }
}

void naive_gemm_nt(long m, long n, long k, const float* restrict a, const float* restrict b,
                   float* restrict c) {
  for (long i = 0; i < m; ++i) {
    for (long j = 0; j < n; ++j) {
      float acc = 0.0f;
      for (long p = 0; p < k; ++p) acc += a[i * k + p] * b[j * k + p];
      c[i * n + j] = acc;
    }
  }
}
