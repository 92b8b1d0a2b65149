// Test stand-ins for IREE HAL executable libraries, built by Bazel.
// FAKE_VERSION is the only ABI version whose query answers. With version 6
// the library has the real v0.6 layout and one export ("add_one") that adds 1
// to every uint32 of binding 0 in the workgroup's 4-element slice and stores
// push constant 0 at the start of binding 1.
#include <stddef.h>
#include <stdint.h>

#include "runtime/hal_runner/hal_abi.h"

static int add_one(const hal_environment_t* env,
                   const hal_dispatch_state_t* state,
                   const hal_workgroup_state_t* wg) {
  (void)env;
  uint32_t* data = (uint32_t*)state->binding_ptrs[0];
  size_t n = state->binding_lengths[0] / 4;
  for (size_t i = wg->workgroup_id_x * 4u; i < wg->workgroup_id_x * 4u + 4u && i < n; ++i)
    data[i] += 1;
  if (wg->workgroup_id_x == 0) ((uint32_t*)state->binding_ptrs[1])[0] = state->constants[0];
  return 0;
}

static const hal_library_header_t header = {FAKE_VERSION, "fake", 0, 0};
static const hal_dispatch_fn_t ptrs[1] = {add_one};
static const hal_dispatch_attrs_t attrs[1] = {
    {.constant_count = 1, .binding_count = 2, .workgroup_size_x = 1,
     .workgroup_size_y = 1, .workgroup_size_z = 1}};
static const char* const names[1] = {"add_one"};
static const hal_library_t library = {
    .header = &header,
    .imports = {0, NULL},
    .exports = {.count = 1, .ptrs = ptrs, .attrs = attrs, .names = names},
};

const hal_library_header_t** iree_hal_executable_library_query(
    uint32_t max_version, const hal_environment_t* env) {
  (void)env;
  return max_version == FAKE_VERSION ? (const hal_library_header_t**)&library : NULL;
}
