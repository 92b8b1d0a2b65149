"""Model cycles: llvm-mca cycles of each executed basic block on a named core model.

Each distinct (block, vtype it was entered with) becomes one llvm-mca code region,
annotated with the LMUL and SEW in force (llvm-mca's RISC-V instruments), after the
block's bytes are disassembled with llvm-mc. A block's cost is llvm-mca's total cycles
for `ITERATIONS` back-to-back runs of the block divided by `ITERATIONS` (steady state);
a dispatch's model cycles are that cost times the block's execution count, summed.
What the model leaves out is `common.core_models.MODEL_IGNORES`.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

from perf.counts import SLOT_UNKNOWN, Block, slot_instruments

# LLVM 19's tools, run from one directory given by --llvm-bin (perf.measure, choice.tune,
# choice.choose): Bazel's @llvm19 (Debian bookworm's llvm-19, pinned by version and SHA256, with
# the libraries it loads), an input of every action that runs them; never looked up on PATH.
LLVM_MC = "llvm-mc"
LLVM_MCA = "llvm-mca"
LLVM_TOOLS = (LLVM_MC, LLVM_MCA, "opt", "llc")  # what --llvm-bin must hold (opt, llc: perf.code_model)
ITERATIONS = 100
_CHUNK = 4000  # regions per llvm-mca run

_llvm_bin: Path | None = None


class McaError(RuntimeError):
    """llvm-mc or llvm-mca failed or is missing; the message says which and why."""


def add_llvm_bin_argument(parser: argparse.ArgumentParser, required: bool = True,
                          default: Path | None = None) -> None:
    """The --llvm-bin option of a CLI that runs LLVM 19's tools (call use_llvm_bin with it)."""
    parser.add_argument("--llvm-bin", type=Path, required=required and default is None, default=default,
                        metavar="DIR", help="directory of LLVM 19's llvm-mc, llvm-mca, opt and llc "
                        f"(Bazel: @llvm19{'; default ' + str(default) if default else ''})")


def runfiles_llvm_bin() -> Path | None:
    """@llvm19 in the runfiles of a `bazel run` binary that has it as data (bench/), else None."""
    here = Path(__file__).absolute()  # <runfiles>/<workspace>/perf/mca.py
    candidate = here.parents[2] / "llvm19"
    return candidate if (candidate / LLVM_MCA).is_file() else None


def use_llvm_bin(directory: Path | None) -> None:
    """Run LLVM's tools from `directory` (--llvm-bin) in this process."""
    global _llvm_bin
    _llvm_bin = None if directory is None else Path(directory)


def tool(name: str) -> str:
    """Path of LLVM 19's `name` (llvm-mc, llvm-mca, opt, llc) in the --llvm-bin directory."""
    if _llvm_bin is None:
        raise McaError(f"{name}: no LLVM 19 tools given (--llvm-bin DIR, Bazel's @llvm19)")
    path = _llvm_bin / name
    if not path.is_file() or not os.access(path, os.X_OK):
        raise McaError(f"{name} not found in --llvm-bin {_llvm_bin} (Bazel's @llvm19 has it)")
    return str(path.absolute())


def require_tools(names: tuple[str, ...]) -> None:
    """McaError naming the first of `names` the --llvm-bin directory lacks."""
    for name in names:
        tool(name)


def tool_version(name: str) -> str:
    out = subprocess.run([tool(name), "--version"], capture_output=True, text=True)
    for line in out.stdout.splitlines():
        if "version" in line.lower():
            return line.strip()
    return out.stdout.strip().splitlines()[0] if out.stdout.strip() else "unknown"


@dataclass(frozen=True)
class Region:
    code: bytes
    insns: int
    slot: int | None  # entry vtype slot, or None when the block's first vector op follows a vset


def regions_of(block: Block) -> list[tuple[Region, int]]:
    """The regions a block is costed as, with their execution counts."""
    if block.nvec_entry == 0:
        return [(Region(block.code, block.insns, None), block.count)]
    return [(Region(block.code, block.insns, slot), n) for slot, n in block.executions]


def disassemble(codes: list[tuple[bytes, int]], mattr: str) -> list[list[str]]:
    """Assembly lines of each (code, instruction count), in one llvm-mc run."""
    stream = " ".join(f"0x{b:02x}" for code, _ in codes for b in code)
    proc = subprocess.run([tool(LLVM_MC), "--disassemble", "-triple=riscv64", f"-mattr={mattr}"],
                          input=stream, capture_output=True, text=True)
    if proc.returncode != 0 or "invalid instruction encoding" in proc.stderr:
        first = (proc.stderr.strip().splitlines() or ["(no message)"])[0]
        raise McaError(f"{LLVM_MC} cannot disassemble the executed code: {first}")
    lines = [l.strip() for l in proc.stdout.splitlines()
             if l.strip() and not l.strip().startswith(".")]
    if len(lines) != sum(n for _, n in codes):
        raise McaError(f"{LLVM_MC} gave {len(lines)} instructions for {sum(n for _, n in codes)} executed ones")
    out, at = [], 0
    for _, n in codes:
        out.append(lines[at:at + n])
        at += n
    return out


def region_cycles(regions: list[Region], core: str, mattr: str) -> dict[Region, Fraction]:
    """Cycles per execution of each region on `core` (llvm-mca -mcpu)."""
    if not regions:
        return {}
    codes = {r.code: r.insns for r in regions}  # a block entered at several vtypes is one code
    asm = dict(zip(codes, disassemble(list(codes.items()), mattr)))
    texts = []
    for region in regions:
        instruments = None
        if region.slot is not None and region.slot != SLOT_UNKNOWN:
            instruments = slot_instruments(region.slot)
        texts.append((asm[region.code], instruments))
    return dict(zip(regions, text_cycles(texts, core)))


# Cycles per execution of every region llvm-mca has priced in this process, by (triple, core,
# assembly lines, instruments). The measured choice prices the same code many times (each round
# recompiles every dispatch, most of them unchanged), and each region is analysed in isolation.
_PRICED: dict[tuple, Fraction] = {}
_PRICED_MAX = 200_000  # regions kept (a few hundred bytes each); past it the memo starts over


def text_cycles(regions: list[tuple[list[str], tuple[str, str] | None]], core: str,
                triple: str = "riscv64") -> list[Fraction]:
    """Cycles per execution on `core` of each region given as (assembly lines, (LMUL, SEW)
    in force on entry, or None when unknown, set inside the region or not RISC-V).

    A region priced before in this process is not priced again.

    llvm-mca carries an LMUL/SEW instrument from one region into the next, so a region without
    its own (no known vtype on entry) would take whichever region happened to precede it: its
    price, and a dispatch's model cycles, depended on which other code was priced in the same
    run (se_net's main_dispatch_21 gave 131,259 model cycles measured with 8 other dispatches and
    141,869 with all 27). Regions without instruments are therefore priced in runs of their own,
    where no instrument is ever set: each is priced as llvm-mca prices code with no vtype known,
    whatever else is priced beside it."""
    keys = [(triple, core, tuple(lines), instruments) for lines, instruments in regions]
    todo = list(dict.fromkeys(k for k in keys if k not in _PRICED))
    if len(_PRICED) + len(todo) > _PRICED_MAX:
        _PRICED.clear()
        todo = list(dict.fromkeys(keys))
    plain = [k for k in todo if k[3] is None]
    instrumented = [k for k in todo if k[3] is not None]
    chunks = ([plain[i:i + _CHUNK] for i in range(0, len(plain), _CHUNK)]
              + [instrumented[i:i + _CHUNK] for i in range(0, len(instrumented), _CHUNK)])
    for chunk in chunks:
        text = []
        for i, (_, _, lines, instruments) in enumerate(chunk):
            text.append(f"# LLVM-MCA-BEGIN r{i}")
            if instruments is not None:
                text += [f"# LLVM-MCA-RISCV-LMUL {instruments[0]}", f"# LLVM-MCA-RISCV-SEW {instruments[1]}"]
            text += lines
            text.append(f"# LLVM-MCA-END r{i}")
        proc = subprocess.run([tool(LLVM_MCA), f"-mtriple={triple}", f"-mcpu={core}",
                               f"-iterations={ITERATIONS}", "--json",
                               # Only the summary is read: the other views were 90% of the JSON.
                               "-instruction-info=false", "-resource-pressure=false", "-"],
                              input="\n".join(text) + "\n", capture_output=True, text=True)
        if proc.returncode != 0:
            first = next((l for l in proc.stderr.splitlines() if "error" in l),
                         (proc.stderr.strip().splitlines() or ["(no message)"])[0])
            raise McaError(f"{LLVM_MCA} -mcpu={core} failed: {first.strip()}")
        views = {v.get("Name"): v for v in json.loads(proc.stdout)["CodeRegions"]}
        for i, key in enumerate(chunk):
            if f"r{i}" not in views:
                raise McaError(f"{LLVM_MCA} -mcpu={core} returned no result for region r{i}")
            summary = views[f"r{i}"]["SummaryView"]
            _PRICED[key] = Fraction(summary["TotalCycles"], summary["Iterations"])
    return [_PRICED[k] for k in keys]
