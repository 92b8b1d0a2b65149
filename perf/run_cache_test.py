"""perf/run_cache.py: a run is answered from the cache only when everything that decides its
counts is the same; where it writes and the guest root's path do not count, the plugin's cache
geometry does; a failed run is never kept. An entry edited, truncated, not JSON or copied under
another key is deleted and the run made again, with one line naming the entry (issue 80)."""

import concurrent.futures
import json
import re
import shutil
import sys
from pathlib import Path

import pytest

from common.dispatch_layout import Dispatch
from perf import counts as cnt
from perf import measure, run_cache
from perf.run_cache import RunCache, run_key


def _counts_text(l1_misses: int) -> str:
    return "\n".join([cnt.FORMAT, "classes " + " ".join(cnt.CLASSES), "windows 1", "caches 1",
                      f"cache 0 32768 8 64 wb {l1_misses} " + " ".join(["0"] * 8), "dram 0 0", ""])


class _Qemu:
    """An executor standing in for qemu: each run writes counts whose L1 figure is the number
    of runs made so far, so a run made twice is told apart from one answered by the cache."""

    def __init__(self, fail: bool = False):
        self.calls = 0
        self.fail = fail

    def submit(self, fn, *args):
        self.calls += 1
        f: concurrent.futures.Future = concurrent.futures.Future()
        if self.fail:
            f.set_exception(measure.PerfError("runner failed under qemu (exit 1)"))
            return f
        Path(args[8]).write_text(_counts_text(self.calls))
        f.set_result(cnt.read_counts(Path(args[8])))
        return f


@pytest.fixture
def job(tmp_path):
    for name, data in (("qemu", b"q"), ("plugin.so", b"p"), ("runner", b"r"), ("dispatch.so", b"lib"),
                       ("in0.npy", b"x")):
        (tmp_path / name).write_bytes(data)

    def make(out="counts.txt", root="/tmp/guest_a", plugin_args=("l1=32768,8,64,wb",), placement=0, lib="dispatch.so"):
        return ([str(tmp_path / "qemu"), "-cpu", "rv64,v=true,vlen=128", "-L", root], tmp_path / "plugin.so",
                list(plugin_args), tmp_path / "runner", tmp_path / lib, 3,
                Dispatch(export="main_dispatch_3", workgroup_count=(4, 1, 1)), [tmp_path / "in0.npy"],
                tmp_path / out, placement)
    return make


def test_the_key_ignores_where_the_counts_go_and_the_guest_roots_path(job):
    assert run_key(*job()) == run_key(*job(out="elsewhere.txt", root="/tmp/guest_b"))


def test_the_key_follows_the_cache_geometry_the_placement_and_the_bytes_run(job, tmp_path):
    base = run_key(*job())
    assert run_key(*job(plugin_args=("l1=65536,8,64,wb",))) != base
    assert run_key(*job(placement=1)) != base
    (tmp_path / "other.so").write_bytes(b"other")
    assert run_key(*job(lib="other.so")) != base
    (tmp_path / "in0.npy").write_bytes(b"y")
    assert run_key(*job()) != base


def test_the_key_follows_the_measurement_version(job, monkeypatch):
    """A directory kept across refreshes (`//tools:tune --run-cache`) never answers a run of another
    measurement version."""
    base = run_key(*job())
    monkeypatch.setattr(run_cache, "MEASUREMENT_VERSION", run_cache.MEASUREMENT_VERSION + 1)
    assert run_key(*job()) != base


def test_a_repeated_run_is_answered_from_the_cache_with_the_first_runs_counts(job, tmp_path):
    qemu = _Qemu()
    cache = RunCache(qemu, tmp_path / "runs")
    first = cache.submit(measure._run_dispatch, *job()).result()
    again = cache.submit(measure._run_dispatch, *job(out="second.txt", root="/tmp/guest_b")).result()
    other = cache.submit(measure._run_dispatch, *job(out="third.txt", plugin_args=("l1=65536,8,64,wb",))).result()
    assert qemu.calls == 2 and (cache.runs, cache.hits) == (2, 1)
    assert again == first and (tmp_path / "second.txt").read_text() == (tmp_path / "counts.txt").read_text()
    assert other != first


def test_a_failed_run_is_not_kept(job, tmp_path):
    cache = RunCache(_Qemu(fail=True), tmp_path / "runs")
    with pytest.raises(measure.PerfError):
        cache.submit(measure._run_dispatch, *job()).result()
    assert not list((tmp_path / "runs").iterdir())


def test_other_calls_pass_through(tmp_path):
    calls = []

    class Inner:
        def submit(self, fn, *args):
            calls.append(fn)
            return concurrent.futures.Future()

    RunCache(Inner(), tmp_path / "runs").submit(print, "x")
    assert calls == [print]


def _entry(cache_dir: Path) -> Path:
    """The one entry a cache directory holds after one run."""
    entries = list(cache_dir.iterdir())
    assert len(entries) == 1, entries
    return entries[0]


def _l1_figure(counts: cnt.DispatchCounts) -> int:
    """The L1 figure _Qemu writes (the run's number)."""
    return counts.caches[0].read_accesses


def _edit_l1(text: str) -> str:
    """The issue's edit (its L1 read misses x20): the L1 figure x20, the rest of the entry kept."""
    edited, n = re.subn(r"(cache 0 32768 8 64 wb )(\d+)", lambda m: f"{m[1]}{int(m[2]) * 20}", text)
    assert n == 1
    return edited


@pytest.mark.parametrize("damage, why", [
    pytest.param(lambda e, _: e.write_text(_edit_l1(e.read_text())), "do not match its sha256", id="edited"),
    pytest.param(lambda e, _: e.write_bytes(e.read_bytes()[: len(e.read_bytes()) // 2]), "not JSON", id="truncated"),
    pytest.param(lambda e, _: e.write_text("L1 misses: 20\n"), "not JSON", id="not-json"),
    pytest.param(lambda e, _: e.write_bytes(b""), "not JSON", id="empty"),
    pytest.param(lambda e, _: e.write_bytes(b"\xff\xfe garbage"), "not UTF-8", id="not-utf8"),
    pytest.param(lambda e, _: e.write_text('["a list"]'), "not a run-cache entry", id="wrong-type"),
    pytest.param(lambda e, other: shutil.copyfile(other, e), "answers another run", id="another-keys-entry"),
    pytest.param(lambda e, _: e.write_text(run_cache.entry_text(json.loads(e.read_text())["key"], "no counts\n")),
                 "its counts do not parse", id="sound-but-not-counts"),
])
def test_a_damaged_entry_is_deleted_and_the_run_made_again(job, tmp_path, capsys, damage, why):
    """Issue 80: an entry edited by hand (L1 read misses x20) answered every run of a tune, and a
    truncated one was reported as the run's own failure (blamed on IREE) and never removed."""
    qemu = _Qemu()
    cache = RunCache(qemu, tmp_path / "runs")
    cache.submit(measure._run_dispatch, *job(plugin_args=("l1=65536,8,64,wb",))).result()
    other = _entry(tmp_path / "runs")
    other = other.rename(tmp_path / "other_entry")  # another key's entry, sound, kept aside
    first = cache.submit(measure._run_dispatch, *job()).result()
    entry = _entry(tmp_path / "runs")
    assert _l1_figure(first) == 2
    damage(entry, other)
    capsys.readouterr()
    again = cache.submit(measure._run_dispatch, *job(out="again.txt")).result()
    assert qemu.calls == 3 and (cache.runs, cache.hits, cache.evicted) == (3, 0, 1)
    assert _l1_figure(again) == 3  # made again, not the damaged entry's figure
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1 and str(entry) in lines[0] and why in lines[0], lines
    assert "deleted" in lines[0] and "IREE" not in lines[0] and "qemu" not in lines[0], lines
    # The run made again is kept afresh, and answers the next repeat.
    assert cache.submit(measure._run_dispatch, *job(out="third.txt")).result() == again
    assert qemu.calls == 3 and cache.hits == 1 and not capsys.readouterr().err


def test_an_entry_holds_its_key_and_the_sha256_of_its_counts(job, tmp_path):
    """What a hit replays is checked against what the cache wrote: the counts the run wrote, the
    key they answer, their sha256."""
    cache = RunCache(_Qemu(), tmp_path / "runs")
    cache.submit(measure._run_dispatch, *job()).result()
    entry = json.loads(_entry(tmp_path / "runs").read_text())
    assert entry["key"] == run_key(*job()) and entry["counts"] == (tmp_path / "counts.txt").read_text()
    assert run_cache.entry_counts(run_cache.entry_text(entry["key"], entry["counts"]).encode(), entry["key"]) \
        == entry["counts"]
    with pytest.raises(run_cache.EntryRefused, match="answers another run"):
        run_cache.entry_counts(run_cache.entry_text("0" * 64, entry["counts"]).encode(), entry["key"])


def test_a_hit_writes_the_first_runs_counts_byte_for_byte(job, tmp_path):
    cache = RunCache(_Qemu(), tmp_path / "runs")
    cache.submit(measure._run_dispatch, *job()).result()
    cache.submit(measure._run_dispatch, *job(out="second.txt")).result()
    assert (tmp_path / "second.txt").read_bytes() == (tmp_path / "counts.txt").read_bytes()


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))
