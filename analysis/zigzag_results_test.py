"""Recorded ZigZag runs: keyed by all they depend on, merged without loss, bad files named."""

import json
import sys

import pytest

from analysis import zigzag_results as zr

LAYER = {"operator_type": "Gemm", "loop_dims": ["L0", "L1"], "loop_sizes": [8, 16]}
ARGS = (LAYER, "accelerator: a\n", "mapping: m\n", 3, 5, "largest")


def test_the_key_moves_with_every_input():
    base = zr.job_key(*ARGS)
    assert zr.job_key(*ARGS) == base
    changed = [
        ({**LAYER, "loop_sizes": [8, 32]},) + ARGS[1:],
        (LAYER, "accelerator: b\n") + ARGS[2:],
        ARGS[:2] + ("mapping: n\n",) + ARGS[3:],
        ARGS[:3] + (4,) + ARGS[4:],
        ARGS[:4] + (6, "largest"),
        ARGS[:5] + ("smallest",),
    ]
    keys = {zr.job_key(*a) for a in changed}
    assert base not in keys and len(keys) == len(changed)


def test_the_key_moves_with_the_result_version(monkeypatch):
    from analysis import zigzag_cost

    base = zr.job_key(*ARGS)
    monkeypatch.setattr(zigzag_cost, "RESULT_VERSION", zigzag_cost.RESULT_VERSION + 1)
    assert zr.job_key(*ARGS) != base


def test_a_live_result_reads_as_a_replayed_one():
    live = {"tiles": (1, 2), "latency": 0.1 + 0.2, "levels": {"b": 1, "a": [3]}}
    replayed = json.loads(json.dumps({"result": zr.normalized(live)}))["result"]
    assert zr.normalized(live) == replayed and replayed["tiles"] == [1, 2]


def _log(tmp_path, name, hardware, entries, live):
    log = zr.ZigZagLog(hardware, entries, live)
    path = tmp_path / f"{name}.zigzag.json"
    path.write_text(log.text())
    return path


def test_merge_adds_new_entries_per_hardware_and_keeps_old_ones_unless_pruned(tmp_path):
    results = tmp_path / "results"
    results.mkdir()
    a = _log(tmp_path, "a", "riscv_rvv", {"k1": {"result": {"x": 1}}}, ["k1"])
    b = _log(tmp_path, "b", "riscv_rvv512", {"k2": {"result": None, "failure": "boom"}}, ["k2"])
    assert zr.merge(results, [a, b]) == {"riscv_rvv.json": (1, 0), "riscv_rvv512.json": (1, 0)}
    c = _log(tmp_path, "c", "riscv_rvv", {"k1": {"result": {"x": 1}}, "k3": {"result": {"y": 2}}}, ["k3"])
    assert zr.merge(results, [c]) == {"riscv_rvv.json": (1, 0)}
    assert zr.merge(results, [a, b, c]) == {}
    entries = zr.load(sorted(results.glob("*.json")))
    assert entries == {"k1": {"result": {"x": 1}}, "k2": {"result": None, "failure": "boom"},
                       "k3": {"result": {"y": 2}}}
    # Pruned (//tuning:record_zigzag): a file of a hardware the logs analyse keeps what they used;
    # another hardware's file is not touched.
    d = _log(tmp_path, "d", "riscv_rvv", {"k3": {"result": {"y": 2}}}, [])
    assert zr.merge(results, [d], prune=True) == {"riscv_rvv.json": (0, 1)}
    assert zr.load(sorted(results.glob("*.json"))) == {"k2": {"result": None, "failure": "boom"},
                                                       "k3": {"result": {"y": 2}}}


@pytest.mark.parametrize("text,why", [
    ("{", "not JSON"),
    ('{"schema_version": 0, "entries": {}}', "schema 1"),
    ('{"schema_version": 1, "entries": {"k": {"x": 1}}}', "neither a result nor a failure"),
])
def test_a_bad_results_file_is_named(tmp_path, text, why):
    path = tmp_path / "riscv_rvv.json"
    path.write_text(text)
    with pytest.raises(zr.ZigZagResultsError, match=why) as err:
        zr.load([path])
    assert str(path) in str(err.value)


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q", "-p", "no:cacheprovider"]))
