"""tools/compile_model.py (//tools:compile): the workspace it writes and the inputs it refuses.
The build it runs is the out-of-tree example's (.ci/run builds examples/out_of_tree and runs
//tools:compile on a model file outside the repository); here Bazel is a fake (FakeBazel) that
records its calls, so what happens around the build is tested without one."""

from __future__ import annotations

import ast
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest

from tools import compile_model as cm

ROOT = Path(__file__).absolute().parent.parent  # the runfiles tree
MARKER = ".riscv_ml_compile_workspace"  # spelled out: the tests check the file, not the constant
MODEL = '''import numpy as np
import torch


def make_model():
    return torch.nn.Linear(4, 2).eval(), (torch.from_numpy(np.ones((1, 4), np.float32)),)
'''


class FakeBazel:
    """Stands in for the workspace's tools/bazel: records (command, workspace); `build` fails, or
    with `ships` writes bazel-bin's shipped files holding the strategy BUILD.bazel names when the
    build ends (`delay` s after it starts, as a real build reads BUILD.bazel again meanwhile)."""

    def __init__(self, ships: bool = False, delay: float = 0.0):
        self.ships, self.delay = ships, delay
        self.calls: list[tuple[str, Path]] = []
        self._real = subprocess.run

    def __call__(self, args, *rest, **kwargs):
        if not str(args[0]).endswith(os.path.join("tools", "bazel")):
            return self._real(args, *rest, **kwargs)
        root = Path(kwargs["cwd"])
        self.calls.append((args[1], root))
        if args[1] != "build":
            return subprocess.CompletedProcess(args, 0)
        if not self.ships:
            return subprocess.CompletedProcess(args, 1)
        time.sleep(self.delay)
        strategy = re.search(r'"riscv": "(\w+)"', (root / "BUILD.bazel").read_text()).group(1)
        name = args[2].removeprefix("//:").removesuffix("_riscv")
        (root / "bazel-bin").mkdir(exist_ok=True)
        for f in cm.shipped_files(name):
            (root / "bazel-bin" / f).write_text(strategy)
        return subprocess.CompletedProcess(args, 0)

    def commands(self) -> list[str]:
        return [command for command, _ in self.calls]


@pytest.fixture(autouse=True)
def bazel(monkeypatch, tmp_path) -> FakeBazel:
    """No test runs Bazel; the cache is the test's own."""
    fake = FakeBazel()
    monkeypatch.setattr(cm.subprocess, "run", fake)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return fake


def fake_project(where: Path) -> Path:
    """A project checkout as far as the command reads it (its launcher fails if ever run)."""
    where.mkdir(parents=True)
    for f in (".bazelrc", ".bazelversion"):
        (where / f).write_text((ROOT / f).read_text())
    (where / "tools").mkdir()
    (where / "tools" / "bazel").write_text("#!/bin/sh\nexit 1\n")
    (where / "tools" / "bazel").chmod(0o755)
    return where


def tree(path: Path) -> dict[str, str]:
    """Every file under `path` with its content (a symlink's target), to see nothing changed."""
    found = {}
    for p in sorted(path.rglob("*")):
        if p.is_symlink():
            found[str(p)] = "-> " + os.readlink(p)
        elif p.is_file():
            found[str(p)] = p.read_text()
        else:
            found[str(p)] = "dir"
    return found


def one_line(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("compile: "), err
    return err[0]


def test_the_workspace_loads_the_project_and_declares_the_accelerator(tmp_path):
    model = tmp_path / "My Model.py"
    model.write_text(MODEL)
    accel = ROOT / "analysis" / "hardware" / "riscv_rvv512.yaml"
    files = cm.workspace_files(ROOT, "tiny", model, "torch", accel, "auto")
    assert f'path = "{ROOT}"' in files["WORKSPACE"] and "riscv_ml_toolchain_dependencies" in files["WORKSPACE"]
    build = files["BUILD.bazel"]
    assert 'accelerator(\n    name = "tiny_accelerator",\n    hardware = "tiny_accelerator.yaml"' in build
    assert 'accelerator = ":tiny_accelerator"' in build and 'module = "tiny_model"' in build
    assert files["tiny_model.py"] == MODEL.encode() and files["tiny_accelerator.yaml"] == accel.read_text()
    assert "--incompatible_enable_cc_toolchain_resolution" in files[".bazelrc"]
    assert "remote_cache" not in files[".bazelrc"]
    # without --accelerator: the registered riscv target, no accelerator declared
    plain = cm.workspace_files(ROOT, "tiny", model, "torch", None, "tuned")["BUILD.bazel"]
    assert "accelerator(" not in plain.split("load(")[-1] and '"riscv": "tuned"' in plain


def _calls(starlark: str) -> dict[str, dict[str, object]]:
    """{function: {keyword: value}} of a generated file's top-level calls (Starlark's syntax of
    these files is Python's)."""
    calls = {}
    for stmt in ast.parse(starlark).body:
        call = stmt.value
        calls[call.func.id] = {k.arg: ast.literal_eval(k.value) for k in call.keywords
                               if not isinstance(k.value, ast.List) or k.arg == "srcs"}
    return calls


def test_user_strings_enter_the_generated_files_quoted(tmp_path, monkeypatch):
    # A path with a quote and a backslash stays one string (issue 80: spliced unquoted, it broke
    # the file or set other attributes), and the disk cache path stays one .bazelrc word.
    project = fake_project(tmp_path / 'we"ird\\ checkout')
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "my 'cache' #1"))
    model = tmp_path / "net.py"
    model.write_text(MODEL)
    files = cm.workspace_files(project, "tiny", model, "torch", None, "ukernels")
    ws = _calls(files["WORKSPACE"])
    assert ws["local_repository"] == {"name": "riscv_ml_toolchain", "path": str(project)}
    assert ws["riscv_ml_toolchain_dependencies"] == {"path": str(project)}
    pipeline = _calls(files["BUILD.bazel"])["model_pipeline"]
    assert set(pipeline) == {"name", "framework", "model", "model_name", "module", "strategies"}
    assert pipeline["strategies"] == {"riscv": "ukernels"}
    rc = files[".bazelrc"].splitlines()[-1]
    assert shlex.split(rc) == ["build", f"--disk_cache={tmp_path}/my 'cache' #1/riscv-ml-toolchain/bazel-disk-cache"]


@pytest.mark.parametrize("strategy", ['auto"}, tags = ["manual"], x = {"a": "b', "fastest", "tuned\n"])
def test_a_strategy_is_one_the_pipeline_knows(tmp_path, strategy):
    # A crafted --strategy set other attributes of model_pipeline (issue 80).
    model = tmp_path / "net.py"
    model.write_text(MODEL)
    with pytest.raises(cm.CompileModelError, match="--strategy .*not a strategy"):
        cm.workspace_files(ROOT, "tiny", model, "torch", None, strategy)


@pytest.mark.parametrize("case, message", [
    ("missing", "model file not found"),
    ("model_dir", "is a directory, not a model file"),
    ("not_python", "not a Python file"),
    ("no_factory", "defines no make_model()"),
    ("bad_accel", "accelerator description not found"),
    ("accel_dir", "is a directory, not an accelerator description"),
    ("bad_yaml", "riscv_rvv512"),
    ("bad_name", "--name 'Bad-Name': lower-case letters"),
    ("bad_stem", "Bad-Net.py: its name 'bad-net' is not a pipeline name"),
    ("bad_strategy", "--strategy 'auto\"}, tags = [\"x\"], y = {\"a\": \"b': not a strategy"),
    ("full_out", "exists and is not an empty directory"),
    ("file_out", "exists and is not a directory"),
    ("out_under_file", "is not a directory"),
    ("read_only_out", "cannot write in"),
    ("model_loop", "loop.py: cannot resolve it: Symlink loop"),  # "RuntimeError: Symlink loop" (issue 80)
])
def test_bad_input_is_one_line_and_writes_nothing(tmp_path, monkeypatch, capsys, bazel, case, message):
    model = tmp_path / "net.py"
    model.write_text(MODEL)
    args = [str(model), "--out", str(tmp_path / "out")]
    if case == "missing":
        args[0] = str(tmp_path / "absent.py")
    elif case == "model_dir":  # reported "not found" (issue 80)
        (tmp_path / "dir.py").mkdir()
        args[0] = str(tmp_path / "dir.py")
    elif case == "not_python":
        (tmp_path / "net.txt").write_text(MODEL)
        args[0] = str(tmp_path / "net.txt")
    elif case == "model_loop":
        (tmp_path / "loop.py").symlink_to("loop.py")
        args[0] = str(tmp_path / "loop.py")
    elif case == "no_factory":
        model.write_text("x = 1\n")
    elif case == "bad_accel":
        args += ["--accelerator", str(tmp_path / "absent.yaml")]
    elif case == "accel_dir":
        (tmp_path / "accel.yaml").mkdir()
        args += ["--accelerator", str(tmp_path / "accel.yaml")]
    elif case == "bad_yaml":
        bad = tmp_path / "riscv_rvv512.yaml"
        bad.write_text((ROOT / "analysis" / "hardware" / "riscv_rvv512.yaml").read_text()
                       .replace("vector_bits: 512", "vector_bits: 500"))
        args += ["--accelerator", str(bad)]
    elif case == "bad_name":
        args += ["--name", "Bad-Name"]
    elif case == "bad_stem":  # --name was blamed though never given (issue 80)
        (tmp_path / "Bad-Net.py").write_text(MODEL)
        args[0] = str(tmp_path / "Bad-Net.py")
    elif case == "bad_strategy":  # written into BUILD.bazel and built (issue 80)
        args += ["--strategy", 'auto"}, tags = ["x"], y = {"a": "b']
    elif case == "full_out":
        (tmp_path / "out").mkdir()
        (tmp_path / "out" / "keep").write_text("mine")
    elif case == "file_out":
        (tmp_path / "out").write_text("mine")
    elif case == "out_under_file":  # found only after the whole build (issue 80)
        (tmp_path / "file").write_text("mine")
        args[2] = str(tmp_path / "file" / "out")
    elif case == "read_only_out":  # found only after the whole build (issue 80)
        (tmp_path / "ro").mkdir()
        (tmp_path / "ro").chmod(0o555)
        args[2] = str(tmp_path / "ro" / "out")
        if os.geteuid() == 0:  # root writes there anyway: refuse as a read-only file system would
            real = tempfile.mkdtemp

            def mkdtemp(*a, dir=None, **kw):
                if dir is not None and Path(dir) == tmp_path / "ro":
                    raise PermissionError(13, "Permission denied")
                return real(*a, dir=dir, **kw)
            monkeypatch.setattr(cm.tempfile, "mkdtemp", mkdtemp)
    monkeypatch.setenv("BUILD_WORKSPACE_DIRECTORY", str(ROOT))
    before = tree(tmp_path)
    assert cm.main(args) == 1
    err = one_line(capsys)
    assert message in err, err
    if case == "bad_stem":  # the file named the pipeline, so the file is the culprit
        assert err.startswith(f"compile: {tmp_path / 'Bad-Net.py'}: ") and "give --name" in err, err
    assert not (tmp_path / "cache").exists() and not bazel.calls
    assert tree(tmp_path) == before


@pytest.mark.parametrize("case, why", [
    ("user_workspace", f"not a workspace //tools:compile wrote (no {MARKER})"),
    ("other_marker", f"not a workspace //tools:compile wrote (its {MARKER} is not one"),
    ("a_file", "exists and is not a directory"),
    ("project", "is the project checkout"),
    ("project_parent", "contains the project checkout"),
    ("in_project", "is inside the project checkout"),
])
def test_a_workspace_it_did_not_write_is_refused_untouched(tmp_path, monkeypatch, capsys, bazel, case, why):
    # issue 80: --workspace rewrote a user's own workspace (WORKSPACE, BUILD.bazel, .bazelrc,
    # tools/bazel a symlink) and the project checkout itself, and exited 0.
    project = fake_project(tmp_path / "outer" / "project")
    monkeypatch.setenv("BUILD_WORKSPACE_DIRECTORY", str(project))
    model = tmp_path / "net.py"
    model.write_text(MODEL)
    ws = tmp_path / "ws"
    if case in ("user_workspace", "other_marker"):
        (ws / "tools").mkdir(parents=True)
        for f in ("WORKSPACE", "BUILD.bazel", ".bazelrc", "tools/bazel"):
            (ws / f).write_text(f"# my own {f}\n")
        if case == "other_marker":
            (ws / MARKER).write_text(json.dumps({"written_by": "someone else"}))
    elif case == "a_file":
        ws.write_text("mine")
    else:
        ws = {"project": project, "project_parent": tmp_path / "outer", "in_project": project / "ws"}[case]
    before = tree(tmp_path)
    assert cm.main([str(model), "--workspace", str(ws), "--out", str(tmp_path / "out")]) == 1
    err = one_line(capsys)
    assert err.startswith(f"compile: --workspace {ws}: {why}"), err
    assert tree(tmp_path) == before and not bazel.calls


@pytest.mark.parametrize("case, why", [
    ("out_is_workspace", "is the workspace directory"),
    ("out_in_workspace", "is inside the workspace"),
    ("workspace_in_out", "contains the workspace"),
])
def test_an_out_the_workspace_overlaps_is_refused_before_the_build(tmp_path, monkeypatch, capsys, bazel, case, why):
    # issue 80: found only once the build had run (or the outputs landed in the workspace).
    monkeypatch.setenv("BUILD_WORKSPACE_DIRECTORY", str(fake_project(tmp_path / "project")))
    model = tmp_path / "net.py"
    model.write_text(MODEL)
    ws, out = {"out_is_workspace": (tmp_path / "d", tmp_path / "d"),
               "out_in_workspace": (tmp_path / "d", tmp_path / "d" / "out"),
               "workspace_in_out": (tmp_path / "d" / "ws", tmp_path / "d")}[case]
    before = tree(tmp_path)
    assert cm.main([str(model), "--workspace", str(ws), "--out", str(out)]) == 1
    err = one_line(capsys)
    assert err.startswith(f"compile: --out {out}: {why}"), err
    assert tree(tmp_path) == before and not bazel.calls


def test_a_run_ships_its_build_marks_the_workspace_and_shuts_bazel_down(tmp_path, monkeypatch, capsys):
    project = fake_project(tmp_path / "project")
    monkeypatch.setenv("BUILD_WORKSPACE_DIRECTORY", str(project))
    bazel = FakeBazel(ships=True)
    monkeypatch.setattr(cm.subprocess, "run", bazel)
    model = tmp_path / "net.py"
    model.write_text(MODEL)
    ws = tmp_path / "ws"
    assert cm.main([str(model), "--workspace", str(ws), "--strategy", "tuned", "--out", str(tmp_path / "a")]) == 0
    # the server of the workspace is not left running (one per generated workspace)
    assert bazel.calls == [("build", ws), ("shutdown", ws)]
    assert sorted(os.listdir(tmp_path / "a")) == sorted(cm.shipped_files("net"))
    assert (tmp_path / "a" / "net_riscv.vmfb").read_text() == "tuned"
    assert json.loads((ws / MARKER).read_text())["model"] == str(model)
    # a workspace it wrote is its own: used again (so a rebuild is incremental); an empty --out is filled
    (tmp_path / "b").mkdir()
    assert cm.main([str(model), "--workspace", str(ws), "--strategy", "ukernels", "--out", str(tmp_path / "b")]) == 0
    assert (tmp_path / "b" / "net_riscv.vmfb").read_text() == "ukernels"
    assert bazel.commands() == ["build", "shutdown"] * 2
    # a failed build shuts the server down too, and copies nothing
    monkeypatch.setattr(cm.subprocess, "run", failing := FakeBazel())
    assert cm.main([str(model), "--workspace", str(ws), "--out", str(tmp_path / "c")]) == 1
    assert failing.commands() == ["build", "shutdown"] and not (tmp_path / "c").exists()
    assert "bazel build in" in capsys.readouterr().err.strip().splitlines()[-1]


@pytest.mark.parametrize("explicit", [True, False], ids=["one_workspace", "default_workspaces"])
def test_two_compiles_at_once_each_ship_their_own_build(tmp_path, monkeypatch, capsys, explicit):
    # issue 80: ukernels and directconv runs of one model started 0.05-0.3 s apart shared one
    # workspace, and the ukernels run shipped the directconv build. In one --workspace the second
    # waits for the first (the lock); by default each (model, strategy, accelerator) has its own.
    project = fake_project(tmp_path / "project")
    monkeypatch.setenv("BUILD_WORKSPACE_DIRECTORY", str(project))
    bazel = FakeBazel(ships=True, delay=0.5)
    monkeypatch.setattr(cm.subprocess, "run", bazel)
    model = tmp_path / "net.py"
    model.write_text(MODEL)
    codes: dict[str, int] = {}

    def run(strategy: str) -> None:
        args = [str(model), "--strategy", strategy, "--out", str(tmp_path / strategy)]
        codes[strategy] = cm.main(args + (["--workspace", str(tmp_path / "ws")] if explicit else []))

    threads = [threading.Thread(target=run, args=(s,)) for s in ("ukernels", "directconv")]
    for t in threads:
        t.start()
        time.sleep(0.15)
    for t in threads:
        t.join(30)
    assert codes == {"ukernels": 0, "directconv": 0}
    for strategy in codes:
        assert (tmp_path / strategy / "net_riscv.vmfb").read_text() == strategy
    workspaces = {root for _, root in bazel.calls}
    assert len(workspaces) == (1 if explicit else 2)
    if explicit:  # one after the other: the second built once the first had shut its server down
        assert bazel.commands() == ["build", "shutdown", "build", "shutdown"]
        assert "waiting for another compile in" in capsys.readouterr().err


def test_a_run_waits_for_the_workspace_lock(tmp_path, monkeypatch, capsys, bazel):
    import fcntl
    monkeypatch.setenv("BUILD_WORKSPACE_DIRECTORY", str(fake_project(tmp_path / "project")))
    model = tmp_path / "net.py"
    model.write_text(MODEL)
    ws = tmp_path / "ws"
    ws.mkdir()
    with open(ws / f"{MARKER}.lock", "w") as held:  # another run's lock
        fcntl.flock(held, fcntl.LOCK_EX)
        t = threading.Thread(target=cm.main, args=([str(model), "--workspace", str(ws), "--out", str(tmp_path / "o")],))
        t.start()
        time.sleep(0.5)
        assert t.is_alive() and not bazel.calls and not (ws / "BUILD.bazel").exists()
    t.join(30)
    assert bazel.commands() == ["build", "shutdown"]


def test_a_latin1_model_python_imports_is_copied_byte_for_byte(tmp_path, monkeypatch):
    # issue 80: a model file that is not UTF-8 (Python imports it: a coding line, or bytes in a
    # comment) was refused with a raw UnicodeDecodeError blamed on nothing in particular
    monkeypatch.setenv("BUILD_WORKSPACE_DIRECTORY", str(fake_project(tmp_path / "project")))
    monkeypatch.setattr(cm.subprocess, "run", bazel := FakeBazel(ships=True))
    source = b"# -*- coding: latin-1 -*-\n# caf\xe9\n" + MODEL.encode()
    model = tmp_path / "net.py"
    model.write_bytes(source)
    assert cm.main([str(model), "--workspace", str(tmp_path / "ws"), "--out", str(tmp_path / "out")]) == 0
    assert (tmp_path / "ws" / "net_model.py").read_bytes() == source and bazel.commands() == ["build", "shutdown"]


@pytest.mark.parametrize("existing", [True, False], ids=["empty_out", "new_out"])
def test_out_keeps_its_inode_and_mode_and_nothing_is_staged_beside_it(tmp_path, monkeypatch, capsys, existing):
    # issue 80: --out was replaced by a new 0700 directory (inode and mode lost), staged in its
    # parent, where a SIGKILL left the staging directory
    monkeypatch.setenv("BUILD_WORKSPACE_DIRECTORY", str(fake_project(tmp_path / "project")))
    monkeypatch.setattr(cm.subprocess, "run", FakeBazel(ships=True))
    model = tmp_path / "net.py"
    model.write_text(MODEL)
    parent = tmp_path / "mine"
    parent.mkdir()
    out = parent / "out"
    if existing:
        out.mkdir()
        out.chmod(0o750)
        inode = out.stat().st_ino
    beside: list[list[str]] = []
    real_copy = cm.shutil.copyfile

    def copy(src, dst):  # what a SIGKILL now would leave: nothing in the user's folder but --out
        beside.append(sorted(os.listdir(parent)))
        return real_copy(src, dst)
    monkeypatch.setattr(cm.shutil, "copyfile", copy)
    assert cm.main([str(model), "--workspace", str(tmp_path / "ws"), "--out", str(out)]) == 0
    assert beside and all(listing == ["out"] for listing in beside), beside
    assert sorted(os.listdir(out)) == sorted(cm.shipped_files("net"))
    if existing:
        assert out.stat().st_ino == inode and (out.stat().st_mode & 0o777) == 0o750
    else:
        mask = os.umask(0)
        os.umask(mask)
        assert (out.stat().st_mode & 0o777) == 0o777 & ~mask


def test_a_killed_runs_staging_is_reused_and_a_full_disk_is_one_line(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("BUILD_WORKSPACE_DIRECTORY", str(fake_project(tmp_path / "project")))
    monkeypatch.setattr(cm.subprocess, "run", FakeBazel(ships=True))
    model = tmp_path / "net.py"
    model.write_text(MODEL)
    out = tmp_path / "out"
    (out / cm.STAGING).mkdir(parents=True)  # what a run killed while copying leaves
    (out / cm.STAGING / "net_riscv.vmfb").write_text("half")
    assert cm.main([str(model), "--workspace", str(tmp_path / "ws"), "--out", str(out)]) == 0
    assert sorted(os.listdir(out)) == sorted(cm.shipped_files("net"))
    capsys.readouterr()

    def full(src, dst):
        Path(dst).write_text("part")
        raise OSError(28, "No space left on device", str(src))  # as copyfile names it: the source
    monkeypatch.setattr(cm.shutil, "copyfile", full)
    again = tmp_path / "again"
    assert cm.main([str(model), "--workspace", str(tmp_path / "ws"), "--out", str(again)]) == 1
    err = capsys.readouterr().err.strip().splitlines()  # the "building" line, then the one error line
    assert err[-1] == f"compile: --out {again}: cannot write it: No space left on device: nothing copied", err
    assert not again.exists()  # created by the run, removed with what it held


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v", "-p", "no:cacheprovider"]))
