"""One command from a model file to a shipped module, for people who do not write Bazel:

    tools/bazel run //tools:compile -- path/to/model.py --accelerator path/to/accel.yaml --out DIR

`model.py` defines `make_model()` returning `(model, example_inputs)` (README, "Add a model"); it
may live anywhere and import only installed packages. The command writes a Bazel workspace of
its own that loads this project as a repository (as examples/out_of_tree does), with the model's
`model_pipeline` stanza and, given `--accelerator`, an `accelerator(...)` for the description,
builds it there with the project's rules (import, analysis, the measured choice, every
strategy, packaging, the perf report), and copies what ships into DIR:

    DIR/<name>_riscv.vmfb, <name>_riscv.manifest.json    the module and its manifest
    DIR/<name>_riscv_shipped_perf.perf.md, .perf.json    one call of what ships on the accelerator's core model
    DIR/<name>_host.vmfb, <name>_host.manifest.json       the host build it is checked against

The workspace is kept (under $XDG_CACHE_HOME or ~/.cache, riscv-ml-toolchain/compile/<name>-*,
one per model file, strategy and accelerator, or `--workspace DIR`), so running again after an
edit rebuilds only what changed, and every generated workspace shares one Bazel disk cache; its
Bazel server is shut down when the command ends. A workspace directory is written only if it is
new, empty or one this command wrote (it carries `.riscv_ml_compile_workspace`); a run holds
the workspace's lock until it ends, so a second run in the same workspace waits for the first.
Inputs, the workspace and DIR are checked before anything is written or built; a stage that
cannot do what was asked fails the command with its own message; nothing is copied then.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import fcntl
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Iterator

from common.errors import OneLineErrors, first_line
from common.files import atomic_write, check_input, same_file
from common.hardware import HardwareError, load_hardware
from common.targets import PIPELINE_STRATEGIES

PROJECT_REPOSITORY = "riscv_ml_toolchain"  # deps.bzl: the name the project must be loaded under
FRAMEWORK_REQUIREMENTS = {"torch": ("numpy", "torch"), "tensorflow": ("numpy", "tensorflow-cpu")}
_NAME = re.compile(r"^[a-z][a-z0-9_]{0,62}$")
# What marks a directory as a workspace this command wrote (only such a directory, or a new or
# empty one, is written to: issue 80, `--workspace` rewrote a user's own workspace and the
# project checkout), and the lock a run holds in it for its whole length.
MARKER = ".riscv_ml_compile_workspace"
LOCK = MARKER + ".lock"
WRITTEN_BY = "//tools:compile (tools/compile_model.py)"
# Where the shipped files are staged: inside --out, so --out keeps its inode and mode and a killed
# run leaves nothing beside it (a 0700 directory replaced it, a staging directory was left in
# its parent: issue 80); a run holds its lock while copying.
STAGING = ".riscv_ml_compile_staging"
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_RC_SPECIAL = re.compile(r"""([\s'"\\#])""")


class CompileModelError(RuntimeError):
    """The command cannot do what was asked; the message names the culprit."""


def _cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "riscv-ml-toolchain"


def disk_cache() -> Path:
    """The Bazel disk cache every generated workspace shares (and examples/out_of_tree in CI):
    their actions run the project's files from external/riscv_ml_toolchain alike, so qemu, the
    runner and the plugin are built once. It grows without bound; delete it to reclaim space."""
    return _cache_root() / "bazel-disk-cache"


def _check_strategy(strategy: str) -> None:
    if strategy not in PIPELINE_STRATEGIES:
        raise CompileModelError(f"--strategy {strategy!r}: not a strategy (one of {', '.join(PIPELINE_STRATEGIES)})")


def _no_control(value: str, what: str) -> str:
    # A newline would end the generated line (a Starlark string, a .bazelrc flag) and start another.
    if _CONTROL.search(value):
        raise CompileModelError(f"{what} {value!r}: contains a control character")
    return value


def _starlark(value: str, what: str) -> str:
    """`value` as a Starlark string literal: user strings (paths, names) enter generated files only
    quoted, so none can close its string and set other attributes (issue 80). JSON's escapes of
    a control-free string (\\" and \\\\) are Starlark's."""
    return json.dumps(_no_control(value, what), ensure_ascii=False)


def _rc_word(value: str, what: str) -> str:
    """`value` as one word of a .bazelrc line: Bazel's rc tokenizer takes a backslash as escaping
    the next character anywhere, so a space, quote or # in a path stays part of it."""
    return _RC_SPECIAL.sub(r"\\\1", _no_control(value, what))


def workspace_files(project: Path, name: str, model: Path, framework: str,
                    accelerator: Path | None, strategy: str) -> dict[str, str | bytes]:
    """The files of the generated workspace, by path relative to it (the model and the
    description are copied in, under names of the generated package's own; the model byte for
    byte: a latin-1 model Python imports was a raw UnicodeDecodeError, issue 80)."""
    if not _NAME.match(name):
        raise CompileModelError(f"--name {name!r}: lower-case letters, digits and _, starting with a letter")
    _check_strategy(strategy)
    module = f"{name}_model"
    q = _starlark
    deps = ",\n".join(f"        requirement({q(r, 'requirement')})" for r in FRAMEWORK_REQUIREMENTS[framework])
    accel_decl, accel_arg = "", ""
    if accelerator is not None:
        accel_decl = (f'accelerator(\n    name = {q(name + "_accelerator", "name")},\n'
                      f'    hardware = {q(name + "_accelerator.yaml", "name")},\n)\n\n')
        accel_arg = f'    accelerator = {q(":" + name + "_accelerator", "name")},\n'
    build = f'''# Generated by `tools/bazel run //tools:compile` (tools/compile_model.py); rewritten on every run.
load("@pypi//:requirements.bzl", "requirement")
load("@rules_python//python:defs.bzl", "py_library")
load("@{PROJECT_REPOSITORY}//models:defs.bzl", "accelerator", "model_pipeline")

{accel_decl}py_library(
    name = {q(module, "name")},
    srcs = [{q(module + ".py", "name")}],
    deps = [
{deps},
    ],
)

model_pipeline(
    name = {q(name, "name")},
{accel_arg}    framework = {q(framework, "--framework")},
    model = {q(":" + module, "name")},
    model_name = {q(name, "name")},
    module = {q(module, "name")},
    strategies = {{"riscv": {q(strategy, "--strategy")}}},
)
'''
    project_path = q(str(project), "project checkout")
    workspace = f'''# Generated by `tools/bazel run //tools:compile` (tools/compile_model.py).
workspace(name = {q(name + "_compile", "name")})

local_repository(
    name = "{PROJECT_REPOSITORY}",
    path = {project_path},
)

load("@{PROJECT_REPOSITORY}//:deps.bzl", "riscv_ml_toolchain_dependencies")

riscv_ml_toolchain_dependencies(path = {project_path})
'''
    rc = [line for line in (project / ".bazelrc").read_text().splitlines()
          if line.startswith(("build ", "test "))]  # the project's flags, not its remote-cache config
    rc.append(f"build --disk_cache={_rc_word(str(disk_cache()), 'disk cache')}")
    files = {
        "WORKSPACE": workspace,
        "BUILD.bazel": build,
        ".bazelrc": "\n".join(rc) + "\n",
        ".bazelversion": (project / ".bazelversion").read_text(),
        f"{module}.py": model.read_bytes(),
    }
    if accelerator is not None:
        files[f"{name}_accelerator.yaml"] = accelerator.read_text()
    return files


def _check_inputs(model: Path, accelerator: Path | None, name: str, name_given: bool, strategy: str) -> None:
    check_input(model, "model file")  # a directory is "a directory", not "not found"
    if model.suffix != ".py":
        raise CompileModelError(f"{model}: not a Python file (a .py defining make_model())")
    if "def make_model" not in model.read_text(errors="replace"):
        raise CompileModelError(f"{model}: defines no make_model() returning (model, example_inputs)")
    if accelerator is not None:
        if accelerator.is_dir():  # check_input would say "not a accelerator description"
            raise CompileModelError(f"{accelerator}: is a directory, not an accelerator description (a YAML file)")
        check_input(accelerator, "accelerator description")
        if accelerator.suffix not in (".yaml", ".yml"):
            raise CompileModelError(f"{accelerator}: not a YAML hardware description")
        try:
            load_hardware(accelerator)
        except HardwareError as err:
            raise CompileModelError(str(err)) from None
    if not _NAME.match(name):
        if name_given:
            raise CompileModelError(f"--name {name!r}: lower-case letters, digits and _, starting with a letter")
        # The name came from the file: blame the file, and say how to give one.
        raise CompileModelError(f"{model}: its name {name!r} is not a pipeline name (lower-case letters, "
                                "digits and _, starting with a letter): rename it or give --name")
    _check_strategy(strategy)


def _check_workspace(root: Path, project: Path, flag: str) -> None:
    """Refuses a directory the generated workspace must not be written to: the project checkout,
    one containing it or inside it (its WORKSPACE, BUILD.bazel and .bazelrc would be rewritten,
    tools/bazel replaced by a symlink to itself), a non-directory, or a non-empty directory
    this command did not write (a user's own workspace was overwritten: issue 80)."""
    if same_file(root, project):
        raise CompileModelError(f"{flag} {root}: is the project checkout: a generated workspace must be outside it")
    if root in project.parents:
        raise CompileModelError(f"{flag} {root}: contains the project checkout {project}: "
                                "a generated workspace must be outside it")
    if project in root.parents:
        raise CompileModelError(f"{flag} {root}: is inside the project checkout {project}: "
                                "a generated workspace must be outside it")
    if not os.path.lexists(root):
        parent = root.parent
        while not os.path.lexists(parent):
            parent = parent.parent
        if not parent.is_dir():
            raise CompileModelError(f"{flag} {root}: {parent} is not a directory")
        return
    if not root.is_dir():
        raise CompileModelError(f"{flag} {root}: exists and is not a directory")
    try:
        entries = {entry.name for entry in root.iterdir()}
    except OSError as err:
        raise CompileModelError(f"{flag} {root}: cannot list it: {err.strerror or err}") from None
    if all(entry.startswith(MARKER) for entry in entries):
        return  # empty, or only the lock and the marker being written by a run that just began
    if not (root / MARKER).is_file():
        why = f"no {MARKER}"
    else:
        try:
            marker = json.loads((root / MARKER).read_text())
        except (OSError, ValueError):
            marker = None
        if isinstance(marker, dict) and marker.get("written_by") == WRITTEN_BY:
            return
        why = f"its {MARKER} is not one //tools:compile wrote"
    raise CompileModelError(f"{flag} {root}: not a workspace //tools:compile wrote ({why}): "
                            "refusing to write there; give a new or empty directory")


def _check_out(out: Path, root: Path) -> None:
    """Refuses an --out the copy at the end could not fill, before the build starts (these were
    found only after the whole build: issue 80)."""
    if same_file(out, root):
        raise CompileModelError(f"--out {out}: is the workspace directory: give another")
    if root in out.parents:
        raise CompileModelError(f"--out {out}: is inside the workspace {root}: give a directory outside it")
    if out in root.parents:
        raise CompileModelError(f"--out {out}: contains the workspace {root}: it would not be empty to fill")
    try:
        if os.path.lexists(out):
            if not out.is_dir():
                raise CompileModelError(f"--out {out}: exists and is not a directory (nothing is overwritten)")
            if any(entry.name != STAGING for entry in out.iterdir()):  # a killed run's staging is its own
                raise CompileModelError(f"--out {out}: exists and is not an empty directory (nothing is overwritten)")
    except OSError as err:
        raise CompileModelError(f"--out {out}: cannot read it: {err.strerror or err}") from None
    # The copy stages beside --out and renames into place (creating missing parents): try a
    # directory where the first missing one would go, and remove it.
    parent = out.parent
    while not os.path.lexists(parent):
        parent = parent.parent
    if not parent.is_dir():
        raise CompileModelError(f"--out {out}: {parent} is not a directory")
    try:
        os.rmdir(tempfile.mkdtemp(prefix=f".{out.name}.", dir=parent))
    except OSError as err:
        raise CompileModelError(f"--out {out}: cannot write in {parent}: {err.strerror or err}") from None


@contextlib.contextmanager
def _workspace_lock(root: Path) -> Iterator[None]:
    """Holds the workspace's lock while the body runs: two runs in one workspace rewrote each
    other's BUILD.bazel mid-build and each shipped the other's module (issue 80). A second run
    waits until the first ends, saying so."""
    fd = os.open(root / LOCK, os.O_RDWR | os.O_CREAT, 0o666)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            print(f"compile: waiting for another compile in {root} to end", file=sys.stderr)
            fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # releases the lock


def _marker(project: Path, model: Path, name: str, framework: str, accelerator: Path | None,
            strategy: str) -> str:
    return json.dumps({"written_by": WRITTEN_BY, "project": str(project), "model": str(model), "name": name,
                       "framework": framework, "accelerator": str(accelerator) if accelerator else None,
                       "strategy": strategy}, indent=1) + "\n"


def _write_workspace(root: Path, project: Path, files: dict[str, str], marker: str) -> None:
    root.mkdir(parents=True, exist_ok=True)
    atomic_write(root / MARKER, marker)  # first: a run stopped midway leaves a directory it may reuse
    for rel, text in files.items():
        path = root / rel
        data = text.encode() if isinstance(text, str) else text
        if not path.is_file() or path.read_bytes() != data:  # unchanged files keep their mtime
            path.write_bytes(data)
    launcher = root / "tools" / "bazel"
    launcher.parent.mkdir(exist_ok=True)
    if launcher.is_symlink() or launcher.exists():
        launcher.unlink()
    launcher.symlink_to(project / "tools" / "bazel")


def _shutdown(root: Path, env: dict[str, str]) -> None:
    """Stops the workspace's Bazel server: each generated workspace has its own, and one left
    idle per model and strategy holds its memory for hours. The next run restarts it (the
    output base and the disk cache stay, so it rebuilds only what changed)."""
    try:
        done = subprocess.run([str(root / "tools" / "bazel"), "shutdown"], cwd=root, env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=300).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        done = False
    if not done:  # a server left running costs memory, not this compile's result
        print(f"compile: note: could not shut down the Bazel server of {root}", file=sys.stderr)


def shipped_files(name: str) -> list[str]:
    """What the command copies out of the workspace's bazel-bin."""
    return [f"{name}_riscv.vmfb", f"{name}_riscv.manifest.json", f"{name}_riscv_shipped_perf.perf.md",
            f"{name}_riscv_shipped_perf.perf.json", f"{name}_host.vmfb", f"{name}_host.manifest.json"]


def _copy_out(root: Path, name: str, out: Path) -> list[str]:
    """Copies what ships into `out` (created, or the empty directory as it is: its inode and
    mode kept), staged in out/STAGING and renamed into place once every file is copied; on a
    failure nothing is left of this run (a directory it created is removed)."""
    files = shipped_files(name)
    created = not os.path.lexists(out)
    try:
        out.mkdir(parents=True, exist_ok=True)
        staging = out / STAGING
        staging.mkdir(exist_ok=True)
        fd = os.open(staging, os.O_RDONLY)
    except OSError as err:
        raise CompileModelError(f"--out {out}: cannot write it: {err.strerror or err}") from None
    moved: list[Path] = []
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise CompileModelError(f"--out {out}: another compile is filling it: nothing copied") from None
        try:
            for stale in staging.iterdir():  # a killed run's partial copies
                stale.unlink()
            if any(entry.name != STAGING for entry in out.iterdir()):
                raise CompileModelError(f"--out {out}: is no longer new or empty (filled during the build): "
                                        "nothing copied")
            try:
                for f in files:
                    shutil.copyfile(root / "bazel-bin" / f, staging / f)
                for f in files:
                    os.rename(staging / f, out / f)
                    moved.append(out / f)
                os.rmdir(staging)
            except OSError as err:  # a full disk was blamed on the model
                # copyfile names its source on a full disk too: a write error is --out's
                if err.errno not in (errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EFBIG) and err.filename \
                        and root in Path(err.filename).parents:
                    raise CompileModelError(f"{err.filename}: cannot read what the build wrote: "
                                            f"{err.strerror or err}: nothing copied") from None
                raise CompileModelError(f"--out {out}: cannot write it: {err.strerror or err}: nothing copied") from None
        except BaseException:
            for path in moved:
                path.unlink(missing_ok=True)
            shutil.rmtree(staging, ignore_errors=True)
            if created:
                with contextlib.suppress(OSError):
                    out.rmdir()
            raise
    finally:
        os.close(fd)
    return files


def _resolved(cwd: Path, path: Path, what: str) -> Path:
    """`cwd / path` resolved; a symlink loop was "RuntimeError: Symlink loop from ..." (issue 80)."""
    try:
        return (cwd / path).resolve()
    except (RuntimeError, OSError) as err:
        raise CompileModelError(f"{what} {path}: cannot resolve it: {first_line(err)}") from None


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="bazel run //tools:compile --", description=__doc__.split("\n")[0])
    p.add_argument("model", type=Path, help="a .py file defining make_model() -> (model, example_inputs)")
    p.add_argument("--accelerator", type=Path, default=None,
                   help="a hardware description YAML (common/hardware.py's schema); default: the "
                        "project's riscv_rvv (VLEN 128, SiFive P670 model)")
    p.add_argument("--out", type=Path, required=True,
                   help="an empty or new directory for what ships, outside the workspace")
    p.add_argument("--name", default=None, help="the pipeline's name (default: the file's stem)")
    p.add_argument("--framework", choices=sorted(FRAMEWORK_REQUIREMENTS), default="torch")
    p.add_argument("--workspace", type=Path, default=None,
                   help="where to write the generated workspace: a new or empty directory, or one this "
                        f"command wrote before (it has {MARKER}); never the project checkout, a directory "
                        "containing it or one inside it (default: ~/.cache/riscv-ml-toolchain/compile/"
                        "<name>-<hash of the model's path, strategy and accelerator>, kept for the next "
                        "run). A run holds the workspace's lock until it ends: a second run in the same "
                        "workspace waits for it")
    p.add_argument("--strategy", default="auto", metavar="STRATEGY",
                   help="what <name>_riscv ships (model_pipeline's strategies): auto (default), "
                        f"{', '.join(s for s in PIPELINE_STRATEGIES if s != 'auto')}")
    a = p.parse_args(argv)
    with OneLineErrors("compile", a.model, (CompileModelError,)) as cli:
        cwd = Path(os.environ.get("BUILD_WORKING_DIRECTORY", "."))
        ws = os.environ.get("BUILD_WORKSPACE_DIRECTORY")
        if not ws:
            raise CompileModelError("BUILD_WORKSPACE_DIRECTORY is not set: run me with `tools/bazel run //tools:compile -- ...`")
        project = Path(ws).resolve()
        model = _resolved(cwd, a.model, "model file")
        accelerator = _resolved(cwd, a.accelerator, "--accelerator") if a.accelerator else None
        out = _resolved(cwd, a.out, "--out")
        name = a.name or model.stem.lower()
        _check_inputs(model, accelerator, name, a.name is not None, a.strategy)
        if a.workspace:
            root, flag = _resolved(cwd, a.workspace, "--workspace"), "--workspace"
        else:
            # One per model, strategy and accelerator: two compiles of one model with different
            # strategies at once do not wait for each other (issue 80: they shared one and
            # shipped each other's build).
            key = hashlib.sha256("\0".join([str(project), str(model), name, a.framework, a.strategy,
                                            str(accelerator or "")]).encode()).hexdigest()[:12]
            root, flag = (_cache_root() / "compile" / f"{name}-{key}").resolve(), "workspace"
        _check_workspace(root, project, flag)
        _check_out(out, root)
        files = workspace_files(project, name, model, a.framework, accelerator, a.strategy)
        marker = _marker(project, model, name, a.framework, accelerator, a.strategy)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("BUILD_", "BAZEL_", "RUNFILES"))}
        try:
            root.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            raise CompileModelError(f"{flag} {root}: cannot create it: {err.strerror or err}") from None
        with _workspace_lock(root):
            _check_workspace(root, project, flag)  # again, now that no other run can write it
            _write_workspace(root, project, files, marker)
            try:
                targets = [f"//:{name}_riscv", f"//:{name}_riscv_shipped_perf", f"//:{name}_host"]
                print(f"compile: building {' '.join(targets)} in {root}", file=sys.stderr)
                built = subprocess.run([str(root / "tools" / "bazel"), "build"] + targets, cwd=root, env=env)
                if built.returncode != 0:
                    raise CompileModelError(f"bazel build in {root} failed (its message is above)")
            finally:
                _shutdown(root, env)
            shipped = _copy_out(root, name, out)
        print(f"compile: {name}: {', '.join(shipped)} in {out}", file=sys.stderr)
    return cli.exit_code


if __name__ == "__main__":
    sys.exit(main())
