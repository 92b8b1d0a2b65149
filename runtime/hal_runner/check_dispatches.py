"""Checks every dispatch of a model on riscv64 (under qemu) against the host.

    python -m runtime.hal_runner.check_dispatches MODULE.mlirbc \
        [--target riscv64_rvv] [--reference host] [--vlen N] \
        [--analysis RISCV_ANALYSIS.json] [--reference-analysis HOST_ANALYSIS.json]

MODULE is MLIR (bytecode or text) IREE accepts, e.g. a model import's
`.mlirbc`. Both targets are compiled through codegen's one compile path with
their common/targets flags alone: the executables run are IREE's embedded ELF,
the bytes the vmfb ships (`--iree-hal-dump-executable-binaries-to` writes them
out from the same invocation; the hal_runner dlopens them). Everything a
dispatch needs is read from the compiled IR with IREE's Python bindings
(codegen/layout.py, what codegen.compile --out-layout writes; running a dispatch is
runtime/hal_runner/dispatch.py, this file only drives and reports):

- `--compile-to=executable-targets`: the host program's `stream.cmd.dispatch`
  (workload, push constants, binding ranges) and each `hal.executable.export`
  (its materialized workgroup-count region, evaluated here);
- the executable configurations ("tuned.mlir"): each binding's
  `hal.interface.binding.subspan` (offset, access, tensor type).

With `--analysis`, the target is compiled exactly as the codegen stage does
(`codegen.compile.compile_module` with the layout, i.e. `codegen.compile
--out-layout`): IREE's configurations with the analysis' tiles written in
("tuned.mlir"), then `--compile-from=executable-sources`.
Every applied lowering_config is proven to have landed (`check_landed` on the
dumped configurations), and the host program, workgroup counts and binding
subspans are all read from that same tuned IR, so the tiles' workgroup counts
are the ones run. `--reference-analysis` does the same for the reference;
without it the reference is IREE's untuned defaults (an independent check).

Each export is then run with the same fixed-seed inputs by `hal_runner`
natively (reference) and by the riscv64 `hal_runner` under
`qemu-riscv64 -cpu rv64,v=true,vlen=VLEN` (qemu 10 from bookworm-backports,
`@qemu_user_backport`: Debian's 7.2 aborts on some RVV code), and every written binding
region is compared. A dispatch that cannot be driven is a failure with its
reason. Prints one line per dispatch and `N checked, N passed`; exit status 1
when any dispatch failed.

With `--build VMFB LAYOUT` the riscv side is not compiled: the vmfb's own executables run,
driven by the layout its compile wrote (codegen.compile --out-layout; the zoo's dispatch tests
run the shipped vmfb this way), and a layout of other executables is refused.
`--reference-build VMFB LAYOUT` does the same for the host reference, and `--traced VMFB` gives
the traced host build `--activations` runs: the zoo's dispatch tests get both from a Bazel
action (runtime.hal_runner.reference) and compile nothing.

With `--activations GOLDEN.npz` the inputs are real: the tensors each dispatch gets when the
reference build runs the model on the golden inputs (runtime/hal_runner/activations.py, IREE's
`--iree-flow-trace-dispatch-tensors`), placed in each side's own bindings (data-tiled operands
packed in that side's layout, `pack`), and the outputs are compared with the host run's: the
host runner's bit for bit (the placement is right), the riscv runner's within F32_TOLERANCE of
each output's largest magnitude (integers exactly). Every dispatch of a data-tiled or
microkernel build is then compared, not only run.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from codegen.compile import CompileError, compile_module
from common.build import Build, CompileOptions
from common.files import InputError, OutputClash, check_input, check_new_directory
from common.hardware import QEMU_VLEN_RANGE
from common.targets import TARGETS_DIR, IreeTarget, TargetError, load_target
from common.scratch import scratch_directory
from runtime.hal_runner.dispatch import (QEMU_REPOSITORY, SEED, BuildError, Dispatch, DriveError, RunnerError, Subspan,
                                         compare, compare_outputs, corrupt, dispatch_command, fill,
                                         find_qemu, find_riscv_sysroot, find_runner, library_exports, load_build,
                                         place, run)

if TYPE_CHECKING:
    from runtime.hal_runner.activations import Capture


def _target_file(name_or_file: str) -> Path:
    """A target file (e.g. one accelerator_target derived), or the file of a name in common/targets."""
    return Path(name_or_file) if name_or_file.endswith(".yaml") else TARGETS_DIR / f"{name_or_file}.yaml"


def _target(name_or_file: str) -> IreeTarget:
    return load_target(_target_file(name_or_file))


def check(module: Path, target_name: str, reference_name: str, vlen: int | None,
          host_runner: Path | None = None, riscv_runner: Path | None = None, keep: Path | None = None,
          analysis: Path | None = None, reference_analysis: Path | None = None,
          tamper: str | None = None, qemu: Path | None = None,
          shipped: dict[str, str] | None = None, run_unmatched: bool = False,
          activations: Path | None = None, target_module: Path | None = None, every_call: bool = False,
          build: Build | None = None, reference_build: Build | None = None,
          traced: Path | None = None) -> int:
    """Returns 0 when every dispatch passed, else 1. `tamper` names an export whose
    riscv64 output is corrupted before comparing (proves the comparison can fail).
    `shipped`: the executables' sha256 a manifest records: the riscv build compiled here must
    be those very bytes (it is what runs), else the check fails before running anything.
    `run_unmatched`: a riscv dispatch without a host counterpart of the same bindings (data
    tiling packs operands in a layout chosen per target) is still run under qemu, and must run,
    but cannot be compared; the summary counts it apart ("run only"), never as compared, and
    says so when nothing could be compared.
    `activations`: a golden .npz (input_<i>/output_<i>): every dispatch's inputs are the tensors it
    gets when the host build runs the model on those inputs (runtime.hal_runner.activations), and
    its outputs are compared with the host run's: the host runner must reproduce them bit for bit
    (the placement is right) when the reference is IREE's untuned build, and the riscv run within
    F32_TOLERANCE. Without it, inputs are fixed-seed random numbers. `every_call`: every call of
    each export in that run, not only its first.
    `target_module`: compile the riscv side from this module instead (negative testing: a
    deliberately wrong executable must fail).
    `build`: the riscv side as its own compile wrote it (its vmfb and layout, codegen.compile
    --out-layout): its executables are run from the vmfb, nothing is compiled for that side.
    `reference_build`: the same for the host reference (IREE's defaults on `reference_name`), and
    `traced`: the traced host build `activations` runs (activations.compile_traced); with `build`
    and both, nothing is compiled here."""
    target = _target(target_name)
    reference = _target(reference_name)
    if not reference.runnable_on_host:
        raise SystemExit(f"check_dispatches: reference target '{reference_name}' is not runnable on this machine")
    if not target.is_riscv:
        raise SystemExit(f"check_dispatches: target '{target_name}' is not a riscv target")
    vlen = vlen or target.vector_bits
    host_runner = host_runner or find_runner("hal_runner")
    riscv_runner = riscv_runner or find_runner("hal_runner_riscv64")
    for path, what in ((analysis, "analysis"), (reference_analysis, "reference analysis")):
        if path is not None:
            try:  # a directory or a device was "not found" (issue 80)
                check_input(path, f"{what} file")
            except InputError as err:
                raise SystemExit(f"check_dispatches: {err}") from None
    for tool in (host_runner, riscv_runner):
        if not tool.exists():
            raise SystemExit(f"check_dispatches: runner {tool} not found")
    qemu = qemu or find_qemu()
    if not qemu.is_file():
        raise SystemExit(f"check_dispatches: qemu {qemu} not found (Bazel fetches @{QEMU_REPOSITORY}; "
                         f"or pass --qemu)")
    version = subprocess.run([str(qemu), "--version"], capture_output=True, text=True).stdout.strip()
    version = version.splitlines()[0] if version else str(qemu)
    ref_cmd = [str(host_runner)]
    try:
        sysroot = find_riscv_sysroot()
    except RunnerError as err:
        raise SystemExit(f"check_dispatches: {err}") from None
    dut_cmd = [str(qemu), "-cpu", f"rv64,v=true,vlen={vlen}", "-L", str(sysroot), str(riscv_runner)]

    with scratch_directory("check_dispatches_") as tmp:
        work = keep or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        start = time.monotonic()
        tuned_names = {}
        compiled = []
        if reference_build is None:  # compiled here, with the target below (codegen's one compile path)
            sides = [(reference, _target_file(reference_name), reference_analysis, module)]
        else:
            sides = []
            compiled.append(_as_compiled(reference_build, reference, work / f"{reference.name}_reference"))
        if build is None:
            sides.append((target, _target_file(target_name), analysis, target_module or module))
        for t, t_file, a, m in sides:
            # Compiled with its layout, then run by it like a build compiled elsewhere (`_as_compiled`).
            out = work / f"{t.name}_{'tuned' if a is not None else 'default'}"
            try:
                b = compile_module(m, CompileOptions(t_file, a, layout=True), out)
            except CompileError as err:
                raise SystemExit(f"check_dispatches: {t.name}: {err}") from None
            compiled.append(_load(b, t, out / "bin"))
            if a is None:
                continue
            entries = b.read_report()["dispatches"]
            applied = [e["name"] for e in entries if e["status"] == "applied"]
            tuned_names[t.name] = set(applied)
            print(f"{t.name}: tuned by {a.name}: {len(applied)} of {len(entries)} dispatches "
                  f"with analysis tiles, every config landed")
        if build is not None:
            compiled.append(_as_compiled(build, target, work / f"{target.name}_shipped"))
        ref_c, dut_c = compiled
        built_here = [t.name for t, _, _, _ in sides]
        if built_here:
            print(f"compiled {module.name} for {' and '.join(built_here)} in {time.monotonic() - start:.1f} s")
        captured = None
        if activations is not None:
            from runtime.hal_runner import activations as act

            try:
                captured = act.capture(module, reference, activations, work / "traced", every_call, traced)
            except act.CaptureError as err:
                raise SystemExit(f"check_dispatches: {err}") from None
            kept = "every call" if every_call else "each export's first call"
            print(f"activations: {reference.name} run of {module.name} on {activations.name} traced "
                  f"({act.TRACE_FLAG}): {len(captured.calls)} exports, {sum(captured.counts.values())} calls, "
                  f"{captured.nbytes / 1e6:.1f} MB kept ({kept}), outputs within "
                  f"{captured.golden_error:.2g} of the golden, {captured.seconds:.1f} s")
        if shipped is not None:
            from common.vmfb_executables import sha256_set

            if sha256_set(dut_c.libraries_sha256) != sha256_set(shipped):
                raise SystemExit(f"check_dispatches: {target.name}: the executables compiled here are not "
                                 f"the shipped ones the manifest records")
            print(f"{target.name}: the executables run are the shipped ones "
                  f"({', '.join(h[:12] for h in sha256_set(shipped))})")
        try:
            ref_libs = {name: (lib, idx) for lib in ref_c.libraries for name, idx in library_exports(ref_cmd, lib).items()}
            dut_libs = {name: (lib, idx) for lib in dut_c.libraries for name, idx in library_exports(dut_cmd, lib).items()}
        except RunnerError as err:
            raise SystemExit(f"check_dispatches: {err}") from None

        names = sorted(set(ref_c.dispatches) | set(dut_c.dispatches))
        if run_unmatched:  # only what the riscv build has is checked; the host's extras are not ours
            names = sorted(dut_c.dispatches)
        passed = run_only = 0
        emu_time = 0.0
        rng = np.random.default_rng(SEED)
        for i, name in enumerate(names):
            try:
                rd, dd = ref_c.dispatches.get(name), dut_c.dispatches.get(name)
                if captured is not None:
                    ddir = work / f"d{i:03d}"
                    seconds, numerics = _check_on_activations(
                        name, rd, dd, captured, (ref_cmd, ref_libs, reference.name), (dut_cmd, dut_libs, target.name),
                        ddir, reference_analysis is None, tamper == name, rng)
                    emu_time += seconds
                    passed += 1
                    wg = "x".join(str(c) for c in dd.workgroup_count)
                    tag = ", tuned" if name in tuned_names.get(target.name, ()) else ""
                    print(f"PASS {name} (workgroups {wg}{tag}, {numerics}, {target.name} {seconds:.2f} s)")
                    continue
                if run_unmatched and dd is not None and not _matches(rd, dd):
                    if dd.error:
                        raise DriveError(f"{target.name}: {dd.error}")
                    if name not in dut_libs:
                        raise DriveError("export not found in the dumped libraries")
                    ddir = work / f"d{i:03d}"
                    (ddir / "dut").mkdir(parents=True, exist_ok=True)
                    lib, idx = dut_libs[name]
                    args = dispatch_command(dut_cmd, lib, idx, dd, fill(dd, rng, ddir))
                    seconds = run(args, target.name)
                    emu_time += seconds
                    run_only += 1
                    print(f"RAN {name} (no host dispatch with these bindings: run under qemu on random inputs, not compared; "
                          f"{target.name} {seconds:.2f} s)")
                    continue
                if rd is None or dd is None:
                    raise DriveError(f"export exists only for {target.name if rd is None else reference.name}")
                for d, who in ((dd, target.name), (rd, reference.name)):
                    if d.error:
                        raise DriveError(f"{who}: {d.error}")
                if (rd.workgroup_count is None) or rd.binding_lengths != dd.binding_lengths or rd.constants != dd.constants:
                    raise DriveError("binding ranges or push constants differ between the targets")
                # Byte regions, not shapes: bufferized (tuned) IR may add unit dims (1x8x8 vs 8x8).
                if [(s.binding, s.offset, s.nbytes, s.dtype) for s in rd.subspans] != [
                    (s.binding, s.offset, s.nbytes, s.dtype) for s in dd.subspans
                ]:
                    raise DriveError("binding layouts differ between the targets")
                if name not in ref_libs or name not in dut_libs:
                    raise DriveError("export not found in the dumped libraries")
                ddir = work / f"d{i:03d}"
                (ddir / "ref").mkdir(parents=True, exist_ok=True)
                (ddir / "dut").mkdir(parents=True, exist_ok=True)
                inputs = fill(dd, rng, ddir)
                results = {}
                for label, cmd, libs, d in (("ref", ref_cmd, ref_libs, rd), ("dut", dut_cmd, dut_libs, dd)):
                    lib, idx = libs[name]
                    args = dispatch_command(cmd, lib, idx, d, inputs)
                    for s in {s.binding for s in d.subspans if s.access != "readonly"}:
                        args += ["--output", f"{s}={ddir / label / f'out{s}.bin'}"]
                    results[label] = run(args, {"ref": reference.name, "dut": target.name}[label])
                emu_time += results["dut"]
                if tamper == name:
                    corrupt(dd, ddir / "dut")
                problem = compare(dd, ddir / "ref", ddir / "dut")
                if problem:
                    raise DriveError(problem)
                passed += 1
                wg = "x".join(str(c) for c in dd.workgroup_count)
                tag = ", tuned" if name in tuned_names.get(target.name, ()) else ""
                print(f"PASS {name} (workgroups {wg}{tag}, {target.name} {results['dut']:.2f} s)")
            except DriveError as err:
                print(f"FAIL {name}: {err}")
            if keep is None:
                # Each dispatch's binding files hold whole resources (ResNet-18's weights: ~47 MB
                # per binding file, per side): drop them as soon as the dispatch is done.
                shutil.rmtree(work / f"d{i:03d}", ignore_errors=True)
        print(f"{target.name} vs {reference.name}: qemu vlen={vlen} ({version}), {emu_time:.1f} s under emulation, "
              f"{time.monotonic() - start:.1f} s in all")
        print(f"{len(names)} checked, {passed} passed"
              + (f", {run_only} run only (not compared)" if run_unmatched and captured is None else ""))
        if run_unmatched and not passed:
            print(f"{target.name}: no dispatch has a host counterpart in the same layout: every one ran "
                  f"under qemu, none was compared (numerics unchecked)")
        return 0 if names and passed + run_only == len(names) else 1


def _as_compiled(build: Build, target: IreeTarget, directory: Path):
    """`build` of `target` as its compile wrote it (vmfb and layout), its executables written into
    `directory` (dispatch.load_build); a layout of other executables or of another target ends
    the check in one line."""
    loaded = _load(build, target, directory)
    print(f"{target.name}: {build.vmfb.name} run as its compile wrote it ({build.layout.name}): nothing compiled for it")
    return loaded


def _load(build: Build, target: IreeTarget, directory: Path):
    """dispatch.load_build of `target`'s build, ending the check in one line when it cannot be."""
    vmfb, layout = build.vmfb, build.layout
    try:
        loaded = load_build(vmfb, layout, directory)
    except BuildError as err:
        raise SystemExit(f"check_dispatches: {err}") from None
    if loaded.layout.target != target.name:
        raise SystemExit(f"check_dispatches: {layout}: a layout of target {loaded.layout.target}, not {target.name}")
    return loaded


def _run_dispatch(side: tuple[list[str], dict, str], name: str, d: Dispatch, inputs: list[Path],
                  out_dir: Path) -> float:
    """Runs export |name| of |side| (runner command, its libraries' exports, target name) on the
    binding files |inputs|, writing each written binding to out_dir/out<b>.bin; returns seconds."""
    cmd, libs, who = side
    lib, idx = libs[name]
    args = dispatch_command(cmd, lib, idx, d, inputs)
    for b in sorted({s.binding for s in d.subspans if s.access != "readonly"}):
        args += ["--output", f"{b}={out_dir / f'out{b}.bin'}"]
    return run(args, who)


def _logical_shape(s: Subspan) -> tuple[int, ...]:
    """The tensor a subspan holds, unit dims aside (bufferized IR may add them)."""
    return tuple(n for n in (s.logical_shape if s.encoding else s.shape) if n != 1)


def _is_reencoding(d: Dispatch) -> bool:
    """One operand in, the same tensor out, in another layout: IREE's stream-level encode
    dispatches (`_encoding_N_encode_...`, packing constants), added after flow, so never traced."""
    if len(d.subspans) != 2:
        return False
    src, dst = d.subspans
    return (src.access == "readonly" and dst.access != "readonly" and src.dtype == dst.dtype
            and (src.encoding or dst.encoding) is not None and _logical_shape(src) == _logical_shape(dst))


def _check_on_activations(name: str, rd: Dispatch | None, dd: Dispatch | None, captured: "Capture",
                          ref_side: tuple[list[str], dict, str], dut_side: tuple[list[str], dict, str],
                          ddir: Path, exact: bool, tamper: bool, rng: np.random.Generator) -> tuple[float, str]:
    """Runs the riscv dispatch |dd| on the host run's activations for |name|, every captured call
    (each operand in the dispatch's own layout), and compares its outputs with the host run's; the
    host dispatch |rd|, when there is one, runs on its own placement of the same tensors and must
    reproduce the host run (bit for bit when |exact|): that proves the tensors sit where the
    dispatches read them. Returns (seconds under qemu, what was compared); raises DriveError
    naming the problem (and the call, when there are several)."""
    from runtime.hal_runner.activations import Call

    if dd is None:
        raise DriveError(f"export exists only for {ref_side[2]}")
    if dd.error:
        raise DriveError(f"{dut_side[2]}: {dd.error}")
    if name not in dut_side[1]:
        raise DriveError("export not found in the dumped libraries")
    calls = captured.calls.get(name, [])
    what = "real activations" + (f" ({len(calls)} calls)" if len(calls) > 1 else "")
    if not calls:
        if not _is_reencoding(dd):
            raise DriveError("no activations: the traced host run never called this export")
        # Data movement only (pack / re-layout): values do not matter, the output must be the input.
        src, dst = dd.subspans
        x = rng.uniform(-1.0, 1.0, size=src.logical_shape or src.shape) if src.dtype.kind == "f" else \
            rng.integers(-8, 8, size=src.logical_shape or src.shape)
        x = x.astype(src.dtype)
        calls = [Call([x], [x.reshape(dst.logical_shape or dst.shape)])]
        what = "random input (untraced re-encoding: output must be the input)"
    host = rd is not None and not rd.error and rd.workgroup_count is not None and name in ref_side[1]
    if not host:
        what += f"; no {ref_side[2]} dispatch of this name to check the placement"
    seconds, worst = 0.0, 0.0
    for k, call in enumerate(calls):
        cdir = ddir / f"call{k}"
        which = f"call {k + 1} of {len(calls)}: " if len(calls) > 1 else ""
        placed = None  # the host's binding files and expected outputs, reused when the layouts agree
        if host:
            (cdir / "ref").mkdir(parents=True, exist_ok=True)
            inputs, expected = placed = place(rd, call, cdir / "ref")
            _run_dispatch(ref_side, name, rd, inputs, cdir / "ref")
            problem, _ = compare_outputs(cdir / "ref", expected, exact)
            if problem:
                raise DriveError(f"{which}the {ref_side[2]} runner does not reproduce the {ref_side[2]} run: {problem}")
        (cdir / "dut").mkdir(parents=True, exist_ok=True)
        layout = lambda d: (d.binding_lengths, [(s.binding, s.offset, s.nbytes, s.dtype, s.encoding) for s in d.subspans])
        if placed is not None and layout(rd) == layout(dd):
            inputs, expected = placed
        else:
            inputs, expected = place(dd, call, cdir / "dut")
        seconds += _run_dispatch(dut_side, name, dd, inputs, cdir / "dut")
        if tamper:
            corrupt(dd, cdir / "dut")
        problem, err = compare_outputs(cdir / "dut", expected, exact=False)
        if problem:
            raise DriveError(which + problem)
        worst = max(worst, err)
        if len(calls) > 1:  # a call's files are done with; the last stays for --keep
            if k + 1 < len(calls):
                shutil.rmtree(cdir, ignore_errors=True)
    return seconds, f"{what}, max error {worst:.2g} of scale"


def _matches(rd, dd) -> bool:
    """Whether the host dispatch `rd` can be compared with the riscv one `dd`: the same bindings
    in the same layout. A packed operand's storage shape carries its tiles (16x64x8x1 on the
    host, 8x64x16x1 on riscv for one 128x64 matrix: same bytes, other order), so shapes are
    compared too, unit dims aside (bufferized IR may add them)."""
    def layout(d):
        return [(s.binding, s.offset, s.nbytes, s.dtype, tuple(n for n in s.shape if n != 1))
                for s in d.subspans]

    return (rd is not None and not rd.error and rd.workgroup_count is not None
            and rd.binding_lengths == dd.binding_lengths and rd.constants == dd.constants
            and layout(rd) == layout(dd))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("module", type=Path, help="input MLIR (bytecode or text)")
    parser.add_argument("--target", default="riscv64_rvv", help="riscv target: a name in common/targets or a target .yaml file")
    parser.add_argument("--reference", default="host", help="host target to check against")
    parser.add_argument("--vlen", type=int, default=None, help="qemu VLEN (default: the target's vector_bits)")
    parser.add_argument("--analysis", type=Path, default=None,
                        help="analysis.json for --target: run the tuned dispatches, compiled as codegen does")
    parser.add_argument("--reference-analysis", type=Path, default=None,
                        help="analysis.json for --reference (default: the reference is IREE's untuned defaults)")
    parser.add_argument("--host-runner", type=Path, default=None,
                        help="host hal_runner (default: found next to this file, in runfiles or bazel-bin)")
    parser.add_argument("--riscv-runner", type=Path, default=None, help="riscv64 hal_runner (default: as above)")
    parser.add_argument("--qemu", type=Path, default=None,
                        help="qemu-riscv64 to run it (default: @qemu_user_backport's, qemu 10)")
    parser.add_argument("--keep", type=Path, default=None, help="keep binaries and buffers in this folder")
    parser.add_argument("--shipped", type=Path, default=None, metavar="MANIFEST",
                        help="a manifest (runtime.manifest) whose executables the riscv build must be")
    parser.add_argument("--run-unmatched", action="store_true",
                        help="run (not compare) riscv dispatches whose bindings no host dispatch has "
                             "(data-tiled builds: packed layouts are chosen per target)")
    parser.add_argument("--activations", type=Path, default=None, metavar="GOLDEN_NPZ",
                        help="inputs from a host run of the model on this golden .npz (real activations), "
                             "outputs compared with that run's (default: fixed-seed random inputs)")
    parser.add_argument("--every-call", action="store_true",
                        help="with --activations: run every call of each export in the host run, not only its first")
    parser.add_argument("--build", type=Path, nargs=2, metavar=("VMFB", "LAYOUT"), default=None,
                        help="run the riscv side from this vmfb with the layout its compile wrote "
                             "(codegen.compile --out-layout) instead of compiling it")
    parser.add_argument("--reference-build", type=Path, nargs=2, metavar=("VMFB", "LAYOUT"), default=None,
                        help="run the host reference from this vmfb with the layout its compile wrote "
                             "(IREE's defaults on --reference) instead of compiling it")
    parser.add_argument("--traced", type=Path, default=None, metavar="VMFB",
                        help="with --activations: the traced host build to run (runtime.hal_runner.reference "
                             "writes it) instead of compiling it")
    parser.add_argument("--target-module", type=Path, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--tamper", metavar="EXPORT", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    for path, what in ((args.module, "input module"), (args.activations, "golden activations file"),
                       (args.target_module, "target module")):
        if path is not None:
            try:  # a directory was "not found" (issue 80)
                check_input(path, what)
            except InputError as err:
                print(f"check_dispatches: {err}", file=sys.stderr)
                return 2
    for flag, value in (("--target", args.target), ("--reference", args.reference)):
        if not value.isprintable():  # an escape sequence reached the terminal raw in "target file not found"
            print(f"check_dispatches: {flag} {value!r}: not a target name", file=sys.stderr)
            return 2
    # --vlen 0 ran at the target's VLEN and exited 0; 100 failed in qemu, blamed on the first
    # dispatch (issue 80): qemu emulates a power of two in QEMU_VLEN_RANGE.
    low, high = QEMU_VLEN_RANGE
    if args.vlen is not None and not (low <= args.vlen <= high and args.vlen & (args.vlen - 1) == 0):
        print(f"check_dispatches: --vlen {args.vlen}: qemu emulates a power of two from {low} to {high}",
              file=sys.stderr)
        return 2
    if args.keep is not None:
        try:  # a file was a FileExistsError traceback; a full directory was written into (issue 80)
            check_new_directory(args.keep, "--keep")
        except OutputClash as err:
            print(f"check_dispatches: {err}", file=sys.stderr)
            return 2
    if args.build is not None and (args.analysis is not None or args.target_module is not None):
        print("check_dispatches: --build is the riscv side as compiled: no --analysis or --target-module for it",
              file=sys.stderr)
        return 2
    if args.reference_build is not None and args.reference_analysis is not None:
        print("check_dispatches: --reference-build is the reference as compiled: no --reference-analysis for it",
              file=sys.stderr)
        return 2
    if args.traced is not None and args.activations is None:
        print("check_dispatches: --traced needs --activations (it is the build the golden run traces)", file=sys.stderr)
        return 2
    if args.every_call and args.activations is None:
        print("check_dispatches: --every-call needs --activations (the calls are the traced run's)", file=sys.stderr)
        return 2
    try:
        shipped = None
        if args.shipped is not None:
            try:
                shipped = json.loads(args.shipped.read_text())["executables_sha256"]
            except (OSError, ValueError, KeyError) as err:
                print(f"check_dispatches: {args.shipped}: not a manifest with executables_sha256 ({err})",
                      file=sys.stderr)
                return 2
        # Builds compiled elsewhere, run by the layout their compile wrote.
        given = lambda files, target: (None if files is None else
                                       Build(CompileOptions(_target_file(target), layout=True), files[0], layout=files[1]))
        return check(args.module, args.target, args.reference, args.vlen, args.host_runner, args.riscv_runner,
                     args.keep, args.analysis, args.reference_analysis, args.tamper, args.qemu, shipped,
                     args.run_unmatched, args.activations, args.target_module, args.every_call,
                     given(args.build, args.target), given(args.reference_build, args.reference), args.traced)
    except TargetError as err:
        print(f"check_dispatches: {err}", file=sys.stderr)
        return 2
    except SystemExit as err:
        if isinstance(err.code, str):
            print(err.code, file=sys.stderr)
            return 2
        raise


if __name__ == "__main__":
    sys.exit(main())
