"""Probing a stage CLI with bad input (the stages' probe_test.py files).

Each probe runs a CLI as a user would, in a directory of its own (its inputs copied there, its
TMPDIR inside it), and checks the promise every CLI makes (CONTRIBUTING.md): a non-zero exit,
exactly one line on stderr that names the culprit and the reason, and the file system as it was
(nothing written, nothing removed, no temporary left behind, every input byte for byte).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from common.processes import descendants

ROOT = Path(__file__).parent.parent  # the workspace (runfiles under Bazel): what `-m` imports

# One f32 matmul: a module every stage compiles in about a second (one dispatch).
MATMUL_MLIR = """func.func @main(%a: tensor<64x96xf32>, %b: tensor<96x128xf32>) -> tensor<64x128xf32> {
  %zero = arith.constant 0.0 : f32
  %empty = tensor.empty() : tensor<64x128xf32>
  %fill = linalg.fill ins(%zero : f32) outs(%empty : tensor<64x128xf32>) -> tensor<64x128xf32>
  %r = linalg.matmul ins(%a, %b : tensor<64x96xf32>, tensor<96x128xf32>)
                     outs(%fill : tensor<64x128xf32>) -> tensor<64x128xf32>
  return %r : tensor<64x128xf32>
}
"""


def snapshot(root: Path) -> dict[str, tuple]:
    """Every entry under `root`: directories, symlinks (target) and files (sha256, mode)."""
    out: dict[str, tuple] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            path = Path(dirpath) / name
            rel = str(path.relative_to(root))
            if path.is_symlink():
                out[rel] = ("symlink", os.readlink(path))
            elif path.is_dir():
                out[rel] = ("dir",)
            else:
                out[rel] = ("file", hashlib.sha256(path.read_bytes()).hexdigest(), path.stat().st_mode)
    return out


def _changes(before: dict, after: dict) -> list[str]:
    return ([f"created {k}" for k in sorted(set(after) - set(before))]
            + [f"removed {k}" for k in sorted(set(before) - set(after))]
            + [f"changed {k}" for k in sorted(set(before) & set(after)) if before[k] != after[k]])


class Probe:
    """A directory to run CLIs in: `put` copies inputs there, `refused` runs one and checks it."""

    def __init__(self, root: Path):
        self.root = root
        (root / "tmp").mkdir(exist_ok=True)  # TMPDIR: must be empty again after every run

    def put(self, src: Path | str, name: str | None = None) -> Path:
        src = Path(src)
        dst = self.root / (name or src.name)
        dst.parent.mkdir(parents=True, exist_ok=True)
        if src.is_dir():
            shutil.copytree(src, dst)
        else:
            shutil.copy2(src, dst)  # an executable stays one
        return dst

    def write(self, name: str, data: str | bytes) -> Path:
        path = self.root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data.encode() if isinstance(data, str) else data)
        return path

    def env(self) -> dict[str, str]:
        path = [str(ROOT)] + ([os.environ["PYTHONPATH"]] if os.environ.get("PYTHONPATH") else [])
        # Python's own bytecode cache of a model module in the directory is not the CLI's doing.
        return dict(os.environ, PYTHONPATH=os.pathsep.join(path), TMPDIR=str(self.root / "tmp"),
                    PYTHONHASHSEED="0", TF_CPP_MIN_LOG_LEVEL="2", PYTHONDONTWRITEBYTECODE="1")

    def _argv(self, module: str, args) -> list[str]:
        return [sys.executable, "-m", module, *map(str, args)]

    def run(self, module: str, *args, timeout: float = 600) -> subprocess.CompletedProcess:
        return subprocess.run(self._argv(module, args), cwd=self.root, env=self.env(), capture_output=True,
                              text=True, timeout=timeout)

    def interrupt(self, module: str, *args, when, signum: int = signal.SIGTERM,
                  timeout: float = 300) -> tuple[subprocess.CompletedProcess, list[int]]:
        """Runs the CLI and sends it `signum` once `when(pid, children)` is true (polled; the
        children are its live descendants' pids); returns the result and the descendants seen.
        `self.seconds_to_exit`: from the signal to the CLI's end."""
        proc = subprocess.Popen(self._argv(module, args), cwd=self.root, env=self.env(),
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        seen: set[int] = set()
        deadline = time.monotonic() + timeout
        try:
            while proc.poll() is None and time.monotonic() < deadline:
                kids = descendants(proc.pid)
                seen.update(kids)
                if when(proc.pid, kids):
                    proc.send_signal(signum)
                    break
                time.sleep(0.02)
            signalled = time.monotonic()
            out, err = proc.communicate(timeout=120)
            self.seconds_to_exit = time.monotonic() - signalled
        finally:
            if proc.poll() is None:
                proc.kill()
        return subprocess.CompletedProcess(proc.args, proc.returncode, out, err), sorted(seen)

    def refused(self, module: str, *args, prog: str, culprit: object, reason: str | tuple[str, ...],
                timeout: float = 600) -> str:
        """Runs the CLI on bad input; asserts the promise and returns its one line."""
        before = snapshot(self.root)
        p = self.run(module, *args, timeout=timeout)
        return self.check_refused(p, before, prog, culprit, reason)

    def check_refused(self, p: subprocess.CompletedProcess, before: dict, prog: str, culprit: object,
                      reason: str | tuple[str, ...]) -> str:
        lines = [line for line in p.stderr.splitlines() if line.strip()]
        assert p.returncode != 0, f"exit 0: {p.stdout}{p.stderr}"
        assert len(lines) == 1, f"{len(lines)} lines on stderr:\n{p.stderr}"
        line = lines[0]
        assert line.startswith(f"{prog}: "), line
        assert str(culprit) in line, f"culprit {culprit} not named: {line}"
        for words in (reason,) if isinstance(reason, str) else reason:
            assert words in line, f"reason '{words}' not in: {line}"
        changes = _changes(before, snapshot(self.root))
        assert not changes, f"file system changed: {changes}"
        return line


def alive(pids: list[int]) -> list[int]:
    """Those of `pids` still running (not zombies)."""
    out = []
    for pid in pids:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z":
            out.append(pid)
    return out


def cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""
