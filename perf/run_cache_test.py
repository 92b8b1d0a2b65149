"""perf/run_cache.py: a run is answered from the cache only when everything that decides its
counts is the same; where it writes and the guest root's path do not count, the plugin's cache
geometry does; a failed run is never kept."""

import concurrent.futures
import sys
from pathlib import Path

import pytest

from common.dispatch_layout import Dispatch
from perf import counts as cnt
from perf import measure
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
    from perf import run_cache

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


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))
