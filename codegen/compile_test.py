"""codegen: configs land for matmul/conv/pool/... on host and riscv64_rvv; bad inputs fail cleanly."""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from codegen import compile as cg  # noqa: E402
from common.codegen_report import load_codegen_report  # noqa: E402

DATA = ROOT / "codegen" / "testdata"
MODULE = DATA / "small.mlirbc"
TARGET = {t: ROOT / "common" / "targets" / f"{t}.yaml" for t in ("host", "riscv64_rvv")}


def compile_to(module: Path, target: Path, analysis: Path | None, tmp: Path, out_binaries: Path | None = None,
               allow_untuned_dispatches: bool = False) -> dict:
    """The report of codegen's one compile path, its files at tmp/m.vmfb, r.json and c.mlir."""
    options = cg.CompileOptions(Path(target), analysis, binaries=out_binaries is not None,
                                allow_untuned_dispatches=allow_untuned_dispatches)
    build = cg.Build(options, tmp / "m.vmfb", tmp / "r.json", tmp / "c.mlir", binaries=out_binaries)
    assert cg.compile_module(module, options, build) == build
    return build.read_report()


def run(tmp, target, analysis=DATA / "analysis_{t}.json", module=MODULE, **kw):
    if analysis is not None:
        analysis = Path(str(analysis).format(t=target))
    return compile_to(module, TARGET[target], analysis, tmp, **kw)


@pytest.fixture(scope="module", params=["host", "riscv64_rvv"])
def compiled(request, tmp_path_factory):
    tmp = tmp_path_factory.mktemp(request.param)
    return request.param, tmp, run(tmp, request.param)


def test_configs_landed(compiled):
    target, tmp, report = compiled
    on_disk = json.loads((tmp / "r.json").read_text())
    assert on_disk == json.loads(json.dumps(report))
    by = {d["name"]: d for d in report["dispatches"]}
    for name in ("main_dispatch_0_matmul_64x96x128_f32", "main_dispatch_2_matmul_16x256x72_f32",
                 "main_dispatch_4_conv_16x16x16x3x3_f32", "main_dispatch_5_conv_16x8x8x2x2_f32",
                 "main_dispatch_6_elementwise_16384_f32", "main_dispatch_7_reduction_64x256_f32"):
        d = by[name]
        assert d["status"] == "applied" and d["landed"], name
        assert d["landed_config"] == d["applied_attr"]
    mm = by["main_dispatch_0_matmul_64x96x128_f32"]
    lanes = 8 if target == "host" else 4
    assert mm["applied"] == {"distribution": [32, 96, 0], "cache_parallel": [16, 48, 0],
                             "cache_reduction": [0, 0, 64], "vector_common_parallel": [4, 2 * lanes, 0],
                             "vector_reduction": [0, 0, 1]}
    assert mm["provenance"] == "zigzag"
    memcpy = by["main_dispatch_3_slow_memcpy"]
    assert memcpy["status"] == "default" and memcpy["provenance"] == "iree-default" and memcpy["reason"]
    # The configs file is what codegen used, location-free.
    text = (tmp / "c.mlir").read_text()
    assert mm["applied_attr"] in text and "/tmp" not in text and "loc(" not in text
    assert (tmp / "m.vmfb").read_bytes()[:2] == b"PK"


def test_pool_adjusted_for_conv_pipeline(compiled):
    _, _, report = compiled
    pool = next(d for d in report["dispatches"] if d["name"] == "main_dispatch_5_conv_16x8x8x2x2_f32")
    assert pool["pipeline"] == "ConvTileAndDecomposeExpert"
    assert pool["applied"]["vector_common_parallel"][2] == 1 and pool["applied"]["vector_reduction"][4] == 1
    assert len(pool["adjustments"]) == 2


def test_host_module_matches_numpy(tmp_path):
    import iree.runtime as ireert

    run(tmp_path, "host")
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((64, 128), dtype=np.float32), rng.standard_normal((128, 96), dtype=np.float32)
    x, w = rng.standard_normal((1, 8, 18, 18), dtype=np.float32), rng.standard_normal((16, 8, 3, 3), dtype=np.float32)
    dw, e = rng.standard_normal((16, 3, 3), dtype=np.float32), rng.standard_normal((64, 256), dtype=np.float32)
    ctx = ireert.SystemContext(config=ireert.Config("local-task"))
    ctx.add_vm_module(ireert.VmModule.copy_buffer(ctx.instance, (tmp_path / "m.vmfb").read_bytes()))
    r, c, p, el, red = [np.asarray(o) for o in ctx.modules.module["main"](a, b, x, w, dw, e)]
    win = np.lib.stride_tricks.sliding_window_view(x[0], (3, 3), axis=(1, 2))  # 8,16,16,3,3
    conv = np.einsum("chwij,fcij->fhw", win, w)[None]
    cp = np.pad(conv, ((0, 0), (0, 0), (1, 1), (1, 1)))
    dconv = np.einsum("chwij,cij->chw", np.lib.stride_tricks.sliding_window_view(cp[0], (3, 3), axis=(1, 2)), dw)[None]
    pool = dconv.reshape(1, 16, 8, 2, 8, 2).max(axis=(3, 5))
    np.testing.assert_allclose(r, a @ b, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(c, conv, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(p, pool, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(el, np.maximum(e, 0), rtol=1e-6)
    np.testing.assert_allclose(red, e.sum(1), rtol=1e-4, atol=1e-4)


def test_untuned_uses_iree_defaults(tmp_path):
    report = run(tmp_path, "host", analysis=None)
    assert not report["tuned"] and report["summary"]["applied"] == 0
    assert all(d["provenance"] == "iree-default" for d in report["dispatches"])


def test_loop_mismatch_is_an_error_unless_allowed(tmp_path):
    a = json.loads((DATA / "analysis_host.json").read_text())
    a["dispatches"][0]["loops"][0]["bound"] = 63
    (tmp_path / "a.json").write_text(json.dumps(a))
    with pytest.raises(cg.CompileError, match="dispatch 'main_dispatch_0_matmul_64x96x128_f32': "
                                              "loop mismatch"):
        compile_to(MODULE, TARGET["host"], tmp_path / "a.json", tmp_path)
    assert not list(tmp_path.glob("m.*"))
    report = compile_to(MODULE, TARGET["host"], tmp_path / "a.json", tmp_path, allow_untuned_dispatches=True)
    mm = report["dispatches"][0]
    assert mm["status"] == "default" and "loop mismatch" in mm["reason"]
    assert "--allow-untuned-dispatches" in mm["reason"]
    assert report["options"] == {"allow_untuned_dispatches": True}


def test_a_root_codegen_cannot_configure_compiles_with_its_analysis(tmp_path):
    """torch.cumsum's root stays iree_linalg_ext.scan: codegen reads no loops for it, the
    analysis prices a parallel domain and keeps IREE's default; that is no mismatch."""
    scan = DATA / "scan.mlir"
    analysis = tmp_path / "scan.analysis.json"
    proc = subprocess.run([sys.executable, "-m", "analysis.analyze", "--module", str(scan),
                           "--target", str(TARGET["host"]), "--hardware",
                           str(ROOT / "analysis" / "hardware" / "host.yaml"), "--model-name", "scan",
                           "--out", str(analysis), "--jobs", "1"], capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    report = compile_to(scan, TARGET["host"], analysis, tmp_path)
    (entry,) = [d for d in report["dispatches"] if d["root_op"] == "iree_linalg_ext.scan"]
    assert entry["status"] == "default" and entry["loops"] == []


@pytest.mark.parametrize("target", ["host", "riscv64_rvv"])
def test_out_binaries_are_the_executables_the_vmfb_embeds(tmp_path, target):
    """One invocation writes the vmfb and dumps its executables (IREE's embedded ELF); the report
    records their sha256, and the vmfb read back holds exactly those bytes."""
    from common.vmfb_executables import embedded_executables, sha256_set

    report = run(tmp_path, target, out_binaries=tmp_path / "bin")
    libs = sorted((tmp_path / "bin").iterdir())
    assert libs and all(p.name.endswith(".so") and "embedded_elf" in p.name for p in libs)
    machine = libs[0].read_bytes()[18]  # e_machine (low byte)
    assert machine == (0x3E if target == "host" else 0xF3)
    assert sha256_set({p.name: p.read_bytes() for p in libs}) == sha256_set(report["executables_sha256"])
    assert sha256_set(embedded_executables(tmp_path / "m.vmfb")) == sha256_set(report["executables_sha256"])


def test_an_analysis_keeping_every_default_builds_iree_defaults_bytes(tmp_path):
    """One compile path: tuned with IREE's default chosen everywhere is IREE's untuned build."""
    from common.analysis_schema import Analysis

    analysis = Analysis.model_validate_json((DATA / "analysis_riscv64_rvv.json").read_text())
    defaults = analysis.model_copy(update={"dispatches": [
        d.model_copy(update={"chosen": "iree-default" if any(c.name == "iree-default" for c in d.candidates)
                             else d.chosen, "tiles": None, "provenance": "iree-default"})
        for d in analysis.dispatches]})
    path = tmp_path / "defaults.analysis.json"
    path.write_text(defaults.model_dump_json())
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    untuned = run(tmp_path / "a", "riscv64_rvv", analysis=None)
    kept = run(tmp_path / "b", "riscv64_rvv", analysis=path)
    assert kept["summary"]["applied"] == 0
    assert kept["executables_sha256"] == untuned["executables_sha256"] != {}


def cli(tmp, *args):
    return subprocess.run([sys.executable, "-m", "codegen.compile", *map(str, args), "--out-vmfb", tmp / "m.vmfb",
                           "--out-configs", tmp / "c.mlir", "--out-report", tmp / "r.json"],
                          capture_output=True, text=True, cwd=ROOT)


def bad(tmp, *args, match):
    p = cli(tmp, *args)
    assert p.returncode != 0
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and match in lines[0], p.stderr
    assert sorted(x.name for x in tmp.iterdir() if x.name != "in") == []


def test_bad_inputs(tmp_path):
    (tmp_path / "in").mkdir()
    a = tmp_path / "in" / "a.json"
    a.write_text("{not json")
    t = TARGET["host"]
    bad(tmp_path, "--module", tmp_path / "in" / "missing.mlirbc", "--target", t, match="module file not found")
    # a directory (or a device) was "module file not found" (issue 80)
    bad(tmp_path, "--module", tmp_path / "in", "--target", t, match=f"{tmp_path / 'in'}: is a directory, not a module file")
    bad(tmp_path, "--module", "/dev/zero", "--target", t, match="/dev/zero: is a character device, not a regular file")
    bad(tmp_path, "--module", MODULE, "--target", t, "--analysis", a, match="malformed analysis")
    bad(tmp_path, "--module", MODULE, "--target", t, "--analysis", DATA / "analysis_riscv64_rvv.json",
        match="made for target 'riscv64_rvv'")
    junk = tmp_path / "in" / "junk.mlir"
    junk.write_text("func.func @f( {")
    # Named as the culprit (issue 62), not blamed on IREE's passes.
    bad(tmp_path, "--module", junk, "--target", t, match=f"{junk}: not a readable MLIR module")
    for edit, why in [(lambda x: x.update(schema_version=99), "schema_version"),
                      (lambda x: x["dispatches"][0]["tiles"]["l1"].append(8), "has 4 tiles for 3 loops"),
                      (lambda x: x["dispatches"][0]["tiles"]["register"].__setitem__(0, 0), "outside 1..64"),
                      (lambda x: x["dispatches"][0]["tiles"]["l2"].__setitem__(0, 65), "outside 1..64"),
                      (lambda x: x["dispatches"][0]["tiles"]["register"].__setitem__(0, 32),
                       "register tile 32 of loop d0 exceeds its l1 tile 16"),
                      (lambda x: x["dispatches"][0]["tiles"].pop("l2"), "no l2 tiles")]:
        broken = json.loads((DATA / "analysis_host.json").read_text())
        edit(broken)
        a.write_text(json.dumps(broken))
        bad(tmp_path, "--module", MODULE, "--target", t, "--analysis", a, match=why)
    other = json.loads((DATA / "analysis_host.json").read_text())
    other["dispatches"][0]["name"] = "main_dispatch_9_matmul_1x1x1_f32"
    a.write_text(json.dumps(other))
    bad(tmp_path, "--module", MODULE, "--target", t, "--analysis", a, match="not a dispatch of this module")
    # An analysis that covers 1 of the module's 8 dispatches compiled the rest untuned, green.
    partial = json.loads((DATA / "analysis_host.json").read_text())
    partial["dispatches"] = partial["dispatches"][:1]
    a.write_text(json.dumps(partial))
    bad(tmp_path, "--module", MODULE, "--target", t, "--analysis", a,
        match="dispatch 'main_dispatch_1_generic_8x3x3x16x16_f32': not in the analysis")
    # A feature LLVM does not know: iree-compile only warned, and the build went on without it.
    typo = tmp_path / "in" / "typo.yaml"
    typo.write_text(Path(t).read_text().replace("cpu_features: []", "cpu_features: [+notafeature]"))
    bad(tmp_path, "--module", MODULE, "--target", typo,
        match=f"{typo}: cpu_features +notafeature: not a feature LLVM knows")
    # Binary junk that iree-compile echoes back: a decode error was a traceback.
    binary = tmp_path / "in" / "binary.mlir"
    binary.write_bytes(bytes(range(256)) * 4)
    bad(tmp_path, "--module", binary, "--target", t, match=f"{binary}: not a readable MLIR module")


def test_landed_check_covers_every_configured_op(tmp_path):
    """The accumulator fill's config is checked too, not only the root op's."""
    ts = cg.tuned_sources(MODULE, DATA / "analysis_host.json", TARGET["host"], tmp_path)
    dump = cg.run_codegen(ts)
    cg.check_landed(ts.entries, dump)
    matmul = ts.entries[0]
    assert matmul["other_ops"][0]["op"] == "linalg.fill" and matmul["landed"]
    assert matmul["other_ops"][0]["landed"] is True
    matmul["other_ops"][0]["config"] = {"cache_parallel": [8, 8], "vector_common_parallel": [4, 8]}
    with pytest.raises(cg.CompileError, match="main_dispatch_0_matmul_64x96x128_f32': linalg.fill: "
                                              "codegen used"):
        cg.check_landed(ts.entries, dump)


def _target_file(tmp: Path, target) -> Path:
    """`target` (an IreeTarget, e.g. derived with a strategy) written as a target file."""
    import yaml

    path = tmp / f"{target.name}.target.yaml"
    path.write_text(yaml.safe_dump(target.model_dump(mode="json")))
    return path


@pytest.mark.parametrize("strategy,ukernels", [("datatiling", "none"), ("ukernels", "mmt4d")])
def test_strategy_targets_compile_data_tiled(tmp_path, strategy, ukernels):
    """A strategy is part of the target file: its flags reach every phase, the report says it."""
    from common.targets import load_target

    derived = load_target(TARGET["host"]).with_strategy(strategy)
    assert derived.name == f"host_{strategy}" and "--iree-opt-data-tiling" in derived.compile_flags()
    report = compile_to(MODULE, _target_file(tmp_path, derived), None, tmp_path)
    assert report["strategy"] == strategy
    configs = (tmp_path / "c.mlir").read_text()
    assert f'ukernels = "{ukernels}"' in configs and "linalg.mmt4d" in configs


def test_directconv_leaves_the_targets_im2col_out(tmp_path):
    """directconv drops the target's im2col flag (not adds a contradicting one): the NCHW conv of
    the test module stays a conv dispatch instead of an im2col copy feeding a matmul."""
    from common.targets import load_target

    host = load_target(TARGET["host"])
    derived = host.with_strategy("directconv")
    im2col = "--iree-global-opt-use-im2col-for-convs"
    assert im2col in host.compile_flags() and not any(f.startswith(im2col) for f in derived.compile_flags())
    assert [f for f in host.compile_flags() if f != im2col] == derived.compile_flags()
    names = {}
    for t in (host, derived):
        out = tmp_path / t.name
        out.mkdir()
        report = compile_to(MODULE, _target_file(out, t), None, out)
        names[t.strategy] = " ".join(d["name"] for d in report["dispatches"])
    assert report["strategy"] == "directconv"
    # im2col: the 8-channel 3x3 conv is a copy into 72-deep columns and a 16x256x72 matmul.
    assert "matmul_16x256x72" in names["codegen"] and "conv_16x16x16x8x3x3" not in names["codegen"]
    assert "matmul_16x256x72" not in names["directconv"] and "conv_16x16x16x8x3x3" in names["directconv"]


@pytest.mark.parametrize("target", ["host", "riscv64_rvv"])
def test_directconv_is_stock_iree(target):
    """Stock IREE (what a user gets from plain iree-compile: the device, triple, CPU, features and
    ABI flags, nothing else) is a candidate of every strategy choice because directconv leaves out
    every global flag the project adds. A new global flag that directconv keeps breaks that: give
    stock IREE a build of its own then (issue 47, "two baselines")."""
    from common.targets import STOCK_IREE_STRATEGY, load_target

    t = load_target(TARGET[target])
    assert t.with_strategy(STOCK_IREE_STRATEGY).compile_flags() == t.device_flags()


def test_unknown_or_doubled_strategy_is_refused():
    from common.targets import TargetError, load_target

    host = load_target(TARGET["host"])
    with pytest.raises(TargetError, match="strategy 'fast'"):
        host.with_strategy("fast")
    with pytest.raises(TargetError, match="already has strategy ukernels"):
        host.with_strategy("ukernels").with_strategy("datatiling")


def test_failure_summary_is_the_diagnostic_not_its_header():
    from common.iree_tools import summarize

    assert summarize("m.mlir:3:5: error: failed to legalize operation 'foo':\n"
                     "  'linalg.matmul' op has 7 loops\nnote: see current operation") == \
        "failed to legalize operation 'foo': 'linalg.matmul' op has 7 loops"
    assert summarize("<unknown>:0: warning: x\nm.mlir:1:1: error: invalid attribute name") == \
        "invalid attribute name"


def test_keep_temps_keeps_diagnostics_and_says_where(tmp_path):
    (tmp_path / "in").mkdir()
    junk = tmp_path / "in" / "junk.mlir"
    junk.write_text("func.func @f( {")
    kept = tmp_path / "in" / "kept"
    p = cli(tmp_path, "--module", junk, "--target", TARGET["host"], "--keep-temps", kept)
    lines = p.stderr.strip().splitlines()
    assert p.returncode != 0 and len(lines) == 1 and f"kept in {kept}" in lines[0], p.stderr
    assert "junk.mlir:1:" in (kept / "diagnostics.txt").read_text()
    assert not list(tmp_path.glob("m.vmfb")) and not list(tmp_path.glob("r.json"))


def test_record_failure_records_what_iree_refuses_and_nothing_else(tmp_path):
    """A build that is one candidate of a choice: IREE refusing it gives a report saying why, an
    empty vmfb and exit 0; a missing module is still an error."""
    junk = tmp_path / "junk.mlir"
    junk.write_text("func.func @f( {")
    p = cli(tmp_path, "--module", junk, "--target", TARGET["host"], "--record-failure")
    assert p.returncode == 0 and "IREE cannot compile this build" in p.stdout, p.stderr
    report = load_codegen_report(tmp_path / "r.json")  # the schema runtime and perf read it with
    assert report.failed and report.target == "host" and not report.dispatches
    assert (tmp_path / "m.vmfb").read_bytes() == b""
    gone = tmp_path / "gone"
    gone.mkdir()
    p = cli(gone, "--module", gone / "missing.mlirbc", "--target", TARGET["host"], "--record-failure")
    assert p.returncode != 0 and "module file not found" in p.stderr
    assert not list(gone.glob("*.json"))


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q", "-p", "no:cacheprovider"]))


def test_compile_options_ask_for_outputs_and_a_build_names_them(tmp_path):
    """What is not asked for is not made; a Build given with other options than the compile's is
    refused before anything is compiled or written."""
    options = cg.CompileOptions(TARGET["host"], None, layout=True)
    build = cg.compile_module(MODULE, options, tmp_path / "out")
    assert build == cg.Build.in_directory(tmp_path / "out", options)
    assert build.layout.is_file() and build.code is None and build.binaries is None
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [
        "build.configs.mlir", "build.layout.json", "build.report.json", "build.vmfb"]
    assert build.read_report()["layout_sha256"]
    other = cg.Build.in_directory(tmp_path / "other", cg.CompileOptions(TARGET["host"], None, code=True))
    with pytest.raises(ValueError, match="options"):
        cg.compile_module(MODULE, options, other)
    assert not (tmp_path / "other").exists()
