// insn_classes: a QEMU TCG plugin (plugin API version 4, QEMU 10.0.2's
// include/qemu/qemu-plugin.h) that counts the RISC-V
// instructions a dispatch executes, by translation block and by class.
//
//   qemu-riscv64 -cpu rv64,v=true,vlen=128   (QEMU 10.0.2 built with --enable-plugins)
//       -plugin libinsn_classes.so,out=COUNTS.txt hal_runner ...
//
// Attribution: only instructions executed inside a "dispatch window" are
// counted. The riscv64 hal_runner opens the window right before it runs the
// first workgroup and closes it after the last one, by calling two tiny
// functions that start with HINT instructions (writes to x0, architectural
// no-ops): `slti x0, x0, 0x5a1` (begin) and `slti x0, x0, 0x5a0` (end). A
// function entry always starts a translation block, so a block whose first
// instruction is a marker is a marker block. Everything executed in the
// window is the dispatch's: its own code in the dlopen'ed library, the libc
// routines it calls, and the runner's few-instruction workgroup loop.
//
// Memory: with `cache=SIZE:ASSOC:LINE:wb|wt` arguments (one per cache level,
// innermost first), every data access the guest makes inside the window
// (vector loads and stores reach the plugin once per element) goes through a
// simulation of those caches in front of DRAM (cache_sim.h). The caches are
// emptied when the window opens and their dirty lines written back when it
// closes: each dispatch reads its inputs from, and leaves its outputs in, DRAM.
// `window=all` counts the whole program instead of the dispatch window (to
// compare with QEMU's own contrib/plugins/cache.c, which has no window).
//
// Output (text; the Python side in perf/counts.py parses and aggregates it):
//   insn_classes 2
//   classes <class names in order>
//   windows <number of begin markers executed>
//   caches <number of simulated cache levels>
//   cache <level> <size> <assoc> <line> <wb|wt> <read_accesses>
//         <write_accesses> <read_misses> <write_misses> <read_bytes>
//         <write_bytes> <fill_bytes> <writeback_bytes> <split_requests>
//                                                           (one per level)
//   dram <read_bytes> <write_bytes>                         (with caches)
//   block <vaddr> <size> <insns> <nvec_entry> <weight_after_x8>
//         <nvec_after_unknown> <fma> <c0,c1,...> <hex bytes> <slot>:<n> ...
// `slot` is the vtype in force when the block was entered (vsew*8 + vlmul,
// 0..63) or 64 when unknown; <n> how often the block ran with it in the
// window. Blocks that never ran in the window are omitted. The class counts
// `c` and the vector counts are per execution of the block.
//
// LMUL: QEMU ends a translation block at every vset{i}vl{i}, but the plugin
// does not rely on it: vector instructions before a block's first vset use
// the entry vtype (tracked at run time from the vsets executed before),
// later ones use that vset's immediate vtype (or are "unknown" after the
// register form vsetvl, whose vtype is in a register; the plugin reads no
// registers, QEMU_PLUGIN_CB_NO_REGS).
//
// Ported from API v1 (QEMU 7.2) to v4: qemu_plugin_insn_data copies an
// instruction's bytes into a caller's buffer (v3) instead of returning a
// pointer; qemu_plugin_tb_get_insn returns a non-const handle. The callbacks
// used here (tb_trans, tb_exec, mem, atexit) kept their signatures.
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "perf/qemu_plugin/cache_sim.h"

#include <qemu-plugin.h>

QEMU_PLUGIN_EXPORT int qemu_plugin_version = QEMU_PLUGIN_VERSION;

enum insn_class {
  CLASS_SCALAR_INT,
  CLASS_BRANCH,
  CLASS_SCALAR_MEM,
  CLASS_SCALAR_FP,
  CLASS_VSET,
  CLASS_VECTOR_LOAD,
  CLASS_VECTOR_STORE,
  CLASS_VECTOR_INT,
  CLASS_VECTOR_FP,
  CLASS_VECTOR_RED_PERM,
  CLASS_OTHER,
  CLASS_COUNT,
};

static const char* const kClassNames[CLASS_COUNT] = {
    "scalar_int", "branch",       "scalar_mem", "scalar_fp",
    "vset",       "vector_load",  "vector_store", "vector_int",
    "vector_fp",  "vector_red_perm", "other",
};

#define MARK_BEGIN_INSN 0x5a102013u  // slti x0, x0, 0x5a1
#define MARK_END_INSN 0x5a002013u    // slti x0, x0, 0x5a0
#define SLOT_UNKNOWN 64
#define SLOT_COUNT 65
#define VTYPE_UNCHANGED (-1)

enum marker { MARKER_NONE, MARKER_BEGIN, MARKER_END };

struct block {
  uint64_t vaddr;
  uint32_t size;   // bytes
  uint32_t insns;
  uint8_t* bytes;
  uint32_t class_count[CLASS_COUNT];
  uint32_t nvec_entry;          // vector ops executed at the entry vtype
  uint32_t weight_after_x8;     // sum of 8*LMUL of vector ops after a vset
  uint32_t nvec_after_unknown;  // vector ops after a register-form vsetvl
  uint32_t fma;                 // vector multiply-accumulates
  int exit_slot;                // vtype slot after the block, or VTYPE_UNCHANGED
  enum marker marker;
  uint64_t exec[SLOT_COUNT];
  struct block* next;
};

static struct block* g_blocks;
static const char* g_out_path;
static int g_active;
static int g_slot = SLOT_UNKNOWN;
static uint64_t g_windows;
static struct cache_sim g_caches;
static int g_whole_program;  // window=all

static uint32_t bits(uint32_t insn, int hi, int lo) {
  return (insn >> lo) & ((1u << (hi - lo + 1)) - 1u);
}

// The vtype slot of a vset{i}vl{i}, or SLOT_UNKNOWN for the register form.
static int vset_slot(uint32_t insn) {
  uint32_t vtype;
  if (bits(insn, 31, 31) == 0) {
    vtype = bits(insn, 30, 20);  // vsetvli: zimm[10:0]
  } else if (bits(insn, 31, 30) == 3) {
    vtype = bits(insn, 29, 20);  // vsetivli: zimm[9:0]
  } else {
    return SLOT_UNKNOWN;  // vsetvl rd, rs1, rs2
  }
  if (vtype & ~0xffu) return SLOT_UNKNOWN;  // reserved bits: vill
  uint32_t vlmul = vtype & 7u, vsew = (vtype >> 3) & 7u;
  if (vlmul == 4 || vsew > 3) return SLOT_UNKNOWN;
  return (int)(vsew * 8 + vlmul);
}

// 8 * LMUL of a vtype slot (LMUL 1/8 .. 8 -> 1 .. 64).
static uint32_t slot_lmul_x8(int slot) {
  static const uint32_t kByVlmul[8] = {8, 16, 32, 64, 0, 1, 2, 4};
  return kByVlmul[slot & 7];
}

static int is_vector_width(uint32_t width) {
  return width == 0 || width == 5 || width == 6 || width == 7;
}

// Classifies a 32-bit instruction; sets *is_fma for multiply-accumulates.
static enum insn_class classify32(uint32_t insn, int* is_fma) {
  uint32_t opcode = insn & 0x7f, funct3 = bits(insn, 14, 12);
  uint32_t funct6 = bits(insn, 31, 26);
  *is_fma = 0;
  switch (opcode) {
    case 0x37: case 0x17: case 0x13: case 0x1b: case 0x33: case 0x3b:
    case 0x0f: case 0x73:
      return CLASS_SCALAR_INT;
    case 0x63: case 0x6f: case 0x67:
      return CLASS_BRANCH;
    case 0x03: case 0x23: case 0x2f:
      return CLASS_SCALAR_MEM;
    case 0x07:
      return is_vector_width(funct3) ? CLASS_VECTOR_LOAD : CLASS_SCALAR_MEM;
    case 0x27:
      return is_vector_width(funct3) ? CLASS_VECTOR_STORE : CLASS_SCALAR_MEM;
    case 0x53: case 0x43: case 0x47: case 0x4b: case 0x4f:
      return CLASS_SCALAR_FP;
    case 0x57:
      break;
    default:
      return CLASS_OTHER;
  }
  switch (funct3) {
    case 7:
      return CLASS_VSET;
    case 0: case 3: case 4:  // OPIVV, OPIVI, OPIVX
      if (funct6 == 0x0c || funct6 == 0x0e || funct6 == 0x0f)
        return CLASS_VECTOR_RED_PERM;  // vrgather, vrgatherei16/vslideup, vslidedown
      if (funct3 == 3 && funct6 == 0x27) return CLASS_VECTOR_RED_PERM;  // vmv<nr>r.v
      if (funct3 == 0 && (funct6 == 0x30 || funct6 == 0x31))
        return CLASS_VECTOR_RED_PERM;  // vwredsum{u}
      return CLASS_VECTOR_INT;
    case 2: case 6:  // OPMVV, OPMVX
      if (funct3 == 2 && funct6 <= 0x07) return CLASS_VECTOR_RED_PERM;  // vred*
      if (funct6 == 0x10) return CLASS_VECTOR_RED_PERM;  // vmv.x.s, vmv.s.x, vcpop, vfirst
      if (funct3 == 6 && (funct6 == 0x0e || funct6 == 0x0f))
        return CLASS_VECTOR_RED_PERM;  // vslide1up/down
      if (funct3 == 2 && funct6 == 0x17) return CLASS_VECTOR_RED_PERM;  // vcompress
      if (funct6 == 0x29 || funct6 == 0x2b || funct6 == 0x2d || funct6 == 0x2f ||
          funct6 >= 0x3c)
        *is_fma = 1;  // vmadd, vnmsub, vmacc, vnmsac, vwmacc*
      return CLASS_VECTOR_INT;
    case 1: case 5:  // OPFVV, OPFVF
      if (funct3 == 1 && (funct6 == 0x01 || funct6 == 0x03 || funct6 == 0x05 ||
                          funct6 == 0x07 || funct6 == 0x31 || funct6 == 0x33))
        return CLASS_VECTOR_RED_PERM;  // vfred*, vfwred*
      if (funct6 == 0x10) return CLASS_VECTOR_RED_PERM;  // vfmv.f.s, vfmv.s.f
      if (funct3 == 5 && (funct6 == 0x0e || funct6 == 0x0f))
        return CLASS_VECTOR_RED_PERM;  // vfslide1up/down
      if ((funct6 >= 0x28 && funct6 <= 0x2f) || funct6 >= 0x3c)
        *is_fma = 1;  // vf[n]m{add,sub,acc,sac}, vfwmacc*
      return CLASS_VECTOR_FP;
  }
  return CLASS_OTHER;
}

// Classifies a 16-bit (C extension) instruction.
static enum insn_class classify16(uint32_t insn) {
  uint32_t quadrant = insn & 3, funct3 = bits(insn, 15, 13);
  if (quadrant == 0) {
    if (funct3 == 0) return CLASS_SCALAR_INT;  // c.addi4spn
    if (funct3 == 4) return CLASS_OTHER;       // reserved
    return CLASS_SCALAR_MEM;  // c.fld c.lw c.ld c.fsd c.sw c.sd
  }
  if (quadrant == 1) {
    return funct3 >= 5 ? CLASS_BRANCH : CLASS_SCALAR_INT;  // c.j c.beqz c.bnez
  }
  // quadrant 2
  if (funct3 == 0) return CLASS_SCALAR_INT;  // c.slli
  if (funct3 == 4) {
    uint32_t rs1 = bits(insn, 11, 7), rs2 = bits(insn, 6, 2);
    if (rs2 == 0 && rs1 != 0) return CLASS_BRANCH;  // c.jr, c.jalr
    return CLASS_SCALAR_INT;  // c.mv, c.add, c.ebreak
  }
  return CLASS_SCALAR_MEM;  // c.fldsp c.lwsp c.ldsp c.fsdsp c.swsp c.sdsp
}

static void on_tb_exec(unsigned int vcpu_index, void* userdata) {
  (void)vcpu_index;
  struct block* b = userdata;
  if (b->marker == MARKER_BEGIN) {
    if (!g_whole_program) {
      g_active = 1;
      cache_sim_reset(&g_caches);
    }
    ++g_windows;
  } else if (b->marker == MARKER_END) {
    if (!g_whole_program && g_active) {
      g_active = 0;
      cache_sim_flush(&g_caches);
    }
  } else if (g_active) {
    ++b->exec[g_slot];
  }
  if (b->exit_slot != VTYPE_UNCHANGED) g_slot = b->exit_slot;
}

static void on_mem(unsigned int vcpu_index, qemu_plugin_meminfo_t info,
                   uint64_t vaddr, void* userdata) {
  (void)vcpu_index;
  (void)userdata;
  if (!g_active) return;
  cache_sim_access(&g_caches, vaddr, 1u << qemu_plugin_mem_size_shift(info),
                   qemu_plugin_mem_is_store(info));
}

static void on_tb_trans(qemu_plugin_id_t id, struct qemu_plugin_tb* tb) {
  (void)id;
  size_t n = qemu_plugin_tb_n_insns(tb);
  struct block* b = calloc(1, sizeof(*b));
  if (!b) abort();
  b->vaddr = qemu_plugin_tb_vaddr(tb);
  b->insns = (uint32_t)n;
  b->exit_slot = VTYPE_UNCHANGED;
  for (size_t i = 0; i < n; ++i)
    b->size += (uint32_t)qemu_plugin_insn_size(qemu_plugin_tb_get_insn(tb, i));
  b->bytes = malloc(b->size ? b->size : 1);
  if (!b->bytes) abort();

  int after_vset = 0;  // 0: entry vtype; else the vset's slot + 1
  uint32_t offset = 0;
  for (size_t i = 0; i < n; ++i) {
    struct qemu_plugin_insn* insn = qemu_plugin_tb_get_insn(tb, i);
    uint8_t data[4];  // RISC-V instructions here are 2 or 4 bytes
    size_t size = qemu_plugin_insn_size(insn);
    if (size > sizeof(data) || qemu_plugin_insn_data(insn, data, sizeof(data)) != size) {
      qemu_plugin_outs("insn_classes: an instruction longer than 4 bytes\n");
      abort();
    }
    if (g_caches.levels)
      qemu_plugin_register_vcpu_mem_cb(insn, on_mem, QEMU_PLUGIN_CB_NO_REGS,
                                       QEMU_PLUGIN_MEM_RW, NULL);
    memcpy(b->bytes + offset, data, size);
    offset += (uint32_t)size;
    uint32_t word = 0;
    for (size_t k = 0; k < size && k < 4; ++k) word |= (uint32_t)data[k] << (8 * k);
    if (i == 0 && size == 4 && word == MARK_BEGIN_INSN) b->marker = MARKER_BEGIN;
    if (i == 0 && size == 4 && word == MARK_END_INSN) b->marker = MARKER_END;
    int is_fma = 0;
    enum insn_class cls = size == 4 ? classify32(word, &is_fma) : classify16(word & 0xffff);
    ++b->class_count[cls];
    b->fma += (uint32_t)is_fma;
    if (cls == CLASS_VSET) {
      int slot = vset_slot(word);
      after_vset = slot + 1;
      b->exit_slot = slot;
    } else if (cls >= CLASS_VECTOR_LOAD && cls <= CLASS_VECTOR_RED_PERM) {
      if (!after_vset) {
        ++b->nvec_entry;
      } else if (after_vset - 1 == SLOT_UNKNOWN) {
        ++b->nvec_after_unknown;
      } else {
        b->weight_after_x8 += slot_lmul_x8(after_vset - 1);
      }
    }
  }
  b->next = g_blocks;
  g_blocks = b;
  qemu_plugin_register_vcpu_tb_exec_cb(tb, on_tb_exec, QEMU_PLUGIN_CB_NO_REGS, b);
}

static void write_counts(qemu_plugin_id_t id, void* userdata) {
  (void)id;
  (void)userdata;
  FILE* out = fopen(g_out_path, "w");
  if (!out) {
    qemu_plugin_outs("insn_classes: cannot open the output file\n");
    return;
  }
  if (g_whole_program) cache_sim_flush(&g_caches);
  fprintf(out, "insn_classes 2\nclasses");
  for (int c = 0; c < CLASS_COUNT; ++c) fprintf(out, " %s", kClassNames[c]);
  fprintf(out, "\nwindows %llu\n", (unsigned long long)g_windows);
  fprintf(out, "caches %d\n", g_caches.levels);
  for (int i = 0; i < g_caches.levels; ++i) {
    const struct cache_sim_level* lv = &g_caches.level[i];
    const struct cache_sim_stats* st = &lv->stats;
    fprintf(out, "cache %d %llu %u %u %s %llu %llu %llu %llu %llu %llu %llu %llu %llu\n", i,
            (unsigned long long)(lv->sets * lv->assoc * lv->line_bytes), lv->assoc,
            lv->line_bytes, lv->policy == CACHE_SIM_WRITE_BACK ? "wb" : "wt",
            (unsigned long long)st->read_accesses, (unsigned long long)st->write_accesses,
            (unsigned long long)st->read_misses, (unsigned long long)st->write_misses,
            (unsigned long long)st->read_bytes, (unsigned long long)st->write_bytes,
            (unsigned long long)st->fill_bytes, (unsigned long long)st->writeback_bytes,
            (unsigned long long)st->split_requests);
  }
  if (g_caches.levels)
    fprintf(out, "dram %llu %llu\n", (unsigned long long)g_caches.dram_read_bytes,
            (unsigned long long)g_caches.dram_write_bytes);
  for (struct block* b = g_blocks; b; b = b->next) {
    int ran = 0;
    for (int s = 0; s < SLOT_COUNT; ++s) ran |= b->exec[s] != 0;
    if (!ran) continue;
    fprintf(out, "block %llx %u %u %u %u %u %u ", (unsigned long long)b->vaddr,
            b->size, b->insns, b->nvec_entry, b->weight_after_x8,
            b->nvec_after_unknown, b->fma);
    for (int c = 0; c < CLASS_COUNT; ++c)
      fprintf(out, c ? ",%u" : "%u", b->class_count[c]);
    fputc(' ', out);
    for (uint32_t k = 0; k < b->size; ++k) fprintf(out, "%02x", b->bytes[k]);
    for (int s = 0; s < SLOT_COUNT; ++s)
      if (b->exec[s]) fprintf(out, " %d:%llu", s, (unsigned long long)b->exec[s]);
    fputc('\n', out);
  }
  if (fclose(out) != 0) qemu_plugin_outs("insn_classes: cannot write the output file\n");
}

QEMU_PLUGIN_EXPORT int qemu_plugin_install(qemu_plugin_id_t id,
                                           const qemu_info_t* info, int argc,
                                           char** argv) {
  if (strcmp(info->target_name, "riscv64") != 0) {
    qemu_plugin_outs("insn_classes: only riscv64 guests are supported\n");
    return -1;
  }
  for (int i = 0; i < argc; ++i) {
    if (!strncmp(argv[i], "out=", 4)) {
      g_out_path = argv[i] + 4;
    } else if (!strcmp(argv[i], "window=all")) {
      g_whole_program = 1;
      g_active = 1;
    } else if (!strncmp(argv[i], "cache=", 6)) {
      unsigned long long size;
      unsigned assoc, line;
      char policy[3];
      const char* why = NULL;
      if (sscanf(argv[i] + 6, "%llu:%u:%u:%2s", &size, &assoc, &line, policy) != 4 ||
          (strcmp(policy, "wb") && strcmp(policy, "wt"))) {
        qemu_plugin_outs("insn_classes: cache= wants SIZE:ASSOC:LINE:wb|wt\n");
        return -1;
      }
      if (cache_sim_add_level(&g_caches, size, assoc, line,
                              strcmp(policy, "wb") ? CACHE_SIM_WRITE_THROUGH
                                                   : CACHE_SIM_WRITE_BACK,
                              &why)) {
        qemu_plugin_outs("insn_classes: cache=");
        qemu_plugin_outs(argv[i] + 6);
        qemu_plugin_outs(": ");
        qemu_plugin_outs(why);
        qemu_plugin_outs("\n");
        return -1;
      }
    } else {
      qemu_plugin_outs("insn_classes: unknown argument ");
      qemu_plugin_outs(argv[i]);
      qemu_plugin_outs("\n");
      return -1;
    }
  }
  if (!g_out_path || !*g_out_path) {
    qemu_plugin_outs("insn_classes: missing argument out=FILE\n");
    return -1;
  }
  qemu_plugin_register_vcpu_tb_trans_cb(id, on_tb_trans);
  qemu_plugin_register_atexit_cb(id, write_counts, NULL);
  return 0;
}
