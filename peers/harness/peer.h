// What each per-library GEMM harness defines for peer_main.c (//peers).
#ifndef PEERS_HARNESS_PEER_H_
#define PEERS_HARNESS_PEER_H_

// The library's name, as the report prints it.
extern const char peer_name[];

// Prints `info KEY VALUE` lines: what the library selected at run time (kernel, core type).
void peer_info(void);

// C[m][n] = A[m][k] x B (B[k][n], or B[n][k] when trans_b), row-major f32, C overwritten.
void peer_gemm(long m, long n, long k, int trans_b, const float* a, const float* b, float* c);

#endif  // PEERS_HARNESS_PEER_H_
