// Layouts of IREE's HAL executable-library ABI, version 0.6 (what
// iree-base-compiler 3.13 emits: its iree_hal_executable_library_query returns
// the library only for max_version == 6). Written from the documented ABI in
// IREE's public header iree/hal/local/executable_library.h and checked against
// the struct types the compiler emits (static_asserts below pin the sizes and
// offsets the compiled code reads).
#ifndef RUNTIME_HAL_RUNNER_HAL_ABI_H_
#define RUNTIME_HAL_RUNNER_HAL_ABI_H_

#include <stddef.h>
#include <stdint.h>

#define HAL_ABI_VERSION 6u
#define HAL_ABI_QUERY_SYMBOL "iree_hal_executable_library_query"
#define HAL_ABI_LOCAL_MEMORY_PAGE_SIZE 4096u
#define HAL_ABI_PROCESSOR_WORDS 8

typedef struct hal_library_header_t {
  uint32_t version;
  const char* name;
  uint32_t features;
  int32_t sanitizer;  // 0 = none
} hal_library_header_t;

// Imports: fn(params, context, reserved), always called through the thunk
// thunk(fn, params, context, reserved).
typedef int (*hal_import_fn_t)(void* params, void* context, void* reserved);
typedef int (*hal_import_thunk_t)(hal_import_fn_t fn, void* params,
                                  void* context, void* reserved);

typedef struct hal_environment_t {
  const uint32_t* constants;         // executable-level constants
  hal_import_thunk_t import_thunk;
  const hal_import_fn_t* import_funcs;  // one per import (NULL if weak+absent)
  void* const* import_contexts;         // one per import
  uint64_t processor[HAL_ABI_PROCESSOR_WORDS];  // all zero = unknown
} hal_environment_t;

typedef struct hal_dispatch_state_t {
  uint32_t workgroup_size_x;
  uint32_t workgroup_size_y;
  uint16_t workgroup_size_z;
  uint16_t constant_count;
  uint32_t workgroup_count_x;
  uint32_t workgroup_count_y;
  uint16_t workgroup_count_z;
  uint8_t max_concurrency;
  uint8_t binding_count;
  const uint32_t* constants;
  void* const* binding_ptrs;
  const size_t* binding_lengths;
} hal_dispatch_state_t;

typedef struct hal_workgroup_state_t {
  uint32_t workgroup_id_x;
  uint32_t workgroup_id_y;
  uint16_t workgroup_id_z;
  uint16_t reserved;
  uint32_t processor_id;
  void* local_memory;
  uint32_t local_memory_size;
} hal_workgroup_state_t;

typedef int (*hal_dispatch_fn_t)(const hal_environment_t* environment,
                                 const hal_dispatch_state_t* dispatch_state,
                                 const hal_workgroup_state_t* workgroup_state);

typedef struct hal_dispatch_attrs_t {
  uint64_t flags;
  uint16_t local_memory_pages;
  uint8_t constant_count;
  uint8_t binding_count;
  uint32_t workgroup_size_x;
  uint32_t workgroup_size_y;
  uint16_t workgroup_size_z;
  uint16_t parameter_count;
  uint64_t reserved[5];
} hal_dispatch_attrs_t;

typedef struct hal_import_table_t {
  uint32_t count;
  const char* const* symbols;  // a trailing '?' marks an optional import
} hal_import_table_t;

typedef struct hal_export_table_t {
  uint32_t count;
  const hal_dispatch_fn_t* ptrs;
  const hal_dispatch_attrs_t* attrs;  // optional
  const void* params;                 // optional
  const void* occupancy;              // optional
  const char* const* names;           // optional
  const char* const* tags;            // optional
  const void* parameter_names;        // optional
  const void* source_locations;       // optional
  const void* stage_locations;        // optional
} hal_export_table_t;

typedef struct hal_constant_table_t {
  uint32_t count;
} hal_constant_table_t;

typedef struct hal_source_file_table_t {
  uint32_t count;
  const void* files;
} hal_source_file_table_t;

typedef struct hal_library_t {
  const hal_library_header_t* header;
  hal_import_table_t imports;
  hal_export_table_t exports;
  hal_constant_table_t constants;
  hal_source_file_table_t sources;
} hal_library_t;

typedef const hal_library_header_t** (*hal_query_fn_t)(
    uint32_t max_version, const hal_environment_t* environment);

#if UINTPTR_MAX == 0xFFFFFFFFFFFFFFFFu  // LP64: riscv64 and x86_64
_Static_assert(sizeof(hal_environment_t) == 96, "environment layout");
_Static_assert(sizeof(hal_dispatch_state_t) == 48, "dispatch state layout");
_Static_assert(offsetof(hal_dispatch_state_t, constants) == 24, "constants");
_Static_assert(offsetof(hal_dispatch_state_t, binding_ptrs) == 32, "bindings");
_Static_assert(sizeof(hal_workgroup_state_t) == 32, "workgroup state layout");
_Static_assert(offsetof(hal_workgroup_state_t, local_memory) == 16, "lmem");
_Static_assert(sizeof(hal_dispatch_attrs_t) == 64, "dispatch attrs layout");
_Static_assert(sizeof(hal_export_table_t) == 80, "export table layout");
_Static_assert(offsetof(hal_library_t, exports) == 24, "library layout");
#endif

#endif  // RUNTIME_HAL_RUNNER_HAL_ABI_H_
