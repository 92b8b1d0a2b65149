"""Output sets are all or nothing, and outputs get ordinary permissions; outputs never alias
inputs or each other; a directory to fill is new or empty; an unwritable output is named."""

import os
import re
import socket
import stat
import sys

import pytest

from common.files import (InputError, OutputClash, OutputError, atomic_write, check_input, check_new_directory,
                          check_outputs, write_together)


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


def _special_files(tmp_path) -> dict[str, object]:
    """Nodes no output may replace, each with its kind: a FIFO, a socket, and (where this user
    may create one: root) a character device like /dev/null, made here, never the system's."""
    made = {}
    os.mkfifo(tmp_path / "fifo")
    made["fifo"] = "a FIFO"
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(tmp_path / "sock"))
    sock.close()
    made["sock"] = "a socket"
    try:
        os.mknod(tmp_path / "null", stat.S_IFCHR | 0o666, os.makedev(1, 3))
        made["null"] = "a character device"
    except PermissionError:
        pass
    return made


def _kinds(tmp_path) -> dict[str, bool]:
    return {p.name: stat.S_ISREG(p.lstat().st_mode) for p in tmp_path.iterdir()}


def test_an_existing_fifo_device_or_socket_is_never_replaced(tmp_path, monkeypatch):
    """Issue 62: an output naming a FIFO or a device node was renamed over it (as root, `--out-vmfb
    /dev/null` would replace the system's /dev/null); now it is refused before anything is written,
    directly or through a symlink, and check_outputs refuses it before a CLI does any work."""
    monkeypatch.chdir(tmp_path)
    made = _special_files(tmp_path)
    (tmp_path / "to_fifo").symlink_to("fifo")
    before = _kinds(tmp_path)
    for name, kind in [*made.items(), ("to_fifo", "a FIFO")]:
        with pytest.raises(OutputError, match=f"^{re.escape(str(tmp_path / name))}: is {kind}, not a regular file: refusing"):
            write_together({tmp_path / "ok.json": "1", tmp_path / name: "2"})
        with pytest.raises(OutputError, match=f"^--out-report {name}: is {kind}, not a regular file: refusing"):
            check_outputs({"--out-vmfb": "ok.vmfb", "--out-report": name})
    assert _kinds(tmp_path) == before  # every node as it was, no ok.json, no temporaries


def test_a_symlink_to_a_regular_file_is_still_replaced(tmp_path):
    """What a symlinked output did before issue 62's check: the link is replaced by the new file,
    the file it named is untouched; a dangling symlink is replaced too."""
    (tmp_path / "old").write_text("old")
    (tmp_path / "link").symlink_to("old")
    (tmp_path / "dangling").symlink_to("gone")
    write_together({tmp_path / "link": "new", tmp_path / "dangling": "new"})
    assert (tmp_path / "old").read_text() == "old"
    for name in ("link", "dangling"):
        assert not (tmp_path / name).is_symlink() and (tmp_path / name).read_text() == "new"


def test_check_input_names_what_the_path_is(tmp_path):
    made = _special_files(tmp_path)
    (tmp_path / "dir").mkdir()
    (tmp_path / "ok.yaml").write_text("a: 1")
    assert check_input(str(tmp_path / "ok.yaml"), "hardware file") == tmp_path / "ok.yaml"
    for name, kind in made.items():
        with pytest.raises(InputError, match=f"^{re.escape(str(tmp_path / name))}: is {kind}, not a regular file$"):
            check_input(tmp_path / name, "hardware file")
    with pytest.raises(InputError, match=f"^{re.escape(str(tmp_path / 'dir'))}: is a directory, not a hardware file$"):
        check_input(tmp_path / "dir", "hardware file")
    with pytest.raises(InputError, match=f"^{re.escape(str(tmp_path / 'gone'))}: hardware file not found$"):
        check_input(tmp_path / "gone", "hardware file")


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))
