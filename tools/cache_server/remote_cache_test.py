#!/usr/bin/env python3
"""Remote cache check: a pipeline target built in one clone is all remote cache hits in another.

1. Copies the workspace (the files git knows about, nothing built) to two
   places at different paths, A and B, each with its own empty output base.
2. Builds //tools/cache_server in A and starts it on a free loopback port with
   its data in the scratch directory.
3. Builds the target in A with `--config=remote_cache` (cold: every action runs
   and is uploaded), then in B (which has never built anything).
4. Checks, from B's execution log and Bazel's own `N remote cache hit` summary,
   that every spawn in B, the pipeline's (MlirImport, ZigZagAnalysis,
   IreeCompile, HalModule) among them, was a remote cache hit; that B's outputs
   are byte-identical to A's; and that no output names either clone, either
   output base, the home directory or a temp directory.

The server and both Bazel servers are shut down and the scratch data removed at
the end, also on failure or SIGINT/SIGTERM/SIGHUP. Each output base creates the
locked Python environment again (about a minute each with a warm pip cache);
the two are fetched in parallel before the timed builds.

Prints one `remote_cache:<check> PASSED|FAILED: reason` line per check plus the
measured times; exit 1 on any failure. Standard library only (runs outside the
locked environments, like tools/ci/pipeline_checks.py).

    python3 tools/cache_server/remote_cache_test.py [--target //models:resnet_riscv]
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
import time
from pathlib import Path

WORKSPACE = Path(__file__).resolve().parents[2]
PIPELINE_MNEMONICS = ("MlirImport", "ZigZagAnalysis", "IreeCompile", "HalModule")
CHECKS = ("server", "cold_build", "action_keys", "all_hits", "identical", "location_independent")
STRICT_PATH = "/bin:/usr/bin:/usr/local/bin"  # --incompatible_strict_action_env


class Interrupted(Exception):
    pass


def _on_signal(signum, _frame):
    raise Interrupted(f"interrupted by signal {signum}")


def log(msg: str) -> None:
    print(f"remote_cache: {msg}", file=sys.stderr, flush=True)


def bazel(workspace: Path, output_base: Path, *args: str, timeout: float = 1800) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(workspace / "tools" / "bazel"), f"--output_base={output_base}", *args],
        cwd=workspace, text=True, capture_output=True, timeout=timeout,
    )


def checked(proc: subprocess.CompletedProcess, what: str) -> subprocess.CompletedProcess:
    if proc.returncode != 0:
        raise RuntimeError(f"{what} failed (exit {proc.returncode}):\n{proc.stderr[-3000:]}")
    return proc


def copy_workspace(dest: Path) -> None:
    """Copies the files git knows about (committed or not), nothing built."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=WORKSPACE, capture_output=True, check=True,
    ).stdout.split(b"\0")
    for rel in filter(None, listed):
        src = WORKSPACE / rel.decode()
        if src.is_file():
            target = dest / rel.decode()
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, target)


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


def output_files(workspace: Path, output_base: Path, flags: list[str], target: str) -> dict[str, Path]:
    """Default outputs of `target` by workspace-relative path (after a build)."""
    # Bazel 4.2.3's cquery has no --output=files; a Starlark expression does the same.
    q = checked(bazel(workspace, output_base, "cquery", *flags, "--output=starlark",
                      "--starlark:expr=\"\\n\".join([f.path for f in target.files.to_list()])",
                      target), f"cquery {target}")
    return {line: workspace / line for line in q.stdout.split() if line}


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def location_needles(scratch: Path, *clones: "Clone") -> set[str]:
    """Strings that would tie an artifact or action key to a place or a person."""
    home = Path(os.path.expanduser("~"))
    user = pwd.getpwuid(os.getuid()).pw_name
    needles = {str(scratch), str(WORKSPACE), str(home) + "/", "/tmp/", "_bazel_", f"/{user}/",
               tempfile.gettempdir() + "/"}
    for c in clones:
        needles |= {str(c.workspace), str(c.output_base)}
    return needles


class Clone:
    def __init__(self, scratch: Path, rel: str, name: str):
        self.name = name
        self.workspace = scratch / rel
        self.output_base = scratch / f"output_base_{name}"
        self.exec_log = scratch / f"exec_{name}.json"
        self.started = False

    def build(self, flags: list[str], *targets: str) -> tuple[float, subprocess.CompletedProcess]:
        self.started = True
        t0 = time.monotonic()
        proc = bazel(self.workspace, self.output_base, "build", *flags, *targets)
        return time.monotonic() - t0, proc

    def shutdown(self) -> None:
        if self.started:
            bazel(self.workspace, self.output_base, "shutdown", timeout=120)


def run(args, scratch: Path, results: dict[str, tuple[bool, str]], times: dict[str, float]) -> None:
    a = Clone(scratch, "a/workspace", "a")
    b = Clone(scratch, "b/somewhere/else/checkout", "b")  # another path, another length
    for clone in (a, b):
        copy_workspace(clone.workspace)

    # Fetch both output bases' repositories (the Python environments) in
    # parallel, so the timed builds below measure building only.
    log("creating the Python environments of both clones (a few minutes)")
    t0 = time.monotonic()
    a.started = b.started = True
    fetches = [
        subprocess.Popen([str(c.workspace / "tools" / "bazel"), f"--output_base={c.output_base}",
                          "build", "--nobuild", args.target, *extra],
                         cwd=c.workspace, text=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        for c, extra in ((a, ["//tools/cache_server"]), (b, []))
    ]
    args.children.extend(fetches)
    for c, f in zip((a, b), fetches):
        out, _ = f.communicate(timeout=1800)
        if f.returncode != 0:
            raise RuntimeError(f"loading/fetching in clone {c.name} failed:\n{out[-3000:]}")
    times["fetch"] = time.monotonic() - t0

    # The server, from clone A's output base, its data in the scratch directory.
    dt, proc = a.build([], "//tools/cache_server")
    checked(proc, "bazel build //tools/cache_server")
    server_bin = output_files(a.workspace, a.output_base, [], "//tools/cache_server")
    exe = next(p for rel, p in server_bin.items() if rel.endswith("/cache_server"))
    port = free_port()
    server_log = open(scratch / "server.log", "w")
    server = subprocess.Popen(
        [str(exe), "--port", str(port), "--data-dir", str(scratch / "server")],
        stdout=server_log, stderr=subprocess.STDOUT, start_new_session=True, cwd=scratch,
    )
    args.server = server
    deadline = time.monotonic() + 120
    while not port_open(port):
        if server.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"cache server did not start:\n{(scratch / 'server.log').read_text()[-2000:]}")
        time.sleep(0.3)
    results["server"] = (True, f"BuildGrid listening on grpc://127.0.0.1:{port}")
    log(f"server up on port {port}")

    flags = ["--config=remote_cache", f"--remote_cache=grpc://127.0.0.1:{port}"]

    # Cold build in A: every action runs and is uploaded.
    log(f"cold build of {args.target} in clone A")
    times["cold"], proc = a.build([*flags, f"--execution_log_json_file={a.exec_log}"], args.target)
    checked(proc, f"cold build of {args.target} in clone A")
    ran_a = [s for s in spawns(a.exec_log) if not s.get("remoteCacheHit")]
    ran_a_mnemonics = sorted({s.get("mnemonic", "") for s in ran_a})
    missing = [m for m in args.mnemonics if m not in ran_a_mnemonics]
    summary_a = process_summary(proc.stderr)
    if missing:
        results["cold_build"] = (False, f"{missing} did not run in the cold build (ran {ran_a_mnemonics})")
    else:
        results["cold_build"] = (True, f"{times['cold']:.1f} s, {summary_a}; ran {ran_a_mnemonics}")

    # What goes into action keys: command lines and environments name no
    # clone, output base, home or temp directory, and PATH is the fixed one.
    needles = location_needles(scratch, a, b)
    bad, paths = [], set()
    for s in spawns(a.exec_log):
        env = {e.get("name"): e.get("value", "") for e in s.get("environmentVariables", [])}
        # No PATH at all (ctx.actions.run without use_default_shell_env) is as
        # fixed as the strict one.
        if env.get("PATH", STRICT_PATH) != STRICT_PATH:
            bad.append(f"{s.get('mnemonic')}: PATH={env.get('PATH')!r}")
        paths.update({f"{s.get('mnemonic')}:{'PATH=' + STRICT_PATH if 'PATH' in env else 'no PATH'}"})
        text = "\0".join([*s.get("commandArgs", []), *(f"{k}={v}" for k, v in env.items())])
        found = sorted(n for n in needles if n in text)
        if found:
            bad.append(f"{s.get('mnemonic')}: {found}")
    results["action_keys"] = (
        (False, "; ".join(sorted(set(bad))[:10])) if bad else
        (True, f"{len(spawns(a.exec_log))} spawns ({', '.join(sorted(paths))}), no absolute build "
               "locations in command lines or environments"))

    # The same target in B: different path, empty output base, remote cache only.
    log(f"build of {args.target} in clone B (expect remote cache hits)")
    times["hit"], proc = b.build([*flags, f"--execution_log_json_file={b.exec_log}"], args.target)
    checked(proc, f"build of {args.target} in clone B")
    all_b = spawns(b.exec_log)
    not_hit = [s for s in all_b if not s.get("remoteCacheHit")]
    summary_b = process_summary(proc.stderr)
    hit_mnemonics = sorted({s.get("mnemonic", "") for s in all_b if s.get("remoteCacheHit")})
    absent = [m for m in args.mnemonics if m not in hit_mnemonics]
    if not_hit:
        detail = ", ".join(sorted({f"{s.get('mnemonic')} ({(s.get('listedOutputs') or ['?'])[0]})" for s in not_hit}))
        results["all_hits"] = (False, f"{len(not_hit)} of {len(all_b)} spawns ran in clone B: {detail}; {summary_b}")
    elif absent or remote_hits(summary_b) != len(all_b):
        results["all_hits"] = (False, f"expected hits for {list(args.mnemonics)}, got {hit_mnemonics}; "
                                      f"execution log has {len(all_b)} spawns; Bazel: {summary_b}")
    else:
        results["all_hits"] = (True, f"{times['hit']:.1f} s, {summary_b} ({hit_mnemonics}), "
                                     f"vs {times['cold']:.1f} s cold")

    # Byte-identical outputs, and nothing that names where or by whom they were built.
    outs_a = output_files(a.workspace, a.output_base, flags, args.target)
    outs_b = output_files(b.workspace, b.output_base, flags, args.target)
    differing = sorted(r for r in outs_a if r not in outs_b or sha256(outs_a[r]) != sha256(outs_b[r]))
    names = sorted(Path(r).name for r in outs_a)
    if not any(n.endswith(".vmfb") for n in names):
        results["identical"] = (False, f"{args.target} has no .vmfb output ({names})")
    elif differing or set(outs_a) != set(outs_b):
        results["identical"] = (False, "differ between clones: " + ", ".join(differing or sorted(set(outs_a) ^ set(outs_b))))
    else:
        results["identical"] = (True, "byte-identical: " + ", ".join(names))

    # Every file any spawn wrote (MLIR, goldens, analysis JSON, configs, reports,
    # vmfbs, manifests), in both clones, not only the target's own outputs.
    written = {o["path"] for c in (a, b) for s in spawns(c.exec_log) for o in s.get("actualOutputs", [])}
    scanned = {**{f"a:{r}": a.workspace / r for r in written}, **{f"b:{r}": b.workspace / r for r in written},
               **outs_a, **outs_b}
    leaks = []
    for rel, path in sorted(scanned.items()):
        if not path.is_file():
            continue
        data = path.read_bytes()
        found = sorted(n for n in needles if n.encode() in data)
        if found:
            leaks.append(f"{Path(rel).name}: {found}")
    results["location_independent"] = (
        (False, "outputs name build locations: " + "; ".join(leaks)) if leaks
        else (True, f"no clone/output-base/home/temp/user paths in the {len(written)} files the "
                    f"pipeline's spawns wrote, in either clone"))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", default="//models:resnet_riscv")
    parser.add_argument("--mnemonics", nargs="*", default=list(PIPELINE_MNEMONICS),
                        help="spawn mnemonics that must run cold and hit remotely (default: the pipeline's)")
    parser.add_argument("--keep", action="store_true", help="keep the scratch directory (debugging)")
    args = parser.parse_args()
    args.server = None
    args.children = []  # Bazel clients still running when interrupted

    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, _on_signal)

    if os.environ.get("TEST_TMPDIR") and os.environ.get("HOME", "").startswith(os.environ["TEST_TMPDIR"]):
        log("note: HOME is the test's temp dir, so pip's cache is cold; pass --test_env=HOME --test_env=PATH")
    results: dict[str, tuple[bool, str]] = {}
    times: dict[str, float] = {}
    scratch = Path(tempfile.mkdtemp(prefix="remote-cache-test-"))
    start = time.monotonic()
    try:
        run(args, scratch, results, times)
    except BaseException as err:  # report, never hide: every check not yet reported fails
        text = str(err).strip()
        reason = text.splitlines()[0] if text else repr(err)
        if len(text.splitlines()) > 1:
            print(text[-3000:], file=sys.stderr)
        for name in CHECKS:
            results.setdefault(name, (False, reason))
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        for child in args.children:
            if child.poll() is None:
                child.terminate()
                child.wait()
        server = args.server
        if server is not None and server.poll() is None:
            os.killpg(server.pid, signal.SIGTERM)
            try:
                server.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(server.pid, signal.SIGKILL)
                server.wait()
        for rel, name in (("a/workspace", "a"), ("b/somewhere/else/checkout", "b")):
            clone = Clone(scratch, rel, name)
            if clone.output_base.exists() and (clone.workspace / "tools" / "bazel").exists():
                clone.started = True
                try:
                    clone.shutdown()
                except Exception:
                    pass
        if args.keep:
            log(f"kept {scratch}")
        else:
            # Two output bases with a Python environment each (~7 GB): rm is
            # much faster than shutil.rmtree on that many files.
            # Walk the tree a second time (chmod) only if read-only dirs got in the way.
            t0 = time.monotonic()
            subprocess.run(["rm", "-rf", "--one-file-system", str(scratch)], capture_output=True)
            if scratch.exists():
                subprocess.run(["chmod", "-R", "u+w", str(scratch)], capture_output=True)
                subprocess.run(["rm", "-rf", "--one-file-system", str(scratch)], capture_output=True)
            shutil.rmtree(scratch, ignore_errors=True)
            times["cleanup"] = time.monotonic() - t0

    if times:
        log("times: " + ", ".join(f"{k} {v:.1f} s" for k, v in times.items())
            + f", total {time.monotonic() - start:.0f} s")
    for name in CHECKS:
        ok, detail = results[name]
        print(f"remote_cache:{name} {'PASSED' if ok else 'FAILED'}: {detail}")
    return 0 if all(results[n][0] for n in CHECKS) else 1


if __name__ == "__main__":
    sys.exit(main())
