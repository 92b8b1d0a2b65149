"""The HAL executables a vmfb embeds, read back from the file that ships.

IREE writes a vmfb as a ZIP archive (stored, not compressed): the module's FlatBuffer
(`module.fb`) and one entry per executable, its bytes padded to the archive's alignment. An
executable for the llvm-cpu backend is an ELF (IREE's embedded ELF, or a system library),
whose length is its section header table's end. These are the bytes the runtime loads, the
hal_runner runs under qemu, and perf/ measures (each compares sha256 with the others).
"""

from __future__ import annotations

import hashlib
import io
import struct
import zipfile
from pathlib import Path

ELF_MAGIC = b"\x7fELF"


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


def embedded_executables(vmfb: Path, data: bytes | None = None) -> dict[str, bytes]:
    """Archive entry name -> the executable's bytes, for every ELF executable in `vmfb` (or in
    `data`, its bytes already read: the very bytes a caller then loads)."""
    try:
        with zipfile.ZipFile(vmfb if data is None else io.BytesIO(data)) as archive:
            entries = {i.filename: archive.read(i) for i in archive.infolist() if i.filename != "module.fb"}
    except (OSError, zipfile.BadZipFile) as err:
        raise VmfbError(f"{vmfb}: not a vmfb archive: {err}") from None
    out = {}
    for name, data in sorted(entries.items()):
        if data[:4] != ELF_MAGIC:
            continue
        try:
            out[name] = data[:elf_length(data)]
        except VmfbError as err:
            raise VmfbError(f"{vmfb}: {name}: {err}") from None
    if not out:
        raise VmfbError(f"{vmfb}: embeds no ELF executable")
    return out


def sha256_set(executables: dict[str, bytes] | dict[str, str]) -> list[str]:
    """The sorted sha256s of executables given as bytes or as hex digests (names differ between
    IREE's dump and the archive: compare the bytes)."""
    return sorted(v if isinstance(v, str) else hashlib.sha256(v).hexdigest() for v in executables.values())
