"""perf.explore on mlp's tuned riscv build: a small space priced by ZigZag and the bound, its best
two variants measured under qemu, the report written; a bad space or option is one line naming it,
and nothing is written.

argv: <mlp's explore index (perf/defs.bzl explore_index)>
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from perf import explore

INDEX = Path(sys.argv[1]).absolute() if len(sys.argv) > 1 else None


def _space(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "space.yaml"
    path.write_text(text)
    return path


def _run(tmp_path: Path, space: Path, *extra: str) -> tuple[int, Path]:
    out = tmp_path / "out"
    return explore.main(["mlp", str(space), "--index", str(INDEX), "--out", str(out), *extra]), out


def test_a_small_space_is_priced_its_best_measured_and_reported(tmp_path: Path):
    space = _space(tmp_path, "axes:\n  l1.size_bytes: [8192, 65536]\n  dram.read_bytes_per_cycle: [1, 8]\n"
                             "  compute.vector_bits: [128, 256]\nmeasure_top: 2\n")
    code, out = _run(tmp_path, space, "--jobs", "2")
    assert code == 0
    result = json.loads((out / "explore.json").read_text())
    rows = result["variants"]
    assert len(rows) == 8
    assert all(r["predicted_cycles"] > 0 and r["predicted_energy_pj"] > 0 for r in rows)
    assert all(r["predicted_cycles"] == r["vector_core_cycles"] for r in rows)  # the default latency
    assert all(r["dispatches_by_zigzag"] + r["dispatches_refused_by_zigzag"] >= 1 for r in rows)
    by = {tuple(r["values"]): r for r in rows}
    # A slower DRAM never makes the model faster; more L1 is more SRAM.
    for l1 in ("8192", "65536"):
        for vlen in ("128", "256"):
            assert by[(l1, "1", vlen)]["predicted_cycles"] >= by[(l1, "8", vlen)]["predicted_cycles"]
    assert by[("65536", "8", "128")]["sram_bytes"] > by[("8192", "8", "128")]["sram_bytes"]
    front = [r for r in rows if r["pareto"]]
    assert front
    for r in front:  # no variant beats a front member on every figure
        assert not any(o["predicted_cycles"] < r["predicted_cycles"] and o["predicted_energy_pj"] < r["predicted_energy_pj"]
                       and o["sram_bytes"] < r["sram_bytes"] for o in rows)
    measured = [r for r in rows if r.get("measured")]
    assert len(measured) == 2
    assert {r["values"][2] for r in measured} == {"128"}  # only the build's VLEN runs its vmfb
    assert all(r["measured"]["memory_aware_cycles"] > 0 for r in measured)
    text = (out / "explore.md").read_text()
    assert "## Pareto front" in text and "## Measured" in text
    assert (out / "explore.png").read_bytes().startswith(b"\x89PNG")


def test_energy_axes_reprice_without_changing_cycles_and_are_measured_once(tmp_path: Path):
    space = _space(tmp_path, "axes:\n  l1.size_bytes: [8192, 65536]\n  dram.read_energy_pj: [320, 1280]\n"
                             "measure_top: 2\n")
    code, out = _run(tmp_path, space, "--jobs", "1")
    assert code == 0
    result = json.loads((out / "explore.json").read_text())
    by = {tuple(r["values"]): r for r in result["variants"]}
    assert result["distinct_zigzag_inputs"] == 2
    for l1 in ("8192", "65536"):
        assert by[(l1, "320")]["zigzag_cycles"] == by[(l1, "1280")]["zigzag_cycles"]
        assert by[(l1, "320")]["predicted_cycles"] == by[(l1, "1280")]["predicted_cycles"]
        assert by[(l1, "320")]["predicted_energy_pj"] < by[(l1, "1280")]["predicted_energy_pj"]
    measured = [r for r in result["variants"] if r.get("measured")]
    assert sorted(r["values"] for r in measured) == [["65536", "320"], ["8192", "320"]]  # one per accelerator


def test_measuring_all_checks_the_oracle_against_bigger_is_better_and_a_report_is_reused(tmp_path: Path, capsys):
    space = _space(tmp_path, "axes:\n  l1.size_bytes: [8192, 65536]\n  dram.read_bytes_per_cycle: [1, 8]\n"
                             "measure_top: all\n")
    code, out = _run(tmp_path, space)
    assert code == 0
    result = json.loads((out / "explore.json").read_text())
    assert sum(bool(r.get("measured")) for r in result["variants"]) == 4
    cycles = result["validation"]["cycles, ZigZag's traffic on the measurement's terms"]
    # DRAM 1 vs 8 B/cycle differ by far more than 1%: those pairs count; the L1-only pairs may not.
    assert cycles["all"]["pairs"] >= 4
    for name in ("zigzag", "naive"):
        entry = cycles["all"][name]
        assert 0.0 <= entry["accuracy"] <= 1.0 and entry["ci95"][0] <= entry["accuracy"] <= entry["ci95"][1]
    assert "## ZigZag as the oracle" in (out / "explore.md").read_text()

    # Re-priced with the report's measurements: one variant, drawn by the build's bytes, is measured
    # again and must match; the others are taken as they are.
    again = tmp_path / "again"
    code = explore.main(["mlp", str(space), "--index", str(INDEX), "--out", str(again),
                         "--reuse-measured", str(out / "explore.json")])
    assert code == 0
    second = json.loads((again / "explore.json").read_text())
    assert second["measured_reused"]["variants"] == 4 and len(second["measured_reused"]["measured_again_equal"]) == 1
    assert [r.get("measured") for r in second["variants"]] == [r.get("measured") for r in result["variants"]]
    assert second["validation"] == result["validation"]

    # A report whose figures are not what the build measures is refused, and nothing is written.
    forged = json.loads((out / "explore.json").read_text())
    for r in forged["variants"]:
        r["measured"]["memory_aware_cycles"] += 1
    (tmp_path / "forged.json").write_text(json.dumps(forged))
    code = explore.main(["mlp", str(space), "--index", str(INDEX), "--out", str(tmp_path / "third"),
                         "--reuse-measured", str(tmp_path / "forged.json")])
    assert code != 0 and not (tmp_path / "third").exists()
    assert "forged.json: v0000" in capsys.readouterr().err.splitlines()[-1]


def test_pairwise_counts_ties_as_half_and_ignores_small_differences():
    def item(l1, l2, bw, pred, meas):
        hw = {"memory": [{"role": "l1", "size_bytes": l1}, {"role": "l2", "size_bytes": l2},
                         {"role": "dram", "read_bytes_per_cycle": bw}]}
        return {"hw": hw, "p": pred, "m": meas}
    items = [item(1, 4, 1, 10, 100), item(2, 4, 1, 10, 90), item(1, 8, 2, 5, 50), item(1, 8, 2, 6, 50.2)]
    out = explore.pairwise(items, "p", "m")
    assert out["all"]["pairs"] == 5  # the last two differ by 0.4%
    # ZigZag: a tie (first pair) is half, the other four right
    assert out["all"]["zigzag"]["accuracy"] == pytest.approx(4.5 / 5)
    assert out["all"]["naive"]["accuracy"] == pytest.approx(1.0)


@pytest.mark.parametrize("text, message", [
    ("axes: {}\n", "expected a mapping with 'axes'"),
    ("axes:\n  l1.size_bytes: 4096\n", "axis l1.size_bytes: expected a non-empty list"),
    ("axes:\n  l1.size_bytes: [4096, 4096]\n", "a value is given twice"),
    ("axes:\n  l9.size_bytes: [4096]\n", "l9.size_bytes"),
    ("axes:\n  l1.size_bytes: [-5]\n", "variant l1.size_bytes=-5"),
    ("axes:\n  l1.size_bytes: [4096]\nmeasure_top: -1\n", "measure_top"),
    ("axes:\n  l1.size_bytes: [4096]\ncolour: red\n", "unknown field(s) colour"),
    ("axes: [\n", "not a space file"),
])
def test_a_bad_space_is_one_line_and_writes_nothing(tmp_path: Path, capsys, text: str, message: str):
    code, out = _run(tmp_path, _space(tmp_path, text))
    err = capsys.readouterr().err.strip().splitlines()
    assert code != 0
    assert len(err) == 1 and err[0].startswith("explore: ") and message in err[0], err
    assert not out.exists()


def test_a_space_that_is_a_fifo_a_device_or_a_directory_is_named_unread(tmp_path: Path):
    # issue 80: a FIFO as the space blocked the explorer forever; /dev/zero read until memory ran out
    import os

    os.mkfifo(tmp_path / "fifo.yaml")
    (tmp_path / "dir.yaml").mkdir()
    import threading

    for path, why in ((tmp_path / "fifo.yaml", "is a FIFO, not a regular file"),
                      (Path("/dev/zero"), "is a character device, not a regular file"),
                      (tmp_path / "dir.yaml", "is a directory, not a space file")):
        raised: list[Exception] = []

        def load(path=path):
            try:
                explore.load_space(path)
            except Exception as err:  # noqa: BLE001 - checked below
                raised.append(err)
        reader = threading.Thread(target=load, daemon=True)  # a blocked read must fail the test, not hang it
        reader.start()
        reader.join(10)
        assert not reader.is_alive(), f"{path}: still reading after 10 s"
        assert len(raised) == 1 and isinstance(raised[0], explore.ExploreError), raised
        assert str(raised[0]).startswith(f"{path}: {why}"), raised[0]


def test_an_unknown_model_and_bad_options_are_named(tmp_path: Path, capsys):
    space = _space(tmp_path, "axes:\n  l1.size_bytes: [4096]\n")
    out = tmp_path / "out"
    assert explore.main(["nosuch", str(space), "--index", str(INDEX), "--out", str(out)]) != 0
    assert "nosuch: not a pipeline of the zoo (one of mlp)" in capsys.readouterr().err
    assert explore.main(["mlp", str(space), "--index", str(INDEX), "--out", str(out), "--jobs", "0"]) != 0
    assert "--jobs 0" in capsys.readouterr().err
    assert not out.exists()


def test_an_index_naming_a_missing_file_and_a_name_with_escapes_are_named(tmp_path: Path, capsys):
    # issue 80: a file the index names but is not there was "explore: <out>: FileNotFoundError";
    # an escape sequence in the pipeline's name was printed raw
    space = _space(tmp_path, "axes:\n  l1.size_bytes: [4096]\n")
    index = json.loads(INDEX.read_text())
    base = INDEX.parents[len(Path(index["index"]).parts) - 1]
    for entries in (index["builds"]["mlp"], index["tools"]):
        entries.update({k: str(base / v) for k, v in entries.items() if k != "model_name"})
    index["builds"]["mlp"]["hardware"] = "gone/riscv_rvv.yaml"
    (tmp_path / "perf").mkdir()
    copy = tmp_path / index["index"]
    copy.write_text(json.dumps(index))
    out = tmp_path / "out"
    assert explore.main(["mlp", str(space), "--index", str(copy), "--out", str(out)]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"explore: {copy}: the hardware it names: {tmp_path / 'gone/riscv_rvv.yaml'}: hardware not found"], err
    assert explore.main(["\x1b[31mmlp", str(space), "--index", str(INDEX), "--out", str(out)]) == 1
    err = capsys.readouterr().err
    assert "\x1b" not in err and "'\\x1b[31mmlp': not a pipeline of the zoo" in err, err
    assert not out.exists()


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_pricing_leaves_nothing_in_tmpdir_and_a_file_as_out_is_refused_first(tmp_path: Path, monkeypatch, capsys, jobs):
    # issue 80's probe: every run left one explore_zz_* directory per pricing worker in $TMPDIR
    # (an atexit handler a pool's worker never runs); a file as --out was a FileExistsError once
    # every variant was priced
    import tempfile

    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    space = _space(tmp_path, "axes:\n  l1.size_bytes: [16384, 32768]\nmeasure_top: 0\n")
    code, out = _run(tmp_path, space, "--jobs", jobs)
    assert code == 0 and (out / "explore.json").is_file()
    assert list(scratch.iterdir()) == []
    capsys.readouterr()
    (tmp_path / "file").write_text("mine")
    assert explore.main(["mlp", str(space), "--index", str(INDEX), "--out", str(tmp_path / "file")]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"explore: --out {tmp_path / 'file'}: exists and is not a directory"], err
    # a full disk: the --out the run made is not left behind (it was, empty)
    from common.files import OutputError

    def full(outputs):
        raise OutputError(f"{next(iter(outputs))}: cannot write the output: No space left on device")
    monkeypatch.setattr(explore, "write_together", full)
    assert explore.main(["mlp", str(space), "--index", str(INDEX), "--out", str(tmp_path / "new" / "out")]) == 1
    assert "No space left on device" in capsys.readouterr().err and not (tmp_path / "new" / "out").exists()


def test_the_allocator_sees_a_share_of_each_cache_and_prices_on_the_whole():
    from common import hardware as hwmod
    hw = hwmod.load_hardware(Path(explore.__file__).resolve().parent.parent / "analysis" / "hardware" / "riscv_rvv.yaml")
    view = explore.allocator_view(hw)
    for level, seen in zip(hw.memory, view.memory):
        share = explore.CACHE_CAPACITY_SHARE if level.role in hwmod.CACHE_ROLES else 1
        assert seen.size_bytes == int(level.size_bytes * share)
        assert (seen.read_bytes_per_cycle, seen.line_bytes) == (level.read_bytes_per_cycle, level.line_bytes)
    assert hw.level("l1").size_bytes == 32768  # the description itself is left alone


def test_a_linked_axis_moves_its_keys_together_and_is_checked(tmp_path: Path, capsys):
    import yaml
    space = _space(tmp_path, "axes:\n  l1.size_bytes+l2.size_bytes: [[16384, 540672], [131072, 425984]]\n"
                             "  dram.read_bytes_per_cycle: [2, 8]\n")
    axes, _ = explore.load_space(space)
    base_path = Path(explore.__file__).resolve().parent.parent / "analysis" / "hardware" / "riscv_rvv.yaml"
    found = explore.variants(yaml.safe_load(base_path.read_text()), axes, space)
    assert len(found) == 4
    sizes = {(hw.level("l1").size_bytes, hw.level("l2").size_bytes) for _, _, hw, _ in found}
    assert sizes == {(16384, 540672), (131072, 425984)}  # equal budgets, never crossed
    _, settings, _, _ = found[0]
    assert explore.axis_values(axes, settings) == ["16384+540672", "2"]
    bad = _space(tmp_path, "axes:\n  l1.size_bytes+l2.size_bytes: [[16384, 540672], 32768]\n")
    code, out = _run(tmp_path, bad)
    assert code != 0 and not out.exists()
    assert "a linked axis takes lists of 2 values" in capsys.readouterr().err


def test_pareto_keeps_exactly_the_undominated():
    rows = [{"variant": n, "predicted_cycles": c, "predicted_energy_pj": e, "sram_bytes": s}
            for n, c, e, s in [("a", 1, 5, 5), ("b", 5, 1, 5), ("c", 5, 5, 1), ("d", 5, 5, 5), ("e", 1, 5, 5)]]
    assert explore.pareto(rows) == {"a", "b", "c", "e"}


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q", "-p", "no:cacheprovider"]))
