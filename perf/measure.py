"""RISC-V performance of a build's dispatches: instruction counts and model cycles.

    python -m perf.measure --vmfb M.vmfb --layout M.layout.json --compiled-report M.report.json --module M.mlirbc \\
        --target riscv64_rvv_zvl128.target.yaml [--analysis M_riscv.analysis.json] \\
        --hardware riscv_rvv.yaml [--hardware ...] --runner hal_runner_riscv64 \\
        --plugin libinsn_classes.so --qemu qemu-riscv64 --model-name resnet18 \\
        --out-json M.perf.json --out-md M.perf.md

One compile, many readers: the executables run are the vmfb's own bytes (IREE's embedded ELF),
driven by the layout its own compile read from IREE's IR (codegen.compile --out-layout:
workgroup counts, push constants, bindings); nothing is compiled here. `--module`, `--target`
and `--analysis` name what the build was made from, and with `--compiled-report` the build's
executables' sha256 must equal what codegen recorded (the shipped bytes are the measured
bytes; a mismatch is an error). Every dispatch is run whole (all workgroups) by the riscv64
hal_runner under `--qemu` (qemu-riscv64 10.0.2 built with plugins from the pinned source,
//tools/qemu) with the `insn_classes` TCG plugin, once per accelerator description at `vlen=`
its VLEN; the plugin counts what runs between the runner's dispatch markers, by class, and
simulates the description's caches. Each executed block is costed by llvm-mca on the
description's `model_core`, and weighted by its count: "model cycles on <core>". Nothing here
is a time.

Fails with one line (`perf: <culprit>: <reason>`) and writes nothing when a dispatch
cannot be run or measured.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from fractions import Fraction
from pathlib import Path

import numpy as np
from tqdm import tqdm

from common.hardware import Hardware, HardwareError, load_hardware
from common import processes
from common.build import Build, CompileOptions
from common.codegen_report import ReportError, check_layout, load_codegen_report
from common.errors import OneLineErrors, first_line, last_line
from common.files import InputError, check_input, check_new_directory, check_outputs, sha256_file, write_together
from common.perf_schema import CoreRun, DispatchPerf, PerfReport
from common.provenance import check_build_inputs
from common.core_models import MODEL_IGNORES, RISCV, core_model
from common.scratch import scratch_directory
from common.targets import IreeTarget, TargetError, load_target
from perf import counts as cnt
from perf import guest
from perf.guest import GUEST_RUN_PREFIX, GUEST_RUN_ROOT
from perf import mca
from perf import memory_model as mem
from common.dispatch_layout import Dispatch, ModuleLayout
from runtime.hal_runner import dispatch as drive

class PerfError(RuntimeError):
    """A measurement cannot be made; the message names the culprit. `dispatch` is set when the
    culprit is one dispatch (it cannot be driven or its run under qemu failed), so a caller
    measuring many can set that one apart (choice.tune)."""

    def __init__(self, message: str, dispatch: str | None = None):
        super().__init__(message)
        self.dispatch = dispatch


# What a measurement raises for bad input or a run that fails; each message names its culprit.
MEASURE_ERRORS = (PerfError, TargetError, HardwareError, mca.McaError, cnt.CountsError)


def _qemu_cmd(qemu: str, vlen: int, root: Path) -> list[str]:
    # root: perf.guest.guest_root of the pinned riscv64 glibc (a runfile); the guest sees its own
    # paths, never this one, and nothing of the host's files.
    return guest.qemu_command(qemu, root, vlen)


def _qemu_version(qemu: str) -> str:
    out = subprocess.run([qemu, "--version"], capture_output=True, text=True)
    return (out.stdout.strip().splitlines() or ["unknown"])[0]


def _compulsory_bytes(d: Dispatch) -> tuple[int, int]:
    """(bytes every input holds, bytes every output holds): what the dispatch must read once and
    write once, by its bindings' subspans (a read-write one both)."""
    read = sum(s.nbytes for s in d.subspans if s.access in ("readonly", "readwrite"))
    write = sum(s.nbytes for s in d.subspans if s.access in ("writeonly", "readwrite"))
    return read, write


def _shipped_build(vmfb: Path, layout_path: Path, target: IreeTarget, work: Path) -> tuple[list[Path], ModuleLayout]:
    """(the executables `vmfb` embeds, written to work/lib, its layout): runtime's `load_build`."""
    try:
        built = drive.load_build(vmfb, layout_path, work / "lib")
    except drive.BuildError as err:
        raise PerfError(str(err)) from None
    if built.layout.target != target.name:
        raise PerfError(f"{layout_path}: a layout of target {built.layout.target}, not {target.name}")
    return built.libraries, built.layout


# Buffer placements. Where the runner's buffers fall decides which cache sets and pages a
# dispatch's data meets, and so its memory-aware figure (page-aligned buffers moved mlp_batch32
# by 11%): a figure of one placement is partly placement luck. Placement 0 is the runner's
# natural layout; placement p > 0 shifts binding b's buffer by a seeded multiple of 64 bytes
# below PLACEMENT_SPAN (the set span of a 512 KiB 8-way L2 of 64-byte lines: every set of
# either cache level can be met), the same offsets for every dispatch and candidate.
PLACEMENT_SEED = 59
PLACEMENT_SPAN = 64 * 1024
_MAX_BINDINGS = 64  # hal_runner's


def placement_offsets(placement: int, bindings: int) -> list[int]:
    """Binding byte offsets of `placement` (0: none) for a dispatch with `bindings` bindings:
    binding b's offset depends on (placement, b) alone."""
    if placement == 0:
        return [0] * bindings
    rng = np.random.default_rng([PLACEMENT_SEED, placement])
    return [64 * int(x) for x in rng.integers(0, PLACEMENT_SPAN // 64, size=_MAX_BINDINGS)[:bindings]]


def _run_dispatch(qemu_cmd: list[str], plugin: Path, plugin_args: list[str], runner: Path, lib: Path,
                  index: int, d: Dispatch, inputs: list[Path], out: Path,
                  placement: int = 0) -> cnt.DispatchCounts:
    # What the guest sees must not depend on where the build runs: the simulated caches see its
    # addresses. So the runner and library are copies (a symlink would resolve to the build's
    # path) under fixed names in a fresh directory of fixed path length, the inputs are linked
    # there under fixed names (the guest's argv is on its stack too), and the environment is
    # the guest's own (perf.guest).
    out = out.absolute()
    with scratch_directory(GUEST_RUN_PREFIX, GUEST_RUN_ROOT, suffix="") as tmp:
        here = Path(tmp)
        shutil.copy(runner, here / "hal_runner")
        shutil.copy(lib, here / "dispatch.so")
        local = []
        for i, path in enumerate(inputs):
            local.append(Path(f"in{i}{Path(path).suffix}"))
            (here / local[-1]).symlink_to(Path(path).absolute())
        plugin_spec = ",".join([str(Path(plugin).absolute()), f"out={out}", *plugin_args])
        runner_cmd = [str(Path(qemu_cmd[0]).absolute()), "-plugin", plugin_spec, *qemu_cmd[1:], "./hal_runner"]
        try:
            cmd = drive.dispatch_command(runner_cmd, "./dispatch.so", index, d, local, cwd=here)  # type: ignore[arg-type]: dlopen needs the ./
        except drive.DriveError as err:  # an undersized binding file (a truncated reused input)
            raise PerfError(f"{d.export}: {err}", d.export) from None
        if placement:
            cmd += ["--binding-offsets", ",".join(map(str, placement_offsets(placement, len(inputs))))]
        proc = processes.run(cmd, capture_output=True, text=True, cwd=here, env=guest.environment())
    if proc.returncode != 0:
        raise PerfError(f"{d.export}: runner failed under qemu (exit {proc.returncode}): "
                        f"{last_line(proc.stderr)}", d.export)
    try:
        return cnt.read_counts(out)
    except cnt.CountsError as err:
        raise PerfError(f"{d.export}: {err}", d.export) from None


def _core_run(hw: Hardware, hw_path: Path, names: list[str], placed: dict[str, dict[int, cnt.DispatchCounts]],
              layout: ModuleLayout, mattr: str) -> CoreRun:
    """`placed`: dispatch -> placement -> counts, the first placement's figures the report's."""
    counts = {name: next(iter(placed[name].values())) for name in names}
    regions: dict[mca.Region, None] = {}
    for name in names:
        for c in placed[name].values():
            for block in c.priced_blocks:
                for region, _ in mca.regions_of(block):
                    regions.setdefault(region)
    cycles = None
    if hw.model_core is not None:
        try:
            cycles = mca.region_cycles(sorted(regions, key=lambda r: (r.code, r.slot if r.slot is not None else -1)),
                                       hw.model_core, mattr)
        except mca.McaError as err:
            raise PerfError(f"{hw.name} ({hw.model_core}): {err}") from None
    results = []
    for name in names:
        c = counts[name]
        model_cycles = None
        if cycles is not None:
            model_cycles = round(sum((cycles[r] * n for b in c.priced_blocks for r, n in mca.regions_of(b)), Fraction(0)))
        weighted, unknown = c.lmul_weighted_x8()
        d = layout.dispatches[name]
        macs = d.macs
        share = (macs / (model_cycles * hw.macs_per_cycle)) if macs and model_cycles else None
        memory = None
        by_placement = {}
        if model_cycles is not None:
            try:
                memory = mem.memory_aware(hw, c, model_cycles, macs)
                if len(placed[name]) > 1 or 0 not in placed[name]:
                    for p, pc in placed[name].items():
                        p_cycles = round(sum((cycles[r] * n for b in pc.priced_blocks for r, n in mca.regions_of(b)),
                                             Fraction(0)))
                        by_placement[p] = mem.memory_aware(hw, pc, p_cycles, macs).cycles
            except mem.MemoryModelError as err:
                raise PerfError(f"{name}: {err}", name) from None
        bound_cycles = bound_by = bound_share = None
        if memory is not None:
            bound_cycles, bound_by = mem.bound(hw, macs, d.mac_element_bits, *_compulsory_bytes(d))
            bound_share = round(bound_cycles / memory.cycles, 6) if memory.cycles else None
        results.append(DispatchPerf(
            name=name, kind=d.kind or "unknown", workgroups=tuple(d.workgroup_count), calls=d.calls,
            initializer_calls=d.initializer_calls, macs=macs,
            instructions=c.instructions, classes=c.by_class(), vector_fma=c.vector_fma,
            vector_lmul_weighted=weighted / 8, vector_lmul_unknown=unknown, blocks=len(c.blocks),
            model_cycles=model_cycles, fma_peak_share=round(share, 6) if share is not None else None,
            memory=memory, placement_memory_aware_cycles=by_placement, bound_cycles=bound_cycles,
            bound_by=bound_by, bound_share=bound_share))
    measured = cycles is not None
    bound_total = sum(r.bound_cycles * r.calls for r in results if r.bound_cycles is not None)
    memory_total = sum(r.memory.cycles * r.calls for r in results) if measured else 0
    return CoreRun(hardware=hw.name, hardware_sha256=sha256_file(hw_path), core=hw.model_core,
                   vlen=hw.compute.vector_bits, peak_macs_per_cycle=hw.macs_per_cycle,
                   model_ignores=MODEL_IGNORES, dispatches=results,
                   instructions=sum(r.instructions for r in results),
                   model_cycles=sum(r.model_cycles for r in results) if cycles is not None else None,
                   inference_instructions=sum(r.instructions * r.calls for r in results),
                   inference_model_cycles=sum(r.model_cycles * r.calls for r in results)
                   if measured else None,
                   memory_model_ignores=mem.MEMORY_MODEL_IGNORES,
                   memory_aware_cycles=sum(r.memory.cycles for r in results) if measured else None,
                   energy_pj=round(sum(r.memory.energy_pj for r in results), 1) if measured else None,
                   inference_memory_aware_cycles=sum(r.memory.cycles * r.calls for r in results)
                   if measured else None,
                   inference_energy_pj=round(sum(r.memory.energy_pj * r.calls for r in results), 1)
                   if measured else None,
                   inference_bound_cycles=bound_total if measured else None,
                   bound_share=round(bound_total / memory_total, 6) if measured and memory_total else None)


def _draw_inputs(compiled: ModuleLayout, names: list[str], directory: Path) -> dict[str, list[Path]]:
    """Every dispatch's fixed-seed inputs, drawn in name order into directory/d{i:03d}: one
    stream, so a dispatch's inputs depend on the bindings of the dispatches before it, never on
    which dispatches are measured. Drawn once per directory: a later call whose dispatches have
    the same bindings (choice.tune's rounds change tiles, never bindings) reuses the files, which
    are what it would draw again (ResNet-18's are gigabytes a round)."""
    dispatches = [compiled.dispatches[n] for n in names]
    spec = json.dumps({"seed": drive.SEED, "dispatches": [
        [n, d.binding_lengths, [[s.binding, s.offset, list(s.shape), str(s.dtype)] for s in d.subspans]]
        for n, d in zip(names, dispatches)]})
    stamp = directory / "inputs.json"
    if stamp.is_file() and stamp.read_text() == spec:
        return {n: [directory / f"d{i:03d}" / f"binding{b}.bin" for b in range(len(d.binding_lengths))]
                for i, (n, d) in enumerate(zip(names, dispatches))}
    stamp.unlink(missing_ok=True)
    rng = np.random.default_rng(drive.SEED)
    inputs = {}
    for i, (name, d) in enumerate(zip(names, dispatches)):
        folder = directory / f"d{i:03d}"
        folder.mkdir(parents=True, exist_ok=True)
        try:
            inputs[name] = drive.fill(d, rng, folder)
        except drive.DriveError as err:
            raise PerfError(f"{name}: {err}", name) from None
        except OSError as err:  # a full TMPDIR was "<module>: OSError: 68608 requested and 53248 written"
            raise PerfError(f"{folder}: cannot write {name}'s inputs: {err.strerror or first_line(err)} "
                            "(a full disk? TMPDIR, or the inputs directory, holds them)") from None
    stamp.write_text(spec)  # last: files of an interrupted draw are never reused
    return inputs


def measure(module: Path, build: Build, hardware: list[Path], runner: Path, plugin: Path, model_name: str,
            jobs: int = 2, keep: Path | None = None, counts_only_ok: bool = False, only: set[str] | None = None,
            inputs_dir: Path | None = None, shipped: dict[str, str] | None = None, *,
            qemu: Path, placements: tuple[int, ...] = (0,),
            executor: concurrent.futures.Executor | None = None) -> PerfReport:
    """Every dispatch of `build` (compiled from `module`) measured on each description: the
    executables run are its vmfb's own bytes, driven by its layout, what the compile that made it
    read from its own IR (codegen.compile --out-layout); nothing is compiled here. Its options'
    target and analysis are what it was built from (the report names them). `only`: those dispatches
    alone (choice.tune measures the ones whose candidate changed; the rest are still compiled
    and their inputs drawn, so a dispatch's inputs do not depend on the selection).
    `inputs_dir`: where the inputs are drawn and kept for the next call (see `_draw_inputs`).
    `shipped`: the executables' sha256 the build's compile report recorded; the measured ones
    must be the same bytes. `qemu`: the qemu-riscv64 that loads the plugin
    (//tools/qemu:qemu-riscv64). `placements`: the buffer placements each dispatch runs under
    (`placement_offsets`); the report's figures are the first's, and with more than placement 0
    each dispatch also lists its memory-aware cycles under every one. `executor`: what runs the
    qemu runs (`submit(fn, *args)` returning futures: choice.ray_engine's runs them on a Ray
    cluster); default, `jobs` local threads. The figures do not depend on it."""
    if not placements or len(set(placements)) != len(placements) or min(placements) < 0:
        raise PerfError(f"placements {placements}: expected distinct non-negative placement numbers")
    target_path, analysis, vmfb, layout = build.options.target, build.options.analysis, build.vmfb, build.layout
    if layout is None:
        raise PerfError(f"{vmfb}: no dispatch layout: perf runs a build by the layout its compile wrote "
                        "(codegen.compile --out-layout)")
    target = load_target(target_path)
    if not target.is_riscv:
        raise PerfError(f"{target_path}: target {target.name} is not a riscv target")
    hws = [(load_hardware(p), p) for p in hardware]
    first_of: dict[str, Path] = {}
    for hw, p in hws:  # a report's sections and the counts files are named by the description's name
        if hw.name in first_of:
            raise PerfError(f"{p}: hardware name {hw.name!r} is also {first_of[hw.name]}'s: "
                            "each --hardware needs a name of its own")
        first_of[hw.name] = p
    for hw, p in hws:
        if hw.model_core is None and not counts_only_ok:
            raise PerfError(f"{p}: no model_core: model cycles need a core model of VLEN {hw.compute.vector_bits} "
                            f"(llvm-mca-19 has sifive-p670 for 128 and sifive-x280 for 512); "
                            f"--allow-counts-only measures instruction counts alone")
        if hw.model_core is not None and core_model(hw.model_core).isa != RISCV:
            raise PerfError(f"{p}: model_core {hw.model_core} is a {core_model(hw.model_core).isa} core model: "
                            "RISC-V code cannot be priced on it")
        if hw.compute.vector_bits < target.vector_bits:
            raise PerfError(f"{p}: VLEN {hw.compute.vector_bits} is below the {target.vector_bits} bits "
                            f"{target.name} was compiled for: the code cannot run there")
    for tool_path, what in ((runner, "riscv64 hal_runner"), (plugin, "insn_classes plugin"), (module, "module"),
                            (vmfb, "vmfb"), (layout, "dispatch layout"),
                            (qemu, "qemu-riscv64 (--qemu: //tools/qemu:qemu-riscv64)")):
        try:  # a directory or a device was "not found" (issue 80)
            check_input(tool_path, what)
        except InputError as err:
            raise PerfError(str(err)) from None
    if not os.access(runner, os.X_OK):  # qemu would only say "vector version is not specified"
        raise PerfError(f"{runner}: riscv64 hal_runner is not executable")
    plugin = plugin.absolute()  # qemu dlopen()s it: a bare file name would be searched for elsewhere
    runner = runner.absolute()  # a run may happen in another process (a Ray worker), elsewhere
    qemu = str(qemu.absolute())  # run as given: a bare name would be looked up on PATH (another qemu)
    for name in (mca.LLVM_MC, mca.LLVM_MCA):
        mca.tool(name)
    mattr = ",".join(target.cpu_features)

    with scratch_directory("perf_") as tmp:
        work = (keep or Path(tmp)).absolute()
        work.mkdir(parents=True, exist_ok=True)
        libraries, built = _shipped_build(vmfb, layout, target, work)
        try:
            root = guest.guest_root(drive.find_riscv_sysroot(), Path(tempfile.mkdtemp(prefix="guest_", dir=work)))
        except drive.RunnerError as err:
            raise PerfError(str(err)) from None
        if shipped is not None and built.executables_sha256 != shipped:
            raise PerfError(f"{module.name}: the executables compiled for measurement "
                            f"({_hashes(built.executables_sha256)}) are not the build's "
                            f"({_hashes(shipped)}): its compile report is of another build")
        exports = {}
        for lib in libraries:
            try:
                listed = drive.library_exports(_qemu_cmd(qemu, target.vector_bits, root) + [str(runner)], lib)
            except drive.RunnerError as err:  # a runner of another architecture, or a qemu that ran nothing;
                # the message starts with which (it was cut to its reason, blaming the runner for the qemu)
                raise PerfError(f"{err}, listing "
                                f"{lib.name}'s dispatches under qemu") from None
            for name, index in listed.items():
                exports[name] = (lib, index)
        names = sorted(built.dispatches)
        for i, name in enumerate(names):
            d = built.dispatches[name]
            if d.error or d.workgroup_count is None:
                raise PerfError(f"{name}: cannot be driven: {d.error or 'no workgroup count'}", name)
            if name not in exports:
                raise PerfError(f"{name}: export not found in the compiled libraries", name)
            (work / f"d{i:03d}").mkdir(exist_ok=True)
        inputs = _draw_inputs(built, names, (inputs_dir or work).absolute())

        folder_of = {name: i for i, name in enumerate(names)}  # d{i:03d} above
        if only is not None:
            unknown = sorted(only - set(names))
            if unknown:
                raise PerfError(f"{unknown[0]}: no such dispatch in {module.name}")
            names = [n for n in names if n in only]
        jobs_list = []
        for h, (hw, _) in enumerate(hws):
            qemu_cmd = _qemu_cmd(qemu, hw.compute.vector_bits, root)
            for name in names:
                i = folder_of[name]
                lib, index = exports[name]
                for p in placements:
                    out = work / f"d{i:03d}" / (f"counts_{hw.name}.txt" if p == 0 else f"counts_{hw.name}_p{p}.txt")
                    jobs_list.append(((h, name, p), (qemu_cmd, plugin, mem.plugin_cache_args(hw), runner, lib,
                                                     index, built.dispatches[name], inputs[name], out, p)))
        counts: dict[tuple[int, str, int], cnt.DispatchCounts] = {}
        with contextlib.ExitStack() as stack:
            pool = executor or stack.enter_context(concurrent.futures.ThreadPoolExecutor(max(1, jobs)))
            futures = {pool.submit(_run_dispatch, *job): key for key, job in jobs_list}
            # On a terminal only (tqdm's default): done/total qemu runs and the time left.
            for fut in tqdm(concurrent.futures.as_completed(futures), total=len(futures), unit="run",
                            desc=f"perf {model_name}", leave=False, disable=None):
                counts[futures[fut]] = fut.result()
        runs = [_core_run(hw, path, names, {n: {p: counts[(h, n, p)] for p in placements} for n in names},
                          built, mattr)
                for h, (hw, path) in enumerate(hws)]

    return PerfReport(**_build_fields(module, target, analysis, model_name),
                      tools={"qemu": _qemu_version(qemu), "llvm-mca": mca.tool_version(mca.LLVM_MCA)},
                      executables_sha256=built.executables_sha256, runs=runs)


def _hashes(named: dict[str, str]) -> str:
    return ", ".join(f"{n} {h[:12]}" for n, h in sorted(named.items())) or "none"


def _build_fields(module: Path, target: IreeTarget, analysis: Path | None, model_name: str) -> dict:
    """What a perf report says of the build it is about (measured or refused)."""
    return {"model": model_name, "module_sha256": sha256_file(module), "target": target.name,
            "target_vector_bits": target.vector_bits, "strategy": target.strategy,
            "variant": "tuned" if analysis else "iree-default",
            "analysis_sha256": sha256_file(analysis) if analysis else None}


def refused_report(module: Path, target_path: Path, analysis: Path | None, model_name: str,
                   why: str) -> PerfReport:
    """The report of a build IREE refused (codegen recorded it): nothing to run, said so."""
    return PerfReport(**_build_fields(module, load_target(target_path), analysis, model_name),
                      tools={}, runs=[], failed=why)


def to_json(report: PerfReport) -> str:
    # `failed` only where a build was refused: a measured report's bytes do not mention it.
    data = report.model_dump(mode="json", exclude={"failed"} if report.failed is None else None)
    return json.dumps(data, indent=1, sort_keys=False) + "\n"


def _fmt(n: float) -> str:
    return f"{n / 1e6:.2f} M" if n >= 1e5 else f"{n:,.0f}"


def _cycles(n: int | None) -> str:
    return "-" if n is None else _fmt(n)


def to_markdown(report: PerfReport) -> str:
    title = (f"# RISC-V performance: {report.model} ({report.variant}, {report.target}, strategy "
             f"{report.strategy})")
    if report.failed is not None:
        return f"{title}\n\nNot measured: IREE could not compile this build: {report.failed}\n"
    lines = [title, "",
             f"Dynamic instruction counts from qemu ({report.tools['qemu']}) with the insn_classes "
             f"plugin; model cycles from {report.tools['llvm-mca']}. Model cycles are not time.", ""]
    for run in report.runs:
        if run.core is None:
            lines += [f"## {run.hardware}: instruction counts only (qemu vlen={run.vlen}; no core model "
                      f"has this VLEN)", ""]
        else:
            lines += [f"## {run.hardware}: model cycles on {run.core} (qemu vlen={run.vlen})", "",
                      f"The model ignores {run.model_ignores}. FMA peak: {run.peak_macs_per_cycle} f32 MACs "
                      f"per cycle (the description's lanes x FMA pipes).", ""]
        if run.core is not None:
            lines += [f"Memory-aware cycles add the data traffic of a simulation of the description's "
                      f"caches (docs/design.md); they ignore {run.memory_model_ignores}.", ""]
        lines += ["| dispatch | kind | calls (init) | workgroups | instructions | vector share | "
                  "vector FMAs | model cycles | share of FMA peak | L1 misses | DRAM bytes | stall cycles | "
                  "memory-aware cycles | limited by | energy (uJ) | hardware bound (set by) | % of bound |",
                  "|---|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|"]
        for d in run.dispatches:
            share = f"{d.fma_peak_share:.1%}" if d.fma_peak_share is not None else "-"
            calls = f"{d.calls} ({d.initializer_calls})" if d.initializer_calls else str(d.calls)
            m = d.memory
            memory = (f"{_fmt(m.levels[0].read_misses + m.levels[0].write_misses)} | "
                      f"{_fmt(m.levels[-1].read_bytes + m.levels[-1].write_bytes)} | {_fmt(m.stall_cycles)} | "
                      f"{_fmt(m.cycles)} | {m.bound} | {m.energy_pj / 1e6:.2f}") if m else "- | - | - | - | - | -"
            bound = (f"{_fmt(d.bound_cycles)} ({d.bound_by}) | {d.bound_share:.1%}"
                     if d.bound_cycles is not None and d.bound_share is not None else "- | -")
            lines.append(f"| {d.name} | {d.kind} | {calls} | {'x'.join(map(str, d.workgroups))} | "
                         f"{_fmt(d.instructions)} | {d.vector_share:.1%} | {_fmt(d.vector_fma)} | "
                         f"{_cycles(d.model_cycles)} | {share} | {memory} | {bound} |")
        energy = (lambda e: "-" if e is None else f"{e / 1e6:.2f}")
        model_bound = (f"{_fmt(run.inference_bound_cycles)} | {run.bound_share:.1%}"
                       if run.inference_bound_cycles is not None and run.bound_share is not None else "- | -")
        lines += [f"| **every dispatch once** | | | | {_fmt(run.instructions)} | | | "
                  f"{_cycles(run.model_cycles)} | | | | | {_cycles(run.memory_aware_cycles)} | | "
                  f"{energy(run.energy_pj)} | | |",
                  f"| **one call of the model** (dispatch x calls) | | | | "
                  f"{_fmt(run.inference_instructions)} | | | {_cycles(run.inference_model_cycles)} | | | | | "
                  f"{_cycles(run.inference_memory_aware_cycles)} | | {energy(run.inference_energy_pj)} | "
                  f"{model_bound} |", ""]
        kinds = _by_kind(run)
        if kinds:
            lines += ["Per op kind, one call of the model: the hardware bound (MACs at the peak for the "
                      "element type, or compulsory bytes over a level's bandwidth) over memory-aware cycles.",
                      "", "| op kind | dispatches | memory-aware cycles | bound | % of bound |",
                      "|---|---:|---:|---:|---:|"]
            for kind, (n, cycles, bound) in kinds.items():
                lines.append(f"| {kind} | {n} | {_fmt(cycles)} | {_fmt(bound)} | {bound / cycles:.1%} |")
            lines.append("")
    return "\n".join(lines)


def _by_kind(run: CoreRun) -> dict[str, tuple[int, int, int]]:
    """op kind -> (dispatches, memory-aware cycles x calls, bound cycles x calls), largest first."""
    out: dict[str, list[int]] = {}
    for d in run.dispatches:
        if d.memory is None or d.bound_cycles is None or not d.calls:
            continue
        e = out.setdefault(d.kind, [0, 0, 0])
        e[0] += 1
        e[1] += d.memory.cycles * d.calls
        e[2] += d.bound_cycles * d.calls
    return {k: tuple(v) for k, v in sorted(out.items(), key=lambda kv: -kv[1][1]) if v[1]}


def _compiled_build(args):
    """The codegen report `--compiled-report` names, once it is known to be of this module, target
    and analysis: whether IREE refused the build, else the executables it shipped."""
    for path in (args.module, args.target, args.analysis):
        if path is not None:
            try:  # a directory or a device was "not found" (issue 80)
                check_input(path, "file")
            except InputError as err:
                raise PerfError(str(err)) from None
    report = load_codegen_report(args.compiled_report)
    check_build_inputs(report, args.compiled_report, args.module, args.target, args.analysis)
    check_layout(report, args.compiled_report, args.layout)
    return report


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m perf.measure", description=__doc__.split("\n")[0])
    p.add_argument("--module", required=True, type=Path, help="the module the build was compiled from")
    p.add_argument("--target", required=True, type=Path, help="riscv target file (derived from the accelerator)")
    p.add_argument("--analysis", type=Path, default=None,
                   help="the analysis.json the build was compiled with (absent: IREE's default configs)")
    p.add_argument("--hardware", required=True, type=Path, action="append",
                   help="accelerator description with a model_core (repeatable)")
    p.add_argument("--runner", required=True, type=Path, help="riscv64 hal_runner")
    p.add_argument("--plugin", required=True, type=Path, help="libinsn_classes.so")
    p.add_argument("--qemu", required=True, type=Path,
                   help="qemu-riscv64 that loads the plugin (//tools/qemu:qemu-riscv64, QEMU 10.0.2)")
    mca.add_llvm_bin_argument(p)
    p.add_argument("--model-name", required=True)
    p.add_argument("--out-json", required=True, type=Path)
    p.add_argument("--out-md", required=True, type=Path)
    p.add_argument("--jobs", type=int, default=2, help="qemu processes at once")
    p.add_argument("--placements", type=int, default=1,
                   help="buffer placements each dispatch runs under (placement 0, the natural layout, "
                        "gives the report's figures; each dispatch lists its memory-aware cycles under all)")
    p.add_argument("--allow-counts-only", action="store_true",
                   help="accept descriptions without a model_core: instruction counts, no model cycles")
    p.add_argument("--compiled-report", type=Path, default=None,
                   help="codegen's report of the build measured: the executables measured must be the "
                        "ones it recorded (the shipped bytes); a build IREE refused (recorded with "
                        "--record-failure) gets a report saying so instead of a measurement")
    p.add_argument("--no-compiled-report", action="store_true",
                   help="measure a build without its codegen report: nothing then vouches for its executables "
                        "or its layout, which are taken as given (experiments; every build of the tree has one)")
    p.add_argument("--vmfb", required=True, type=Path, help="the build's vmfb: its own executables are run")
    p.add_argument("--layout", required=True, type=Path,
                   help="the build's dispatch layout, read by its own compile (codegen.compile --out-layout)")
    p.add_argument("--keep-temps", type=Path, default=None, help="keep libraries, inputs and plugin outputs here")
    args = p.parse_args(argv)
    mca.use_llvm_bin(args.llvm_bin)
    with OneLineErrors("perf", args.module, MEASURE_ERRORS + (ReportError,)) as cli:
        # --jobs 0 ran as 1 and exited 0; --placements 0 was "placements ()" (issue 80)
        if args.jobs < 1:
            raise PerfError(f"--jobs {args.jobs}: at least 1 qemu process")
        if args.placements < 1:
            raise PerfError(f"--placements {args.placements}: at least 1 (placement 0 gives the report's figures)")
        check_outputs({"--out-json": args.out_json, "--out-md": args.out_md, "--keep-temps": args.keep_temps},
                      {"--module": args.module, "--target": args.target, "--analysis": args.analysis,
                       "--hardware": args.hardware, "--runner": args.runner, "--plugin": args.plugin,
                       "--qemu": args.qemu, "--compiled-report": args.compiled_report, "--vmfb": args.vmfb,
                       "--layout": args.layout})
        if args.keep_temps is not None:
            check_new_directory(args.keep_temps, "--keep-temps")
        # The layout says how to run the vmfb: one edited to match shrunk bindings was measured with
        # garbage figures and exit 0 (issue 80 probe). The report vouches for both, so measuring
        # without it is asked for by name.
        if args.compiled_report is None and not args.no_compiled_report:
            raise PerfError("--compiled-report: the build's codegen report vouches for its executables and its "
                            "layout; --no-compiled-report measures the build as given")
        if args.compiled_report is not None and args.no_compiled_report:
            raise PerfError("--compiled-report with --no-compiled-report: one or the other")
        compiled = _compiled_build(args) if args.compiled_report else None
        if compiled is not None and compiled.failed is not None:
            report = refused_report(args.module, args.target, args.analysis, args.model_name, compiled.failed)
        else:
            build = Build(CompileOptions(args.target, args.analysis, layout=True), args.vmfb, args.compiled_report,
                          layout=args.layout)
            report = measure(args.module, build, args.hardware, args.runner, args.plugin,
                             args.model_name, args.jobs, args.keep_temps, args.allow_counts_only,
                             shipped=compiled.executables_sha256 if compiled is not None else None,
                             qemu=args.qemu, placements=tuple(range(args.placements)))
        write_together({args.out_json: to_json(report), args.out_md: to_markdown(report)})
    if cli.failed:
        return cli.exit_code
    if report.failed is not None:
        print(f"perf {report.model} ({report.variant}, {report.strategy}): not measured: IREE refused the "
              f"build: {first_line(report.failed)}")
        return 0
    run = report.runs[0]
    # One call of the model (each dispatch times its calls), the figure every report compares; the
    # sum with each dispatch once undercounts a model that calls one executable per layer.
    print(f"perf {report.model} ({report.variant}): {len(run.dispatches)} dispatches; one call of the model: "
          + "; ".join(f"{r.hardware} ({r.core or 'counts only'}): {_fmt(r.inference_instructions)} instructions, "
                      f"{_cycles(r.inference_model_cycles)} model cycles, "
                      f"{_cycles(r.inference_memory_aware_cycles)} memory-aware cycles" for r in report.runs))
    return 0


if __name__ == "__main__":
    sys.exit(main())
