#!/usr/bin/env python3
"""Build-level checks that need Bazel itself, run once by .ci/run after the test suite.

One flow, two scratch clones, each with its own empty output base (the locked
Python environment is shared per lock content, tools/python/python_env.bzl, so
the clones' repositories link to the one this workspace already created):

1. Copies the workspace (the files git knows about, committed or not, nothing
   built) to two paths, A and B. Creates both clones' repositories (the Python
   environments) in parallel while this workspace builds the target in its own
   output base. Builds //tools/cache_server in A and starts a BuildGrid server
   on a free loopback port, its data in the scratch directory.
2. A builds the target with `--config=remote_cache` (cold: every action runs
   and is uploaded).
   - `pipeline:server`: the server came up.
   - `pipeline:cold_build`: MlirImport, ZigZagAnalysis, MeasuredChoice,
     IreeCompile and CodeStrategyChoice (which packages a model_pipeline's
     `<name>_riscv` by default) all ran in A.
   - `pipeline:reproducible` (evaluated last, so this workspace's build,
     which may have to wait for its Bazel server, has all the time): every
     file the pipeline spawns wrote in A (MLIR bytecode, analysis JSON,
     configs, report, vmfbs, manifest; not IREE's LLVM IR dumps, see
     NOT_BYTE_REPRODUCIBLE) is sha256-identical to the same file of
     this workspace's own build, hashed right after that build: same bytes
     across clean output bases and paths. The sources are hashed when copied
     and again right after this workspace's build; if they changed in between
     (someone editing), the check fails and says so, because the two builds
     then did not see the same inputs.
3. B (another path, another length, empty output base) builds the target with
   the remote cache.
   - `pipeline:remote_cache_hits`: every spawn in B, the pipeline's five
     among them, is a remote cache hit (B's execution log and Bazel's own
     `N remote cache hit` summary).
   - `pipeline:identical_outputs`: B's outputs are byte-identical to A's.
   - `pipeline:no_absolute_paths`: no command line or environment of A's
     spawns (what goes into action keys) and no file any spawn wrote in
     either clone names either clone, either output base, this workspace,
     the home, user or a temp directory; PATH is the strict one.
4. Incremental, in B: appends a comment line to the hardware description
   (its content, hence analysis.json's `hardware_sha256`, changes) and rebuilds
   with `--execution_log_json_file`, WITHOUT the remote cache, so a spawn in
   the log can only mean "ran here" (no remote hit can stand in for a re-run,
   and nothing edited is uploaded).
   - `pipeline:sweep_incremental`: after building //models:mlp_sweep and editing
     one variant's line in models/BUILD.bazel, only that variant's description,
     target, analysis, compile and RISC-V measurement and the sweep report ran.
   - `pipeline:incremental`: ZigZagAnalysis, MeasuredChoice and IreeCompile spawns ran
     locally, and no MlirImport spawn is in the log at all (not even a cache
     hit: the import must not be needed).

Cleanup, always (also on failure and SIGINT/SIGTERM/SIGHUP): stops the
server and removes its data synchronously, `bazel shutdown` in both clones,
then deletes the scratch directory (two output bases, ~7 GB): synchronously
by default (measured: ~21 s with `rm -rf`, ~7% of a ~300 s run, not worth an
orphan process that outlives the CI job), or with `--background-cleanup` in a
detached `setsid rm -rf` (for disks where that takes minutes).

Prints one `pipeline:<check> PASSED|FAILED: detail` line per check (a check
not reached because an earlier step failed is FAILED with that reason) and
the per-step times on stderr; exit 1 on any failure. Standard library only:
it runs before and outside the locked environments.

    python3 tools/ci/pipeline_checks.py [--target //models:resnet_riscv] [--background-cleanup] [--keep]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import pwd
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

WORKSPACE = Path(__file__).resolve().parents[2]
PIPELINE_MNEMONICS = ("MlirImport", "ZigZagAnalysis", "MeasuredChoice", "IreeCompile", "CodeStrategyChoice")
IMPORT_MNEMONIC = "MlirImport"
RERUN_MNEMONICS = ("ZigZagAnalysis", "MeasuredChoice", "IreeCompile")
# IREE's LLVM IR dump of a build (`.code/*.optimized.ll`, read only by the code model) is not
# byte-reproducible: the alias-scope metadata numbering of a microkernel build varies between
# runs (seen 2026-11-27 in mlp_batch32's ukernels build; its assembly and vmfb identical). The
# reproducible check leaves it out; what the code model made of it, every candidate's figure,
# is in the manifest, which is compared.
NOT_BYTE_REPRODUCIBLE = re.compile(r"\.code/[^/]+\.optimized\.ll$")
CHECKS = ("server", "cold_build", "reproducible", "remote_cache_hits", "identical_outputs",
          "no_absolute_paths", "incremental", "sweep_incremental")
# hardware_sweep: editing one variant's line reruns that variant's chain and the report only.
SWEEP_TARGET = "//models:mlp_sweep"
SWEEP_EDIT = ('"vlen256": ["compute.vector_bits=256"],',
              '"vlen256": ["compute.vector_bits=256", "l1.size_bytes=16384"],')
SWEEP_CHAIN = ("HardwareVariant", "AcceleratorTarget", "ZigZagAnalysis", "IreeCompile", "RiscvPerf",
               "HardwareSweep")
STRICT_PATH = "/bin:/usr/bin:/usr/local/bin"  # --incompatible_strict_action_env


class Interrupted(Exception):
    pass


def _on_signal(signum, _frame):
    raise Interrupted(f"interrupted by signal {signum}")


def log(msg: str) -> None:
    print(f"pipeline: {msg}", file=sys.stderr, flush=True)


def bazel_cmd(workspace: Path, output_base: Path | None, *args: str) -> list[str]:
    startup = [f"--output_base={output_base}"] if output_base else []
    return [str(workspace / "tools" / "bazel"), *startup, *args]


def bazel(workspace: Path, output_base: Path | None, *args: str, timeout: float = 1800) -> subprocess.CompletedProcess:
    return subprocess.run(bazel_cmd(workspace, output_base, *args), cwd=workspace, text=True,
                          capture_output=True, timeout=timeout)


def checked(proc: subprocess.CompletedProcess, what: str) -> subprocess.CompletedProcess:
    if proc.returncode != 0:
        raise RuntimeError(f"{what} failed (exit {proc.returncode}):\n{proc.stderr[-3000:]}")
    return proc


def source_files() -> list[str]:
    """The files git knows about (committed or not), workspace-relative."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=WORKSPACE, capture_output=True, check=True,
    ).stdout.split(b"\0")
    return [rel.decode() for rel in listed if rel and (WORKSPACE / rel.decode()).is_file()]


def source_digests(root: Path, files: list[str]) -> dict[str, str]:
    return {rel: sha256(root / rel) for rel in files if (root / rel).is_file()}


def copy_workspace(dest: Path, files: list[str]) -> None:
    for rel in files:
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(WORKSPACE / rel, target)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def port_open(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


def spawns(exec_log: Path) -> list[dict]:
    """The spawns of Bazel's JSON execution log (a stream of JSON objects)."""
    decoder, text, pos, found = json.JSONDecoder(), exec_log.read_text(), 0, []
    while pos < len(text):
        while pos < len(text) and text[pos].isspace():
            pos += 1
        if pos >= len(text):
            break
        spawn, pos = decoder.raw_decode(text, pos)
        found.append(spawn)
    return found


def process_summary(stderr: str) -> str:
    """Bazel's `INFO: N processes: ...` line (e.g. `12 remote cache hit, 3 internal`)."""
    lines = [l for l in stderr.splitlines() if re.search(r"\d+ process(es)?\b", l)]
    return lines[-1].split("INFO: ", 1)[-1].strip() if lines else "(no process summary)"


def remote_hits(summary: str) -> int:
    m = re.search(r"(\d+) remote cache hit", summary)
    return int(m.group(1)) if m else 0


def output_files(workspace: Path, output_base: Path | None, flags: list[str], target: str) -> dict[str, Path]:
    """Default outputs of `target` by execroot-relative path (after a build)."""
    # Bazel 4.2.3's cquery has no --output=files; a Starlark expression does the same.
    q = checked(bazel(workspace, output_base, "cquery", *flags, "--output=starlark",
                      "--starlark:expr=\"\\n\".join([f.path for f in target.files.to_list()])",
                      target), f"cquery {target} in {workspace}")
    return {line: workspace / line for line in q.stdout.split() if line}


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def package_outputs(target: str) -> dict[str, str]:
    """sha256 of the files in this workspace's bin directory of `target`'s package, by execroot
    path, including those inside directory outputs (`iree_compile(code = True)`'s `.code/`);
    tests' runfiles trees (links to other outputs) are left out."""
    package = target.lstrip("/").split(":", 1)[0]
    bin_dir = (WORKSPACE / "bazel-bin").resolve()
    prefix = "bazel-out/" + str(bin_dir).split("/bazel-out/", 1)[1]
    folder = bin_dir / package
    if not folder.is_dir():
        return {}
    out = {}
    for root, dirs, files in os.walk(folder):  # does not follow links to directories
        dirs[:] = [d for d in dirs if not d.endswith(".runfiles")]
        for name in files:
            path = Path(root) / name
            if path.is_file() and not path.is_symlink():
                out[f"{prefix}/{package}/{path.relative_to(folder)}"] = sha256(path)
    return out


class Clone:
    def __init__(self, scratch: Path, rel: str, name: str):
        self.name = name
        self.workspace = scratch / rel
        self.output_base = scratch / f"output_base_{name}"
        self.started = False

    def build(self, flags: list[str], *targets: str) -> tuple[float, subprocess.CompletedProcess]:
        self.started = True
        t0 = time.monotonic()
        # No disk cache, whatever the user's ~/.bazelrc says: one would serve the "cold" build and
        # stand in for the incremental re-runs (seen: cold_build ran nothing, 2.2 s).
        proc = bazel(self.workspace, self.output_base, "build", "--disk_cache=", *flags, *targets)
        return time.monotonic() - t0, proc


# Constants a tool's binary carries whatever machine built it, which contain a needle but name no
# place of this build: QEMU's `-perfmap` writes /tmp/perf-<pid>.map (linux-user/main.c).
KNOWN_CONSTANTS = (b"/tmp/perf-%d.map", b"Generate a /tmp/perf-${pid}.map file for perf")


def location_needles(scratch: Path, *clones: Clone) -> set[str]:
    """Strings that would tie an artifact or action key to a place or a person."""
    home = Path(os.path.expanduser("~"))
    user = pwd.getpwuid(os.getuid()).pw_name
    needles = {str(scratch), str(WORKSPACE), str(home) + "/", "/tmp/", "_bazel_", f"/{user}/",
               tempfile.gettempdir() + "/"}
    for c in clones:
        needles |= {str(c.workspace), str(c.output_base)}
    return needles


_TOKEN_START = re.compile(r"""[\s"'\0,;=:()\[\]]""")
_RELATIVE_PREFIX = re.compile(r"^(-[A-Za-z]+)?[^/-][^\s]*/")


def found_locations(needles: set[str], text: str) -> list[str]:
    """The needles in `text`. A path needle ("/tmp/", "/<user>/") inside a relative path, as a later
    component of it, is not a location: @riscv64_gcc's tree has a directory named root/
    (external/riscv64_gcc/root/usr/...), which is not the root user's home."""
    found = []
    for n in sorted(needles):
        for m in re.finditer(re.escape(n), text):
            token_start = max((t.end() for t in _TOKEN_START.finditer(text, 0, m.start())), default=0)
            if n.startswith("/") and _RELATIVE_PREFIX.match(text[token_start:m.start()] + "/"):
                continue
            found.append(n)
            break
    return found


def pipeline_outputs(exec_log: Path, mnemonics) -> set[str]:
    """Execroot-relative paths of every file the pipeline's spawns wrote."""
    return {o["path"] for s in spawns(exec_log) if s.get("mnemonic") in mnemonics
            for o in s.get("actualOutputs", [])}


def run(args, state: dict, results: dict[str, tuple[bool, str]], times: dict[str, float]) -> None:
    scratch: Path = state["scratch"]
    a = Clone(scratch, "a/workspace", "a")
    b = Clone(scratch, "b/somewhere/else/checkout", "b")  # another path, another length
    state["clones"] = (a, b)

    t0 = time.monotonic()
    files = source_files()
    copied = source_digests(WORKSPACE, files)
    for clone in (a, b):
        copy_workspace(clone.workspace, files)
    times["copy"] = time.monotonic() - t0

    # In parallel: both clones create their repositories (the Python
    # environments; A also BuildGrid's), and this workspace builds the target
    # in its own output base for the reproducibility check.
    log("creating both clones' Python environments; building the target here (a few minutes)")
    t0 = time.monotonic()
    a.started = b.started = True
    commands = {
        "fetch_A": (a.workspace, bazel_cmd(a.workspace, a.output_base, "build", "--nobuild", args.target,
                                           "//tools/cache_server")),
        "fetch_B": (b.workspace, bazel_cmd(b.workspace, b.output_base, "build", "--nobuild", args.target)),
        "build_here": (WORKSPACE, bazel_cmd(WORKSPACE, None, "build", args.target)),
    }
    jobs = {}
    for what, (cwd, cmd) in commands.items():
        with open(scratch / f"{what}.log", "w") as out:
            jobs[what] = subprocess.Popen(cmd, cwd=cwd, stdout=out, stderr=subprocess.STDOUT)
    state["children"].extend(jobs.values())

    def build_here_done() -> dict:
        # Did this workspace build the sources the clones have? Hashed as soon
        # as its build ends (it may wait for this workspace's Bazel server, and
        # nothing but the reproducible check needs it).
        proc = jobs["build_here"]
        proc.wait()
        now = source_digests(WORKSPACE, files)
        return {"time": time.monotonic() - t0, "returncode": proc.returncode,
                "changed": sorted(r for r in set(copied) | set(now) if copied.get(r) != now.get(r)),
                "outputs": package_outputs(args.target)}

    here: dict = {}
    watcher = threading.Thread(target=lambda: here.update(build_here_done()), daemon=True)
    watcher.start()
    for what in ("fetch_A", "fetch_B"):
        jobs[what].wait(timeout=1800)
        times[what] = time.monotonic() - t0
        if jobs[what].returncode != 0:
            out = (scratch / f"{what}.log").read_text(errors="replace")
            raise RuntimeError(f"{what} (loading and creating the repositories) failed:\n{out[-3000:]}")

    # The server, from clone A's output base, its data in the scratch directory.
    t0 = time.monotonic()
    _, proc = a.build([], "//tools/cache_server")
    checked(proc, "bazel build //tools/cache_server in clone A")
    server_bin = output_files(a.workspace, a.output_base, [], "//tools/cache_server")
    exe = next(p for rel, p in server_bin.items() if rel.endswith("/cache_server"))
    port = free_port()
    server_log = open(scratch / "server.log", "w")
    state["server"] = subprocess.Popen(
        [str(exe), "--port", str(port), "--data-dir", str(state["server_data"])],
        stdout=server_log, stderr=subprocess.STDOUT, start_new_session=True, cwd=scratch,
    )
    deadline = time.monotonic() + 120
    while not port_open(port):
        if state["server"].poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"cache server did not start:\n{(scratch / 'server.log').read_text()[-2000:]}")
        time.sleep(0.3)
    times["server"] = time.monotonic() - t0
    results["server"] = (True, f"BuildGrid listening on grpc://127.0.0.1:{port}")
    log(f"server up on port {port}")

    flags = ["--config=remote_cache", f"--remote_cache=grpc://127.0.0.1:{port}"]

    # 1. Cold build in A: every action runs and is uploaded.
    log(f"cold build of {args.target} in clone A")
    exec_a = scratch / "exec_a.json"
    times["cold_build_A"], proc = a.build([*flags, f"--execution_log_json_file={exec_a}"], args.target)
    checked(proc, f"cold build of {args.target} in clone A")
    ran_a = sorted({s.get("mnemonic", "") for s in spawns(exec_a) if not s.get("remoteCacheHit")})
    missing = [m for m in args.mnemonics if m not in ran_a]
    if missing:
        results["cold_build"] = (False, f"{missing} did not run in the cold build (ran {ran_a})")
    else:
        results["cold_build"] = (True, f"{times['cold_build_A']:.1f} s, {process_summary(proc.stderr)}; ran {ran_a}")

    outs_a = output_files(a.workspace, a.output_base, flags, args.target)
    compared = sorted(pipeline_outputs(exec_a, args.mnemonics) | set(outs_a))

    # 2. The same target in B: different path, empty output base, remote cache only.
    log(f"build of {args.target} in clone B (expect remote cache hits)")
    exec_b = scratch / "exec_b.json"
    times["cached_build_B"], proc = b.build([*flags, f"--execution_log_json_file={exec_b}"], args.target)
    checked(proc, f"build of {args.target} in clone B")
    all_b = spawns(exec_b)
    not_hit = [s for s in all_b if not s.get("remoteCacheHit")]
    summary_b = process_summary(proc.stderr)
    hit_mnemonics = sorted({s.get("mnemonic", "") for s in all_b if s.get("remoteCacheHit")})
    absent = [m for m in args.mnemonics if m not in hit_mnemonics]
    if not_hit:
        detail = ", ".join(sorted({f"{s.get('mnemonic')} ({(s.get('listedOutputs') or ['?'])[0]})" for s in not_hit}))
        results["remote_cache_hits"] = (False, f"{len(not_hit)} of {len(all_b)} spawns ran in clone B: {detail}; {summary_b}")
    elif absent or remote_hits(summary_b) != len(all_b):
        results["remote_cache_hits"] = (False, f"expected hits for {list(args.mnemonics)}, got {hit_mnemonics}; "
                                               f"execution log has {len(all_b)} spawns; Bazel: {summary_b}")
    else:
        results["remote_cache_hits"] = (True, f"{times['cached_build_B']:.1f} s, {summary_b} ({hit_mnemonics}), "
                                              f"vs {times['cold_build_A']:.1f} s cold")

    outs_b = output_files(b.workspace, b.output_base, flags, args.target)
    differing = sorted(r for r in compared if not (b.workspace / r).is_file()
                       or sha256(a.workspace / r) != sha256(b.workspace / r))
    if set(outs_a) != set(outs_b):
        results["identical_outputs"] = (False, "different outputs: " + ", ".join(sorted(set(outs_a) ^ set(outs_b))))
    elif differing:
        results["identical_outputs"] = (False, "differ between clones: " + ", ".join(differing))
    else:
        results["identical_outputs"] = (True, "byte-identical in A and B: " + ", ".join(Path(r).name for r in compared))

    # No build location in action keys (command lines, environments) nor in
    # any file any spawn wrote, in either clone.
    needles = location_needles(scratch, a, b)
    bad = []
    spawns_a = spawns(exec_a)
    for s in spawns_a:
        env = {e.get("name"): e.get("value", "") for e in s.get("environmentVariables", [])}
        # No PATH at all (ctx.actions.run without use_default_shell_env) is as fixed as the strict one.
        if env.get("PATH", STRICT_PATH) != STRICT_PATH:
            bad.append(f"{s.get('mnemonic')}: PATH={env.get('PATH')!r}")
        text = "\0".join([*s.get("commandArgs", []), *(f"{k}={v}" for k, v in env.items())])
        found = found_locations(needles, text)
        if found:
            bad.append(f"{s.get('mnemonic')} command line/env: {found}")
    written = {o["path"] for log_ in (exec_a, exec_b) for s in spawns(log_) for o in s.get("actualOutputs", [])}
    written |= set(outs_a)
    for clone in (a, b):
        for rel in sorted(written):
            path = clone.workspace / rel
            if path.is_file():
                data = path.read_bytes()
                for constant in KNOWN_CONSTANTS:
                    data = data.replace(constant, b"")
                found = found_locations(needles, data.decode("latin-1"))
                if found:
                    bad.append(f"{clone.name}:{Path(rel).name}: {found}")
    results["no_absolute_paths"] = (
        (False, "; ".join(sorted(set(bad))[:10])) if bad else
        (True, f"none in the command lines/environments of {len(spawns_a)} spawns nor in the "
               f"{len(written)} files they wrote, in either clone"))

    # 3. Incremental, in B, without the remote cache: a spawn in the log ran here.
    hardware = b.workspace / args.hardware
    hardware.write_text(hardware.read_text() + "# edited by tools/ci/pipeline_checks.py (incremental check)\n")
    log(f"incremental rebuild of {args.target} in clone B after editing {args.hardware}")
    exec_i = scratch / "exec_incremental.json"
    times["incremental_B"], proc = b.build([f"--execution_log_json_file={exec_i}"], args.target)
    checked(proc, f"incremental rebuild of {args.target} in clone B")
    logged = spawns(exec_i)
    ran = sorted({s.get("mnemonic", "") for s in logged if not s.get("remoteCacheHit")})
    imports = [s for s in logged if s.get("mnemonic") == IMPORT_MNEMONIC]
    not_rerun = [m for m in RERUN_MNEMONICS if m not in ran]
    summary_i = process_summary(proc.stderr)
    if imports:
        results["incremental"] = (False, f"{len(imports)} {IMPORT_MNEMONIC} spawn(s) in the log after a hardware "
                                         f"edit (runner {imports[0].get('runner')!r}); ran {ran}")
    elif not_rerun:
        results["incremental"] = (False, f"{not_rerun} did not run after editing {args.hardware} (ran {ran}; {summary_i})")
    else:
        results["incremental"] = (True, f"{times['incremental_B']:.1f} s, ran {ran}, no {IMPORT_MNEMONIC} spawn; {summary_i}")

    # 3b. A hardware sweep: build it in B, edit one variant's line, rebuild with the execution
    # log: only that variant's description, target, analysis, compile and measurement and the
    # report may run (their outputs name the variant), no other variant's, no import.
    log(f"hardware sweep {SWEEP_TARGET} in clone B, then one variant edited")
    times["sweep_B"], proc = b.build([], SWEEP_TARGET)
    checked(proc, f"build of {SWEEP_TARGET} in clone B")
    build_file = b.workspace / "models" / "BUILD.bazel"
    text = build_file.read_text()
    if SWEEP_EDIT[0] not in text:
        results["sweep_incremental"] = (False, f"models/BUILD.bazel has no line {SWEEP_EDIT[0]!r} to edit")
    else:
        build_file.write_text(text.replace(SWEEP_EDIT[0], SWEEP_EDIT[1], 1))
        exec_s = scratch / "exec_sweep.json"
        times["sweep_incremental_B"], proc = b.build([f"--execution_log_json_file={exec_s}"], SWEEP_TARGET)
        checked(proc, f"rebuild of {SWEEP_TARGET} in clone B after editing a variant")
        ran = [s for s in spawns(exec_s) if not s.get("remoteCacheHit")]
        mnemonics = sorted({s.get("mnemonic", "") for s in ran})
        outputs = [o for s in ran for o in s.get("listedOutputs", [])]
        others = sorted({o.rsplit("/", 1)[-1] for o in outputs
                         if "mlp_sweep_" in o and "mlp_sweep_vlen256_" not in o})
        missing = [m for m in SWEEP_CHAIN if m not in mnemonics]
        if others or IMPORT_MNEMONIC in mnemonics:
            results["sweep_incremental"] = (False, f"an unedited variant or the import reran: {others[:5]} "
                                                   f"(ran {mnemonics})")
        elif missing:
            results["sweep_incremental"] = (False, f"{missing} did not run for the edited variant (ran {mnemonics})")
        else:
            results["sweep_incremental"] = (True, f"{times['sweep_incremental_B']:.1f} s, ran {mnemonics} for "
                                                  f"vlen256 only ({len(ran)} spawns); "
                                                  f"{process_summary(proc.stderr)}")

    # 4. Reproducible: A's pipeline outputs (untouched since its cold build) vs
    # this workspace's own build, checked last so that build, which may wait
    # for this workspace's Bazel server, has had all this time.
    t0 = time.monotonic()
    watcher.join(timeout=1800)
    times["wait_build_here"] = time.monotonic() - t0
    if not here:
        raise RuntimeError(f"the build of {args.target} in {WORKSPACE} did not finish in 30 minutes")
    times["build_here"] = here["time"]
    if here["returncode"] != 0:
        out = (scratch / "build_here.log").read_text(errors="replace")
        print(out[-3000:], file=sys.stderr)
        results["reproducible"] = (False, f"build of {args.target} in {WORKSPACE} failed (exit {here['returncode']})")
    elif here["changed"]:
        results["reproducible"] = (False, "the workspace's sources changed while the check ran (the two builds "
                                          "saw different inputs): " + ", ".join(here["changed"][:10]))
    elif not any(r.endswith(".vmfb") for r in outs_a):
        results["reproducible"] = (False, f"{args.target} has no .vmfb output ({sorted(outs_a)})")
    else:
        # This workspace's files as they were right after its build (another
        # build here could have replaced them since).
        differing = [r for r in compared if not NOT_BYTE_REPRODUCIBLE.search(r)
                     and here["outputs"].get(r) != sha256(a.workspace / r)]
        if differing:
            results["reproducible"] = (False, "differ from this workspace's build: " + ", ".join(differing))
        else:
            results["reproducible"] = (True, "sha256-identical to this workspace's build: "
                                             + ", ".join(Path(r).name for r in compared))


def cleanup(args, state: dict, times: dict[str, float]) -> None:
    scratch: Path = state["scratch"]
    t0 = time.monotonic()
    for child in state["children"]:
        if child.poll() is None:
            child.terminate()
            try:
                child.wait(timeout=30)
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait()
    server = state.get("server")
    if server is not None and server.poll() is None:
        os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait()
    # The server's data goes now, synchronously (small: one build's CAS).
    shutil.rmtree(state["server_data"], ignore_errors=True)
    # Both Bazel servers, in parallel (each holds its output base open).
    downs = [subprocess.Popen(bazel_cmd(c.workspace, c.output_base, "shutdown"), cwd=c.workspace,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
             for c in state.get("clones", ()) if c.started and (c.workspace / "tools" / "bazel").exists()
             and c.output_base.exists()]
    for d in downs:
        try:
            d.wait(timeout=120)
        except subprocess.TimeoutExpired:
            d.kill()
    times["shutdown"] = time.monotonic() - t0
    if args.keep:
        log(f"kept {scratch}")
        return
    # Two output bases with a Python environment each (~7 GB): `rm -rf` took
    # ~21 s here; --background-cleanup hands it to a detached process instead
    # (nothing uses them any more once both Bazel servers are down).
    t0 = time.monotonic()
    rm = ["rm", "-rf", "--one-file-system", str(scratch)]
    if not args.background_cleanup:
        subprocess.run(rm, capture_output=True)
        if scratch.exists():
            subprocess.run(["chmod", "-R", "u+w", str(scratch)], capture_output=True)
            subprocess.run(rm, capture_output=True)
        times["delete_scratch"] = time.monotonic() - t0
    else:
        subprocess.Popen(rm, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                         start_new_session=True, cwd="/")
        log(f"deleting {scratch} in the background (setsid rm -rf)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", default="//models:resnet_riscv")
    parser.add_argument("--hardware", default="analysis/hardware/riscv_rvv.yaml",
                        help="hardware file edited for the incremental check (the target's)")
    parser.add_argument("--mnemonics", nargs="*", default=list(PIPELINE_MNEMONICS),
                        help="spawn mnemonics that must run cold and hit remotely (default: the pipeline's)")
    parser.add_argument("--background-cleanup", action="store_true",
                        help="delete the scratch clones and output bases in a detached background "
                             "process (setsid rm -rf) instead of before exiting")
    parser.add_argument("--keep", action="store_true", help="keep the scratch directory (debugging)")
    args = parser.parse_args()

    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, _on_signal)

    results: dict[str, tuple[bool, str]] = {}
    times: dict[str, float] = {}
    scratch = Path(tempfile.mkdtemp(prefix="pipeline-checks-"))
    state = {"scratch": scratch, "server_data": scratch / "server", "server": None, "children": []}
    start = time.monotonic()
    try:
        run(args, state, results, times)
    except BaseException as err:  # report, never hide: every check not yet reported fails
        text = str(err).strip()
        reason = text.splitlines()[0] if text else repr(err)
        if len(text.splitlines()) > 1:
            print(text[-3000:], file=sys.stderr)
        for name in CHECKS:
            results.setdefault(name, (False, f"not reached: {reason}"))
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, signal.SIG_IGN)
        try:
            cleanup(args, state, times)
        except Exception as err:  # still report the checks
            log(f"cleanup error: {err!r}")

    log("times: " + ", ".join(f"{k} {v:.1f} s" for k, v in times.items())
        + f", total {time.monotonic() - start:.0f} s")
    for name in CHECKS:
        ok, detail = results[name]
        print(f"pipeline:{name} {'PASSED' if ok else 'FAILED'}: {detail}")
    return 0 if all(results[n][0] for n in CHECKS) else 1


if __name__ == "__main__":
    sys.exit(main())
