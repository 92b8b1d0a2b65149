"""Output sets are all or nothing, and outputs get ordinary permissions."""

import os
import stat
import sys

import pytest

from common.files import atomic_write, write_together


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


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))
