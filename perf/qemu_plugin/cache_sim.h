// cache_sim: a trace-driven simulation of a data memory hierarchy of
// set-associative caches in front of DRAM, fed one access at a time.
//
// Used by the insn_classes QEMU plugin (every element address a dispatch
// loads or stores) and, without QEMU, by perf/cache_sim_test.py through
// ctypes. No QEMU dependency: plain C11.
//
// Model (stated in docs/design.md, "Memory-aware model cycles"):
// - Levels are ordered from the core outward; the last cache level is backed
//   by DRAM, which always hits.
// - Replacement is LRU within a set. Lines are `line_bytes` (a power of two),
//   sets `size_bytes / (assoc * line_bytes)`, indexed by line number modulo
//   their count.
// - write-back levels allocate on a write miss (a partial-line write fetches
//   the line from the next level first; a full-line write does not) and write
//   a dirty victim back to the next level. write-through levels do not
//   allocate on a write miss and pass every write on to the next level.
// - An access that spans lines is split per line.
#ifndef PERF_QEMU_PLUGIN_CACHE_SIM_H_
#define PERF_QEMU_PLUGIN_CACHE_SIM_H_

#include <stdint.h>

#define CACHE_SIM_MAX_LEVELS 4

enum cache_sim_policy { CACHE_SIM_WRITE_BACK, CACHE_SIM_WRITE_THROUGH };

struct cache_sim_stats {
  uint64_t read_accesses;   // requests from the level above (or the core)
  uint64_t write_accesses;
  uint64_t read_misses;
  uint64_t write_misses;
  uint64_t read_bytes;      // bytes requested by those accesses
  uint64_t write_bytes;
  uint64_t fill_bytes;      // bytes read from the next level (line fills)
  uint64_t writeback_bytes; // bytes written to the next level
  uint64_t split_requests;  // requests that spanned lines (each line counted as an access)
};

struct cache_sim_line {
  uint64_t tag;
  uint64_t last_use;  // LRU stamp; 0 = invalid
  uint8_t dirty;
};

struct cache_sim_level {
  uint32_t line_bytes, line_shift, assoc;
  uint64_t sets, set_mask;  // set_mask: sets - 1 when a power of two, else 0
  enum cache_sim_policy policy;
  struct cache_sim_line* lines;  // sets * assoc
  struct cache_sim_stats stats;
};

struct cache_sim {
  int levels;
  uint64_t clock;
  struct cache_sim_level level[CACHE_SIM_MAX_LEVELS];
  uint64_t dram_read_bytes, dram_write_bytes;
};

// 0 on success; -1 with a reason in *why for an impossible geometry.
int cache_sim_add_level(struct cache_sim* sim, uint64_t size_bytes,
                        uint32_t assoc, uint32_t line_bytes,
                        enum cache_sim_policy policy, const char** why);
// Empties every level (no write-back) and zeroes the counters.
void cache_sim_reset(struct cache_sim* sim);
// One access of `bytes` at `addr` by the core.
void cache_sim_access(struct cache_sim* sim, uint64_t addr, uint32_t bytes,
                      int is_store);
// Writes every dirty line back, level by level outward (counted as traffic).
void cache_sim_flush(struct cache_sim* sim);
void cache_sim_free(struct cache_sim* sim);

#endif  // PERF_QEMU_PLUGIN_CACHE_SIM_H_
