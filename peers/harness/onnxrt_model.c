// One whole model through ONNX Runtime's C API (//peers, issue 50, milestone 2).
//
//   onnxrt_model MODEL.onnx DIR [PROFILE_PREFIX]
//
// Loads MODEL.onnx into a single-threaded session (intra- and inter-op threads 1, sequential
// execution, ORT's default graph optimizations and CPU execution provider), reads each input i
// (f32, the static shape the model declares) from DIR/input_<i>.bin, runs the model once
// untimed (lazy binding, the arena's first allocations, weight prepacking on first use), then
// once more between the perf window markers of perf/qemu_plugin/insn_classes.c (the same
// markers as peer_main.c): the plugin counts, prices and cache-simulates only that Run. The
// outputs are bound to buffers allocated before the window and written to DIR/output_<i>.bin.
// With PROFILE_PREFIX, ORT's profiler is on (a run for "which kernels ran", never a measured
// one: profiling adds its own work to every Run) and its JSON file name is printed.
// Lines `info KEY VALUE` on stdout say what ran.
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "external/peers_riscv64/include/onnxruntime/onnxruntime_c_api.h"

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

enum { MAX_VALUES = 16, MAX_DIMS = 8 };

static const OrtApi* ort;

static void fail(const char* what, const char* why) {
  fprintf(stderr, "onnxrt: %s: %s\n", what, why);
  exit(2);
}

static void check(OrtStatus* status, const char* what) {
  if (status != NULL) {
    // The message is ORT's; one line of it.
    char line[512];
    snprintf(line, sizeof line, "%s", ort->GetErrorMessage(status));
    line[strcspn(line, "\n")] = 0;
    fail(what, line);
  }
}

typedef struct {
  char* name;
  int64_t dims[MAX_DIMS];
  size_t rank;
  size_t elements;
  float* data;
  OrtValue* value;
} Tensor;

// The name, static shape and element type of input or output i; f32 with static dims only.
static void describe(OrtSession* session, OrtAllocator* alloc, int is_input, size_t i, Tensor* t) {
  OrtTypeInfo* type = NULL;
  const OrtTensorTypeAndShapeInfo* info = NULL;
  ONNXTensorElementDataType element;
  if (is_input) {
    check(ort->SessionGetInputName(session, i, alloc, &t->name), "input name");
    check(ort->SessionGetInputTypeInfo(session, i, &type), "input type");
  } else {
    check(ort->SessionGetOutputName(session, i, alloc, &t->name), "output name");
    check(ort->SessionGetOutputTypeInfo(session, i, &type), "output type");
  }
  check(ort->CastTypeInfoToTensorInfo(type, &info), "tensor info");
  if (info == NULL) fail(t->name, "not a tensor");
  check(ort->GetTensorElementType(info, &element), "element type");
  if (element != ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT) fail(t->name, "not f32");
  check(ort->GetDimensionsCount(info, &t->rank), "rank");
  if (t->rank > MAX_DIMS) fail(t->name, "too many dimensions");
  check(ort->GetDimensions(info, t->dims, t->rank), "dimensions");
  t->elements = 1;
  for (size_t d = 0; d < t->rank; ++d) {
    if (t->dims[d] <= 0) fail(t->name, "dynamic dimension: export with static shapes");
    t->elements *= (size_t)t->dims[d];
  }
  ort->ReleaseTypeInfo(type);
  void* p = NULL;
  // 64-byte alignment, as IREE's allocator gives the dispatches' buffers and peer_main.c its own.
  if (posix_memalign(&p, 64, t->elements * sizeof(float) + 64) != 0) fail(t->name, "out of memory");
  memset(p, 0, t->elements * sizeof(float));
  t->data = (float*)p;
}

static void bind(OrtMemoryInfo* memory, Tensor* t) {
  check(ort->CreateTensorWithDataAsOrtValue(memory, t->data, t->elements * sizeof(float), t->dims, t->rank,
                                            ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT, &t->value),
        t->name);
}

static void path_of(char* out, size_t size, const char* dir, const char* kind, size_t i) {
  if ((size_t)snprintf(out, size, "%s/%s_%zu.bin", dir, kind, i) >= size) fail(dir, "path too long");
}

static void read_tensor(const char* dir, size_t i, Tensor* t) {
  char path[4096];
  path_of(path, sizeof path, dir, "input", i);
  FILE* f = fopen(path, "rb");
  if (!f) fail(path, strerror(errno));
  size_t got = fread(t->data, sizeof(float), t->elements, f);
  int extra = fgetc(f);
  fclose(f);
  if (got != t->elements || extra != EOF) fail(path, "wrong size for the model's input");
}

static void write_tensor(const char* dir, size_t i, const Tensor* t) {
  char path[4096];
  path_of(path, sizeof path, dir, "output", i);
  FILE* f = fopen(path, "wb");
  if (!f) fail(path, strerror(errno));
  if (fwrite(t->data, sizeof(float), t->elements, f) != t->elements || fclose(f) != 0) fail(path, "write failed");
}

static void print_shape(const char* kind, size_t i, const Tensor* t) {
  printf("info %s_%zu %s:", kind, i, t->name);
  for (size_t d = 0; d < t->rank; ++d) printf("%s%lld", d ? "x" : "", (long long)t->dims[d]);
  printf("\n");
}

int main(int argc, char** argv) {
  if (argc != 3 && argc != 4) {
    fprintf(stderr, "usage: %s MODEL.onnx DIR [PROFILE_PREFIX]\n", argv[0]);
    return 2;
  }
  const char* dir = argv[2];
  const char* profile = argc == 4 ? argv[3] : NULL;
  const OrtApiBase* base = OrtGetApiBase();
  ort = base->GetApi(ORT_API_VERSION);
  if (ort == NULL) fail("OrtGetApiBase", "this libonnxruntime does not have the C API the harness was built for");
  printf("info library onnxruntime\n");
  printf("info version %s\n", base->GetVersionString());

  OrtEnv* env = NULL;
  check(ort->CreateEnv(ORT_LOGGING_LEVEL_WARNING, "peers", &env), "CreateEnv");
  OrtSessionOptions* options = NULL;
  check(ort->CreateSessionOptions(&options), "CreateSessionOptions");
  check(ort->SetIntraOpNumThreads(options, 1), "SetIntraOpNumThreads");
  check(ort->SetInterOpNumThreads(options, 1), "SetInterOpNumThreads");
  check(ort->SetSessionExecutionMode(options, ORT_SEQUENTIAL), "SetSessionExecutionMode");
  check(ort->SetSessionGraphOptimizationLevel(options, ORT_ENABLE_ALL), "SetSessionGraphOptimizationLevel");
  if (profile) check(ort->EnableProfiling(options, profile), "EnableProfiling");
  OrtSession* session = NULL;
  check(ort->CreateSession(env, argv[1], options, &session), argv[1]);

  OrtAllocator* alloc = NULL;
  check(ort->GetAllocatorWithDefaultOptions(&alloc), "allocator");
  size_t n_in = 0, n_out = 0;
  check(ort->SessionGetInputCount(session, &n_in), "input count");
  check(ort->SessionGetOutputCount(session, &n_out), "output count");
  if (n_in == 0 || n_in > MAX_VALUES || n_out == 0 || n_out > MAX_VALUES) fail(argv[1], "unsupported number of inputs or outputs");
  Tensor in[MAX_VALUES], out[MAX_VALUES];
  memset(in, 0, sizeof in);
  memset(out, 0, sizeof out);
  OrtMemoryInfo* memory = NULL;
  check(ort->CreateCpuMemoryInfo(OrtArenaAllocator, OrtMemTypeDefault, &memory), "CreateCpuMemoryInfo");
  const char* in_names[MAX_VALUES];
  const char* out_names[MAX_VALUES];
  OrtValue* in_values[MAX_VALUES];
  OrtValue* out_values[MAX_VALUES];
  for (size_t i = 0; i < n_in; ++i) {
    describe(session, alloc, 1, i, &in[i]);
    read_tensor(dir, i, &in[i]);
    bind(memory, &in[i]);
    in_names[i] = in[i].name;
    in_values[i] = in[i].value;
    print_shape("input", i, &in[i]);
  }
  for (size_t i = 0; i < n_out; ++i) {
    describe(session, alloc, 0, i, &out[i]);
    bind(memory, &out[i]);
    out_names[i] = out[i].name;
    out_values[i] = out[i].value;
    print_shape("output", i, &out[i]);
  }
  fflush(stdout);

  // Untimed: ORT's first Run allocates its arena and prepacks weights on first use.
  check(ort->Run(session, NULL, in_names, (const OrtValue* const*)in_values, n_in, out_names, n_out, out_values),
        "Run (warm-up)");
  for (size_t i = 0; i < n_out; ++i) memset(out[i].data, 0, out[i].elements * sizeof(float));
  perf_window_begin();
  OrtStatus* status =
      ort->Run(session, NULL, in_names, (const OrtValue* const*)in_values, n_in, out_names, n_out, out_values);
  perf_window_end();
  check(status, "Run");
  for (size_t i = 0; i < n_out; ++i) write_tensor(dir, i, &out[i]);
  if (profile) {
    char* file = NULL;
    check(ort->SessionEndProfiling(session, alloc, &file), "SessionEndProfiling");
    printf("info profile %s\n", file);
  }
  fflush(stdout);
  return 0;
}
