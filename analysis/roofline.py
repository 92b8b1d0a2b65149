"""Analytical cost for ops ZigZag cannot express: a roofline over the hardware description.

latency = max(compute cycles, bytes moved / bandwidth at each level), where
- compute cycles = iterations x body ops / (f32 lanes x FMA pipes);
- bytes moved = every operand's full size once (inputs read, output written), charged to each
  level at its read/write bandwidth, and to DRAM only when the working set exceeds the L2 (or
  L3); per-core shares of shared levels are used.
energy = iterations x body ops x MAC energy + accesses x energy per access at each level.
"""

from __future__ import annotations

from math import prod

from analysis.cost_model import element_bytes
from analysis.dispatches import LoopNest
from common.hardware import Hardware

MODEL = "roofline"


def cost(nest: LoopNest, hw: Hardware) -> dict:
    iters = prod(b for _, b, _ in nest.loops) if nest.loops else 1
    ops_per_iter = max(1, len([o for o in nest.body_ops if o != "arith.constant"]))
    if nest.body_ops == ("linalg.softmax",):
        ops_per_iter = 5  # max, sub, exp, sum, div per element
    compute = iters * ops_per_iter / hw.macs_per_cycle
    read = sum(prod(o[3]) * element_bytes(o[2]) for o in nest.operands if o[0] == "input")
    write = sum(prod(o[3]) * element_bytes(o[2]) for o in nest.operands if o[0] == "output")
    working = read + write
    cycles = compute
    energy = iters * ops_per_iter * hw.compute.mac_energy_pj
    inner_capacity = 0
    for m in hw.memory[1:]:
        if m.role == "dram" and working <= inner_capacity:
            break
        r_bw = m.read_bytes_per_cycle / (1 if m.shared_by_cores == 1 else m.shared_by_cores)
        w_bw = m.write_bytes_per_cycle / (1 if m.shared_by_cores == 1 else m.shared_by_cores)
        cycles = max(cycles, read / r_bw, write / w_bw, (read + write) / (r_bw + w_bw) * 2 / 2)
        per_access = m.access_bits / 8
        energy += read / per_access * m.read_energy_pj + write / per_access * m.write_energy_pj
        inner_capacity = m.size_bytes // m.shared_by_cores
    return {"latency_cycles": float(f"{cycles:.9g}"), "energy_pj": float(f"{energy:.9g}"),
            "mac_utilization": float(f"{compute / cycles:.9g}") if cycles else None,
            "model": MODEL}
