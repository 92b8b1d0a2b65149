"""common/vmfb_executables.py: a vmfb's ELF executables read back; an archive whose members
inflate past its own size (IREE stores them) is refused before they are read (issue 80: a 2 MB
vmfb was inflated to 4.3 GB), and a member's name is printed quoted when it could repaint the line."""

import io
import os
import struct
import sys
import zipfile

import pytest

from common import vmfb_executables as ve


def _elf(body: int = 64) -> bytes:
    """A little-endian ELF64 whose section header table (one 64 B entry) ends at 64 + body."""
    head = bytearray(64)
    head[:6] = ve.ELF_MAGIC + bytes([2, 1])
    struct.pack_into("<Q", head, 0x28, body)  # e_shoff
    struct.pack_into("<HH", head, 0x3A, 64, 1)  # e_shentsize, e_shnum
    return bytes(head) + bytes(body)


def _archive(members: dict[str, tuple[bytes, int]]) -> bytes:
    """A zip of `members` (name -> (bytes, compression)), module.fb first and stored, as IREE writes."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("module.fb", b"\0" * 64, compress_type=zipfile.ZIP_STORED)
        for name, (data, how) in members.items():
            z.writestr(name, data, compress_type=how)
    return buf.getvalue()


@pytest.fixture
def inflated(monkeypatch) -> list[int]:
    """Bytes handed out by every zip member read during the test."""
    seen = [0]
    read = zipfile.ZipExtFile.read

    def counting(self, n=-1):
        data = read(self, n)
        seen[0] += len(data)
        return data
    monkeypatch.setattr(zipfile.ZipExtFile, "read", counting)
    return seen


def test_a_stored_vmfb_yields_its_executables(tmp_path):
    elf = _elf()
    path = tmp_path / "m.vmfb"
    path.write_bytes(_archive({"_const.bin": (b"w" * 100, zipfile.ZIP_STORED),
                               "a.so": (elf + b"\0" * 32, zipfile.ZIP_STORED)}))  # padded to the alignment
    assert ve.embedded_executables(path) == {"a.so": elf}
    assert ve.embedded_executables(path, path.read_bytes()) == {"a.so": elf}


def test_a_member_inflating_past_the_archive_is_refused_unread(tmp_path, inflated):
    """64 MiB of zeros deflate to 64 KB: the member says so in its header, and is never read."""
    path = tmp_path / "bomb.vmfb"
    path.write_bytes(_archive({"a.so": (_elf(), zipfile.ZIP_STORED),
                               "b.so": (bytes(64 << 20), zipfile.ZIP_DEFLATED)}))
    size = path.stat().st_size
    assert size < 1 << 20
    with pytest.raises(ve.VmfbError) as err:
        ve.embedded_executables(path)
    assert str(err.value).startswith(f"{path}: member b.so is {64 << 20} B uncompressed after 128 B of other "
                                     f"members, more than the archive's {size} B: "), err.value
    assert inflated[0] <= 128, inflated[0]


def test_members_that_together_inflate_past_the_archive_are_refused(tmp_path, inflated):
    """Each member alone fits the archive (overlapping or deflated members can each say so); together
    they cannot, since stored members share its bytes."""
    path = tmp_path / "bomb.vmfb"
    zeros = bytes(150_000)
    path.write_bytes(_archive({"a.bin": (os.urandom(200_000), zipfile.ZIP_STORED),
                               "b.bin": (zeros, zipfile.ZIP_DEFLATED), "c.bin": (zeros, zipfile.ZIP_DEFLATED)}))
    with pytest.raises(ve.VmfbError, match=r"member [bc].bin is 150000 B uncompressed after \d+ B of other members, "
                                           r"more than the archive's \d+ B"):
        ve.embedded_executables(path)
    assert inflated[0] <= 350_000, inflated[0]


@pytest.mark.parametrize("how", [zipfile.ZIP_BZIP2, zipfile.ZIP_LZMA])
def test_a_member_zipfile_cannot_read_in_bounded_steps_is_refused_unread(tmp_path, inflated, how):
    """bzip2 and LZMA are inflated a whole chunk at a time, past any declared size: no IREE vmfb has them."""
    path = tmp_path / "m.vmfb"
    path.write_bytes(_archive({"a.so": (_elf(), how)}))
    with pytest.raises(ve.VmfbError, match=f"^{path}: member a.so is compressed with zip method {how}: "):
        ve.embedded_executables(path)
    assert inflated[0] == 0, inflated[0]


def test_a_member_name_with_control_characters_is_quoted(tmp_path):
    """A name is the archive's to choose: an escape sequence in it is shown, never obeyed."""
    name = "\x1b[2K\r\x1b[32mALL CHECKS PASSED\x1b[0m.so"
    path = tmp_path / "m.vmfb"
    path.write_bytes(_archive({name: (_elf()[:64], zipfile.ZIP_STORED)}))  # headers past its end
    with pytest.raises(ve.VmfbError) as err:
        ve.embedded_executables(path)
    msg = str(err.value)
    assert msg.isprintable() and msg.startswith(f"{path}: {name!r}: ELF section headers end at 128"), msg


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q", "-p", "no:cacheprovider"]))
