"""`<name>.layout.json`: what running each dispatch of a compiled module needs, written by the
compile that made it (codegen.compile `--out-layout`) and read by everyone who runs or prices a
dispatch (perf.measure, the dispatch tests, the code model), so none of them compiles it again.

Per dispatch (a HAL executable export): its whole workgroup grid, push constants and binding
ranges as the host program calls it, how often one call of the model calls it, each binding
subspan (offset, access, storage shape and element type, and a data-tiled operand's packed
layout), and its root op's kind and multiply-accumulates. The executables themselves are the
vmfb's own bytes (common.vmfb_executables); `executables_sha256` names the ones this layout
describes, and a reader compares them with the vmfb it runs.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from common.errors import validation_error_where

LAYOUT_SCHEMA_VERSION = 1

DTYPES = {
    "f32": np.float32, "f16": np.float16, "f64": np.float64,
    "i8": np.int8, "i16": np.int16, "i32": np.int32, "i64": np.int64, "i1": np.int8,
}


class DriveError(Exception):
    """A dispatch cannot be driven; the message is the reason."""


class LayoutError(ValueError):
    """A layout file is unreadable or not a layout; the message names it."""


def packed_tiling(shape: tuple[int, ...], dims, tiles, perm) -> tuple[list[int], list[int], list[int]]:
    """(padded shape, shape with each tiled dim split into (outer, tile), axes order of the packed
    tensor) of tensor.pack's layout: outer dims in `perm` order, then the tiles in `dims` order."""
    padded = list(shape)
    for d, t in zip(dims, tiles):
        padded[d] = -(-padded[d] // t) * t
    split, outer, inner = [], {}, {}
    for i, n in enumerate(padded):
        outer[i] = len(split)
        if i in dims:
            t = tiles[list(dims).index(i)]
            split += [n // t, t]
            inner[i] = outer[i] + 1
        else:
            split.append(n)
    return padded, split, [outer[i] for i in perm] + [inner[d] for d in dims]


def pack(logical: np.ndarray, dims, tiles, perm) -> np.ndarray:
    """tensor.pack (IREE's data-tiling layout): pads each dim in `dims` with zeros to a multiple of
    its tile, splits it into (outer, tile), orders the outer dims by `perm` and puts the tiles last."""
    padded, split, order = packed_tiling(logical.shape, dims, tiles, perm)
    buf = np.zeros(padded, dtype=logical.dtype)
    buf[tuple(slice(0, n) for n in logical.shape)] = logical
    return buf.reshape(split).transpose(order)


def unpack(stored: np.ndarray, shape: tuple[int, ...], dims, tiles, perm) -> np.ndarray:
    """tensor.unpack: the inverse of `pack` (padding dropped) from the packed tensor's flat data."""
    padded, split, order = packed_tiling(shape, dims, tiles, perm)
    packed = stored.reshape([split[a] for a in order])
    return packed.transpose(np.argsort(order)).reshape(padded)[tuple(slice(0, n) for n in shape)]


@dataclass
class Subspan:
    binding: int
    offset: int
    access: str  # readonly | writeonly | readwrite
    shape: tuple[int, ...]
    dtype: np.dtype
    # A data-tiled operand: (innerDimsPos, innerTileSizes, outerDimsPerm) of its layout and the
    # logical tensor's shape; None for a plain row-major one.
    encoding: tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]] | None = None
    logical_shape: tuple[int, ...] | None = None

    @property
    def nbytes(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64)) * self.dtype.itemsize

    def store(self, logical: np.ndarray) -> np.ndarray:
        """|logical| as this binding holds it (packed when encoded), flat."""
        if self.encoding is None:
            return np.ascontiguousarray(logical).reshape(-1)
        if tuple(logical.shape) != self.logical_shape:
            raise DriveError(f"binding {self.binding}: tensor of shape {list(logical.shape)} for an encoded "
                             f"operand of shape {list(self.logical_shape)}")
        return np.ascontiguousarray(pack(logical, *self.encoding)).reshape(-1)

    def load(self, stored: np.ndarray) -> np.ndarray:
        """The logical tensor of this binding's flat contents (unpacked when encoded)."""
        if self.encoding is None:
            return stored
        return unpack(stored, self.logical_shape, *self.encoding)


@dataclass
class Dispatch:
    export: str
    workgroup_count: tuple[int, int, int] | None = None
    constants: list[int] = field(default_factory=list)
    binding_lengths: list[int] = field(default_factory=list)
    subspans: list[Subspan] = field(default_factory=list)
    error: str | None = None  # why it cannot be driven (then the fields above may be missing)
    calls: int = 0  # dispatch sites in the program's functions: what one invocation runs
    initializer_calls: int = 0  # sites in util.initializer (once at load, e.g. packing weights)
    # The root op as the analysis reads it (analysis.dispatches), None when it has none.
    kind: str | None = None
    macs: int = 0  # multiply-accumulates of one call (0 for a kind without them)
    mac_element_bits: int = 32  # the multiplicands' element width


@dataclass
class ModuleLayout:
    target: str  # the IREE target's name
    executables_sha256: dict[str, str]  # the described executables: file name -> sha256
    dispatches: dict[str, Dispatch]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class _SubspanModel(_Strict):
    binding: int = Field(ge=0)
    offset: int = Field(ge=0)
    access: str
    shape: list[int]
    dtype: str
    encoding: tuple[list[int], list[int], list[int]] | None = None
    logical_shape: list[int] | None = None


# The runner takes each workgroup count as a uint32: -1 ran 4,294,967,295 workgroups under qemu
# (issue 80), so a count outside it is no layout; a binding's length is a byte count.
_WorkgroupCount = Annotated[int, Field(ge=0, le=0xFFFFFFFF)]


class _DispatchModel(_Strict):
    workgroup_count: tuple[_WorkgroupCount, _WorkgroupCount, _WorkgroupCount] | None = None
    constants: list[int] = []
    binding_lengths: list[Annotated[int, Field(ge=0)]] = []
    subspans: list[_SubspanModel] = []
    error: str | None = None
    calls: int = Field(ge=0)
    initializer_calls: int = Field(ge=0)
    kind: str | None = None
    macs: int = Field(ge=0)
    mac_element_bits: int = Field(gt=0)


class _LayoutModel(_Strict):
    schema_version: int = LAYOUT_SCHEMA_VERSION
    target: str
    executables_sha256: dict[str, str]
    dispatches: dict[str, _DispatchModel]


def dump_layout(layout: ModuleLayout) -> str:
    """The layout file's text (sorted keys, one line per field: reviewable, byte-stable)."""
    doc = {"schema_version": LAYOUT_SCHEMA_VERSION, "target": layout.target,
           "executables_sha256": dict(sorted(layout.executables_sha256.items())),
           "dispatches": {name: {
               "workgroup_count": list(d.workgroup_count) if d.workgroup_count is not None else None,
               "constants": d.constants, "binding_lengths": d.binding_lengths,
               "subspans": [{"binding": s.binding, "offset": s.offset, "access": s.access, "shape": list(s.shape),
                             "dtype": str(s.dtype),
                             "encoding": [list(x) for x in s.encoding] if s.encoding is not None else None,
                             "logical_shape": list(s.logical_shape) if s.logical_shape is not None else None}
                            for s in d.subspans],
               "error": d.error, "calls": d.calls, "initializer_calls": d.initializer_calls,
               "kind": d.kind, "macs": d.macs, "mac_element_bits": d.mac_element_bits}
               for name, d in sorted(layout.dispatches.items())}}
    return json.dumps(doc, indent=1, sort_keys=True) + "\n"


def _is_plain_file_name(name: str) -> bool:
    return (bool(name) and name not in (".", "..") and "/" not in name and "\\" not in name
            and "\0" not in name and name.isprintable() and len(name.encode()) <= 255)


def load_layout(path: Path) -> ModuleLayout:
    """The layout at `path`; LayoutError naming it when it is missing or not a layout."""
    try:
        model = _LayoutModel.model_validate_json(Path(path).read_text())
    except OSError as err:
        raise LayoutError(f"{path}: cannot read the layout ({err.strerror or err})") from None
    except ValidationError as err:  # its first line was "1 validation error for _LayoutModel": no field
        where, why = validation_error_where(err)
        raise LayoutError(f"{path}: not a dispatch layout (codegen.compile --out-layout): {where}: {why}") from None
    except UnicodeDecodeError as err:
        raise LayoutError(f"{path}: not a dispatch layout (codegen.compile --out-layout): "
                          f"{str(err).splitlines()[0]}") from None
    if model.schema_version != LAYOUT_SCHEMA_VERSION:
        raise LayoutError(f"{path}: layout schema {model.schema_version}, this reader knows {LAYOUT_SCHEMA_VERSION}")
    for name in model.executables_sha256:
        # Readers write each executable to <scratch>/<name>: a path would write outside it (issue 80).
        if not _is_plain_file_name(name):
            raise LayoutError(f"{path}: executable name {name!r} is not a plain file name (no directory, "
                              "no '..', printable): a layout names files inside one directory")
    dispatches = {}
    for name, d in model.dispatches.items():
        try:
            subspans = [Subspan(s.binding, s.offset, s.access, tuple(s.shape), np.dtype(s.dtype),
                                tuple(tuple(x) for x in s.encoding) if s.encoding is not None else None,
                                tuple(s.logical_shape) if s.logical_shape is not None else None)
                        for s in d.subspans]
        except TypeError as err:
            raise LayoutError(f"{path}: {name}: {err}") from None
        dispatches[name] = Dispatch(name, tuple(d.workgroup_count) if d.workgroup_count is not None else None,
                                    list(d.constants), list(d.binding_lengths), subspans, d.error, d.calls,
                                    d.initializer_calls, d.kind, d.macs, d.mac_element_bits)
    return ModuleLayout(model.target, dict(model.executables_sha256), dispatches)
