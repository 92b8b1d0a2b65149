"""Each distinct qemu run once per refresh (issue 61): what a run of one dispatch counts (its
instructions, blocks and simulated cache traffic) is decided by the executable, its inputs, the
buffer placement, the tools and the cache geometry the plugin simulates; the bandwidths,
latencies and energies of a description only price those counts afterwards (perf.measure
_core_run). So a sweep over DRAM bandwidth (models/BUILD.bazel MEMORY_SWEEP_VARIANTS: 12
variants, 6 cache geometries) runs each distinct run once, and the variants that share a
geometry read its counts.

`RunCache(executor, directory)` wraps the executor perf.measure submits its runs to. A run is
keyed by the sha256 of everything it is given except where it writes: the qemu, plugin and runner
bytes, qemu's arguments (the guest root's path, which the guest never sees, left out), the plugin's
arguments, the library's and the inputs' bytes, the export index, the dispatch's layout and the
placement, and the measurement version (common/measurement_version.py, bumped whenever what a
run counts changes, the guest root perf.guest prepares included). A hit copies the counts file the
first run wrote. The directory is one refresh's scratch, or kept across refreshes with
`bazel run //tools:tune -- ... --run-cache DIR` (a resumed sweep); it is never a build input, and
a build's own measurement never uses it.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import functools
import hashlib
import json
import shutil
from pathlib import Path
from typing import Callable

from common.dispatch_layout import Dispatch
from common.files import atomic_write, sha256_file
from common.measurement_version import MEASUREMENT_VERSION
from perf import counts as cnt
from perf import measure


@functools.lru_cache(maxsize=4096)
def _sha256_of(path: str, identity: tuple[int, int, int]) -> str:
    return sha256_file(path)


def _sha256(path: Path) -> str:
    """sha256_file, once per file version: every run of a choice hashes the same qemu, plugin,
    runner, library and inputs (hundreds of runs, the qemu binary alone tens of MB)."""
    st = Path(path).stat()
    return _sha256_of(str(Path(path).absolute()), (st.st_ino, st.st_size, st.st_mtime_ns))


def run_key(qemu_cmd: list[str], plugin: Path, plugin_args: list[str], runner: Path, lib: Path,
            index: int, d: Dispatch, inputs: list[Path], out: Path, placement: int = 0) -> str:
    """The key of one perf.measure._run_dispatch call (its arguments, in its order)."""
    args = list(qemu_cmd[1:])
    if "-L" in args:  # perf.guest.qemu_command: the guest root, a directory of this run's own
        args[args.index("-L") + 1] = "<guest root>"
    return hashlib.sha256(json.dumps({
        "qemu": _sha256(Path(qemu_cmd[0])),
        "qemu_args": args,
        "plugin": _sha256(plugin),
        "plugin_args": list(plugin_args),
        "runner": _sha256(runner),
        "library": _sha256(lib),
        "index": index,
        "dispatch": dataclasses.asdict(d),  # common.dispatch_layout.Dispatch
        "inputs": [[Path(p).suffix, _sha256(p)] for p in inputs],
        "placement": placement,
        "measurement_version": MEASUREMENT_VERSION,
    }, sort_keys=True, default=str).encode()).hexdigest()


class RunCache:
    """An executor (`submit(fn, *args)` -> Future) that runs perf.measure._run_dispatch calls
    through `inner` once per key and answers repeats from `directory`; any other call goes to
    `inner` as it is. `hits` and `runs` count what it did."""

    def __init__(self, inner, directory: Path):
        self._inner = inner
        self._dir = Path(directory)
        self._dir.mkdir(parents=True, exist_ok=True)
        self.hits = 0
        self.runs = 0

    def submit(self, fn: Callable, *args) -> concurrent.futures.Future:
        if fn is not measure._run_dispatch:
            return self._inner.submit(fn, *args)
        out = Path(args[8])
        cached = self._dir / f"{run_key(*args)}.counts"
        if cached.is_file():
            self.hits += 1
            done: concurrent.futures.Future = concurrent.futures.Future()
            try:
                shutil.copyfile(cached, out)
                done.set_result(cnt.read_counts(out))
            except Exception as err:  # noqa: BLE001 (the caller sees it as the run's own error)
                done.set_exception(err)
            return done
        self.runs += 1
        future = self._inner.submit(fn, *args)

        def keep(f: concurrent.futures.Future) -> None:
            if f.exception() is None:  # a failed run is the measurement's answer, never reused
                atomic_write(cached, out.read_bytes())

        future.add_done_callback(keep)
        return future

    def shutdown(self) -> None:
        if hasattr(self._inner, "shutdown"):
            self._inner.shutdown()
