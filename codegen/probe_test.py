"""Bad input to codegen's CLIs (codegen.compile, strategy_target): each refused with one line
naming the culprit and the reason, a non-zero exit, and the directory as it was (common/probe.py).
Issue 51's cases: outputs aliasing inputs or each other, --keep-temps given a directory that is
not the command's own, targets iree-compile or LLVM refuse (blamed on the target, not the module),
unwritable outputs, and SIGTERM, SIGINT or SIGHUP while iree-compile runs. Issue 62's: a full
TMPDIR (blamed on "target emulation unknown")."""

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from common.probe import MATMUL_MLIR, Probe, alive, cmdline, snapshot

ROOT = Path(__file__).parent.parent
TARGETS = ROOT / "common" / "targets"
SMALL = ROOT / "codegen" / "testdata" / "small.mlir"


@pytest.fixture
def p(tmp_path):
    probe = Probe(tmp_path)
    probe.write("m.mlir", MATMUL_MLIR)
    probe.put(TARGETS / "host.yaml")
    probe.put(TARGETS / "riscv64_rvv.yaml")
    probe.write("junk.mlir", "func.func @f( {\n")
    probe.put(ROOT / "analysis" / "hardware" / "host.yaml", "host_hw.yaml")
    return probe


def edited(p: Probe, src: str, name: str, old: str, new: str) -> Path:
    text = (p.root / src).read_text()
    assert old in text, old
    return p.write(name, text.replace(old, new, 1))


def compile_(*extra, module="m.mlir", target="host.yaml", vmfb="o.vmfb", configs="o.configs.mlir",
             report="o.report.json"):
    return ("codegen.compile", "--module", module, "--target", target, "--out-vmfb", vmfb,
            "--out-configs", configs, "--out-report", report, *extra)


def _report_is_module(p):
    return compile_(report="m.mlir"), "--out-report m.mlir", "the same file as --module m.mlir"


def _vmfb_is_configs(p):
    return compile_(vmfb="o.mlir", configs="o.mlir"), "--out-configs o.mlir", "the same file as --out-vmfb o.mlir"


def _vmfb_hard_link_of_target(p):
    os.link(p.root / "host.yaml", p.root / "o.vmfb")
    return compile_(), "--out-vmfb o.vmfb", "the same file as --target host.yaml"


def _report_symlink_to_module(p):
    (p.root / "o.report.json").symlink_to(p.root / "m.mlir")
    return compile_(), "--out-report o.report.json", "the same file as --module"


def _configs_is_analysis(p):
    p.write("a.json", "{}")
    return compile_("--analysis", "a.json", configs="./a.json"), "--out-configs a.json", \
        "the same file as --analysis a.json"


def _binaries_dir_is_module(p):
    return compile_("--out-binaries", "m.mlir"), "--out-binaries m.mlir", "the same file as --module"


def _code_dir_is_vmfb(p):
    return compile_("--out-code", "o.vmfb"), "--out-code o.vmfb", "the same file as --out-vmfb"


def _keep_temps_is_report(p):
    return compile_("--keep-temps", "o.report.json"), "--keep-temps o.report.json", "the same file as --out-report"


def _keep_temps_full_directory(p):
    p.write("mine/notes.txt", "my own notes")
    return compile_("--keep-temps", "mine", module="junk.mlir"), "--keep-temps mine", \
        "directory exists and is not empty"


def _keep_temps_working_directory(p):
    return compile_("--keep-temps", ".", module="junk.mlir"), "--keep-temps .", "directory exists and is not empty"


def _keep_temps_existing_file(p):
    p.write("kept", "a file of mine")
    return compile_("--keep-temps", "kept", module="junk.mlir"), "--keep-temps kept", "not a directory"


def _vmfb_under_a_file(p):
    return compile_(vmfb="m.mlir/o.vmfb"), "m.mlir/o.vmfb", "m.mlir is not a directory"


def _report_is_a_directory(p):
    (p.root / "r").mkdir()
    return compile_(report="r"), "r", "cannot write the output: is a directory"


def _target_cpu_unknown(p):
    edited(p, "host.yaml", "t.yaml", "cpu: x86-64-v3", "cpu: notacpu")
    return compile_(target="t.yaml"), "t.yaml", "Unknown CPU"


def _riscv_target_cpu_unknown(p):
    edited(p, "riscv64_rvv.yaml", "t.yaml", "cpu: generic-rv64", "cpu: notacpu")
    return compile_(target="t.yaml"), "t.yaml", "Unknown CPU"


def _target_flag_unknown(p):
    edited(p, "host.yaml", "t.yaml", "--iree-global-opt-use-im2col-for-convs", "--no-such-flag")
    return compile_(target="t.yaml"), "t.yaml", "Unknown command line argument '--no-such-flag'"


def _target_triple_unknown(p):
    edited(p, "host.yaml", "t.yaml", "triple: x86_64-unknown-linux-gnu", "triple: nonsense-foo-bar")
    return compile_(target="t.yaml"), "t.yaml", "iree-compile failed"


def _target_key_twice(p):
    edited(p, "host.yaml", "t.yaml", "cpu: x86-64-v3\n", "cpu: x86-64-v3\ncpu: znver3\n")
    return compile_(target="t.yaml"), "t.yaml", "key 'cpu' given twice"


def _target_vector_bits_96(p):
    edited(p, "host.yaml", "t.yaml", "vector_bits: 256", "vector_bits: 96")
    return compile_(target="t.yaml"), "t.yaml", "96 is not a power of two"


def strategy(*, base="host.yaml", out="s.yaml"):
    return ("codegen.strategy_target", "--base", base, "--strategy", "ukernels", "--out", out)


def _strategy_out_is_base(p):
    return strategy(out="host.yaml"), "--out host.yaml", "the same file as --base host.yaml"


def _strategy_out_under_a_file(p):
    return strategy(out="m.mlir/s.yaml"), "m.mlir/s.yaml", "cannot write the output"


def _strategy_base_key_twice(p):
    edited(p, "host.yaml", "t.yaml", "runnable_on_host: true\n", "runnable_on_host: true\nrunnable_on_host: false\n")
    return strategy(base="t.yaml"), "t.yaml", "key 'runnable_on_host' given twice"


# Issue 62, own probe: an analysis.json that names one dispatch twice, or one key twice, was compiled
# with exit 0: its last entry (or value) won and the first, the measured choice, was dropped.
def _analysis_of_m(p) -> dict:
    r = p.run("analysis.analyze", "--module", "m.mlir", "--target", "host.yaml", "--hardware", "host_hw.yaml",
              "--model-name", "m", "--out", "a.json", "--no-zigzag")
    assert r.returncode == 0, r.stderr
    return json.loads((p.root / "a.json").read_text())


def _analysis_dispatch_listed_twice(p):
    a = _analysis_of_m(p)
    d = a["dispatches"][0]
    other = next(c for c in d["candidates"] if c["name"] != d["chosen"])
    a["dispatches"].append({**d, "chosen": other["name"], "tiles": other["tiles"], "provenance": other["generator"]})
    p.write("a.json", json.dumps(a, indent=1))
    return compile_("--analysis", "a.json"), "a.json", f"dispatch '{d['name']}' is listed twice"


def _analysis_key_given_twice(p):
    text = json.dumps(_analysis_of_m(p), indent=1)
    p.write("a.json", '{\n "target": "riscv64_rvv",' + text[1:])  # the last `target` won
    return compile_("--analysis", "a.json"), "a.json", "key 'target' given twice in one object"


def _analysis_nan(p):
    text = json.dumps(_analysis_of_m(p), indent=1)
    p.write("a.json", re.sub(r'"predicted_cycles": [0-9.e+]+', '"predicted_cycles": NaN', text, count=1))
    return compile_("--analysis", "a.json"), "a.json", "NaN is not a JSON number"


def _analysis_negative_prediction(p):
    # Issue 62, own probe: a negative predicted_cycles was accepted (and ranks a candidate first).
    text = json.dumps(_analysis_of_m(p), indent=1)
    p.write("a.json", re.sub(r'"predicted_cycles": [0-9.e+]+', '"predicted_cycles": -5.0', text, count=1))
    return compile_("--analysis", "a.json"), "a.json", "predicted_cycles"


def _module_empty(p):
    # Own probe (issue 62): IREE's "outer module does not contain a vm.module op" named no file.
    p.write("e.mlirbc", "")
    return compile_(module="e.mlirbc"), "e.mlirbc", "empty module file"


def _module_unreadable(p):
    return compile_(module="junk.mlir"), "junk.mlir", "not a readable MLIR module"


def _module_without_a_function(p):
    p.write("nofunc.mlir", "module {}\n")
    return compile_(module="nofunc.mlir"), "nofunc.mlir", "no public function with a body"


CASES = [_module_empty, _module_unreadable, _module_without_a_function, _report_is_module, _vmfb_is_configs, _vmfb_hard_link_of_target, _report_symlink_to_module,
         _configs_is_analysis, _binaries_dir_is_module, _code_dir_is_vmfb, _keep_temps_is_report,
         _keep_temps_full_directory, _keep_temps_working_directory, _keep_temps_existing_file, _vmfb_under_a_file,
         _report_is_a_directory, _target_cpu_unknown, _riscv_target_cpu_unknown, _target_flag_unknown,
         _target_triple_unknown, _target_key_twice, _target_vector_bits_96, _strategy_out_is_base,
         _strategy_out_under_a_file, _strategy_base_key_twice, _analysis_dispatch_listed_twice,
         _analysis_key_given_twice, _analysis_nan,
         _analysis_negative_prediction]
PROGS = {"codegen.compile": "codegen.compile: error", "codegen.strategy_target": "strategy_target"}


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.__name__.strip("_"))
def test_refused(p, case):
    argv, culprit, reason = case(p)
    p.refused(*argv, prog=PROGS[argv[0]], culprit=culprit, reason=reason)


def test_keep_temps_fills_an_empty_directory_and_deletes_nothing(p):
    """An existing empty directory is filled (the old code replaced it with rmtree)."""
    (p.root / "kept").mkdir()
    result = p.run(*compile_("--keep-temps", "kept", module="junk.mlir"))
    assert result.returncode != 0 and "kept in kept" in result.stderr
    assert (p.root / "kept" / "diagnostics.txt").is_file()


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP], ids=["SIGTERM", "SIGINT", "SIGHUP"])
def test_a_signal_while_iree_compiles_is_one_line_and_leaves_nothing(p, signum):
    """SIGTERM left 90-224 MB of temporaries; Ctrl-C printed 18-40 lines of traceback; SIGHUP left
    iree-compile orphaned and $TMPDIR/codegen.* behind (issue 62)."""
    p.put(SMALL, "small.mlir")
    before = snapshot(p.root)
    result, seen = p.interrupt(*compile_(module="small.mlir"), signum=signum,
                               when=lambda pid, kids: any("iree-compile" in cmdline(k) for k in kids))
    assert seen, "iree-compile never started"
    p.check_refused(result, before, "codegen.compile: error", "small.mlir",
                    f"interrupted by {signal.Signals(signum).name}")
    assert result.returncode == 128 + signum
    assert not alive(seen), f"iree-compile outlived the compile: {alive(seen)}"



@pytest.fixture
def full_tmpdir(p):
    """The probe's TMPDIR a 256 KiB tmpfs, filled: needs mount(2) (root outside a sandbox)."""
    tmp = p.root / "tmp"
    mount = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(tmp)], capture_output=True,
                           text=True)
    # Fails, never skips: the project's test machines run as root (perf/guest_test needs it too).
    assert mount.returncode == 0, f"cannot mount a small tmpfs to fill: {mount.stderr.strip() or mount.returncode}"
    try:
        fd = os.open(tmp / "fill", os.O_WRONLY | os.O_CREAT, 0o644)
        try:
            while os.write(fd, bytes(4096)):
                pass
        except OSError:
            pass  # full
        finally:
            os.close(fd)
        yield tmp
    finally:
        subprocess.run(["umount", str(tmp)], check=True)


def test_a_full_tmpdir_is_named(p, full_tmpdir):
    """Was "iree-compile failed (codegen): target emulation unknown: -m or at least one .o file
    required", lld's word for the object files iree-compile could not write (issue 62)."""
    p.refused(*compile_(), prog="codegen.compile: error", culprit=f"$TMPDIR {full_tmpdir} is full",
              reason=("No space left on device", "could not write its temporary files"))


def test_the_temp_directory_check_names_only_a_full_one(tmp_path, monkeypatch):
    from common import iree_tools

    monkeypatch.setenv("TMPDIR", str(tmp_path))
    assert iree_tools.full_temp_directory() is None and list(tmp_path.iterdir()) == []


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q", "-p", "no:cacheprovider"]))
