"""Output sets are all or nothing, and outputs get ordinary permissions; outputs never alias
inputs or each other; a directory to fill is new or empty; an unwritable output is named."""

import os
import stat
import sys

import pytest

from common.files import (OutputClash, OutputError, atomic_write, check_new_directory, check_outputs,
                          write_together)


def _listing(d):
    return sorted(p.name for p in d.iterdir())


def test_outputs_get_ordinary_permissions(tmp_path):
    old = os.umask(0o022)
    try:
        atomic_write(tmp_path / "a.json", "{}")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "a.json").stat().st_mode) == 0o644


def test_failed_write_leaves_old_outputs_and_no_new_ones(tmp_path):
    (tmp_path / "report.json").write_text("old report")
    blocker = tmp_path / "not_a_dir"
    blocker.write_text("a file where a directory should be")
    with pytest.raises(OSError):
        write_together({tmp_path / "report.json": "new report",
                        tmp_path / "configs.mlir": "new configs",
                        blocker / "out.vmfb": b"new vmfb"})
    assert (tmp_path / "report.json").read_text() == "old report"
    assert _listing(tmp_path) == ["not_a_dir", "report.json"]


def test_failed_rename_restores_the_outputs_already_renamed(tmp_path):
    (tmp_path / "report.json").write_text("old report")
    (tmp_path / "out.vmfb").mkdir()  # renaming a file over a directory fails
    with pytest.raises(OSError):
        write_together({tmp_path / "report.json": "new report",
                        tmp_path / "configs.mlir": "new configs",
                        tmp_path / "out.vmfb": b"new vmfb"})
    assert (tmp_path / "report.json").read_text() == "old report"
    assert _listing(tmp_path) == ["out.vmfb", "report.json"]


def test_success_writes_every_output(tmp_path):
    write_together({tmp_path / "a": "1", tmp_path / "sub" / "b": b"2"})
    assert (tmp_path / "a").read_text() == "1" and (tmp_path / "sub" / "b").read_bytes() == b"2"
    assert _listing(tmp_path) == ["a", "sub"]


def test_an_output_aliasing_an_input_is_named_with_both_paths(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "m.mlir").write_text("module")
    os.link(tmp_path / "m.mlir", tmp_path / "hard.mlir")
    (tmp_path / "soft.mlir").symlink_to(tmp_path / "m.mlir")
    for alias in ("m.mlir", "./m.mlir", str(tmp_path / "m.mlir"), "sub/../m.mlir", "hard.mlir", "soft.mlir"):
        with pytest.raises(OutputClash, match=rf"^--out {alias}: the same file as --module m.mlir: "):
            check_outputs({"--out": alias}, {"--module": "m.mlir"})
    check_outputs({"--out": "n.mlir"}, {"--module": "m.mlir", "--analysis": None})


def test_two_outputs_on_one_path_are_refused(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(OutputClash, match="^--out-md ./r.json: the same file as --out-json r.json"):
        check_outputs({"--out-json": "r.json", "--out-md": "./r.json"})
    with pytest.raises(OutputClash, match="--hardware"):
        check_outputs({"--out": "h.yaml"}, {"--hardware": ["a.yaml", "h.yaml"]})
    (tmp_path / "a").write_text("old")
    os.link(tmp_path / "a", tmp_path / "b")
    with pytest.raises(OutputClash):
        write_together({tmp_path / "a": "1", tmp_path / "b": "2"})
    assert (tmp_path / "a").read_text() == "old" and _listing(tmp_path) == ["a", "b"]


def test_a_directory_to_fill_is_new_or_empty(tmp_path):
    check_new_directory(tmp_path / "new", "--keep-temps")
    (tmp_path / "empty").mkdir()
    check_new_directory(tmp_path / "empty", "--keep-temps")
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("mine")
    with pytest.raises(OutputClash, match="full: directory exists and is not empty"):
        check_new_directory(tmp_path / "full", "--keep-temps")
    (tmp_path / "file").write_text("mine")
    with pytest.raises(OutputClash, match="file: exists and is not a directory"):
        check_new_directory(tmp_path / "file", "--keep-temps")


def test_an_output_that_cannot_be_written_is_named(tmp_path):
    (tmp_path / "file").write_text("a file")
    (tmp_path / "dir").mkdir()
    for out, why in ((tmp_path / "file" / "out.json", "file is not a directory"),
                     (tmp_path / "dir", "is a directory")):
        with pytest.raises(OutputError, match=f"^{out}: cannot write the output: .*{why}"):
            write_together({tmp_path / "ok.json": "1", out: "2"})
    assert _listing(tmp_path) == ["dir", "file"]


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))
