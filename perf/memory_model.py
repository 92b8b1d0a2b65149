"""Memory-aware model cycles and energy of one dispatch, from its simulated cache traffic.

The plugin (perf/qemu_plugin/cache_sim.h) reports, per cache level of the accelerator
description, the accesses the level above made to it, its misses, and the bytes it filled
from and wrote back to the next level; DRAM gets what the last cache level fills and writes
back. This module turns that into one figure, by the model in docs/design.md ("Memory-aware
model cycles"):

- core cycles: llvm-mca's model cycles of the executed blocks, which price every load as an
  L1 hit;
- transfer cycles of each level: bytes read from it over its read bandwidth plus bytes written
  into it over its write bandwidth (L1: what the core loads and stores; below: the fills and
  write-backs of the level above);
- stall cycles: each miss of a cache level waits for the next level's latency; `outstanding_misses`
  of them overlap, so a level's misses cost misses x next latency / outstanding misses;
- memory-aware cycles = max(core + stall, the largest transfer time): the core cannot run
  faster than its busiest memory level streams, nor than its own schedule plus the latency it
  cannot hide.

Energy: bytes read out of and written into each level, in accesses of its `access_bits`, times
its pJ per access; plus the root op's MACs times `mac_energy_pj`, the executed instructions times
`instruction_energy_pj` (fetch, decode, register file, control) and the memory-aware cycles
times `static_energy_pj_per_cycle` (clock tree and leakage). Without the last two, energy
rewarded slow scalar code: its narrow accesses move few bytes, and its extra instructions and
cycles cost nothing (conv1d_audio's scalar build priced 0.5x the energy of a 10x faster one).
"""

from __future__ import annotations

from dataclasses import dataclass

from common.hardware import Hardware
from common.perf_schema import LevelTraffic, MemoryAware
from perf.counts import DispatchCounts

# What memory-aware cycles leave out, printed with them.
MEMORY_MODEL_IGNORES = (
    "instruction fetch, TLBs and prefetchers; every dispatch starts with empty caches and ends with "
    "its dirty lines written back; stalls are not overlapped with each other across levels; "
    "energy prices a narrow access as its bytes' share of a full-width access, and every "
    "instruction alike"
)


class MemoryModelError(ValueError):
    """The counts do not describe the hardware's caches."""


@dataclass(frozen=True)
class _Flow:
    read_out: int  # bytes read out of the level
    written_in: int  # bytes written into it


# The plugin's name of each write policy of the description, and how the simulation allocates
# under it (perf/qemu_plugin/cache_sim.h: write-back allocates on a write miss, write-through does
# not), which is also what the description's policy means (common/hardware.py).
PLUGIN_POLICY = {"write-back": "wb", "write-through": "wt"}
_POLICY_SAYS = {"wb": "write-back (write allocate)", "wt": "write-through (no write allocate)"}


def plugin_cache_args(hw: Hardware) -> list[str]:
    """The plugin's `cache=` arguments for the description's cache levels, innermost first."""
    return [f"cache={m.size_bytes // m.shared_by_cores}:{m.associativity}:{m.line_bytes}:"
            f"{PLUGIN_POLICY[m.write_policy]}" for m in hw.caches]


def memory_aware(hw: Hardware, counts: DispatchCounts, core_cycles: int, macs: int) -> MemoryAware:
    """One dispatch's traffic per level, memory-aware cycles and energy on `hw`."""
    caches = hw.caches
    if len(counts.caches) != len(caches):
        raise MemoryModelError(f"{hw.name}: {len(caches)} cache levels described, "
                               f"{len(counts.caches)} simulated")
    for level, sim in zip(caches, counts.caches):
        if (sim.size_bytes, sim.associativity, sim.line_bytes) != (
                level.size_bytes // level.shared_by_cores, level.associativity, level.line_bytes):
            raise MemoryModelError(f"{hw.name}: level '{level.name}' simulated with another geometry "
                                   f"({sim.size_bytes} B, {sim.associativity} ways, {sim.line_bytes} B lines)")
        # The policy and allocation too: a write-through L1 simulated for write-back hardware moved
        # the figure by 2% and was reported as the description's (issue 62).
        if sim.write_policy != PLUGIN_POLICY[level.write_policy]:
            raise MemoryModelError(f"{hw.name}: level '{level.name}' simulated "
                                   f"{_POLICY_SAYS.get(sim.write_policy, repr(sim.write_policy))}, the "
                                   f"description says {_POLICY_SAYS[PLUGIN_POLICY[level.write_policy]]}")
    flows: list[_Flow] = []
    levels: list[LevelTraffic] = []
    for i, (level, sim) in enumerate(zip(caches, counts.caches)):
        flows.append(_Flow(read_out=sim.read_bytes + sim.writeback_bytes,
                           written_in=sim.write_bytes + sim.fill_bytes))
        levels.append(LevelTraffic(
            name=level.name, role=level.role, read_accesses=sim.read_accesses,
            write_accesses=sim.write_accesses, read_misses=sim.read_misses,
            write_misses=sim.write_misses, read_bytes=sim.read_bytes, write_bytes=sim.write_bytes,
            fill_bytes=sim.fill_bytes, writeback_bytes=sim.writeback_bytes))
    dram = hw.level("dram")
    flows.append(_Flow(read_out=counts.dram_read_bytes, written_in=counts.dram_write_bytes))
    levels.append(LevelTraffic(name=dram.name, role=dram.role, read_bytes=counts.dram_read_bytes,
                               write_bytes=counts.dram_write_bytes))

    served = [*caches, dram]
    # Bandwidth: what each level serves to the one above (L1: the core) and takes from it.
    transfer = [sim_bytes / level.read_bytes_per_cycle + written / level.write_bytes_per_cycle
                for level, sim_bytes, written in (
                    (level, t.read_bytes, t.write_bytes) for level, t in zip(served, levels))]
    stall = 0.0
    for i, (level, sim) in enumerate(zip(caches, counts.caches)):
        below = served[i + 1]
        stall += (sim.read_misses + sim.write_misses) * below.latency_cycles / level.outstanding_misses
    memory_cycles = max(transfer)
    total = max(core_cycles + stall, memory_cycles)
    cycles = round(total)
    energy = (macs * hw.compute.mac_energy_pj
              + counts.instructions * hw.compute.instruction_energy_pj
              + cycles * hw.compute.static_energy_pj_per_cycle)
    for level, flow in zip(served, flows):
        per_access = level.access_bits / 8
        energy += flow.read_out / per_access * level.read_energy_pj
        energy += flow.written_in / per_access * level.write_energy_pj
    return MemoryAware(levels=levels, transfer_cycles=round(memory_cycles), stall_cycles=round(stall),
                       cycles=cycles, energy_pj=round(energy, 1),
                       bound=_bound(core_cycles, stall, transfer, served))


def _bound(core: int, stall: float, transfer: list[float], served) -> str:
    """What limits the dispatch: the busiest level's name when its bandwidth does, else
    "core+stall" (its schedule plus the miss latency it cannot hide)."""
    busiest = max(range(len(transfer)), key=lambda i: transfer[i])
    if transfer[busiest] > core + stall:
        return served[busiest].name
    return "core+stall"


def peak_macs_per_cycle(hw: Hardware, element_bits: int) -> int:
    """The described core's MACs per cycle at `element_bits` multiplicands: its vector lanes at
    that width times its FMA pipes (f32: `macs_per_cycle`; i8 four times that)."""
    return max(1, hw.compute.vector_bits // element_bits) * hw.compute.fma_pipes


def bound(hw: Hardware, macs: int, element_bits: int, read_bytes: int, write_bytes: int) -> tuple[int, str]:
    """(the fewest cycles the described hardware allows a dispatch, what sets it): its MACs at the
    peak for its element type, and its compulsory bytes (every input read once, every output
    written once) through each memory level at that level's read and write bandwidth, as the
    memory-aware model prices traffic; the max of these. "compute" or the level's name."""
    candidates = [(macs / peak_macs_per_cycle(hw, element_bits) if macs else 0.0, "compute")]
    for level in [*hw.caches, hw.level("dram")]:
        candidates.append((read_bytes / level.read_bytes_per_cycle + write_bytes / level.write_bytes_per_cycle,
                           level.name))
    cycles, by = max(candidates, key=lambda c: c[0])
    return max(1, round(cycles)), by
