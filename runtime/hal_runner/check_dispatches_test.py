"""The driver over every dispatch of a small torch model (conv, depthwise
conv, relu, matmul): riscv64 under qemu against the host."""

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).parent
MODEL = HERE / "testdata" / "tiny_model.mlirbc"


def driver(*args):
    return subprocess.run(
        [sys.executable, "-m", "runtime.hal_runner.check_dispatches", *map(str, args)],
        capture_output=True, text=True,
    )


def test_every_dispatch_passes():
    out = driver(MODEL)
    assert out.returncode == 0, out.stdout + out.stderr
    total = re.search(r"^(\d+) checked, (\d+) passed$", out.stdout, re.M)
    assert total, out.stdout
    checked, passed = map(int, total.groups())
    assert checked >= 5 and checked == passed, out.stdout
    for kind in ("conv", "matmul"):
        assert re.search(rf"^PASS \S*{kind}\S*", out.stdout, re.M), out.stdout
    assert "qemu vlen=128" in out.stdout


def test_runs_the_rvv_code_qemu_7_2_aborts_on():
    """The conv of conv + Mish + nearest upsampling + ELU aborts Debian bookworm's qemu 7.2
    ("decode_save_opc: Assertion `ctx->insn_start != NULL'", QEMU issue 1441, fixed in 8.1)."""
    out = driver(HERE / "testdata" / "mish_upsample_model.mlirbc")
    assert out.returncode == 0, out.stdout + out.stderr
    version = re.search(r"qemu vlen=\d+ \(qemu-riscv64 version (\d+)\.(\d+)", out.stdout)
    assert version and tuple(map(int, version.groups())) >= (8, 1), out.stdout
    assert re.search(r"^PASS \S*matmul\S*", out.stdout, re.M), out.stdout


def test_a_source_tree_run_finds_qemu_in_the_output_base(tmp_path, monkeypatch):
    """Outside Bazel (python -m ... from a workspace), qemu is <output_base>/external/<repo>,
    found through the workspace's bazel-bin symlink."""
    from runtime.hal_runner import dispatch as chk

    bin_dir = tmp_path / "ob" / "execroot" / chk.WORKSPACE / "bazel-out" / "k8-fastbuild" / "bin"
    bin_dir.mkdir(parents=True)
    qemu = tmp_path / "ob" / "external" / chk.QEMU_REPOSITORY / "qemu-riscv64"
    qemu.parent.mkdir(parents=True)
    qemu.write_text("")
    workspace = tmp_path / "src" / "ws"
    (workspace / "runtime" / "hal_runner").mkdir(parents=True)
    (workspace / "bazel-bin").symlink_to(bin_dir)
    monkeypatch.setattr(chk, "HERE", workspace / "runtime" / "hal_runner")
    monkeypatch.delenv("RUNFILES_DIR", raising=False)
    monkeypatch.chdir(tmp_path)
    assert chk.find_qemu() == qemu


ANALYSIS = {t: HERE / "testdata" / f"tiny_analysis_{t}.json" for t in ("riscv64_rvv", "host")}
TUNED = ("_initializer_0_dispatch_0_elementwise_broadcast_8x64_f32", "main_dispatch_1_generic_3x3x3x8x8_f32",
         "main_dispatch_2_matmul_8x64x27_f32", "main_dispatch_4_conv_8x8x8x3x3_f32",
         "main_dispatch_5_matmul_1x10x512_f32")


def results(stdout: str) -> dict[str, str]:
    """export -> the rest of its PASS/FAIL line."""
    return {m.group(2): m.group(1) + m.group(3) for m in re.finditer(r"^(PASS|FAIL) (\S+?):?( .*)$", stdout, re.M)}


def test_tuned_dispatches_are_codegens_and_pass(tmp_path):
    """--analysis runs exactly what `codegen.compile --out-binaries` emits, with the tiles'
    workgroup counts, and every dispatch passes."""
    from codegen import compile as cg
    from common.targets import TARGETS_DIR

    keep = tmp_path / "keep"
    out = driver(MODEL, "--target", "riscv64_rvv", "--analysis", ANALYSIS["riscv64_rvv"], "--keep", keep)
    assert out.returncode == 0, out.stdout + out.stderr
    assert re.search(r"^7 checked, 7 passed$", out.stdout, re.M), out.stdout
    assert "riscv64_rvv: tuned by tiny_analysis_riscv64_rvv.json: 5 of 7 dispatches with analysis tiles, " \
           "every config landed" in out.stdout
    got = results(out.stdout)
    for name in TUNED:
        assert got[name].startswith("PASS") and ", tuned," in got[name], (name, out.stdout)
    # The fixture's distribution tiles change the grids from IREE's defaults (1, 8 and 8 workgroups).
    assert "workgroups 2x1x1" in got["main_dispatch_5_matmul_1x10x512_f32"]  # 10 columns, tile 8: partial tile
    assert "workgroups 2x1x1" in got["main_dispatch_4_conv_8x8x8x3x3_f32"]
    assert "workgroups 4x1x1" in got["main_dispatch_2_matmul_8x64x27_f32"]

    # Same lowering_configs and the very same libraries as the codegen stage.
    cg_out = tmp_path / "codegen"
    options = cg.CompileOptions(TARGETS_DIR / "riscv64_rvv.yaml", ANALYSIS["riscv64_rvv"], binaries=True)
    build = cg.compile_module(MODEL, options, cg_out)
    assert build.read_report()["summary"]["applied"] == 5
    ran = keep / "riscv64_rvv_tuned"
    assert (ran / "build.configs.mlir").read_text() == build.configs.read_text()
    libs = sorted(p.name for p in build.binaries.glob("*.so"))
    # IREE links the executables into one embedded ELF, the one the vmfb carries.
    assert libs == sorted(p.name for p in (ran / "bin").glob("*.so")) and len(libs) == 1
    for lib in libs:
        assert (ran / "bin" / lib).read_bytes() == (build.binaries / lib).read_bytes(), lib


def test_a_wrong_result_fails(tmp_path):
    """Both sides tuned; one riscv64 output value corrupted after the run: that dispatch FAILs."""
    bad = "main_dispatch_2_matmul_8x64x27_f32"
    out = driver(MODEL, "--analysis", ANALYSIS["riscv64_rvv"], "--reference-analysis", ANALYSIS["host"],
                 "--tamper", bad)
    assert out.returncode == 1, out.stdout + out.stderr
    assert "host: tuned by tiny_analysis_host.json" in out.stdout
    got = results(out.stdout)
    assert re.match(r"FAIL binding 3: max abs error 0\.5\b", got[bad]), out.stdout
    assert sum(v.startswith("PASS") for v in got.values()) == 6, out.stdout
    assert re.search(r"^7 checked, 6 passed$", out.stdout, re.M), out.stdout


GOLDEN = HERE / "testdata" / "tiny_model.golden.npz"
PERTURBED = HERE / "testdata" / "tiny_model_perturbed.mlirbc"


def test_every_dispatch_passes_on_real_activations():
    """--activations: inputs traced from the host run on the golden inputs; the host runner
    reproduces each traced output bit for bit (else the line says so), riscv within tolerance."""
    out = driver(MODEL, "--activations", GOLDEN)
    assert out.returncode == 0, out.stdout + out.stderr
    assert re.search(r"^activations: host run of tiny_model.mlirbc on tiny_model.golden.npz traced "
                     r"\(--iree-flow-trace-dispatch-tensors\): 7 exports, 7 calls, .* outputs within \S+ of the golden",
                     out.stdout, re.M), out.stdout
    got = results(out.stdout)
    assert len(got) == 7 and all(v.startswith("PASS") and ", real activations, max error " in v
                                 for v in got.values()), out.stdout
    assert re.search(r"^7 checked, 7 passed$", out.stdout, re.M), out.stdout


def test_a_wrong_executable_fails_on_real_activations():
    """The riscv side compiled from the perturbed fixture (the depthwise conv's relu made leaky:
    same dispatches, same bindings, one computing something else): that dispatch FAILs, by more
    than the tolerance; the others, whose code is unchanged, pass."""
    out = driver(MODEL, "--activations", GOLDEN, "--target-module", PERTURBED)
    assert out.returncode == 1, out.stdout + out.stderr
    got = results(out.stdout)
    bad = "main_dispatch_4_conv_8x8x8x3x3_f32"
    m = re.match(r"FAIL output 0 \(binding 2\): max abs error \S+ \(scale \S+, relative (\S+)\) > 1e-05$", got[bad])
    assert m and float(m.group(1)) > 1e-3, out.stdout
    assert sum(v.startswith("PASS") for v in got.values()) == 6, out.stdout


@pytest.mark.parametrize("case", ["missing", "wrong_shape", "wrong_golden"])
def test_bad_golden_is_one_line_naming_it(tmp_path, case):
    import numpy as np

    golden = dict(np.load(GOLDEN))
    path = tmp_path / f"{case}.npz"
    if case == "wrong_shape":
        golden["input_0"] = golden["input_0"][:, :2]
    elif case == "wrong_golden":
        golden["output_0"] = golden["output_0"] + 1.0
    if case != "missing":
        np.savez(path, **golden)
    out = driver(MODEL, "--activations", path)
    assert out.returncode == 2, out.stdout + out.stderr
    assert len(out.stderr.strip().splitlines()) == 1 and f"{case}.npz" in out.stderr, out.stderr
    expected = {"missing": "golden activations file not found", "wrong_shape": "input_0 has shape [1, 2, 8, 8]",
                "wrong_golden": "the traced host run does not reproduce the golden: output_0: mismatch"}[case]
    assert expected in out.stderr, out.stderr


def test_every_call_needs_activations():
    out = driver(MODEL, "--every-call")
    assert out.returncode == 2 and not out.stdout
    assert out.stderr.strip() == "check_dispatches: --every-call needs --activations (the calls are the traced run's)"


def test_pack_is_tensor_pack():
    """pack/unpack against tensor.pack's definition on a small case: a 5x3 matrix, inner tiles 2x2
    on dims (0, 1), outer dims swapped: packed[j][i][a][b] = src[2i + a][2j + b], zero padded."""
    import numpy as np

    from common.dispatch_layout import pack, unpack

    src = np.arange(15, dtype=np.float32).reshape(5, 3) + 1
    packed = pack(src, (0, 1), (2, 2), (1, 0))
    assert packed.shape == (2, 3, 2, 2)
    for j in range(2):
        for i in range(3):
            for a in range(2):
                for b in range(2):
                    want = src[2 * i + a, 2 * j + b] if 2 * i + a < 5 and 2 * j + b < 3 else 0
                    assert packed[j, i, a, b] == want, (j, i, a, b)
    flat = np.ascontiguousarray(packed).reshape(-1)
    assert np.array_equal(unpack(flat, (5, 3), (0, 1), (2, 2), (1, 0)), src)
    # One tiled dim of a 3-d tensor, identity outer order (IREE's 1-d bias packing is this on 1 dim).
    src3 = np.arange(2 * 5 * 3).reshape(2, 5, 3)
    p3 = pack(src3, (1,), (4,), (0, 1, 2))
    assert p3.shape == (2, 2, 3, 4) and p3[1, 1, 2, 0] == src3[1, 4, 2] and p3[1, 1, 2, 1] == 0
    assert np.array_equal(unpack(np.ascontiguousarray(p3).reshape(-1), (2, 5, 3), (1,), (4,), (0, 1, 2)), src3)


def test_analysis_for_another_target_is_an_error():
    out = driver(MODEL, "--analysis", ANALYSIS["host"])
    assert out.returncode == 2
    assert "analysis was made for target 'host', but the compile target is 'riscv64_rvv'" in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1 and not out.stdout


def test_missing_analysis_is_an_error(tmp_path):
    out = driver(MODEL, "--analysis", tmp_path / "none.json")
    assert out.returncode == 2
    assert "none.json: analysis file not found" in out.stderr
    # a directory was "not found" too (issue 80)
    out = driver(MODEL, "--analysis", tmp_path)
    assert out.returncode == 2 and len(out.stderr.strip().splitlines()) == 1, out.stderr
    assert f"{tmp_path}: is a directory, not an analysis file" in out.stderr


@pytest.mark.parametrize("case, why", [
    ("vlen_zero", "--vlen 0: qemu emulates a power of two from 128 to 1024"),  # ran, exit 0
    ("vlen_odd", "--vlen 100: qemu emulates a power of two"),  # blamed on the first dispatch
    ("keep_file", "exists and is not a directory"),  # a FileExistsError traceback
    ("keep_full", "directory exists and is not empty"),  # written into, exit 0
    ("activations_dir", "is a directory, not a golden activations file"),  # "not found"
    ("target_escape", "--target '\\x1b[31mriscv': not a target name"),  # printed raw
])
def test_bad_options_are_one_line_before_anything_runs(tmp_path, case, why):
    """issue 80's probe: each was a traceback, a misattributed line or a run on bad input."""
    keep = tmp_path / "keep"
    args = {"vlen_zero": ["--vlen", "0"], "vlen_odd": ["--vlen", "100"], "keep_file": ["--keep", keep],
            "keep_full": ["--keep", keep], "activations_dir": ["--activations", tmp_path],
            "target_escape": ["--target", "\x1b[31mriscv"]}[case]
    if case == "keep_file":
        keep.write_text("mine")
    elif case == "keep_full":
        keep.mkdir()
        (keep / "mine").write_text("mine")
    before = sorted(str(p) for p in tmp_path.rglob("*"))
    out = driver(MODEL, *args)
    lines = out.stderr.strip().splitlines()
    assert out.returncode == 2 and len(lines) == 1 and why in lines[0], out.stderr
    assert sorted(str(p) for p in tmp_path.rglob("*")) == before


def test_runners_found_from_another_cwd(tmp_path):
    """A py_test elsewhere runs from its own runfiles root: the runners are still found."""
    from runtime.hal_runner import check_dispatches as cd

    for name in ("hal_runner", "hal_runner_riscv64"):
        assert cd.find_runner(name).is_file(), name
    out = subprocess.run(
        [sys.executable, "-m", "runtime.hal_runner.check_dispatches", str(tmp_path / "none.mlirbc")],
        capture_output=True, text=True, cwd=tmp_path,
        env={**__import__("os").environ, "PYTHONPATH": ":".join(sys.path)},
    )
    assert out.returncode == 2 and "input module not found" in out.stderr, out.stderr


def test_offsets_through_util_assume_int():
    """Bufferized (tuned) IR routes push-constant offsets through util.assume.int (mobilenet_v2)."""
    from iree.compiler import ir

    from codegen.layout import Evaluator, _walk

    ctx = ir.Context()
    ctx.allow_unregistered_dialects = True
    mod = ir.Module.parse("""
      func.func @f(%x: i32, %y: i32) -> index {
        %2 = arith.index_castui %x : i32 to index
        %3 = arith.index_castui %y : i32 to index
        %4:2 = util.assume.int %2[<umin = 64, umax = 128, udiv = 64>, <umin = 64, umax = 64>],
                               %3[<umin = 0, umax = 0>, <umin = 32, umax = 32>] : index, index
        %c4 = arith.constant 4 : index
        %5 = arith.addi %4#1, %c4 : index
        return %5 : index
      }""", ctx)
    ops = []
    _walk(mod.operation, ops.append)
    ret = next(o for o in ops if o.name == "func.return")
    func = next(o for o in ops if o.name == "func.func")
    x, y = func.regions[0].blocks[0].arguments
    assert Evaluator({x: 128, y: 32})(ret.operands[0]) == 36


def test_an_undersized_binding_file_is_refused_before_the_runner_runs(tmp_path):
    """issue 80: the runner allocates each buffer at its file's size, so a binding file shorter
    than the layout declares (a truncated kept input) had the dispatch write past it: heap
    corruption, reported as whatever crashed next."""
    from runtime.hal_runner.dispatch import Dispatch, DriveError, dispatch_command

    d = Dispatch("e", workgroup_count=(1, 1, 1), binding_lengths=[64, 32])
    (tmp_path / "a.bin").write_bytes(bytes(64))
    (tmp_path / "b.bin").write_bytes(bytes(8))
    with pytest.raises(DriveError, match=r"^binding 1: .*b\.bin holds 8 bytes, the layout declares 32"):
        dispatch_command(["runner"], tmp_path / "lib.so", 0, d, [tmp_path / "a.bin", tmp_path / "b.bin"])
    with pytest.raises(DriveError, match="1 binding files for the 2 bindings"):
        dispatch_command(["runner"], tmp_path / "lib.so", 0, d, [tmp_path / "a.bin"])
    (tmp_path / "b.bin").write_bytes(bytes(32))  # relative paths are under cwd (perf.measure's guest directory)
    cmd = dispatch_command(["runner"], Path("lib.so"), 0, d, [Path("a.bin"), Path("b.bin")], cwd=tmp_path)
    assert cmd[-4:] == ["--binding", "a.bin", "--binding", "b.bin"]


def test_index_operands_are_drawn_in_range_and_signed_ones_both_signs(tmp_path):
    """An embedding's i64 tokens must not read outside its table (a negative one did: tiny BERT's
    lookup came out 5e6 off between host and riscv); i8/i32 data keeps negative values."""
    import numpy as np

    from runtime.hal_runner.dispatch import Dispatch, Subspan, fill as _fill

    spans = [Subspan(0, 0, "readonly", (4096,), np.dtype(np.int64)),
             Subspan(1, 0, "readonly", (4096,), np.dtype(np.int8))]
    d = Dispatch("e", binding_lengths=[4096 * 8, 4096], subspans=spans)
    tokens, data = (np.fromfile(p, dtype=s.dtype) for p, s in zip(_fill(d, np.random.default_rng(0), tmp_path), spans))
    assert tokens.min() == 0 and tokens.max() < 8
    assert data.min() < 0 < data.max()


def test_a_failed_run_is_named_by_its_last_line():
    """qemu warns first ('vector version is not specified') and says why it aborted last."""
    from runtime.hal_runner.dispatch import DriveError, run as _run

    cmd = [sys.executable, "-c", "import sys; sys.stderr.write('a warning\\nthe cause\\n'); sys.exit(3)"]
    with pytest.raises(DriveError) as err:
        _run(cmd, "riscv64")
    assert str(err.value) == "riscv64 runner failed (exit 3): the cause"


def test_missing_module_is_an_error():
    out = driver(HERE / "testdata" / "missing.mlirbc")
    assert out.returncode == 2
    assert "input module not found" in out.stderr


def test_unknown_target_is_an_error():
    out = driver(MODEL, "--target", "no_such_target")
    assert out.returncode == 2
    assert "target file not found" in out.stderr



def _fake_runner(tmp_path, stdout: str) -> str:
    script = tmp_path / "fake"
    script.write_text(f"#!/bin/sh\nprintf '%s' '{stdout}'\n")
    script.chmod(0o755)
    return str(script)


def test_a_qemu_that_exits_0_without_running_is_named(tmp_path):
    """Its empty output was read as a library without exports: every dispatch then failed with
    'export not found in the dumped libraries', blaming the module (issue 62)."""
    from runtime.hal_runner.dispatch import RunnerError, library_exports as _library_exports

    with pytest.raises(RunnerError) as err:
        _library_exports(["/bin/true", "-cpu", "rv64", "hal_runner_riscv64"], Path("module_0.so"))
    assert str(err.value) == ("true: exited 0 but did not run the runner hal_runner_riscv64 "
                              "(module_0.so --info printed nothing, not its 'library' line)")


def test_a_runner_listing_fewer_exports_than_it_declares_is_named(tmp_path):
    from runtime.hal_runner.dispatch import RunnerError, library_exports as _library_exports

    runner = _fake_runner(tmp_path, "library m.so version 6 exports 2 imports 0 constants 0\n"
                                    "export 0 name=d0 constants=0 bindings=2 workgroup_size=1,1,1\n")
    with pytest.raises(RunnerError, match="runner fake listed 1 of the 2 exports it declared"):
        _library_exports([runner], Path("m.so"))
    runner = _fake_runner(tmp_path, "library m.so version 6 exports 1 imports 0 constants 0\n"
                                    "export 0 name=d0 constants=0 bindings=2 workgroup_size=1,1,1\n")
    assert _library_exports([runner], Path("m.so")) == {"d0": 0}


@pytest.mark.parametrize("exact", [False, True])
def test_a_0d_output_compares_as_0d(tmp_path, exact):
    """Issue 64: the amax of a dynamic per-tensor quantization is a 0-d tensor. Written right, it
    failed as "non-finite values differ" (the checker made it shape (1,) against the capture's ())."""
    import numpy as np
    from runtime.hal_runner.dispatch import Subspan, compare_outputs

    s = Subspan(binding=1, offset=8, access="readwrite", shape=(), dtype=np.dtype(np.float32))
    buf = np.zeros(4, dtype=np.float32)
    buf[2] = 3.9702249
    buf.tofile(tmp_path / "out1.bin")
    assert compare_outputs(tmp_path, [(s, np.array(3.9702249, dtype=np.float32))], exact) == (None, 0.0)
    problem, _ = compare_outputs(tmp_path, [(s, np.array(2.5, dtype=np.float32))], exact)
    assert problem and "non-finite" not in problem


def _manifest(tmp_path, strategy: str) -> Path:
    path = tmp_path / f"{strategy}.manifest.json"
    path.write_text(json.dumps({"target": {"strategy": strategy}}))
    return path


def test_the_reference_plan_follows_the_shipped_strategy(tmp_path):
    """A codegen build (tuned or IREE's defaults) is checked against the host's defaults, another
    strategy's against the host built with it (run unmatched when it packs); a strategy without a
    target here, or a file that is no manifest, is refused naming the manifest."""
    from runtime.hal_runner.reference import PlanError, plan

    riscv = {"datatiling": "r_dt.yaml", "directconv": "r_dc.yaml"}
    host = {"datatiling": "h_dt.yaml", "directconv": "h_dc.yaml"}
    got = plan(_manifest(tmp_path, "codegen"), "r.yaml", "h.yaml", riscv, host)
    assert (got.target, got.reference, got.run_unmatched) == ("r.yaml", "h.yaml", False)
    got = plan(_manifest(tmp_path, "datatiling"), "r.yaml", "h.yaml", riscv, host)
    assert (got.target, got.reference, got.run_unmatched) == ("r_dt.yaml", "h_dt.yaml", True)
    got = plan(_manifest(tmp_path, "directconv"), "r.yaml", "h.yaml", riscv, host)
    assert (got.target, got.reference, got.run_unmatched) == ("r_dc.yaml", "h_dc.yaml", False)
    with pytest.raises(PlanError, match="strategy 'ukernels' has no target here"):
        plan(_manifest(tmp_path, "ukernels"), "r.yaml", "h.yaml", riscv, host)
    (tmp_path / "junk.json").write_text("[]")
    with pytest.raises(PlanError, match="junk.json: not a manifest"):
        plan(tmp_path / "junk.json", "r.yaml", "h.yaml", riscv, host)


def test_the_dispatch_test_path_compiles_nothing(tmp_path):
    """One compile, many readers (issue 63): with the riscv build as compiled (--build), the host
    reference and its traced twin built ahead (runtime.hal_runner.reference, the zoo's
    <name>_riscv_dispatch_reference action), check_dispatches runs every dispatch on real
    activations and never starts iree-compile."""
    from codegen.compile import CompileOptions, compile_module

    targets = HERE.parent.parent / "common" / "targets"
    own = compile_module(MODEL, CompileOptions(targets / "riscv64_rvv.yaml", layout=True), tmp_path / "own")
    vmfb, layout = own.vmfb, own.layout
    manifest = _manifest(tmp_path, "codegen")
    ref = [tmp_path / n for n in ("ref.vmfb", "ref.layout.json", "traced.vmfb")]
    built = subprocess.run([sys.executable, "-m", "runtime.hal_runner.reference", MODEL, manifest,
                            "--riscv", targets / "riscv64_rvv.yaml", "--host", targets / "host.yaml",
                            "--out-vmfb", ref[0], "--out-layout", ref[1], "--out-traced", ref[2]],
                           capture_output=True, text=True)
    assert built.returncode == 0, built.stderr
    args = [str(MODEL), "--build", str(vmfb), str(layout), "--reference-build", str(ref[0]), str(ref[1]),
            "--traced", str(ref[2]), "--activations", str(GOLDEN)]
    guard = (
        "import os, subprocess, sys\n"
        "class Refusing(subprocess.Popen):\n"
        "    def __init__(self, args, *a, **k):\n"
        "        if 'iree-compile' in os.path.basename(str(args[0] if isinstance(args, (list, tuple)) else args)):\n"
        "            print('ran iree-compile', flush=True)\n"
        "            os._exit(3)\n"
        "        super().__init__(args, *a, **k)\n"
        "subprocess.Popen = Refusing\n"
        "import iree.compiler.tools as tools\n"
        "def refuse(*args, **kwargs):\n"
        "    print('ran iree-compile', flush=True)\n"
        "    os._exit(3)\n"
        "tools.compile_file = tools.compile_str = refuse\n"
        "from runtime.hal_runner import check_dispatches\n"
        f"sys.exit(check_dispatches.main({args!r}))\n")
    out = subprocess.run([sys.executable, "-c", guard], capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "ran iree-compile" not in out.stdout and "compiled tiny_model" not in out.stdout, out.stdout
    assert out.stdout.count("nothing compiled for it") == 2, out.stdout
    assert re.search(r"^7 checked, 7 passed$", out.stdout, re.M), out.stdout
    # The guard can fail: the same check compiling its reference is caught.
    out = subprocess.run([sys.executable, "-c", guard.replace(
        f"{args!r}", repr([a for a in args if a not in (str(ref[0]), str(ref[1]), "--reference-build")]))],
        capture_output=True, text=True)
    assert out.returncode == 3 and "ran iree-compile" in out.stdout, out.stdout + out.stderr


def test_a_dispatch_traced_outputs_first_pairs_its_inputs():
    """Issue 64: IREE may emit the trace of a dispatch's function-argument inputs after its outputs
    (pt2e_cnn's first quantize); the capture took it as a call without inputs ("0 captured inputs")."""
    import numpy as np
    from runtime.hal_runner.activations import Capture

    x, y, z = np.zeros(4, np.float32), np.ones(4, np.int8), np.full(4, 2, np.float32)
    cap = Capture()
    cap.add("main_dispatch_0::main_dispatch_0_q outputs", [y], every_call=True)
    cap.add("main_dispatch_1::main_dispatch_1_dq inputs", [y], every_call=True)
    cap.add("main_dispatch_1::main_dispatch_1_dq outputs with {0} decoded to row major layout", [z], True)
    cap.add("main_dispatch_0::main_dispatch_0_q inputs", [x], every_call=True)
    assert [(c.inputs, c.outputs) for c in cap.calls["main_dispatch_0_q"]] == [([x], [y])]
    assert [(c.inputs, c.outputs) for c in cap.calls["main_dispatch_1_dq"]] == [([y], [z])]
    assert cap.counts == {"main_dispatch_0_q": 1, "main_dispatch_1_dq": 1} and cap.unpaired() == []
    cap.add("main_dispatch_1::main_dispatch_1_dq inputs", [y], every_call=True)
    assert cap.unpaired() == ["main_dispatch_1_dq inputs"]


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q", "-p", "no:cacheprovider"]))


def test_the_shipped_build_runs_as_compiled_and_a_foreign_layout_is_refused(tmp_path):
    """--build: the riscv side is the vmfb its compile wrote, driven by that compile's layout
    (nothing compiled for it); a layout of other executables is refused in one line."""
    from codegen.compile import CompileOptions, compile_module

    target = HERE.parent.parent / "common" / "targets" / "riscv64_rvv.yaml"
    own = compile_module(MODEL, CompileOptions(target, layout=True), tmp_path / "own")
    vmfb, layout = own.vmfb, own.layout
    out = driver(MODEL, "--build", vmfb, layout)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "nothing compiled for it" in out.stdout and f"compiled {MODEL.name} for host in" in out.stdout
    other = compile_module(HERE / "testdata" / "tiny_model_perturbed.mlirbc", CompileOptions(target, layout=True),
                           tmp_path / "other").layout
    out = driver(MODEL, "--build", vmfb, other)
    assert out.returncode == 2 and "are not the ones build.layout.json describes" in out.stderr, out.stderr
    assert out.stderr.count("\n") == 1
