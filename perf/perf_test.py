"""perf/: the plugin's counts are exact, VLEN flows from the accelerator description into
the dynamic count, perf.json is deterministic, and missing tools or bad descriptions fail
with one line.

argv: <libinsn_classes.so> <known_kernel (riscv64)> <hal_runner_riscv64> <qemu-riscv64 (//tools/qemu)>
<llvm-mca (@llvm19: its directory is --llvm-bin)> <the riscv64 sysroot's lib/ld-linux-riscv64-lp64d.so.1>
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from analysis.accelerator_target import main as derive_target
from perf import counts as cnt
from perf import mca
from perf import measure
from common import dispatch_layout as chk

ROOT = Path(__file__).absolute().parent.parent  # the runfiles tree, not the source tree
HERE = ROOT / "perf"
PLUGIN, KERNEL, RUNNER, QEMU = (Path(p).resolve() for p in sys.argv[1:5])
LLVM_BIN = Path(sys.argv[5]).absolute().parent  # @llvm19's wrappers with lib/ beside them: not resolved
mca.use_llvm_bin(LLVM_BIN)  # for the code model run in this process
# The pinned riscv64 glibc (//tools/riscv:sysroot) for the kernel runs here; perf.measure finds
# the same one in its runfiles (check_dispatches.find_riscv_sysroot).
SYSROOT = str(Path(sys.argv[6]).absolute().parents[1])
MATMUL = HERE / "testdata" / "matmul.mlir"
HW = {
    128: ROOT / "analysis" / "hardware" / "riscv_rvv.yaml",
    256: HERE / "testdata" / "riscv_rvv256.yaml",
    512: ROOT / "analysis" / "hardware" / "riscv_rvv512.yaml",
}


def _run_kernel(tmp_path: Path, iterations: int, vlen: int) -> cnt.DispatchCounts:
    out = tmp_path / f"counts_{iterations}_{vlen}.txt"
    proc = subprocess.run([str(QEMU), "-cpu", f"rv64,v=true,vlen={vlen}", "-L", SYSROOT,
                           "-plugin", f"{PLUGIN},out={out}", str(KERNEL), str(iterations)],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return cnt.read_counts(out)


@pytest.mark.parametrize("iterations,vlen", [(1, 128), (10, 128), (37, 512)])
def test_known_kernel_counts_are_exact(tmp_path, iterations, vlen):
    counts = _run_kernel(tmp_path, iterations, vlen)
    n = iterations
    # Per iteration: vsetvli, vle32.v, vfmacc.vv, vse32.v, addi, bnez; then one jal closes the window.
    assert counts.instructions == 6 * n + 1
    assert counts.by_class() == {
        "scalar_int": n, "branch": n + 1, "scalar_mem": 0, "scalar_fp": 0, "vset": n,
        "vector_load": n, "vector_store": n, "vector_int": 0, "vector_fp": n, "vector_red_perm": 0,
        "other": 0,
    }
    assert sum(counts.by_class().values()) == counts.instructions
    assert counts.vector_fma == n
    # e32, m2: three vector instructions per iteration at LMUL 2 (the first runs after the
    # block's vsetvli was executed; QEMU ends a block at every vset).
    weighted_x8, unknown = counts.lmul_weighted_x8()
    assert (weighted_x8, unknown) == (3 * n * 16, 0)


def test_plugin_refuses_a_run_without_dispatch_window(tmp_path):
    """A program without the markers has no window: the reader says so instead of reporting 0."""
    out = tmp_path / "counts.txt"
    proc = subprocess.run([str(QEMU), "-L", SYSROOT, "-plugin", f"{PLUGIN},out={out}",
                           str(RUNNER)], capture_output=True, text=True)
    assert proc.returncode == 2  # usage: no window opened
    with pytest.raises(cnt.CountsError, match="0 dispatch windows"):
        cnt.read_counts(out)


def _target(tmp_path: Path, vlen: int) -> Path:
    out = tmp_path / f"target_{vlen}.yaml"
    assert derive_target(["--base", str(ROOT / "common" / "targets" / "riscv64_rvv.yaml"),
                          "--hardware", str(HW[vlen]), "--out", str(out)]) == 0
    return out


def _build(tmp_path: Path, target: Path, out: str) -> tuple[Path, Path]:
    """(vmfb, layout) of MATMUL compiled for `target` by codegen: what perf.measure runs."""
    from codegen.compile import CompileOptions, compile_module

    build = compile_module(MATMUL, CompileOptions(target, layout=True), tmp_path / f"{out}_build")
    return build.vmfb, build.layout


def _measure(tmp_path: Path, target: Path, hardware: list[Path], out: str, *extra: str,
             qemu: Path = QEMU, llvm_bin: Path = LLVM_BIN,
             build: tuple[Path, Path] | None = None) -> subprocess.CompletedProcess:
    args = _measure_args(tmp_path, target, hardware, out, *extra, qemu=qemu, llvm_bin=llvm_bin, build=build)
    return subprocess.run(args, capture_output=True, text=True, cwd=ROOT)


def _measure_args(tmp_path: Path, target: Path, hardware: list[Path], out: str, *extra: str,
                  qemu: Path = QEMU, llvm_bin: Path = LLVM_BIN,
                  build: tuple[Path, Path] | None = None) -> list[str]:
    vmfb, layout = build or _build(tmp_path, target, out)
    args = [sys.executable, "-m", "perf.measure", "--vmfb", str(vmfb), "--layout", str(layout),
            "--module", str(MATMUL), "--target", str(target),
            "--runner", str(RUNNER), "--plugin", str(PLUGIN), "--qemu", str(qemu), "--llvm-bin", str(llvm_bin),
            "--model-name", "matmul",
            "--out-json", str(tmp_path / f"{out}.json"), "--out-md", str(tmp_path / f"{out}.md"), *extra]
    if "--compiled-report" not in extra:
        args.append("--no-compiled-report")  # these tests hand perf.measure builds as they are
    for hw in hardware:
        args += ["--hardware", str(hw)]
    return args


def _vector_instructions(path: Path) -> int:
    (d,) = json.loads(path.read_text())["runs"][0]["dispatches"]
    return sum(v for k, v in d["classes"].items() if k.startswith("vector_"))


def test_doubling_vlen_halves_the_vector_instructions_of_a_matmul(tmp_path):
    """VLEN comes from the description: +zvl<N>b for IREE, qemu's vlen and the analysis."""
    for vlen in (128, 256):
        proc = _measure(tmp_path, _target(tmp_path, vlen), [HW[vlen]], f"mm{vlen}", "--allow-counts-only")
        assert proc.returncode == 0, proc.stderr
    ratio = _vector_instructions(tmp_path / "mm256.json") / _vector_instructions(tmp_path / "mm128.json")
    assert 0.4 <= ratio <= 0.6, ratio


def test_perf_json_is_deterministic_and_adds_up(tmp_path):
    target = _target(tmp_path, 128)
    for out in ("a", "b"):
        proc = _measure(tmp_path, target, [HW[128], HW[512]], out)
        assert proc.returncode == 0, proc.stderr
    # The summary line states what it sums: one call of the model, as every report compares.
    assert "one call of the model: riscv_rvv (sifive-p670)" in proc.stdout, proc.stdout
    assert (tmp_path / "a.json").read_bytes() == (tmp_path / "b.json").read_bytes()
    report = json.loads((tmp_path / "a.json").read_text())
    assert [r["core"] for r in report["runs"]] == ["sifive-p670", "sifive-x280"]
    assert report["variant"] == "iree-default" and report["target_vector_bits"] == 128
    assert "failed" not in report  # only a refused build's report mentions it
    for run in report["runs"]:
        (d,) = run["dispatches"]
        assert sum(d["classes"].values()) == d["instructions"] > 0
        assert d["macs"] == 64 * 128 * 96 and d["kind"] == "matmul"
        assert d["model_cycles"] > 0 and 0 < d["fma_peak_share"] <= 1.0
        # Each run simulates its own description's caches; the matmul's operands (A 64x96,
        # B 96x128, C 64x128 f32) come from DRAM at least once and the result goes back.
        m = d["memory"]
        assert [lv["role"] for lv in m["levels"]] == ["l1", "l2", "dram"]
        dram = m["levels"][-1]
        assert dram["read_bytes"] >= (64 * 96 + 96 * 128) * 4 and dram["write_bytes"] >= 64 * 128 * 4
        assert m["cycles"] >= d["model_cycles"] and m["energy_pj"] > d["macs"]  # + the MACs' pJ
        assert run["inference_memory_aware_cycles"] == sum(x["memory"]["cycles"] * x["calls"]
                                                           for x in run["dispatches"])
    md = (tmp_path / "a.md").read_text()
    assert "model cycles on sifive-p670 (qemu vlen=128)" in md and "The model ignores caches" in md


def test_the_measured_executables_are_the_builds(tmp_path):
    """perf.measure runs the executables codegen's report records (the vmfb's own bytes), and
    refuses a report whose executables are not the ones it compiled: another build's evidence."""
    from codegen import compile as cg

    target = _target(tmp_path, 128)
    options = cg.CompileOptions(target, layout=True)
    report = cg.compile_module(MATMUL, options, cg.Build(options, tmp_path / "m.vmfb", tmp_path / "m.report.json",
                                                tmp_path / "m.configs.mlir", layout=tmp_path / "m.layout.json")
                               ).read_report()
    build = (tmp_path / "m.vmfb", tmp_path / "m.layout.json")
    proc = _measure(tmp_path, target, [HW[128]], "ok", "--compiled-report", str(tmp_path / "m.report.json"),
                    build=build)
    assert proc.returncode == 0, proc.stderr
    measured = json.loads((tmp_path / "ok.json").read_text())["executables_sha256"]
    assert measured == report["executables_sha256"] != {}
    other = json.loads((tmp_path / "m.report.json").read_text())
    other["executables_sha256"] = {name: "0" * 64 for name in other["executables_sha256"]}
    (tmp_path / "other.report.json").write_text(json.dumps(other))
    proc = _measure(tmp_path, target, [HW[128]], "bad", "--compiled-report", str(tmp_path / "other.report.json"),
                    build=build)
    assert proc.returncode == 1 and "its compile report is of another build" in proc.stderr, proc.stderr
    assert proc.stderr.count("\n") == 1 and not (tmp_path / "bad.json").exists()
    # A layout edited to match itself (a binding shrunk with its subspans) was measured with garbage
    # figures and exit 0 (issue 80 probe): the report vouches for the layout its compile wrote.
    assert report["layout_sha256"] == hashlib.sha256((tmp_path / "m.layout.json").read_bytes()).hexdigest()
    edited = tmp_path / "edited.layout.json"
    edited.write_text((tmp_path / "m.layout.json").read_text() + "\n")
    proc = _measure(tmp_path, target, [HW[128]], "edited", "--compiled-report", str(tmp_path / "m.report.json"),
                    build=(tmp_path / "m.vmfb", edited))
    assert proc.returncode == 1 and "not the dispatch layout" in proc.stderr and "m.report.json" in proc.stderr, \
        proc.stderr
    assert proc.stderr.count("\n") == 1 and not (tmp_path / "edited.json").exists()
    # Without a report, nothing vouches for the layout: asked for by name, else refused.
    args = [a for a in _measure_args(tmp_path, target, [HW[128]], "unvouched", build=build) if a != "--no-compiled-report"]
    proc = subprocess.run(args, capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 1 and "--compiled-report: the build's codegen report vouches" in proc.stderr, proc.stderr
    assert proc.stderr.count("\n") == 1 and not (tmp_path / "unvouched.json").exists()


def test_a_layout_of_another_build_is_refused(tmp_path):
    """The layout drives the vmfb's executables: one that describes other executables (another
    strategy's build) is refused with one line, nothing written."""
    import yaml

    from common.targets import load_target

    target = _target(tmp_path, 128)
    other = tmp_path / "ukernels.yaml"
    other.write_text(yaml.safe_dump(load_target(target).with_strategy("ukernels").model_dump(mode="json")))
    vmfb, _ = _build(tmp_path, target, "plain")
    _, layout = _build(tmp_path, other, "uk")
    proc = _measure(tmp_path, target, [HW[128]], "bad", build=(vmfb, layout))
    assert proc.returncode == 1, proc.stderr
    assert "build.layout.json describes" in proc.stderr or "a layout of target" in proc.stderr, proc.stderr
    assert proc.stderr.count("\n") == 1 and not (tmp_path / "bad.json").exists()


def test_a_build_without_its_layout_is_refused(tmp_path):
    """perf runs a build by the layout its compile wrote: a Build handed over without one is
    refused in one line naming its vmfb, before anything runs."""
    from common.build import Build, CompileOptions
    from perf.measure import PerfError, measure

    target = _target(tmp_path, 128)
    vmfb, _ = _build(tmp_path, target, "m")
    with pytest.raises(PerfError, match=f"{vmfb}: no dispatch layout"):
        measure(MATMUL, Build(CompileOptions(target), vmfb), [HW[128]], RUNNER, PLUGIN, "matmul", qemu=QEMU)


def test_measuring_compiles_nothing(tmp_path):
    """One compile, many readers (issue 63): perf.measure runs the vmfb its compile wrote with the
    layout that compile read, and never calls iree-compile (or imports the compile stage)."""
    target = _target(tmp_path, 128)
    vmfb, layout = _build(tmp_path, target, "m")
    args = ["--vmfb", str(vmfb), "--layout", str(layout), "--compiled-report", str(vmfb.with_suffix(".report.json")),
            "--module", str(MATMUL), "--target", str(target),
            "--hardware", str(HW[128]), "--runner", str(RUNNER), "--plugin", str(PLUGIN), "--qemu", str(QEMU),
            "--llvm-bin", str(LLVM_BIN), "--model-name", "matmul",
            "--out-json", str(tmp_path / "m.json"), "--out-md", str(tmp_path / "m.md")]
    guard = (
        "import runpy, sys\n"
        "import common.iree_tools as tools\n"
        "def refuse(*args, **kwargs):\n"
        "    sys.exit('perf.measure called iree-compile')\n"
        "tools.iree_compile = tools.executable_configurations = refuse\n"
        f"sys.argv = ['perf.measure', *{args!r}]\n"
        "try:\n"
        "    runpy.run_module('perf.measure', run_name='__main__')\n"
        "except SystemExit as done:\n"
        "    code = done.code\n"
        "compiling = sorted(m for m in sys.modules if m.startswith('codegen') or m == 'iree.compiler.tools')\n"
        "sys.exit(f'perf.measure imported {compiling}' if compiling else code)\n")
    proc = subprocess.run([sys.executable, "-c", guard], capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    assert json.loads((tmp_path / "m.json").read_text())["runs"][0]["dispatches"]


def test_the_code_model_predicts_the_measured_model_cycles(tmp_path):
    """perf.code_model, which runs nothing, against perf.measure on the same compiled matmul:
    the same core model, so only the static trip counts and the vtype guess may differ."""
    from codegen.compile import TARGETS_IR, CompileOptions, compile_module
    from common.targets import load_target
    from perf.code_model.cost import code_call_cycles

    target = _target(tmp_path, 128)
    proc = _measure(tmp_path, target, [HW[128]], "m")
    assert proc.returncode == 0, proc.stderr
    (d,) = json.loads((tmp_path / "m.json").read_text())["runs"][0]["dispatches"]
    code = compile_module(MATMUL, CompileOptions(target, code=True), tmp_path / "code").code
    costed = code_call_cycles(code / TARGETS_IR, code, load_target(target), "sifive-p670", tmp_path / "cost")
    assert costed.errors == {} and costed.llc_code == set()
    assert costed.cycles[d["name"]] == pytest.approx(d["model_cycles"], rel=0.10)


def test_data_tiled_microkernel_module_is_measured_per_call(tmp_path):
    """Data tiling adds encoding (packing) dispatches whose bindings carry a layout; they are
    sized from it and measured, and each dispatch says how often one call of the model runs it."""
    import yaml

    from common.targets import load_target

    target = tmp_path / "ukernels.yaml"
    target.write_text(yaml.safe_dump(load_target(_target(tmp_path, 128)).with_strategy("ukernels")
                                     .model_dump(mode="json")))
    proc = _measure(tmp_path, target, [HW[128]], "uk")
    assert proc.returncode == 0, proc.stderr
    report = json.loads((tmp_path / "uk.json").read_text())
    assert report["strategy"] == "ukernels"
    (run,) = report["runs"]
    names = [d["name"] for d in run["dispatches"]]
    assert any("encoding" in n for n in names) and any("matmul" in n for n in names), names
    assert all(d["calls"] + d["initializer_calls"] >= 1 for d in run["dispatches"])
    assert run["inference_model_cycles"] == sum(d["model_cycles"] * d["calls"] for d in run["dispatches"])
    matmul = next(d for d in run["dispatches"] if "matmul" in d["name"])
    assert matmul["calls"] == 1 and matmul["vector_fma"] > 0


def _llvm_bin_without(tmp_path: Path, missing: str) -> Path:
    """A --llvm-bin directory with @llvm19's tools except `missing` (none of them is run)."""
    bin_dir = tmp_path / f"llvm_without_{missing}"
    bin_dir.mkdir()
    for tool in mca.LLVM_TOOLS:
        if tool != missing:
            (bin_dir / tool).symlink_to(LLVM_BIN / tool)
    return bin_dir


@pytest.mark.parametrize("missing,words", [
    ("qemu", "qemu-riscv64 (--qemu: //tools/qemu:qemu-riscv64) not found"),
    ("llvm-mca", "llvm-mca not found in --llvm-bin"),
    ("llvm-mc", "llvm-mc not found in --llvm-bin"),
])
def test_a_missing_tool_fails_with_one_line(tmp_path, missing, words):
    # Every tool is an explicit argument (--qemu, --llvm-bin): no PATH lookup.
    if missing == "qemu":
        proc = _measure(tmp_path, _target(tmp_path, 128), [HW[128]], "out",
                        qemu=tmp_path / "absent" / "qemu-riscv64")
    else:
        proc = _measure(tmp_path, _target(tmp_path, 128), [HW[128]], "out",
                        llvm_bin=_llvm_bin_without(tmp_path, missing))
    assert proc.returncode == 1
    assert proc.stderr.strip().count("\n") == 0 and words in proc.stderr, proc.stderr
    assert not (tmp_path / "out.json").exists() and not (tmp_path / "out.md").exists()


@pytest.mark.parametrize("target_vlen,hardware,words", [
    (128, ROOT / "analysis" / "hardware" / "host.yaml", "znver3 is a x86_64 core model"),
    (128, HW[256], "no model_core: model cycles need a core model of VLEN 256"),
    (512, HW[128], "VLEN 128 is below the 512 bits riscv64_rvv_zvl512 was compiled for"),
])
def test_impossible_measurements_are_refused(tmp_path, target_vlen, hardware, words):
    proc = _measure(tmp_path, _target(tmp_path, target_vlen), [hardware], "out")
    assert proc.returncode == 1
    assert proc.stderr.startswith("perf: ") and words in proc.stderr, proc.stderr
    assert not (tmp_path / "out.json").exists()


def test_a_build_iree_refused_is_reported_not_measured(tmp_path):
    # strategy_choice's candidates are compiled with record_failure: a refused one gets a report
    # saying why (nothing to run), which choice.choose leaves out; a compiled one is measured.
    from common.files import sha256_file

    report = tmp_path / "m.report.json"
    target = _target(tmp_path, 128)
    report.write_text(json.dumps({"failed": "iree-compile: error: 'linalg.pack' op failed", "target": "t",
                                  "triple": "riscv64-unknown-linux-gnu", "strategy": "datatiling",
                                  "vmfb_sha256": "e3b0", "inputs_sha256": {
                                      "module": sha256_file(MATMUL), "target": sha256_file(target)}}))
    proc = _measure(tmp_path, target, [HW[128]], "out", "--compiled-report", str(report))
    assert proc.returncode == 0, proc.stderr
    data = json.loads((tmp_path / "out.json").read_text())
    assert data["failed"] == "iree-compile: error: 'linalg.pack' op failed" and data["runs"] == []
    assert "Not measured: IREE could not compile this build" in (tmp_path / "out.md").read_text()
    report.write_text("{}")
    proc = _measure(tmp_path, _target(tmp_path, 128), [HW[128]], "bad", "--compiled-report", str(report))
    assert proc.returncode == 1 and "not a codegen report" in proc.stderr, proc.stderr
    assert not (tmp_path / "bad.json").exists()


def test_a_failed_run_names_its_dispatch(tmp_path):
    # choice.tune sets the named dispatch apart instead of halving its round.
    d = chk.Dispatch("main_dispatch_7_softmax", workgroup_count=(1, 1, 1))
    (tmp_path / "runner").write_bytes(b"")
    (tmp_path / "lib.so").write_bytes(b"")
    with pytest.raises(measure.PerfError) as err:  # /bin/false stands in for a qemu that aborts
        measure._run_dispatch(["/bin/false"], tmp_path / "plugin.so", [], tmp_path / "runner", tmp_path / "lib.so",
                              0, d, [], tmp_path / "counts.txt")
    assert err.value.dispatch == "main_dispatch_7_softmax"
    assert str(err.value).startswith("main_dispatch_7_softmax: runner failed under qemu (exit 1)")


@pytest.mark.parametrize("depth", [1, 6])
def test_the_guest_sees_nothing_of_where_the_build_lives(tmp_path, monkeypatch, depth):
    """qemu-user puts the runner's resolved path (AT_EXECFN) and the guest's argv on the guest
    stack, so their lengths move the stack data the cache simulation sees: the guest runs a copy
    of the runner from a directory whose path has one length, with inputs under fixed names."""
    build = tmp_path.joinpath(*["deeper-build-directory"] * depth)
    build.mkdir(parents=True)
    (build / "runner").write_bytes(b"runner")
    (build / "lib.so").write_bytes(b"library")
    inputs = [build / "binding0.bin", build / "binding1.bin"]
    for path in inputs:
        path.write_bytes(b"\0" * 16)
    seen = {}

    def fake_run(cmd, cwd, env, **_):
        here = Path(cwd)
        seen.update(cwd=str(here), env=env, guest=cmd[cmd.index("./hal_runner"):],
                    runner_is_copy=not (here / "hal_runner").is_symlink(),
                    runner=(here / "hal_runner").read_bytes())
        return subprocess.CompletedProcess(cmd, 1, "", "stop here")

    monkeypatch.setattr(measure.processes, "run", fake_run)
    d = chk.Dispatch("main_dispatch_0_matmul", workgroup_count=(1, 1, 1), binding_lengths=[16, 16])
    with pytest.raises(measure.PerfError):
        measure._run_dispatch(["/bin/false"], build / "plugin.so", [], build / "runner", build / "lib.so",
                              0, d, inputs, build / "counts.txt")
    assert len(seen["cwd"]) == len(f"{measure.GUEST_RUN_ROOT}/{measure.GUEST_RUN_PREFIX}") + 8, seen["cwd"]
    assert seen["runner_is_copy"] and seen["runner"] == b"runner"
    assert not any(str(build) in arg or str(tmp_path) in arg for arg in seen["guest"]), seen["guest"]
    assert set(seen["env"]) == {"PATH"}


def test_inputs_are_drawn_once_per_directory_and_match_a_fresh_draw(tmp_path, monkeypatch):
    """choice.tune measures one module each round with other tiles: its dispatches' inputs are
    drawn once and reused, and are the bytes a fresh draw gives; other bindings draw again."""
    from types import SimpleNamespace

    import numpy as np

    def dispatch(n: int):
        f32 = np.dtype(np.float32)
        return chk.Dispatch(f"e{n}", binding_lengths=[64 * n, 32],
                            subspans=[chk.Subspan(0, 0, "readonly", (4 * n,), f32),
                                      chk.Subspan(1, 0, "writeonly", (8,), f32)])

    compiled = SimpleNamespace(dispatches={"a": dispatch(1), "b": dispatch(2)})
    kept = measure._draw_inputs(compiled, ["a", "b"], tmp_path / "kept")
    fresh = measure._draw_inputs(compiled, ["a", "b"], tmp_path / "fresh")
    assert [p.read_bytes() for n in "ab" for p in kept[n]] == [p.read_bytes() for n in "ab" for p in fresh[n]]
    with monkeypatch.context() as m:
        m.setattr(measure.drive, "fill", lambda *args: pytest.fail("inputs drawn again"))
        assert measure._draw_inputs(compiled, ["a", "b"], tmp_path / "kept") == kept
    b_before = kept["b"][0].read_bytes()
    compiled.dispatches["a"] = dispatch(3)  # one stream: b's inputs change with a's bindings
    again = measure._draw_inputs(compiled, ["a", "b"], tmp_path / "kept")
    assert len(again["a"][0].read_bytes()) == 192 and again["b"][0].read_bytes() != b_before


def test_a_truncated_kept_input_is_refused_before_qemu_runs(tmp_path, monkeypatch):
    """issue 80: a binding file shorter than its binding (a kept input truncated, a full disk)
    had the runner write past its buffer under qemu; it is named before anything runs."""
    import numpy as np

    f32 = np.dtype(np.float32)
    d = chk.Dispatch("e0", workgroup_count=(1, 1, 1), binding_lengths=[64, 32],
                     subspans=[chk.Subspan(0, 0, "readonly", (16,), f32), chk.Subspan(1, 0, "writeonly", (8,), f32)])
    inputs = measure._draw_inputs(SimpleNamespace(dispatches={"e0": d}), ["e0"], tmp_path / "kept")["e0"]
    inputs[0].write_bytes(inputs[0].read_bytes()[:16])
    for tool in ("runner", "lib.so"):
        (tmp_path / tool).write_bytes(b"")
    monkeypatch.setattr(measure.processes, "run", lambda *a, **k: pytest.fail("the runner ran"))
    with pytest.raises(measure.PerfError, match=r"^e0: binding 0: .* holds 16 bytes, the layout declares 64"):
        measure._run_dispatch(["qemu"], tmp_path / "plugin.so", [], tmp_path / "runner", tmp_path / "lib.so", 0, d,
                              inputs, tmp_path / "counts")



def test_a_full_disk_while_drawing_inputs_names_the_directory(tmp_path, monkeypatch):
    # issue 80's probe: a full TMPDIR was "perf: <module>: OSError: 68608 requested and 53248 written"
    d = chk.Dispatch("e0", workgroup_count=(1, 1, 1), binding_lengths=[64], subspans=[])

    def fill(*args):
        raise OSError("68608 requested and 53248 written")
    monkeypatch.setattr(measure.drive, "fill", fill)
    with pytest.raises(measure.PerfError, match=r"d000: cannot write e0's inputs: 68608 requested .*a full disk"):
        measure._draw_inputs(SimpleNamespace(dispatches={"e0": d}), ["e0"], tmp_path / "kept")


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v", "-p", "no:cacheprovider"]))
