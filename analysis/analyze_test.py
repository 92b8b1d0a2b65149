"""analysis CLI promises: knobs are flags recorded in analysis.json, no environment variable
changes the output, a ZigZag failure is an error unless allowed (then recorded without temporary
paths), the lpf-merge patch refuses a changed zigzag-dse, and SIGTERM ends workers and temp dirs."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from analysis import analyze, zigzag_cost

HERE = Path(__file__).parent
ROOT = HERE.parent
TARGET = ROOT / "common" / "targets" / "riscv64_rvv.yaml"
HARDWARE = HERE / "hardware" / "riscv_rvv.yaml"

TWO_MATMULS = """
func.func @main(%a: tensor<64x96xf32>, %b: tensor<96x128xf32>, %c: tensor<48x40xf32>,
                %d: tensor<40x72xf32>) -> (tensor<64x128xf32>, tensor<48x72xf32>) {
  %zero = arith.constant 0.0 : f32
  %i0 = tensor.empty() : tensor<64x128xf32>
  %f0 = linalg.fill ins(%zero : f32) outs(%i0 : tensor<64x128xf32>) -> tensor<64x128xf32>
  %r0 = linalg.matmul ins(%a, %b : tensor<64x96xf32>, tensor<96x128xf32>) outs(%f0 : tensor<64x128xf32>) -> tensor<64x128xf32>
  %i1 = tensor.empty() : tensor<48x72xf32>
  %f1 = linalg.fill ins(%zero : f32) outs(%i1 : tensor<48x72xf32>) -> tensor<48x72xf32>
  %r1 = linalg.matmul ins(%c, %d : tensor<48x40xf32>, tensor<40x72xf32>) outs(%f1 : tensor<48x72xf32>) -> tensor<48x72xf32>
  return %r0, %r1 : tensor<64x128xf32>, tensor<48x72xf32>
}
"""


def _cli(module, out, *flags, env=None):
    return subprocess.run(
        [sys.executable, "-m", "analysis.analyze", "--module", module, "--target", TARGET,
         "--hardware", HARDWARE, "--model-name", "m", "--out", out, *flags],
        capture_output=True, text=True, cwd=ROOT, env=env)


def test_knobs_are_recorded_flags_and_the_environment_changes_nothing(tmp_path):
    module = HERE / "testdata" / "matmul.mlir"
    env = dict(os.environ, ANALYSIS_ZIGZAG_LPF="2", ANALYSIS_ZIGZAG_LPF_MERGE="smallest")
    plain = _cli(module, tmp_path / "plain.json", "--jobs", "1")
    with_env = _cli(module, tmp_path / "env.json", "--jobs", "1", env=env)
    flagged = _cli(module, tmp_path / "flags.json", "--jobs", "1", "--zigzag-lpf-limit", "4",
                   "--zigzag-lpf-merge", "smallest")
    assert plain.returncode == with_env.returncode == flagged.returncode == 0, plain.stderr
    assert (tmp_path / "plain.json").read_bytes() == (tmp_path / "env.json").read_bytes()
    options = json.loads((tmp_path / "flags.json").read_text())["options"]
    assert options == {"zigzag_lpf_limit": 4, "zigzag_lpf_merge": "smallest",
                       "allow_zigzag_failure": False, "zigzag": True}
    assert json.loads((tmp_path / "plain.json").read_text())["options"]["zigzag_lpf_merge"] == "largest"


def test_no_zigzag_leaves_its_candidate_out_and_says_so(tmp_path):
    module = HERE / "testdata" / "matmul.mlir"
    run = _cli(module, tmp_path / "without.json", "--jobs", "1", "--no-zigzag")
    assert run.returncode == 0, run.stderr
    a = json.loads((tmp_path / "without.json").read_text())
    assert a["options"]["zigzag"] is False
    configurable = [d for d in a["dispatches"] if d["candidates"]]
    assert configurable, "the matmul has a configurable dispatch"
    for d in configurable:
        assert d["zigzag"] is None
        assert all(c["generator"] != "zigzag" for c in d["candidates"])
        assert "ZigZag not run (--no-zigzag)" in d["reason"]
        # Uncalibrated: the decision is IREE's default either way.
        assert d["chosen"] == "iree-default"


def test_bad_option_is_one_line(tmp_path):
    p = _cli(HERE / "testdata" / "matmul.mlir", tmp_path / "a.json", "--zigzag-lpf-limit", "99")
    assert p.returncode != 0 and len(p.stderr.strip().splitlines()) == 1, p.stderr
    assert "zigzag_lpf_limit" in p.stderr and not (tmp_path / "a.json").exists()


def test_module_without_dispatches_is_an_error_and_writes_nothing(tmp_path):
    empty = tmp_path / "empty.mlir"
    empty.write_text("module {\n}\n")
    p = _cli(empty, tmp_path / "a.json")
    lines = p.stderr.strip().splitlines()
    assert p.returncode != 0 and len(lines) == 1 and "no dispatches" in lines[0], p.stderr
    assert not (tmp_path / "a.json").exists()


@pytest.mark.parametrize("module, why", [("dir", "is a directory, not a module file"),
                                         ("/dev/zero", "is a character device, not a regular file")])
def test_a_module_that_is_no_file_is_named_as_what_it_is(tmp_path, module, why):
    # issue 80: a directory or a device was "module file not found"
    module = tmp_path if module == "dir" else Path(module)
    p = _cli(module, tmp_path / "a.json")
    lines = p.stderr.strip().splitlines()
    assert p.returncode != 0 and lines == [f"analysis: {module}: {why}"], p.stderr
    assert not (tmp_path / "a.json").exists()


def test_unknown_cpu_feature_is_one_line_naming_the_target(tmp_path):
    target = tmp_path / "badfeat.yaml"
    target.write_text(TARGET.read_text().replace('"+v"]', '"+v", "+notafeature"]'))
    p = _cli(HERE / "testdata" / "matmul.mlir", tmp_path / "a.json", "--target", str(target))
    lines = p.stderr.strip().splitlines()
    assert p.returncode != 0 and len(lines) == 1, p.stderr
    assert "badfeat.yaml: cpu_features +notafeature: not a feature LLVM knows" in lines[0]
    assert not (tmp_path / "a.json").exists()


def _failing_zigzag(layer, accelerator, mapping, nloops, lpf_limit, lpf_merge, dump_root=None):
    raise zigzag_cost.ZigZagFailed(f"ValueError: port too narrow in {accelerator}".replace(
        str(Path(accelerator).parent), "<zigzag inputs>"))


def test_zigzag_failure_is_an_error_naming_the_dispatch(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(zigzag_cost, "run", _failing_zigzag)
    out = tmp_path / "a.json"
    code = analyze.main(["--module", str(HERE / "testdata" / "matmul.mlir"), "--target", str(TARGET),
                         "--hardware", str(HARDWARE), "--model-name", "m", "--out", str(out),
                         "--jobs", "1"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code != 0 and not out.exists()
    assert err[-1].startswith("analysis: dispatch main_dispatch_0") and "ZigZag failed" in err[-1]


def test_allowed_zigzag_failure_is_recorded_without_temporary_paths(tmp_path, monkeypatch):
    monkeypatch.setattr(zigzag_cost, "run", _failing_zigzag)
    out = tmp_path / "a.json"
    code = analyze.main(["--module", str(HERE / "testdata" / "matmul.mlir"), "--target", str(TARGET),
                         "--hardware", str(HARDWARE), "--model-name", "m", "--out", str(out),
                         "--jobs", "1", "--allow-zigzag-failure"])
    assert code == 0
    text = out.read_text()
    a = json.loads(text)
    assert a["options"]["allow_zigzag_failure"] is True
    matmul = next(d for d in a["dispatches"] if d["kind"] == "matmul")
    assert "ZigZag failed: ValueError: port too narrow" in matmul["reason"]
    assert all(c["generator"] != "zigzag" for c in matmul["candidates"])
    assert "/tmp" not in text and "analysis_" not in text


def test_lpf_merge_patch_is_for_the_installed_zigzag():
    """Red when zigzag-dse's patched method (or its caller) changes: re-read the patch."""
    assert zigzag_cost.patched_sources_sha256() == zigzag_cost.PATCHED_SOURCES_SHA256


def test_lpf_merge_patch_refuses_changed_zigzag(monkeypatch):
    monkeypatch.setitem(zigzag_cost.PATCHED_SOURCES_SHA256, "limit_lpfs", "0" * 64)
    with pytest.raises(zigzag_cost.ZigZagFailed, match="zigzag-dse changed LomaEngine.limit_lpfs"):
        zigzag_cost._set_lpf_merge("largest")
    zigzag_cost._set_lpf_merge("smallest")  # ZigZag's own merge needs no patch


def _children(pid: int) -> list[int]:
    kids = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            kids.append(int(stat.parent.name))
    return kids


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


@pytest.mark.parametrize("signum,group", [(signal.SIGTERM, False), (signal.SIGHUP, True)],
                         ids=["SIGTERM", "SIGHUP-to-the-group"])
def test_a_signal_ends_zigzag_workers_and_removes_temporaries(tmp_path, signum, group):
    """SIGHUP goes to the whole process group when a terminal closes: the workers get it too
    and must leave the unwinding to the analysis (one line, not a traceback per worker)."""
    module = tmp_path / "two.mlir"
    module.write_text(TWO_MATMULS)
    temp = tmp_path / "tmp"
    temp.mkdir()
    out = tmp_path / "a.json"
    proc = subprocess.Popen(
        [sys.executable, "-m", "analysis.analyze", "--module", str(module), "--target", str(TARGET),
         "--hardware", str(HARDWARE), "--model-name", "m", "--out", str(out), "--jobs", "2"],
        cwd=ROOT, env=dict(os.environ, TMPDIR=str(temp)), stderr=subprocess.PIPE, text=True,
        start_new_session=group)
    workers: list[int] = []
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline and proc.poll() is None:
        own = _cmdline(proc.pid)  # read after exec
        workers = [k for k in _children(proc.pid) if _cmdline(k) == own]  # forked, not iree-compile
        if len(workers) == 2:
            break
        time.sleep(0.05)
    assert len(workers) == 2, "the analysis never started its two ZigZag workers"
    time.sleep(1.0)
    if group:
        os.killpg(proc.pid, signum)
    else:
        proc.send_signal(signum)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode != 0 and "interrupted" in err.strip().splitlines()[-1], err
    if group:
        assert proc.returncode == 128 + signum and len(err.strip().splitlines()) == 1, err
    time.sleep(0.5)
    alive = [w for w in workers if Path(f"/proc/{w}").exists()
             and Path(f"/proc/{w}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"]
    assert not alive, f"ZigZag workers {alive} outlived the analysis"
    assert not list(temp.iterdir()), f"left behind: {sorted(p.name for p in temp.iterdir())}"
    assert not out.exists()


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q", "-p", "no:cacheprovider"]))
