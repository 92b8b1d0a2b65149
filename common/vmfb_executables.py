"""The HAL executables a vmfb embeds, read back from the file that ships.

IREE writes a vmfb as a ZIP archive (stored, not compressed): the module's FlatBuffer
(`module.fb`) and one entry per executable, its bytes padded to the archive's alignment. An
executable for the llvm-cpu backend is an ELF (IREE's embedded ELF, or a system library),
whose length is its section header table's end. These are the bytes the runtime loads, the
hal_runner runs under qemu, and perf/ measures (each compares sha256 with the others).

Since the members are stored, together they are never larger than the archive: a member that
says otherwise is refused before it is read, and members are read no further than they say (a
2 MB vmfb of deflated zeros was inflated to 4.3 GB before its sha256 was refused: issue 80).
"""

from __future__ import annotations

import hashlib
import io
import os
import struct
import zipfile
from pathlib import Path

ELF_MAGIC = b"\x7fELF"
# The zip methods zipfile inflates no further than asked (a bzip2 or LZMA member is inflated a
# whole chunk at a time, however far that goes): stored, and deflated as numpy's savez_compressed.
READ_BOUNDED = (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED)


class VmfbError(ValueError):
    """The file is not a vmfb with executables; the message names it."""


def elf_length(data: bytes) -> int:
    """The length of the ELF at the start of `data` (its section header table's end)."""
    if data[:4] != ELF_MAGIC or data[4] not in (1, 2) or data[5] != 1:
        raise VmfbError("not a little-endian ELF")
    if data[4] == 2:  # ELF64: e_shoff at 0x28, e_shentsize/e_shnum at 0x3A/0x3C
        shoff, = struct.unpack_from("<Q", data, 0x28)
        shentsize, shnum = struct.unpack_from("<HH", data, 0x3A)
    else:  # ELF32
        shoff, = struct.unpack_from("<I", data, 0x20)
        shentsize, shnum = struct.unpack_from("<HH", data, 0x2E)
    end = shoff + shentsize * shnum
    if end > len(data):
        raise VmfbError(f"ELF section headers end at {end}, past the entry's {len(data)} bytes")
    return end


def shown(name: str) -> str:
    """`name` (an archive member's, or any name read from a file) as a message may print it:
    quoted when it holds a control character, so that an escape sequence in it is shown, never
    obeyed by the terminal (a red "ALL CHECKS PASSED" hid the real reason: issue 80)."""
    return name if name.isprintable() else repr(name)


def _members(vmfb: Path, archive: zipfile.ZipFile, size: int) -> dict[str, bytes]:
    """Every member but module.fb, read: each checked against what is left of the archive's
    `size` bytes before it is read, and read no further than its declared size."""
    entries, left = {}, size
    for info in archive.infolist():
        if info.filename == "module.fb":
            continue
        if info.compress_type not in READ_BOUNDED:
            raise VmfbError(f"{vmfb}: member {shown(info.filename)} is compressed with zip method {info.compress_type}: "
                            "IREE stores a vmfb's members uncompressed, so this is no vmfb it wrote")
        if info.file_size > left:
            others = f" after {size - left} B of other members" if left < size else ""
            raise VmfbError(f"{vmfb}: member {shown(info.filename)} is {info.file_size} B uncompressed{others}, "
                            f"more than the archive's {size} B: IREE stores a vmfb's members uncompressed, so "
                            "this is no vmfb it wrote")
        with archive.open(info) as f:
            body = f.read(info.file_size)  # bounded, whatever the member's data would inflate to
        if len(body) != info.file_size:
            raise VmfbError(f"{vmfb}: member {shown(info.filename)} ends after {len(body)} of the "
                            f"{info.file_size} B it declares")
        left -= info.file_size
        entries[info.filename] = body
    return entries


def embedded_executables(vmfb: Path, data: bytes | None = None) -> dict[str, bytes]:
    """Archive entry name -> the executable's bytes, for every ELF executable in `vmfb` (or in
    `data`, its bytes already read: the very bytes a caller then loads)."""
    try:
        size = os.stat(vmfb).st_size if data is None else len(data)
        with zipfile.ZipFile(vmfb if data is None else io.BytesIO(data)) as archive:
            entries = _members(vmfb, archive, size)
    except (OSError, EOFError, zipfile.BadZipFile, NotImplementedError, RuntimeError) as err:
        # NotImplementedError: a compression zipfile lacks; RuntimeError: an encrypted member.
        raise VmfbError(f"{vmfb}: not a vmfb archive: {err}") from None
    out = {}
    for name, data in sorted(entries.items()):
        if data[:4] != ELF_MAGIC:
            continue
        try:
            out[name] = data[:elf_length(data)]
        except VmfbError as err:
            raise VmfbError(f"{vmfb}: {shown(name)}: {err}") from None
    if not out:
        raise VmfbError(f"{vmfb}: embeds no ELF executable")
    return out


def sha256_set(executables: dict[str, bytes] | dict[str, str]) -> list[str]:
    """The sorted sha256s of executables given as bytes or as hex digests (names differ between
    IREE's dump and the archive: compare the bytes)."""
    return sorted(v if isinstance(v, str) else hashlib.sha256(v).hexdigest() for v in executables.values())
