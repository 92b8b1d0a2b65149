// See cache_sim.h for the model.
#include "perf/qemu_plugin/cache_sim.h"

#include <stdlib.h>
#include <string.h>

static int is_power_of_two(uint64_t n) { return n && !(n & (n - 1)); }

static uint32_t log2_u64(uint64_t n) {
  uint32_t s = 0;
  while ((1ull << s) < n) ++s;
  return s;
}

int cache_sim_add_level(struct cache_sim* sim, uint64_t size_bytes,
                        uint32_t assoc, uint32_t line_bytes,
                        enum cache_sim_policy policy, const char** why) {
  if (sim->levels >= CACHE_SIM_MAX_LEVELS) {
    *why = "too many cache levels";
    return -1;
  }
  if (!is_power_of_two(line_bytes) || line_bytes < 4) {
    *why = "line size must be a power of two >= 4";
    return -1;
  }
  if (assoc == 0 || size_bytes % ((uint64_t)assoc * line_bytes)) {
    *why = "size must be a multiple of associativity x line size";
    return -1;
  }
  uint64_t sets = size_bytes / ((uint64_t)assoc * line_bytes);
  struct cache_sim_level* lv = &sim->level[sim->levels];
  memset(lv, 0, sizeof(*lv));
  lv->line_bytes = line_bytes;
  lv->line_shift = log2_u64(line_bytes);
  lv->assoc = assoc;
  lv->sets = sets;
  lv->set_mask = is_power_of_two(sets) ? sets - 1 : 0;
  lv->policy = policy;
  lv->lines = calloc(sets * assoc, sizeof(*lv->lines));
  if (!lv->lines) {
    *why = "out of memory";
    return -1;
  }
  ++sim->levels;
  return 0;
}

void cache_sim_reset(struct cache_sim* sim) {
  for (int i = 0; i < sim->levels; ++i) {
    struct cache_sim_level* lv = &sim->level[i];
    memset(lv->lines, 0, lv->sets * lv->assoc * sizeof(*lv->lines));
    memset(&lv->stats, 0, sizeof(lv->stats));
  }
  sim->clock = 0;
  sim->dram_read_bytes = sim->dram_write_bytes = 0;
}

static void next_level(struct cache_sim* sim, int level, uint64_t addr,
                       uint32_t bytes, int is_store);

// A request that lies within one line of `level`.
static void access_line(struct cache_sim* sim, int level, uint64_t addr,
                        uint32_t bytes, int is_store) {
  struct cache_sim_level* lv = &sim->level[level];
  struct cache_sim_stats* st = &lv->stats;
  uint64_t line = addr >> lv->line_shift;
  // Sets indexed by the line number modulo their count (a mask when it is a power of two).
  uint64_t set = lv->set_mask ? line & lv->set_mask : line % lv->sets;
  struct cache_sim_line* ways = &lv->lines[set * lv->assoc];
  if (is_store) {
    ++st->write_accesses;
    st->write_bytes += bytes;
  } else {
    ++st->read_accesses;
    st->read_bytes += bytes;
  }
  ++sim->clock;
  struct cache_sim_line* victim = &ways[0];
  for (uint32_t w = 0; w < lv->assoc; ++w) {
    struct cache_sim_line* l = &ways[w];
    if (l->last_use && l->tag == line) {  // hit
      l->last_use = sim->clock;
      if (is_store) {
        if (lv->policy == CACHE_SIM_WRITE_BACK) {
          l->dirty = 1;
        } else {
          st->writeback_bytes += bytes;
          next_level(sim, level, addr, bytes, 1);
        }
      }
      return;
    }
    if (!l->last_use || (victim->last_use && l->last_use < victim->last_use))
      victim = l;
  }
  // Miss.
  if (is_store) {
    ++st->write_misses;
    if (lv->policy == CACHE_SIM_WRITE_THROUGH) {  // no write-allocate
      st->writeback_bytes += bytes;
      next_level(sim, level, addr, bytes, 1);
      return;
    }
  } else {
    ++st->read_misses;
  }
  if (victim->last_use && victim->dirty) {
    st->writeback_bytes += lv->line_bytes;
    next_level(sim, level, victim->tag << lv->line_shift, lv->line_bytes, 1);
  }
  // A store covering the whole line needs nothing from below.
  if (!(is_store && bytes == lv->line_bytes)) {
    st->fill_bytes += lv->line_bytes;
    next_level(sim, level, line << lv->line_shift, lv->line_bytes, 0);
  }
  victim->tag = line;
  victim->last_use = sim->clock;
  victim->dirty = (uint8_t)(is_store && lv->policy == CACHE_SIM_WRITE_BACK);
}

// A request of any size to `level`, split per line.
static void access_level(struct cache_sim* sim, int level, uint64_t addr,
                         uint32_t bytes, int is_store) {
  if (level == sim->levels) {
    if (is_store)
      sim->dram_write_bytes += bytes;
    else
      sim->dram_read_bytes += bytes;
    return;
  }
  uint32_t line_bytes = sim->level[level].line_bytes;
  if ((addr & (line_bytes - 1)) + bytes > line_bytes) ++sim->level[level].stats.split_requests;
  while (bytes) {
    uint32_t in_line = line_bytes - (uint32_t)(addr & (line_bytes - 1));
    uint32_t part = bytes < in_line ? bytes : in_line;
    access_line(sim, level, addr, part, is_store);
    addr += part;
    bytes -= part;
  }
}

static void next_level(struct cache_sim* sim, int level, uint64_t addr,
                       uint32_t bytes, int is_store) {
  access_level(sim, level + 1, addr, bytes, is_store);
}

void cache_sim_access(struct cache_sim* sim, uint64_t addr, uint32_t bytes,
                      int is_store) {
  access_level(sim, 0, addr, bytes, is_store);
}

void cache_sim_flush(struct cache_sim* sim) {
  for (int i = 0; i < sim->levels; ++i) {
    struct cache_sim_level* lv = &sim->level[i];
    for (uint64_t k = 0; k < lv->sets * lv->assoc; ++k) {
      struct cache_sim_line* l = &lv->lines[k];
      if (l->last_use && l->dirty) {
        l->dirty = 0;
        lv->stats.writeback_bytes += lv->line_bytes;
        next_level(sim, i, l->tag << lv->line_shift, lv->line_bytes, 1);
      }
    }
  }
}

void cache_sim_free(struct cache_sim* sim) {
  for (int i = 0; i < sim->levels; ++i) free(sim->level[i].lines);
  sim->levels = 0;
}
