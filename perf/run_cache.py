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
run counts changes, the guest root perf.guest prepares included). A hit writes the counts the
first run wrote. The directory is one refresh's scratch, or kept across refreshes with
`bazel run //tools:tune -- ... --run-cache DIR` (a resumed sweep); it is never a build input, and
a build's own measurement never uses it.

Entries are checked by content too (issue 80): an entry edited by hand (L1 read misses x20)
answered all 30 qemu runs of a tune and became a freshly sealed record, and a truncated one was
reported as the run's own failure and never removed. Each entry `<key>.json` holds the key it
answers, the counts, and the sha256 of both, written by the cache; an entry that is not JSON
(truncated), whose sha256 does not match, that answers another key, or whose counts do not parse
is deleted and the run made again, with one line on stderr naming the entry and why.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import functools
import hashlib
import json
import sys
from pathlib import Path
from typing import Callable

from common.dispatch_layout import Dispatch
from common.errors import first_line
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


# What the entry's sha256 protects against: bit rot, a truncated or half-copied file, a hand edit
# that does not recompute the hash, an entry copied or renamed under another run's key (the hash
# covers the key it answers). What it does not: a deliberate forger, who can recompute an unkeyed
# sha256 as the cache does. A keyed MAC (HMAC) would stop one only with a secret the forger cannot
# read yet every writer shares (Ray workers on other hosts, refreshes days apart): secret
# management, and a per-process random key would not outlive the process, which is the point of a
# kept directory. No cheap keyed alternative, then: a cache directory is trusted like the checkout
# (whoever can write it can as well edit perf/measure.py).
ENTRY_FORMAT = "perf.run_cache entry 1"  # entries of the earlier format (<key>.counts, bare counts) are never read


def _entry_sha256(key: str, counts: str) -> str:
    return hashlib.sha256(json.dumps({"format": ENTRY_FORMAT, "key": key, "counts": counts},
                                     sort_keys=True).encode()).hexdigest()


def entry_text(key: str, counts: str) -> str:
    """The file text of the entry answering `key` with `counts` (the counts file's text)."""
    return json.dumps({"format": ENTRY_FORMAT, "key": key, "counts": counts,
                       "sha256": _entry_sha256(key, counts)}, indent=1, sort_keys=True) + "\n"


class EntryRefused(ValueError):
    """A cache entry is not what the cache wrote for its key; the message says why."""


def entry_counts(text: bytes, key: str) -> str:
    """The counts the entry `text` holds for `key`, or EntryRefused saying why not."""
    try:
        entry = json.loads(text.decode("utf-8"))  # as written: json.loads(bytes) would guess UTF-16 too
    except UnicodeDecodeError as err:
        raise EntryRefused(f"not UTF-8 text (byte {err.start}): corrupted") from None
    except ValueError as err:  # json.JSONDecodeError
        raise EntryRefused(f"not JSON (truncated or overwritten): {getattr(err, 'msg', err)}") from None
    except RecursionError:
        raise EntryRefused("not a run-cache entry (nested too deeply)") from None
    fields = ("format", "key", "counts", "sha256")
    if not isinstance(entry, dict) or any(not isinstance(entry.get(f), str) for f in fields):
        raise EntryRefused(f"not a run-cache entry (an object of strings {', '.join(fields)})")
    if entry["format"] != ENTRY_FORMAT:
        raise EntryRefused(f"format {entry['format'][:40]!r}, not {ENTRY_FORMAT!r}")
    if entry["sha256"] != _entry_sha256(entry["key"], entry["counts"]):
        raise EntryRefused("its counts or key do not match its sha256 (edited or corrupted)")
    if entry["key"] != key:  # copied or renamed under another run's key
        raise EntryRefused(f"answers another run (key {entry['key'][:16]!r}...)")
    return entry["counts"]


class RunCache:
    """An executor (`submit(fn, *args)` -> Future) that runs perf.measure._run_dispatch calls
    through `inner` once per key and answers repeats from `directory`; any other call goes to
    `inner` as it is. `hits`, `runs` and `evicted` count what it did."""

    def __init__(self, inner, directory: Path):
        self._inner = inner
        self._dir = Path(directory)
        self._dir.mkdir(parents=True, exist_ok=True)
        self.hits = 0
        self.runs = 0
        self.evicted = 0

    def entry_path(self, key: str) -> Path:
        return self._dir / f"{key}.json"

    def _evict(self, cached: Path, why: str) -> None:
        """Deletes an unsound entry and says so: the cache's fault, not the run's (a truncated
        entry was reported as the run's own failure, blamed on IREE, and never removed)."""
        cached.unlink(missing_ok=True)
        self.evicted += 1
        print(f"perf.run_cache: {cached}: {first_line(why)}; deleted, the run is made again", file=sys.stderr)

    def _hit(self, cached: Path, key: str, out: Path) -> cnt.DispatchCounts | None:
        """The counts of the sound entry answering `key`, written to `out`; None when there is
        none (an unsound one is evicted). An `out` that cannot be written raises OSError."""
        if not cached.is_file():
            return None
        try:
            text = cached.read_bytes()
        except OSError as err:
            self._evict(cached, f"cannot read: {err.strerror or err}")
            return None
        try:
            counts = entry_counts(text, key)
        except EntryRefused as err:
            self._evict(cached, str(err))
            return None
        out.write_bytes(counts.encode())  # the bytes the first run's plugin wrote
        try:
            return cnt.read_counts(out)
        except Exception as err:  # noqa: BLE001 (CountsError, or a malformed number's ValueError)
            self._evict(cached, f"its counts do not parse: {err}")
            return None

    def submit(self, fn: Callable, *args) -> concurrent.futures.Future:
        if fn is not measure._run_dispatch:
            return self._inner.submit(fn, *args)
        out = Path(args[8])
        key = run_key(*args)
        cached = self.entry_path(key)
        done: concurrent.futures.Future = concurrent.futures.Future()
        try:
            counts = self._hit(cached, key, out)
        except OSError as err:  # `out` cannot be written: the run's own error, as a run would meet it
            done.set_exception(err)
            return done
        if counts is not None:
            self.hits += 1
            done.set_result(counts)
            return done
        self.runs += 1
        future = self._inner.submit(fn, *args)

        def keep(f: concurrent.futures.Future) -> None:
            if f.exception() is None:  # a failed run is the measurement's answer, never reused
                atomic_write(cached, entry_text(key, out.read_bytes().decode()))  # the plugin writes ASCII

        future.add_done_callback(keep)
        return future

    def shutdown(self) -> None:
        if hasattr(self._inner, "shutdown"):
            self._inner.shutdown()
