"""Integrity by content (issue 62): a committed record's figures carry the sha256 its tool wrote.

A tile record (tuning/records/) with one candidate's memory_aware_cycles edited by hand, its
formatting kept, was replayed (the tuned build switched to the slower candidate) and passed
//tuning:records_test; a strategy record edited to choose another build, with the matching line
of recorded.bzl edited too, shipped the slower build and passed //tuning:strategy_records_test.
Each is refused now, by the replay and by the checks, in one line naming the record and the
command that refreshes it; a line of recorded.bzl that disagrees with its record is named too.
"""

import argparse
import re
import shutil
import sys
from pathlib import Path

import pytest

from choice import records
from tuning import check

ROOT = Path(__file__).resolve().parent.parent
RECORDS = ROOT / "tuning" / "records"
STRATEGIES = ROOT / "tuning" / "strategies"


def _tamper_tile(path: Path) -> None:
    """The issue's edit: one candidate's memory_aware_cycles set to 100, the formatting kept."""
    text = path.read_text()
    edited, n = re.subn(r'("memory_aware_cycles": )\d+', r"\g<1>100", text, count=1)
    assert n == 1 and edited != text
    path.write_text(edited)


def _tamper_strategy(path: Path, bzl: Path | None = None) -> None:
    """The issue's edit: mlp_batch32_riscv made to choose tuned (its figures made up to fit), and
    the matching line of recorded.bzl edited to say so."""
    text = path.read_text()
    edited = text.replace('"chosen": "datatiling"', '"chosen": "tuned"', 1).replace('"tuned": 2393904', '"tuned": 1000', 1)
    assert edited != text
    path.write_text(edited)
    if bzl is not None:
        bzl.write_text(bzl.read_text().replace('"mlp_batch32_riscv": "datatiling"', '"mlp_batch32_riscv": "tuned"'))


def test_every_committed_record_carries_the_hash_of_its_figures():
    """The one-off migration: each committed record's hash is what the tool's function gives."""
    tiles, strategies = sorted(RECORDS.glob("*.json")), sorted(STRATEGIES.glob("*.json"))
    assert tiles and strategies
    for path in tiles:
        record = records.load_record(path)  # checks figures_sha256
        assert record.figures_sha256 == records.figures_sha256(record)
        assert path.read_text() == records.dump_record(record)
    for path in strategies:
        record = records.load_strategy_record(path)  # checks choice_sha256
        assert record.choice_sha256 == records.choice_sha256(record)
        assert path.read_text() == records.dump_strategy_record(record)


def test_a_tile_record_figure_edited_by_hand_is_refused(tmp_path):
    record = tmp_path / "mlp_riscv.json"
    shutil.copy(RECORDS / "mlp_riscv.json", record)
    _tamper_tile(record)
    with pytest.raises(records.RecordError) as err:
        records.load_record(record)
    line = str(err.value)
    assert "\n" not in line and str(record) in line and "do not match its figures_sha256" in line
    assert "`bazel run //tools:tune -- //models:mlp_riscv` rewrites it" in line


def test_the_replay_refuses_an_edited_tile_record(tmp_path):
    """choice.tune reads a committed record through load_record before comparing keys: an edited
    one ends the build with its one line (tune's CLI reports RecordError), never replayed."""
    from choice.tune import _from_record

    record = tmp_path / "mlp_riscv.json"
    shutil.copy(RECORDS / "mlp_riscv.json", record)
    _tamper_tile(record)
    with pytest.raises(records.RecordError, match="figures_sha256"):
        _from_record(argparse.Namespace(record=record, record_name="mlp_riscv"), None, None, "riscv_rvv", "p670")


def test_records_test_refuses_an_edited_tile_record(tmp_path, capsys):
    committed, built = tmp_path / "committed", tmp_path / "built"
    committed.mkdir()
    built.mkdir()
    for path in RECORDS.glob("*.json"):  # the tree's records are the committed ones (a replaying build's)
        shutil.copy(path, committed / path.name)
        shutil.copy(path, built / f"{path.stem}{check.BUILT_SUFFIX}")
    argv = ["keys", "--committed", *map(str, sorted(committed.glob("*.json"))),
            "--built", *map(str, sorted(built.glob("*.json")))]
    assert check.main(argv) == 0, capsys.readouterr().err
    capsys.readouterr()
    _tamper_tile(committed / "mlp_riscv.json")
    assert check.main(argv) == 1
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith(f"{committed / 'mlp_riscv.json'}: its figures do not match its figures_sha256")
    assert "`bazel run //tools:tune -- //models:mlp_riscv`" in lines[0]


def test_a_directory_given_for_the_committed_records_is_named(tmp_path, capsys):
    """Own probe (issue 62): `--committed tuning/records` (the directory, not its files) said the
    directory was an orphan record to delete."""
    built = tmp_path / f"mlp_riscv{check.BUILT_SUFFIX}"
    shutil.copy(RECORDS / "mlp_riscv.json", built)
    for what in ("keys", "strategies"):
        extra = ["--recorded-bzl", str(tmp_path / "recorded.bzl")] if what == "strategies" else []
        assert check.main([what, "--committed", str(tmp_path), "--built", str(built), *extra]) == 1
        lines = capsys.readouterr().err.splitlines()
        assert len(lines) == 1 and f"{tmp_path}: not a " in lines[0] and "(a directory)" in lines[0], lines


def test_a_record_without_its_hash_is_refused(tmp_path):
    record = tmp_path / "mlp_riscv.json"
    record.write_text(re.sub(r' "figures_sha256": "[0-9a-f]+",\n', "", (RECORDS / "mlp_riscv.json").read_text()))
    with pytest.raises(records.RecordError, match="no figures_sha256"):
        records.load_record(record)


@pytest.mark.parametrize("edit, message", [
    (lambda text: text[:3000], "not a tuning record: not JSON: Unterminated string"),
    (lambda text: '{"pipeline": "other",' + text[1:], "not a tuning record: key 'pipeline' given twice in one object"),
])
def test_a_truncated_or_doubled_record_is_one_plain_line(tmp_path, edit, message):
    """Issue 62, own probe: a truncated record was refused with pydantic's whole report in the line
    ("1 validation error for TuningRecord ... For further information visit ..."), and a key given
    twice was read as its last value (the seal does not cover `pipeline`)."""
    record = tmp_path / "mlp_riscv.json"
    record.write_text(edit((RECORDS / "mlp_riscv.json").read_text()))
    with pytest.raises(records.RecordError) as err:
        records.load_record(record)
    why = str(err.value)
    assert why.startswith(f"{record}: ") and message in why, why
    assert "validation error" not in why and "\n" not in why, why


def _strategy_tree(tmp_path):
    """Copies of the committed strategy records and recorded.bzl, and built records equal to them."""
    committed, built = tmp_path / "committed", tmp_path / "built"
    committed.mkdir()
    built.mkdir()
    for path in STRATEGIES.glob("*.json"):
        shutil.copy(path, committed / path.name)
        shutil.copy(path, built / f"{path.stem}{check.STRATEGY_SUFFIX}")
    bzl = committed / "recorded.bzl"
    shutil.copy(STRATEGIES / "recorded.bzl", bzl)
    argv = ["strategies", "--recorded-bzl", str(bzl), "--committed", *map(str, sorted(committed.glob("*.json"))),
            "--built", *map(str, sorted(built.glob("*.json")))]
    return committed, bzl, argv


def test_strategy_records_test_refuses_an_edited_record_and_its_bzl_line(tmp_path, capsys):
    committed, bzl, argv = _strategy_tree(tmp_path)
    assert check.main(argv) == 0, capsys.readouterr().err
    capsys.readouterr()
    _tamper_strategy(committed / "mlp_batch32_riscv.json", bzl)
    assert check.main(argv) == 1
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith(f"{committed / 'mlp_batch32_riscv.json'}: its figures do not match its choice_sha256")
    assert "`bazel run //tools:tune -- //models:mlp_batch32_riscv`" in lines[0]


def test_a_recorded_bzl_line_that_disagrees_with_its_record_is_named(tmp_path, capsys):
    _, bzl, argv = _strategy_tree(tmp_path)
    bzl.write_text(bzl.read_text().replace('"mlp_batch32_riscv": "datatiling"', '"mlp_batch32_riscv": "tuned"'))
    assert check.main(argv) == 1
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1, lines
    assert f"{bzl}: mlp_batch32_riscv ships 'tuned', but its record" in lines[0]
    assert "chose 'datatiling'" in lines[0]


def test_strategy_keys_test_names_a_stale_missing_or_orphan_record_and_its_refresh(tmp_path, capsys):
    """The fast tier's check (issue 76): keys alone, as choice.choose --out-key writes them."""
    import json

    committed, bzl, _ = _strategy_tree(tmp_path)
    keys = tmp_path / "keys"
    keys.mkdir()
    for path in sorted(committed.glob("*.json")):
        key = json.loads(path.read_text())["key"]
        (keys / f"{path.stem}{check.KEY_SUFFIX}").write_text(json.dumps(key))
    argv = lambda: ["strategy-keys", "--recorded-bzl", str(bzl), "--committed",
                    *map(str, sorted(committed.glob("*.json"))), "--built", *map(str, sorted(keys.glob("*.json")))]
    assert check.main(argv()) == 0, capsys.readouterr().err
    capsys.readouterr()
    # The tree's module moved (an import on another machine): stale, named with its refresh.
    stale = keys / f"mlp_batch32_riscv{check.KEY_SUFFIX}"
    key = json.loads(stale.read_text())
    stale.write_text(json.dumps(dict(key, module_sha256="0" * 64)))
    assert check.main(argv()) == 1
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1 and "mlp_batch32_riscv.json: stale, its key is not the tree's: module_sha256" in lines[0], lines
    assert "`bazel run //tools:tune -- //models:mlp_batch32_riscv` refreshes it" in lines[0]
    # No record for a built key, and a record no pipeline keys (an orphan).
    stale.rename(keys / f"new_model_riscv{check.KEY_SUFFIX}")
    assert check.main(argv()) == 1
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 2, lines
    assert lines[0].startswith("new_model_riscv: no strategy record committed")
    assert "mlp_batch32_riscv.json: no pipeline has this strategy record (an orphan)" in lines[1]


@pytest.mark.parametrize("bzl_text", [None, b"\x80\x81 not text"], ids=["missing", "binary"])
def test_a_missing_or_junk_recorded_bzl_is_one_line(tmp_path, capsys, bzl_text):
    """Issue 62: a missing recorded.bzl, or one that is not text, was a FileNotFoundError or
    UnicodeDecodeError traceback."""
    _, bzl, argv = _strategy_tree(tmp_path)
    bzl.unlink() if bzl_text is None else bzl.write_bytes(bzl_text)
    assert check.main(argv) == 1
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1, lines
    why = "cannot read recorded.bzl: No such file or directory" if bzl_text is None else \
        "not recorded.bzl: not UTF-8 text (byte 0)"
    assert lines[0] == f"tuning.check: {bzl}: {why}", lines[0]


def _agree_tree(tmp_path):
    """A replaying build's outputs of mlp_riscv (its record the committed one, an analysis with no
    dispatches) and `agree`'s argv with --perf perf.json."""
    from common.analysis_schema import Analysis, Summary

    record = tmp_path / "mlp_riscv_analysis.record.json"
    shutil.copy(RECORDS / "mlp_riscv.json", record)
    analysis = tmp_path / "mlp_riscv_analysis.analysis.json"
    analysis.write_text(Analysis(model="mlp", target="riscv_rvv", hardware="riscv_rvv", hardware_sha256="0" * 64,
                                 vector_lanes_f32=4, dispatches=[], summary=Summary.of([], 0)).model_dump_json())
    (tmp_path / "mlp_riscv_analysis.tune.md").write_text("")
    perf = tmp_path / "mlp_riscv_perf.perf.json"
    return perf, ["agree", "--committed", str(RECORDS / "mlp_riscv.json"), "--replayed", str(analysis),
                  str(tmp_path / "mlp_riscv_analysis.tune.md"), str(record), "--perf", str(perf)]


def test_a_missing_perf_report_is_one_line(tmp_path, capsys):
    """Issue 62: a 19-line FileNotFoundError traceback."""
    perf, argv = _agree_tree(tmp_path)
    assert check.main(argv) == 1
    lines = capsys.readouterr().err.splitlines()
    assert lines == [f"tuning.check: {perf}: cannot read a perf report: No such file or directory"]


def test_a_perf_report_of_another_schema_is_one_line(tmp_path, capsys):
    """Issue 62: a 46-line pydantic traceback."""
    perf, argv = _agree_tree(tmp_path)
    perf.write_text('{"schema_version": 1, "runs": "none"}')
    assert check.main(argv) == 1
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith(f"tuning.check: {perf}: not a perf report: field '"), lines[0]


def test_the_replay_refuses_an_edited_strategy_record(tmp_path):
    """choice.choose reads the committed strategy record through load_strategy_record before
    comparing keys: an edited one ends the build (its CLI reports RecordError), never shipped."""
    from choice.choose import _replay

    record = tmp_path / "mlp_batch32_riscv.json"
    shutil.copy(STRATEGIES / "mlp_batch32_riscv.json", record)
    _tamper_strategy(record)
    with pytest.raises(records.RecordError, match="choice_sha256"):
        _replay(record, None, {})


def test_the_tool_seals_what_it_writes_and_refuses_to_reseal_changed_figures():
    record = records.load_record(RECORDS / "mlp_riscv.json")
    d = next(iter(record.results))
    c = next(c for c, r in record.results[d].items() if r.measured is not None)
    changed = record.model_copy(deep=True)
    changed.results[d][c].measured.memory_aware_cycles = 100
    with pytest.raises(records.RecordError, match="changed after its figures_sha256 was computed"):
        records.dump_record(changed)
    assert '"figures_sha256"' in records.dump_record(changed.model_copy(update={"figures_sha256": None}))


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q", "-p", "no:cacheprovider"]))
