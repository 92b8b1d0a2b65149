// hal_runner: runs one export of an IREE HAL executable library (the system
// shared-library form, from --iree-llvmcpu-link-embedded=false) over a whole
// workgroup grid, with binding buffers read from files.
//
//   hal_runner LIB.so --info
//   hal_runner LIB.so --export N --workgroup-count X,Y,Z
//              [--constants C0,C1,... | --constants-file FILE]
//              --binding FILE|zeros:NBYTES ... [--output I=FILE ...]
//              [--binding-offsets O0,O1,...]
//
// Bindings are given in the export's binding order; each buffer is the file's
// bytes (or NBYTES zero bytes). After the dispatch, binding I is written to
// FILE for every --output. --binding-offsets places binding I's buffer OI bytes
// (a multiple of 64) past its 64-byte aligned allocation: perf measures a dispatch
// over several such placements (perf/measure.py). Constants are 32-bit words (decimal or 0x hex); a
// constants file holds them separated by whitespace.
//
// Exit codes: 0 ok, 2 usage, 3 not an IREE HAL executable library,
// 4 unsupported ABI version, 5 export index out of range, 6 I/O or argument
// mismatch, 7 the dispatch reported failure.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtime/hal_runner/hal_abi.h"

enum {
  EXIT_USAGE = 2,
  EXIT_NOT_EXECUTABLE = 3,
  EXIT_ABI_VERSION = 4,
  EXIT_EXPORT_RANGE = 5,
  EXIT_IO = 6,
  EXIT_DISPATCH = 7,
};

#define MAX_BINDINGS 64
#define MAX_CONSTANTS 256
#define MAX_OUTPUTS 64

static const char* g_library_path = "";

static void die(int code, const char* fmt, ...) {
  va_list args;
  va_start(args, fmt);
  fprintf(stderr, "hal_runner: %s: ", g_library_path);
  vfprintf(stderr, fmt, args);
  fputc('\n', stderr);
  va_end(args);
  exit(code);
}

// The system-library form may reach the runtime only through imports. We
// provide no import functions; the thunk still forwards correctly so a weak
// (optional) import that the library tests for NULL is never called.
static int import_thunk(hal_import_fn_t fn, void* params, void* context,
                        void* reserved) {
  if (!fn) return -1;
  return fn(params, context, reserved);
}

// The dispatch window for perf/qemu_plugin/insn_classes.c: on riscv64 two
// naked functions whose first instruction is a HINT (a write to x0, an
// architectural no-op) bracket the workgroup loop, so the plugin counts
// exactly the instructions the dispatch executes. Elsewhere they do nothing.
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

static void* aligned_buffer(size_t size) {
  void* ptr = NULL;
  // 64-byte alignment, as IREE's allocator gives buffers; never size 0.
  if (posix_memalign(&ptr, 64, size ? size : 64) != 0) return NULL;
  memset(ptr, 0, size ? size : 64);
  return ptr;
}

// Plain read(2), not stdio: a FILE's buffer is malloc'ed at the size of the host file
// system's st_blksize, which qemu passes to the guest, so the guest heap (and the
// addresses the cache simulation sees) would move with the machine's file system.
static void* read_file(const char* path, size_t* out_size, size_t offset) {
  int fd = open(path, O_RDONLY);
  if (fd < 0) die(EXIT_IO, "cannot open binding file %s: %s", path, strerror(errno));
  off_t size = lseek(fd, 0, SEEK_END);
  if (size < 0 || lseek(fd, 0, SEEK_SET) != 0) die(EXIT_IO, "cannot size %s", path);
  char* base = aligned_buffer((size_t)size + offset);
  if (!base) die(EXIT_IO, "out of memory reading %s", path);
  void* data = base + offset;
  size_t done = 0;
  while (done < (size_t)size) {
    ssize_t got = read(fd, (char*)data + done, (size_t)size - done);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) die(EXIT_IO, "short read from %s", path);
    done += (size_t)got;
  }
  close(fd);
  *out_size = (size_t)size;
  return data;
}

static void write_file_atomic(const char* path, const void* data, size_t size) {
  size_t len = strlen(path);
  char* tmp = malloc(len + 16);
  if (!tmp) die(EXIT_IO, "out of memory");
  snprintf(tmp, len + 16, "%s.tmp", path);
  FILE* f = fopen(tmp, "wb");
  if (!f) die(EXIT_IO, "cannot write %s: %s", tmp, strerror(errno));
  if (size && fwrite(data, 1, size, f) != size) {
    fclose(f);
    remove(tmp);
    die(EXIT_IO, "short write to %s", tmp);
  }
  if (fclose(f) != 0 || rename(tmp, path) != 0) {
    remove(tmp);
    die(EXIT_IO, "cannot write %s: %s", path, strerror(errno));
  }
  free(tmp);
}

static uint32_t parse_u32(const char* text, const char* what) {
  char* end = NULL;
  errno = 0;
  long long value = strtoll(text, &end, 0);
  if (errno || end == text || *end != '\0' || value < INT32_MIN ||
      value > (long long)UINT32_MAX)
    die(EXIT_USAGE, "bad %s '%s': expected a 32-bit integer", what, text);
  return (uint32_t)value;
}

// Splits "a,b,c" into at most |max| u32 values; returns the count.
static int parse_list(const char* text, uint32_t* out, int max,
                      const char* what) {
  int count = 0;
  char* copy = strdup(text);
  char* save = NULL;
  for (char* tok = strtok_r(copy, ",", &save); tok;
       tok = strtok_r(NULL, ",", &save)) {
    if (count == max) die(EXIT_USAGE, "too many %s values (max %d)", what, max);
    out[count++] = parse_u32(tok, what);
  }
  free(copy);
  return count;
}

static int read_constants_file(const char* path, uint32_t* out, int max) {
  FILE* f = fopen(path, "r");
  if (!f) die(EXIT_IO, "cannot open constants file %s: %s", path, strerror(errno));
  setvbuf(f, NULL, _IONBF, 0);  // no st_blksize-sized buffer on the heap (see read_file)
  char word[64];
  int count = 0;
  while (fscanf(f, "%63s", word) == 1) {
    if (count == max) die(EXIT_USAGE, "too many constants in %s (max %d)", path, max);
    out[count++] = parse_u32(word, "constant");
  }
  fclose(f);
  return count;
}

static const hal_library_t* load_library(const char* path) {
  void* handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!handle)
    die(EXIT_NOT_EXECUTABLE, "not a loadable shared library: %s", dlerror());
  hal_query_fn_t query = (hal_query_fn_t)dlsym(handle, HAL_ABI_QUERY_SYMBOL);
  if (!query)
    die(EXIT_NOT_EXECUTABLE,
        "not an IREE HAL executable library (no %s symbol)",
        HAL_ABI_QUERY_SYMBOL);
  static hal_environment_t probe_env;  // zeroed; only used for the query
  probe_env.import_thunk = import_thunk;
  const hal_library_header_t** header = query(HAL_ABI_VERSION, &probe_env);
  if (!header) {
    // Find which version, if any, the library does answer to.
    for (uint32_t v = 0; v < 256; ++v) {
      if (v == HAL_ABI_VERSION) continue;
      const hal_library_header_t** other = query(v, &probe_env);
      if (other && *other)
        die(EXIT_ABI_VERSION,
            "HAL executable ABI version %u, this runner supports only %u",
            (*other)->version, HAL_ABI_VERSION);
    }
    die(EXIT_ABI_VERSION,
        "library refuses HAL executable ABI version %u (and every version "
        "below 256)", HAL_ABI_VERSION);
  }
  if ((*header)->version != HAL_ABI_VERSION)
    die(EXIT_ABI_VERSION,
        "library header reports ABI version %u, this runner supports only %u",
        (*header)->version, HAL_ABI_VERSION);
  if ((*header)->sanitizer != 0)
    die(EXIT_ABI_VERSION, "library built for sanitizer kind %d, not supported",
        (*header)->sanitizer);
  return (const hal_library_t*)header;
}

static void print_info(const hal_library_t* lib) {
  printf("library %s version %u exports %u imports %u constants %u\n",
         lib->header->name ? lib->header->name : "?", lib->header->version,
         lib->exports.count, lib->imports.count, lib->constants.count);
  for (uint32_t i = 0; i < lib->imports.count; ++i)
    printf("import %u %s\n", i,
           lib->imports.symbols ? lib->imports.symbols[i] : "?");
  for (uint32_t i = 0; i < lib->exports.count; ++i) {
    const hal_dispatch_attrs_t* a =
        lib->exports.attrs ? &lib->exports.attrs[i] : NULL;
    printf("export %u name=%s constants=%d bindings=%d workgroup_size=%u,%u,%u "
           "local_memory_pages=%u\n",
           i, lib->exports.names ? lib->exports.names[i] : "?",
           a ? a->constant_count : -1, a ? a->binding_count : -1,
           a ? a->workgroup_size_x : 1, a ? a->workgroup_size_y : 1,
           a ? a->workgroup_size_z : 1, a ? a->local_memory_pages : 0);
  }
}

static void usage(void) {
  fprintf(stderr,
          "usage: hal_runner LIB.so --info\n"
          "       hal_runner LIB.so --export N --workgroup-count X,Y,Z\n"
          "           [--constants C0,C1,...|--constants-file FILE]\n"
          "           --binding FILE|zeros:NBYTES ... [--output I=FILE ...]\n"
          "           [--binding-offsets O0,O1,...]\n");
  exit(EXIT_USAGE);
}

int main(int argc, char** argv) {
  if (argc < 3) usage();
  g_library_path = argv[1];
  int info = 0;
  long export_index = -1;
  int have_count = 0;
  uint32_t count_xyz[3] = {1, 1, 1};
  uint32_t constants[MAX_CONSTANTS];
  int constant_count = 0;
  const char* binding_args[MAX_BINDINGS];
  uint32_t binding_offsets[MAX_BINDINGS] = {0};
  int offset_count = 0;
  int binding_count = 0;
  int output_index[MAX_OUTPUTS];
  const char* output_path[MAX_OUTPUTS];
  int output_count = 0;

  for (int i = 2; i < argc; ++i) {
    const char* arg = argv[i];
    const char* value = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(arg, "--info")) {
      info = 1;
      continue;
    }
    if (!value) usage();
    ++i;
    if (!strcmp(arg, "--export")) {
      char* end = NULL;
      export_index = strtol(value, &end, 10);
      if (end == value || *end || export_index < 0)
        die(EXIT_USAGE, "bad --export '%s': expected a non-negative index", value);
    } else if (!strcmp(arg, "--workgroup-count")) {
      if (parse_list(value, count_xyz, 3, "workgroup count") != 3)
        die(EXIT_USAGE, "--workgroup-count needs X,Y,Z");
      have_count = 1;
    } else if (!strcmp(arg, "--constants")) {
      constant_count = parse_list(value, constants, MAX_CONSTANTS, "constant");
    } else if (!strcmp(arg, "--constants-file")) {
      constant_count = read_constants_file(value, constants, MAX_CONSTANTS);
    } else if (!strcmp(arg, "--binding-offsets")) {
      offset_count = parse_list(value, binding_offsets, MAX_BINDINGS, "binding offset");
      for (int b = 0; b < offset_count; ++b)
        if (binding_offsets[b] % 64)
          die(EXIT_USAGE, "bad --binding-offsets '%s': %u is not a multiple of 64", value,
              binding_offsets[b]);
    } else if (!strcmp(arg, "--binding")) {
      if (binding_count == MAX_BINDINGS) die(EXIT_USAGE, "too many bindings");
      binding_args[binding_count++] = value;
    } else if (!strcmp(arg, "--output")) {
      const char* eq = strchr(value, '=');
      if (!eq || output_count == MAX_OUTPUTS)
        die(EXIT_USAGE, "bad --output '%s': expected I=FILE", value);
      char index_text[16] = {0};
      size_t n = (size_t)(eq - value);
      if (n == 0 || n >= sizeof(index_text))
        die(EXIT_USAGE, "bad --output '%s': expected I=FILE", value);
      memcpy(index_text, value, n);
      output_index[output_count] = (int)parse_u32(index_text, "output index");
      output_path[output_count++] = eq + 1;
    } else {
      die(EXIT_USAGE, "unknown option '%s'", arg);
    }
  }

  const hal_library_t* lib = load_library(g_library_path);
  if (info) {
    print_info(lib);
    return 0;
  }
  if (export_index < 0) die(EXIT_USAGE, "--export N is required");
  if (!have_count) die(EXIT_USAGE, "--workgroup-count X,Y,Z is required");
  if ((uint64_t)export_index >= lib->exports.count)
    die(EXIT_EXPORT_RANGE, "export index %ld out of range (library has %u exports)",
        export_index, lib->exports.count);
  if (!lib->exports.ptrs || !lib->exports.ptrs[export_index])
    die(EXIT_NOT_EXECUTABLE, "export %ld has no function", export_index);

  // Imports: none are provided. A required (non-'?') import cannot be met.
  for (uint32_t i = 0; i < lib->imports.count; ++i) {
    const char* sym = lib->imports.symbols ? lib->imports.symbols[i] : "?";
    size_t n = strlen(sym);
    if (n == 0 || sym[n - 1] != '?')
      die(EXIT_NOT_EXECUTABLE, "library requires import '%s', which this "
          "runner does not provide", sym);
  }
  hal_import_fn_t* import_funcs =
      calloc(lib->imports.count + 1, sizeof(hal_import_fn_t));
  void** import_contexts = calloc(lib->imports.count + 1, sizeof(void*));
  uint32_t* exe_constants = calloc(lib->constants.count + 1, sizeof(uint32_t));
  if (lib->constants.count)
    die(EXIT_NOT_EXECUTABLE, "library declares %u executable constants; not "
        "supported", lib->constants.count);

  const hal_dispatch_attrs_t* attrs =
      lib->exports.attrs ? &lib->exports.attrs[export_index] : NULL;
  if (attrs && attrs->constant_count != constant_count)
    die(EXIT_IO, "export %ld takes %u push constants, %d given", export_index,
        attrs->constant_count, constant_count);
  if (attrs && attrs->binding_count != binding_count)
    die(EXIT_IO, "export %ld takes %u bindings, %d given", export_index,
        attrs->binding_count, binding_count);
  if (count_xyz[2] > 0xFFFFu) die(EXIT_USAGE, "workgroup count z > 65535");

  if (offset_count && offset_count != binding_count)
    die(EXIT_USAGE, "--binding-offsets has %d values for %d bindings", offset_count, binding_count);
  void* binding_ptrs[MAX_BINDINGS];
  size_t binding_lengths[MAX_BINDINGS];
  for (int b = 0; b < binding_count; ++b) {
    if (!strncmp(binding_args[b], "zeros:", 6)) {
      char* end = NULL;
      unsigned long long n = strtoull(binding_args[b] + 6, &end, 10);
      if (*end) die(EXIT_USAGE, "bad binding '%s'", binding_args[b]);
      char* base = aligned_buffer((size_t)n + binding_offsets[b]);
      if (!base) die(EXIT_IO, "out of memory for binding %d", b);
      binding_ptrs[b] = base + binding_offsets[b];
      binding_lengths[b] = (size_t)n;
    } else {
      binding_ptrs[b] = read_file(binding_args[b], &binding_lengths[b], binding_offsets[b]);
    }
  }
  for (int o = 0; o < output_count; ++o)
    if (output_index[o] >= binding_count)
      die(EXIT_USAGE, "--output %d: only %d bindings", output_index[o], binding_count);

  hal_environment_t env;
  memset(&env, 0, sizeof(env));
  env.constants = exe_constants;
  env.import_thunk = import_thunk;
  env.import_funcs = import_funcs;
  env.import_contexts = import_contexts;
  // processor: all zero = "unknown"; code compiled for a fixed CPU needs none.

  hal_dispatch_state_t state;
  memset(&state, 0, sizeof(state));
  state.workgroup_size_x = attrs && attrs->workgroup_size_x ? attrs->workgroup_size_x : 1;
  state.workgroup_size_y = attrs && attrs->workgroup_size_y ? attrs->workgroup_size_y : 1;
  state.workgroup_size_z = attrs && attrs->workgroup_size_z ? attrs->workgroup_size_z : 1;
  state.constant_count = (uint16_t)constant_count;
  state.workgroup_count_x = count_xyz[0];
  state.workgroup_count_y = count_xyz[1];
  state.workgroup_count_z = (uint16_t)count_xyz[2];
  state.max_concurrency = 1;
  state.binding_count = (uint8_t)binding_count;
  state.constants = constants;
  state.binding_ptrs = binding_ptrs;
  state.binding_lengths = binding_lengths;

  uint32_t local_memory_size =
      attrs ? attrs->local_memory_pages * HAL_ABI_LOCAL_MEMORY_PAGE_SIZE : 0;
  void* local_memory = local_memory_size ? aligned_buffer(local_memory_size) : NULL;

  hal_dispatch_fn_t fn = lib->exports.ptrs[export_index];
  hal_workgroup_state_t wg;
  memset(&wg, 0, sizeof(wg));
  wg.processor_id = 0;
  wg.local_memory = local_memory;
  wg.local_memory_size = local_memory_size;
  perf_window_begin();
  for (uint32_t z = 0; z < count_xyz[2]; ++z) {
    for (uint32_t y = 0; y < count_xyz[1]; ++y) {
      for (uint32_t x = 0; x < count_xyz[0]; ++x) {
        wg.workgroup_id_x = x;
        wg.workgroup_id_y = y;
        wg.workgroup_id_z = (uint16_t)z;
        int rc = fn(&env, &state, &wg);
        if (rc != 0) {
          perf_window_end();
          die(EXIT_DISPATCH, "export %ld workgroup (%u,%u,%u) returned %d",
              export_index, x, y, z, rc);
        }
      }
    }
  }
  perf_window_end();
  for (int o = 0; o < output_count; ++o)
    write_file_atomic(output_path[o], binding_ptrs[output_index[o]],
                      binding_lengths[output_index[o]]);
  return 0;
}
