"""Hardware descriptions (analysis/hardware/*.yaml): validated with pydantic, turned into ZigZag input.

A description is a vector core (lanes, FMA pipes, vector register file) and its memory
hierarchy, innermost first, one level per role: register, l1, l2, dram. Sizes are bytes,
bandwidths bytes per cycle, energies pJ per access of `access_bits` (for compute: per MAC, per
executed instruction and per cycle).
ZigZag wants bits: `zigzag_accelerator()` converts.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

import yaml
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, field_validator, model_validator

from common.core_models import CORE_MODELS, CoreModelError, core_model
from common.yaml_model import load_yaml_model

ROLES = ("register", "l1", "l2", "dram")  # required, innermost first
OPTIONAL_ROLES = ("l3",)  # may sit between l2 and dram
CACHE_ROLES = ("l1", "l2", "l3")  # simulated as caches by perf/ (the register file is the core's)
OPERANDS = ("input", "weight", "output")
_ZZ_OPERAND = {"input": "I1", "weight": "I2", "output": "O"}
# Memory names ZigZag sees besides the levels': zigzag_accelerator's per-operand registers, and
# `cells`, which zigzag-dse (parser/accelerator_factory.py) reads as an in-memory-compute array.
ZIGZAG_NAMES = (*(f"reg_{op}" for op in _ZZ_OPERAND.values()), "cells")


class HardwareError(ValueError):
    """A hardware file is missing, malformed or inconsistent; the message names file and field."""


class _Strict(BaseModel):
    # Numbers are finite: `.inf` or `.nan` from YAML is refused, like any other impossible value.
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


# Upper bounds no real accelerator reaches (RVV caps VLEN at 65536 bits): a value past them is
# a typo or an attack, and would otherwise be accepted and change nothing visible.
MAX_BYTES = 1 << 44  # 16 TiB
MAX_BYTES_PER_CYCLE = 1 << 16
MAX_ENERGY_PJ = 1e6
MAX_LATENCY_CYCLES = 1 << 20
# perf/'s cache simulation (perf/qemu_plugin/cache_sim.c) callocs a 24 B `struct cache_sim_line`
# per line of each cache level's per-core share, in every qemu run (several at once: --jobs),
# and clears and walks them all in every measured window. 2^24 lines (1 GiB of 64 B lines) is
# 384 MiB a level: a cache past that is no cache the simulation can model (an 8 TiB L2 passed
# this schema and then failed in the plugin, blamed on the first dispatch measured: issue 80).
MAX_CACHE_LINES = 1 << 24
CACHE_SIM_LINE_BYTES = 24  # sizeof(struct cache_sim_line) (perf/qemu_plugin/cache_sim.h)
# The VLENs qemu-riscv64 (10.0.2, //tools/qemu) emulates: target/riscv/cpu.h's RV_VLEN_MAX and its
# lower bound of 128 (`-cpu rv64,v=true,vlen=2048` is refused). A description without a core
# model is measured in instruction counts under qemu alone (a sweep's VLEN 256 and 1024), so its
# VLEN must be one of these: nothing else could run or price its code.
QEMU_VLEN_RANGE = (128, 1024)


def _not_a_bool(value: object) -> object:
    # YAML 1.1 reads true/yes/on as a boolean and pydantic would take it as 1: `fma_pipes: true`
    # silently halved the peak (issue 62). No hardware field is a boolean.
    if isinstance(value, bool):
        raise ValueError(f"{str(value).lower()} is a YAML boolean (true/yes/on, false/no/off), not a number")
    return value


# Numbers that refuse a YAML boolean; otherwise as pydantic's int and float (2.0 is the int 2).
Int = Annotated[int, BeforeValidator(_not_a_bool)]
Float = Annotated[float, BeforeValidator(_not_a_bool)]


def _power_of_two(n: int) -> int:
    if n & (n - 1):
        raise ValueError(f"{n} is not a power of two")
    return n


class Compute(_Strict):
    vector_bits: Int = Field(ge=32, le=65536)  # VLEN
    vector_registers: Int = Field(gt=0, le=1024)
    fma_pipes: Int = Field(gt=0, le=64)
    # Cycles from one FMA to the next that accumulates into its result: a register tile with
    # too few independent accumulators waits on this, however many pipes there are.
    fma_latency_cycles: Int = Field(ge=1, le=64)
    mac_energy_pj: Float = Field(gt=0, le=MAX_ENERGY_PJ)
    # What every executed instruction costs beside its data: fetch, decode, register-file access
    # and control. Without it, scalar code that runs 10x the instructions of vector code priced
    # lower energy, since its narrow accesses move fewer bytes (perf/memory_model.py).
    instruction_energy_pj: Float = Field(ge=0, le=MAX_ENERGY_PJ)
    # What every cycle costs whether or not work is done: clock tree and leakage of the core and
    # its caches. Without it a build that takes 10x the cycles spent no more for the wait.
    static_energy_pj_per_cycle: Float = Field(ge=0, le=MAX_ENERGY_PJ)

    _vlen_power_of_two = field_validator("vector_bits")(_power_of_two)


class MemoryLevel(_Strict):
    name: str = Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$", max_length=64)
    role: Literal["register", "l1", "l2", "l3", "dram"]
    size_bytes: Int = Field(gt=0, le=MAX_BYTES)
    # ZigZag counts bandwidth in whole bits per cycle: a multiple of 1/8 byte converts exactly.
    read_bytes_per_cycle: Float = Field(ge=0.125, le=MAX_BYTES_PER_CYCLE, multiple_of=0.125)
    write_bytes_per_cycle: Float = Field(ge=0.125, le=MAX_BYTES_PER_CYCLE, multiple_of=0.125)
    read_energy_pj: Float = Field(ge=0, le=MAX_ENERGY_PJ)  # per access of access_bits
    write_energy_pj: Float = Field(ge=0, le=MAX_ENERGY_PJ)
    access_bits: Int = Field(gt=0, le=65536)
    latency_cycles: Int = Field(ge=1, le=MAX_LATENCY_CYCLES)
    operands: tuple[str, ...] = OPERANDS
    shared_by_cores: Int = Field(default=1, ge=1, le=4096)
    # Cache geometry and policy, for the levels with a cache role (l1, l2, l3): what perf/'s
    # trace-driven cache simulation uses. Defaults: 64 B lines, 8 ways, write-back with write
    # allocate, 8 misses in flight to the next level (an application core's miss-status
    # registers). The register file and DRAM ignore them.
    line_bytes: Int = Field(default=64, ge=4, le=4096)
    associativity: Int = Field(default=8, ge=1, le=1024)
    write_policy: Literal["write-back", "write-through"] = "write-back"
    outstanding_misses: Int = Field(default=8, ge=1, le=1024)

    _line_power_of_two = field_validator("line_bytes")(_power_of_two)

    @field_validator("access_bits")
    @classmethod
    def _whole_bytes(cls, bits: int) -> int:
        # Energies are per access and perf/ prices bytes moved in accesses of access_bits / 8
        # bytes: a width of 12 bits is no access a memory makes.
        if bits % 8:
            raise ValueError(f"{bits} is not a whole number of bytes (a multiple of 8 bits)")
        return bits

    @model_validator(mode="after")
    def _known_operands(self):
        for op in self.operands:
            if op not in OPERANDS:
                raise ValueError(f"unknown operand '{op}' (expected one of {', '.join(OPERANDS)})")
        if not self.operands:
            raise ValueError("a memory level must hold at least one operand")
        return self


class Hardware(_Strict):
    name: str = Field(pattern=r"^[A-Za-z0-9_.-]+$", max_length=64)
    description: str = ""
    clock_ghz: Float = Field(gt=0, le=20)
    cores: Int = Field(ge=1, le=4096)
    compute: Compute
    memory: tuple[MemoryLevel, ...]
    # The llvm-mca core model RISC-V code for this accelerator is measured on (perf/):
    # its VLEN must be compute.vector_bits. None for hardware that is timed, not modelled.
    model_core: str | None = None

    @property
    def lanes_f32(self) -> int:
        return self.compute.vector_bits // 32

    @property
    def macs_per_cycle(self) -> int:
        return self.lanes_f32 * self.compute.fma_pipes

    def level(self, role: str) -> MemoryLevel:
        return next(m for m in self.memory if m.role == role)

    @property
    def caches(self) -> tuple[MemoryLevel, ...]:
        """The cache levels, innermost first: what perf/ simulates between the core and DRAM."""
        return tuple(m for m in self.memory if m.role in CACHE_ROLES)


def _check(hw: Hardware) -> tuple[str, str] | None:
    """Consistency rules pydantic field types cannot express: (field, reason) or None."""
    roles = [m.role for m in hw.memory]
    for i, role in enumerate(ROLES):
        if role not in roles:
            return "memory", f"missing level with role '{role}'"
    order = ["register", "l1", "l2", "l3", "dram"]
    if roles != [r for r in order if r in roles]:
        return "memory", f"levels must be {', '.join(ROLES)} innermost first (l3 optional), " \
                         f"got {', '.join(roles)}"
    for i in range(1, len(hw.memory)):
        if hw.memory[i].size_bytes <= hw.memory[i - 1].size_bytes:
            return (f"memory.{i}.size_bytes",
                    f"level '{hw.memory[i].name}' ({hw.memory[i].size_bytes} B) must be larger than "
                    f"'{hw.memory[i - 1].name}' ({hw.memory[i - 1].size_bytes} B)")
    for i in range(1, len(hw.memory)):
        # A level farther from the core is never faster than the one inside it (an equal latency
        # is an idealised level): an L2 or DRAM below its inner level's latency makes misses
        # cheaper than hits, and the memory-aware figures came out low without a word (issue 62).
        inner, outer = hw.memory[i - 1], hw.memory[i]
        if outer.latency_cycles < inner.latency_cycles:
            return (f"memory.{i}.latency_cycles",
                    f"level '{outer.name}' ({outer.latency_cycles} cycles) is faster than '{inner.name}' "
                    f"({inner.latency_cycles} cycles) inside it: latencies must not decrease outward")
    for i, m in enumerate(hw.memory):
        # A level cannot be shared by more cores than there are: its per-core share (what perf/
        # simulates and ZigZag sees) would shrink below the size the file gives.
        if m.shared_by_cores > hw.cores:
            return (f"memory.{i}.shared_by_cores",
                    f"level '{m.name}' is shared by {m.shared_by_cores} cores, but the hardware has "
                    f"cores: {hw.cores}")
    for i in range(1, len(hw.memory)):
        # What a core sees of a shared level is its share (what perf/ simulates and ZigZag gets):
        # a share below the level inside it holds less than that level, which the totals above
        # cannot tell (an L2 of 64 KiB shared by 8 cores is 8 KiB a core, behind a 32 KiB L1).
        inner, outer = hw.memory[i - 1], hw.memory[i]
        inner_share, outer_share = inner.size_bytes // inner.shared_by_cores, outer.size_bytes // outer.shared_by_cores
        if outer_share < inner_share:
            return (f"memory.{i}.size_bytes",
                    f"level '{outer.name}' is {outer_share} B per core ({outer.size_bytes} B shared by "
                    f"{outer.shared_by_cores} cores), smaller than '{inner.name}' ({inner_share} B per core) "
                    f"inside it")
    for i, m in enumerate(hw.memory):
        # Energies are per access of access_bits: an access wider than the cache's line is no
        # access the cache makes, and made every byte it moved cheaper (8192 bits over 64 B lines
        # priced each byte 16x below the description's own figure; issue 62 probe).
        if m.role in CACHE_ROLES and m.access_bits > 8 * m.line_bytes:
            return (f"memory.{i}.access_bits",
                    f"level '{m.name}': an access of {m.access_bits} bits is wider than its "
                    f"{m.line_bytes} B lines")
    for i, m in enumerate(hw.memory):
        if m.role in CACHE_ROLES:
            ways_bytes = m.associativity * m.line_bytes
            if (m.size_bytes // m.shared_by_cores) % ways_bytes:
                return (f"memory.{i}.associativity",
                        f"level '{m.name}': {m.size_bytes // m.shared_by_cores} B per core is not a whole "
                        f"number of sets of {m.associativity} ways x {m.line_bytes} B lines")
            lines = m.size_bytes // m.shared_by_cores // m.line_bytes
            if lines > MAX_CACHE_LINES:
                return (f"memory.{i}.size_bytes",
                        f"level '{m.name}': {m.size_bytes // m.shared_by_cores} B per core is {lines} lines of "
                        f"{m.line_bytes} B; perf/'s cache simulation keeps {CACHE_SIM_LINE_BYTES} B per line in "
                        f"every qemu run and models at most {MAX_CACHE_LINES} lines a level "
                        f"({MAX_CACHE_LINES * m.line_bytes} B per core in {m.line_bytes} B lines)")
    for i, m in enumerate(hw.memory):
        # ZigZag's memories are a mapping by name: a name given twice, or one of its own, would
        # silently replace a level of the model (names compared as ZigZag-safe: case ignored).
        if m.name.lower() in (n.name.lower() for n in hw.memory[:i]):
            return f"memory.{i}.name", f"level name '{m.name}' is used by an earlier level: names must be unique"
        if m.name.lower() in (n.lower() for n in ZIGZAG_NAMES):
            return (f"memory.{i}.name", f"level name '{m.name}' is reserved for the analysis' ZigZag model "
                                        f"({', '.join(ZIGZAG_NAMES)})")
        if set(m.operands) != set(OPERANDS):
            return f"memory.{i}.operands", "every level must hold input, weight and output"
    if hw.model_core is not None:
        try:
            core = core_model(hw.model_core)
        except CoreModelError as err:
            return "model_core", str(err)
        if core.vlen != hw.compute.vector_bits:
            return ("model_core", f"{core.name} models VLEN {core.vlen}, but compute.vector_bits is "
                                  f"{hw.compute.vector_bits}: model cycles would not be of this accelerator")
    elif not QEMU_VLEN_RANGE[0] <= hw.compute.vector_bits <= QEMU_VLEN_RANGE[1]:
        # No core model (legitimate: a sweep's VLEN 256 is measured in instructions only), and a
        # VLEN qemu cannot emulate either: the build failed in qemu, blamed on a dispatch.
        vlen = hw.compute.vector_bits
        cores = [c.name for c in CORE_MODELS.values() if c.vlen == vlen]
        missing = f"model_core is not set ({', '.join(cores)} models it)" if cores else "no core model has it"
        return ("compute.vector_bits",
                f"VLEN {vlen}: {missing}, and qemu emulates VLEN {QEMU_VLEN_RANGE[0]} to {QEMU_VLEN_RANGE[1]} "
                f"only: nothing could run or price code for it")
    reg = hw.level("register")
    want = hw.compute.vector_registers * hw.compute.vector_bits // 8
    if reg.size_bytes != want:
        return ("memory.0.size_bytes",
                f"register level is {reg.size_bytes} B but compute says "
                f"{hw.compute.vector_registers} x {hw.compute.vector_bits} bits = {want} B")
    return None


def load_hardware(path: str | Path) -> Hardware:
    hw = load_yaml_model(path, Hardware, "hardware", HardwareError)
    problem = _check(hw)
    if problem:
        raise HardwareError(f"{Path(path)}: field '{problem[0]}': {problem[1]}")
    return hw


def _ports(read_bits: int, write_bits: int, operands: list[str], top: bool) -> list[dict]:
    read_alloc, write_alloc = [], []
    for op in operands:
        read_alloc.append(f"{op}, tl")
        if not top:
            write_alloc.append(f"{op}, fh")
        if op == "O":
            write_alloc.append("O, fl")
            if not top:
                read_alloc.append("O, th")
    # bandwidth_min is the port's access granularity: never more than the port's bandwidth
    # (a 4-bit/cycle DRAM must not get a minimum of 8 bits, which ZigZag rejects).
    return [
        {"name": "r_port_1", "type": "read", "bandwidth_min": min(read_bits, max(8, read_bits // 8)),
         "bandwidth_max": read_bits, "allocation": read_alloc},
        {"name": "w_port_1", "type": "write", "bandwidth_min": min(write_bits, max(8, write_bits // 8)),
         "bandwidth_max": write_bits, "allocation": write_alloc},
    ]


def zigzag_accelerator(hw: Hardware) -> dict:
    """ZigZag accelerator description (sizes and bandwidths in bits).

    The operational array is one dimension `D1` of `macs_per_cycle` MAC units (f32 lanes times
    FMA pipes). The register level becomes per-lane registers for each operand (the vector
    register file split evenly), so no operand is a broadcast register: a broadcast input
    register makes ZigZag cap unrolling on its bandwidth (see toolchain-facts.md). Caches and
    DRAM serve the whole array.
    """
    lanes = hw.macs_per_cycle
    reg = hw.level("register")
    per_lane_bits = max(32, (reg.size_bytes * 8 // (3 * lanes)) // 32 * 32)
    memories: dict[str, dict] = {}
    for op in ("I1", "I2", "O"):
        memories[f"reg_{op}"] = {
            "size": per_lane_bits,
            "r_cost": reg.read_energy_pj * 32 / reg.access_bits,
            "w_cost": reg.write_energy_pj * 32 / reg.access_bits,
            "area": 0,
            "latency": 1,
            "auto_cost_extraction": False,
            "operands": [op],
            "ports": _ports(32, 32, [op], top=False),
            "served_dimensions": [],
        }
    for m in hw.memory[1:]:
        size_bytes = m.size_bytes // m.shared_by_cores
        read_bits, write_bits = round(m.read_bytes_per_cycle * 8), round(m.write_bytes_per_cycle * 8)
        memories[m.name] = {
            "size": size_bytes * 8,
            # ZigZag charges r_cost/w_cost per access of a port's bandwidth_max bits (zigzag-dse
            # 3.9.1 cost_model.py: accesses = bits / bandwidth_max); the description gives pJ per
            # access of access_bits. Scaled, so a byte costs what the description says (issue 77:
            # unscaled, a 2 B/cycle DRAM's reads cost 4x, the L2's 8 B/cycle writes 2x).
            "r_cost": m.read_energy_pj * read_bits / m.access_bits,
            "w_cost": m.write_energy_pj * write_bits / m.access_bits,
            "area": 0,
            "latency": m.latency_cycles,
            "auto_cost_extraction": False,
            "operands": ["I1", "I2", "O"],
            "ports": _ports(read_bits, write_bits, ["I1", "I2", "O"], top=m.role == "dram"),
            "served_dimensions": ["D1"],
        }
    return {
        "name": hw.name,
        "memories": memories,
        "operational_array": {
            "input_precision": [32, 32],
            "unit_energy": hw.compute.mac_energy_pj,
            "unit_area": 1,
            "dimensions": ["D1"],
            "sizes": [lanes],
        },
    }


def zigzag_mapping() -> list[dict]:
    """Mapping without spatial_mapping: ZigZag generates one per layer."""
    return [{"name": "default", "memory_operand_links": {"O": "O", "W": "I2", "I": "I1"}}]


def write_zigzag_inputs(hw: Hardware, folder: Path) -> tuple[Path, Path]:
    folder.mkdir(parents=True, exist_ok=True)
    acc, mapping = folder / "accelerator.yaml", folder / "mapping.yaml"
    acc.write_text(yaml.safe_dump(zigzag_accelerator(hw), sort_keys=False))
    mapping.write_text(yaml.safe_dump(zigzag_mapping(), sort_keys=False))
    return acc, mapping
