"""Runs a compiled module with iree.runtime (local-task) on the inputs of an .npz.

    python -m runtime.run <module.vmfb> <input.npz> [--runs N] [--check] [--function F]
        [--manifest M | --no-manifest]

Reads `<module>.manifest.json` next to the vmfb (written by runtime/hal_module), or --manifest,
and runs the vmfb only if it is the one that manifest describes: named by it, its sha256 the one
it records, and the executables it embeds the ones it records (a flipped byte in the weights
would run and give wrong outputs; one in an executable, crash). A vmfb without a manifest is
refused unless --no-manifest says to run it unchecked.
Only host-target modules can run here: there is no riscv64 IREE runtime on this machine.
--check compares output_<i> of the npz with the module's i-th result (a structured model's
golden names each by its place, `names`); it refuses a NaN or Inf input and a tolerance that is
negative, not finite, or so large that an all-zero output would pass (rtol >= 1, atol > 1, or atol
not below a golden output's largest value). The npz is read one array at a time, each checked
against what the entry point takes from its .npy header first; an array nothing reads (an input
the entry point does not take, a key that is no input or output) is refused, never decompressed;
an array past MAX_ARRAY_BYTES (`names` past MAX_NAMES_BYTES) is refused before it is read. Names
read from the files (keys, golden names, entry points) are printed quoted when they hold a control
character, so an escape sequence in one cannot repaint the message.
"""

from __future__ import annotations

import argparse
import hashlib
import math
import re
import stat
import statistics
import sys
import time
import zipfile
from collections.abc import Iterator, Mapping
from pathlib import Path

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt, StrictStr, ValidationError, field_validator

from common import vmfb_executables
from common.errors import OneLineErrors, first_line, validation_error_where
from common.files import InputError, read_json
from runtime.manifest import _DTYPES as MLIR_DTYPES  # element type -> the dtype name manifests write


class RunError(RuntimeError):
    pass


# The tolerances --check accepts (issue 62: `--atol 1e300` and `--rtol 1e10` passed any output).
# |out - golden| <= atol + rtol * |golden| element by element: at rtol >= 1 an all-zero output
# passes every golden, so rtol < 1. atol is for values near zero, where rtol cannot help; a scale
# beyond 1 is --rtol's, so atol <= 1; and an atol at which an all-zero output would pass a golden
# output (atol >= (1 - rtol) x its largest |value|) is refused once the golden is read.
MAX_RTOL = 1.0  # exclusive
MAX_ATOL = 1.0  # inclusive

# Past these an array of an npz is no input or golden of a model here (the zoo's largest are a few
# MB) but a decompression bomb, refused before it is read: a golden's `names` was inflated whole
# (1.6 GB) on every --check (issue 80). `names` is one short string per golden output.
MAX_ARRAY_BYTES = 1 << 30
MAX_NAMES_BYTES = 1 << 20

shown = vmfb_executables.shown  # a name from an input, as a message prints it


def _quoted(name: str) -> str:
    """`name` in quotes, as repr quotes it when it holds a control character."""
    return f"'{name}'" if name.isprintable() else repr(name)


def check_file(path: Path, what: str, noun: str) -> None:
    """RunError naming `path` unless it is a regular file (or a symlink to one): "<what> not found",
    or what it is instead ("is a FIFO, not <noun>"): a directory, a FIFO or a device (/dev/null)
    exists, so "not found" blamed the wrong thing, and reading a FIFO would block."""
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        raise RunError(f"{path}: {what} not found") from None
    except OSError as err:
        raise RunError(f"{path}: cannot read the {what}: {err.strerror}") from None
    if stat.S_ISREG(mode):
        return
    kind = ("a directory" if stat.S_ISDIR(mode) else "a FIFO" if stat.S_ISFIFO(mode)
            else "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else "a socket or other special file")
    raise RunError(f"{path}: is {kind}, not {noun}")


class _Tensor(BaseModel):
    """One entry point argument as runtime.manifest writes it: its shape (None: unknown; a None
    dimension: dynamic) and its numpy dtype name."""
    model_config = ConfigDict(extra="allow")
    shape: list[StrictInt | None] | None
    dtype: StrictStr

    @field_validator("shape")
    @classmethod
    def _sizes(cls, shape: list[int | None] | None) -> list[int | None] | None:
        if shape is not None and any(d is not None and d < 0 for d in shape):
            raise ValueError(f"negative dimension in {shape}")
        return shape

    @field_validator("dtype")
    @classmethod
    def _numpy(cls, dtype: str) -> str:
        if dtype == "bfloat16":  # runtime.manifest's name for bf16: numpy has none, refused at the input
            return dtype
        try:
            np.dtype(dtype)
        except TypeError:
            raise ValueError(f"'{dtype}' is not a dtype") from None
        return dtype


class _EntryPoint(BaseModel):
    model_config = ConfigDict(extra="allow")
    name: StrictStr = Field(min_length=1)
    inputs: list[_Tensor]


class _Target(BaseModel):
    model_config = ConfigDict(extra="allow")
    name: StrictStr
    triple: StrictStr
    runnable_on_host: StrictBool


class _ManifestShape(BaseModel):
    """What runtime.run reads of a manifest (runtime/manifest.py writes it): a field edited by
    hand was a KeyError or TypeError blamed on the vmfb, or a "main expects 4x64" blamed on the
    npz (issue 62). Other fields pass through unread."""
    model_config = ConfigDict(extra="allow")
    vmfb: StrictStr
    target: _Target
    tuned: StrictBool
    entry_points: list[_EntryPoint] = Field(min_length=1)
    inputs_sha256: dict[str, StrictStr]
    executables_sha256: dict[str, StrictStr] | None = None

    @field_validator("entry_points")
    @classmethod
    def _one_entry_per_function(cls, entries: list[_EntryPoint]) -> list[_EntryPoint]:
        names = [e.name for e in entries]
        twice = next((n for i, n in enumerate(names) if n in names[:i]), None)
        if twice is not None:
            raise ValueError(f"entry point '{twice}' is listed twice: which one is meant?")
        return entries

    @field_validator("inputs_sha256")
    @classmethod
    def _has_vmfb(cls, sha: dict[str, str]) -> dict[str, str]:
        if "vmfb" not in sha:
            raise ValueError("no sha256 of the vmfb")
        return sha


def manifest_path(vmfb: Path) -> Path:
    """Where a vmfb's manifest is: `<name>.manifest.json` beside `<name>.vmfb`."""
    stem = vmfb.name[: -len(".vmfb")] if vmfb.name.endswith(".vmfb") else vmfb.name
    return vmfb.with_name(stem + ".manifest.json")


def manifest_for(vmfb: Path, path: Path | None = None) -> dict:
    """The manifest of `vmfb` (at `path`, default beside it), checked to be one."""
    given = path is not None
    path = path if given else manifest_path(vmfb)
    if not given and not path.exists() and not path.is_symlink():
        raise RunError(f"{vmfb}: no manifest next to it (expected {path.name}): nothing says it is the build "
                       "that was shipped; give --manifest, or --no-manifest to run it unchecked")
    check_file(path, "manifest", "a manifest")
    try:
        manifest = read_json(path, "manifest")  # a key given twice is refused, not the last one taken
    except InputError as err:
        raise RunError(str(err)) from None
    try:
        _ManifestShape.model_validate(manifest)
    except ValidationError as err:
        where, why = validation_error_where(err)
        raise RunError(f"{path}: not a manifest: field '{where}': {why}") from None
    return manifest


def verify(vmfb: Path, data: bytes, manifest: dict, path: Path) -> None:
    """`data` (the bytes of `vmfb` about to be loaded) is the vmfb `manifest` (read from `path`)
    describes: the one it names, of the sha256 it records, embedding the executables it records
    (when it records them); else RunError naming the vmfb and what differs."""
    if manifest["vmfb"] != vmfb.name:
        raise RunError(f"{vmfb}: {path.name} is the manifest of {shown(manifest['vmfb'])}, not of {vmfb.name}")
    recorded = manifest.get("executables_sha256") or {}
    try:
        embedded = vmfb_executables.embedded_executables(vmfb, data)
    except vmfb_executables.VmfbError as err:
        embedded, unreadable = None, first_line(err).removeprefix(f"{vmfb}: ")
        unreadable = unreadable if len(unreadable) <= 120 else unreadable[:117] + "..."
    got, want = hashlib.sha256(data).hexdigest(), manifest["inputs_sha256"]["vmfb"]
    if recorded and embedded is not None and \
            vmfb_executables.sha256_set(embedded) != vmfb_executables.sha256_set(recorded):
        wanted = set(recorded.values())
        changed = sorted(name for name, b in embedded.items() if hashlib.sha256(b).hexdigest() not in wanted)
        which = f"{shown(changed[0])} is not" if len(changed) == 1 else f"{len(changed)} of them are not"
        raise RunError(f"{vmfb}: the executables it embeds are not the ones {path.name} records ({which} "
                       f"any recorded executable's sha256): corrupted or another build; rebuild it")
    if got != want:
        detail = (f"unreadable: {unreadable}" if embedded is None
                  else "its executables are the recorded ones, other bytes differ")
        raise RunError(f"{vmfb}: not the vmfb {path.name} describes (sha256 {got[:12]}, the manifest records "
                       f"{want[:12]}; {detail}): corrupted or another build; rebuild it")
    if recorded and embedded is None:  # the sha256 matches: the manifest and the file are one build
        raise RunError(f"{vmfb}: {unreadable}")


def _unchecked_entry(module, vmfb: Path, function: str | None) -> dict:
    """--no-manifest: the entry point by name, or the module's only exported function."""
    names = [n for n in module.function_names if not n.startswith("__")]
    name = function if function is not None else (names[0] if len(names) == 1 else None)
    if name is None or name not in names:
        raise RunError(f"{vmfb.name}: " + (f"no function {shown(function)} (has {names})" if function
                                           else f"exports {len(names)} functions {names}: say which with --function"))
    return {"name": name, "inputs": None}


def load(vmfb: Path, function: str | None = None, manifest: Path | None = None, unchecked: bool = False):
    """(callable, manifest, entry) for a host-runnable module, checked against its manifest
    (`manifest`, default the one beside it) before anything runs. `unchecked` (no manifest: a vmfb
    compiled by hand): nothing is checked, the manifest is None and the entry's inputs are
    unknown (None)."""
    check_file(vmfb, "module", "a vmfb")
    if unchecked:
        if manifest is not None:
            raise RunError("--no-manifest with --manifest: check it, or run it unchecked, not both")
        if manifest_path(vmfb).is_file():
            raise RunError(f"{vmfb}: --no-manifest, but its manifest {manifest_path(vmfb).name} is beside it: "
                           "drop --no-manifest to run it checked")
        ctx, module = _context(vmfb, vmfb.read_bytes())
        entry = _unchecked_entry(module, vmfb, function)
        return ctx.modules.module[entry["name"]], None, entry
    m = manifest_for(vmfb, manifest)
    t = m["target"]
    if not t.get("runnable_on_host"):
        raise RunError(f"{vmfb.name}: compiled for {shown(t['triple'])} ({shown(t['name'])}); no "
                       f"{shown(t['triple'].split('-')[0])} IREE runtime exists on this machine, so it cannot run here")
    entries = m["entry_points"]
    entry = next((e for e in entries if e["name"] == function), None) if function else entries[0]
    path = manifest if manifest is not None else manifest_path(vmfb)
    if entry is None:
        raise RunError(f"{vmfb.name}: no entry point {shown(function)} in {path.name} (have {[e['name'] for e in entries]})")
    data = vmfb.read_bytes()  # read once: the bytes checked are the bytes loaded
    verify(vmfb, data, m, path)
    ctx, module = _context(vmfb, data)
    names = [n for n in module.function_names if not n.startswith("__")]
    if entry["name"] not in names:
        # The vmfb is the recorded one (verify), so its manifest's entry point was edited.
        raise RunError(f"{path}: entry point {_quoted(entry['name'])} is not a function of {vmfb.name} (it exports "
                       f"{names}): the manifest was edited; rebuild it")
    function = ctx.modules.module[entry["name"]]
    check_signature(entry, declared_signature(function), vmfb, path)
    return function, m, entry


_TENSOR = re.compile(r"tensor<([^<>]*)>")


def _declared_tensors(text: str) -> list[dict] | None:
    """The tensors of one side of an `iree.abi.declaration` ("%input0: tensor<4x64xf32>, ...") as
    the manifest writes them ({"shape": [4, 64], "dtype": "float32"}), or None when a type is not a
    tensor IREE spells plainly (a buffer view, a complex element)."""
    params = [p for p in re.split(r",\s*(?=%)", text.strip().strip("()")) if p.strip()]
    out = []
    for param in params:
        found = _TENSOR.search(param)
        if found is None or param.count("<") != 1:
            return None
        *dims, elt = found.group(1).split("x")
        if elt not in MLIR_DTYPES:
            return None
        out.append({"shape": [None if d == "?" else int(d) for d in dims], "dtype": MLIR_DTYPES[elt]})
    return out


def declared_signature(function) -> tuple[list[dict], list[dict]] | None:
    """(inputs, outputs) of a loaded function as IREE's compiler declared them in the vmfb
    (its `iree.abi.declaration` reflection), or None when it has none or one not read here."""
    try:
        text = function.vm_function.reflection.get("iree.abi.declaration", "")
    except Exception:  # noqa: BLE001 - a runtime without reflection: nothing to compare
        return None
    head, arrow, tail = text.partition(") -> ")
    args = head.partition("(")[2] if "(" in head else None
    if args is None:
        return None
    inputs = _declared_tensors(args)
    outputs = _declared_tensors(tail) if arrow else []
    return None if inputs is None or outputs is None else (inputs, outputs)


def _signature_text(tensors: list[dict]) -> str:
    return "(" + ", ".join(f"{t.get('dtype')}{t.get('shape')}" for t in tensors) + ")"


def check_signature(entry: dict, declared: tuple[list[dict], list[dict]] | None, vmfb: Path, path: Path) -> None:
    """The manifest's entry point takes and returns what the vmfb's function does: a shape or dtype
    edited in the manifest was accepted (an output's) or blamed on the npz ("input_0 has shape
    [4, 64], main expects [4, 65]"), though the vmfb, checked against the same manifest, says
    otherwise (issue 62, own probe)."""
    if declared is None:
        return
    for side, want in zip(("inputs", "outputs"), declared):
        given = [{"shape": t.get("shape"), "dtype": t.get("dtype")} for t in entry.get(side) or []]
        if side == "outputs" and "outputs" not in entry:
            continue  # an older manifest without outputs: nothing to compare
        if given != want:
            raise RunError(f"{path}: entry point {_quoted(entry['name'])} {side} {_signature_text(given)} are not "
                           f"{vmfb.name}'s {_signature_text(want)}: the manifest was edited; rebuild it")


def _context(vmfb: Path, data: bytes):
    """A local-task context with the module of `data` (the bytes of `vmfb`) added."""
    import iree.runtime as ireert

    ctx = ireert.SystemContext(config=ireert.Config("local-task"))
    try:
        module = ireert.VmModule.copy_buffer(ctx.instance, data)
    except Exception as err:  # noqa: BLE001 - the runtime raises a generic error
        raise RunError(f"{vmfb}: IREE's runtime cannot load it: {first_line(err)}") from None
    ctx.add_vm_module(module)
    return ctx, module


class Npz(Mapping):
    """The arrays of an .npz (no pickles), read one member at a time when asked for: an array
    nobody uses is never decompressed (a 0.5 MB npz carrying an unused 512 MB array was read
    whole, issue 62), and `header` gives an array's shape and dtype from its .npy header, so a
    caller refuses a wrong one before decompressing it. RunError naming the file when it is not
    an .npz."""

    def __init__(self, npz: Path):
        check_file(npz, "input file", "an .npz")
        self.path = npz
        if not zipfile.is_zipfile(npz):
            # np.load takes anything else for a pickle and blamed "pickled data" (a text file, an .npy).
            raise RunError(f"{npz}: not a readable .npz: not a zip archive (an .npz is a zip of .npy arrays; "
                           f"starts with {npz.read_bytes()[:8]!r})")
        try:
            with zipfile.ZipFile(npz) as z:
                members = z.infolist()
        except (zipfile.BadZipFile, OSError) as err:
            raise self._unreadable(err) from None
        # np.load's keys: a member's name without ".npy".
        self._member = {m.filename.removesuffix(".npy"): m for m in members}

    def _unreadable(self, err: Exception) -> RunError:
        return RunError(f"{self.path}: not a readable .npz: {type(err).__name__}: {first_line(err)}")

    def __iter__(self) -> Iterator[str]:
        return iter(self._member)

    def __len__(self) -> int:
        return len(self._member)

    def __contains__(self, key: object) -> bool:
        return key in self._member  # Mapping's own would read the array to see

    def _checked(self, key: str) -> zipfile.ZipInfo:
        """`key`'s member, refused (RunError naming the file and member) unless numpy could have
        written it and it is no larger than an array here may be: before any of it is inflated."""
        member = self._member[key]  # KeyError for a key it does not hold, as a dict
        if member.compress_type not in vmfb_executables.READ_BOUNDED:  # what numpy writes, and zipfile bounds
            raise RunError(f"{self.path}: not a readable .npz: {shown(member.filename)} is compressed with zip method "
                           f"{member.compress_type}, not stored or deflated as numpy writes it")
        cap = MAX_NAMES_BYTES if key == "names" else MAX_ARRAY_BYTES
        if member.file_size > cap:
            raise RunError(f"{self.path}: {shown(member.filename)} is {member.file_size} B uncompressed, more than the "
                           f"{cap} B {'the golden names' if key == 'names' else 'an array'} here may be: refused unread")
        return member

    def header(self, key: str) -> tuple[tuple[int, ...], np.dtype]:
        """(shape, dtype) of `key` from its .npy header: a few bytes, whatever the array's size."""
        member = self._checked(key)
        try:
            with zipfile.ZipFile(self.path) as z, z.open(member) as f:
                version = np.lib.format.read_magic(f)
                read = np.lib.format.read_array_header_1_0 if version == (1, 0) else \
                    np.lib.format.read_array_header_2_0
                shape, _, dtype = read(f)
        except Exception as err:  # noqa: BLE001 - zipfile, numpy and OS errors alike: the npz is bad
            raise self._unreadable(err) from None
        if dtype.hasobject:  # its data is a pickle: never loaded (allow_pickle=False)
            raise RunError(f"{self.path}: not a readable .npz: {shown(key)} is an array of Python objects (a pickle, "
                           "never loaded)")
        return shape, dtype

    def __getitem__(self, key: str) -> np.ndarray:
        if key not in self._member:
            raise KeyError(key)
        member = self._checked(key)
        shape, dtype = self.header(key)
        size = math.prod(shape) * dtype.itemsize
        if size > member.file_size:  # what numpy would allocate before finding the data short
            raise RunError(f"{self.path}: not a readable .npz: {shown(key)}'s header says {list(shape)} {dtype} "
                           f"({size} B), more than its member's {member.file_size} B")
        try:
            # Reads this member's header and data, no further (zipfile inflates what is asked for).
            with zipfile.ZipFile(self.path) as z, z.open(member) as f:
                return np.lib.format.read_array(f, allow_pickle=False)
        except Exception as err:  # noqa: BLE001 - zipfile, numpy and OS errors alike: the npz is bad
            raise self._unreadable(err) from None


def load_npz(npz: Path) -> Npz:
    """The arrays of an .npz, read lazily (Npz); RunError naming it when it is not one."""
    return Npz(npz)


def _shape(gold: Mapping[str, np.ndarray], key: str) -> tuple[int, ...]:
    """`key`'s shape, from its .npy header when `gold` is an Npz (nothing decompressed)."""
    return tuple(gold.header(key)[0]) if isinstance(gold, Npz) else tuple(gold[key].shape)


def check_outputs_against(gold: Mapping[str, np.ndarray], npz: Path, outs: list[np.ndarray], rtol: float,
                          atol: float) -> float:
    """Every golden output_<i> compared with the module's i-th result; returns the max abs error.
    A golden output the module does not return, one it returns without a golden, and a golden
    that is not finite (NaN matches nothing, so it can only hide a wrong result) are errors."""
    keys = sorted((k for k in gold if k.startswith("output_")), key=lambda k: (len(k), k))
    if not keys:
        raise RunError(f"{npz}: --check needs output_0.. (the golden outputs); it has none")
    expected = [f"output_{i}" for i in range(len(keys))]
    if keys != expected:
        raise RunError(f"{npz}: golden outputs are not output_0..output_{len(keys) - 1}: {keys}")
    if len(keys) != len(outs):
        raise RunError(f"{npz}: {len(keys)} golden outputs, the module returns {len(outs)}"
                       + (f": output_{len(outs)} is never compared" if len(keys) > len(outs) else ""))
    # Names are read only when they can name these outputs (one per output, as the header says):
    # anything else went unused after being inflated whole (a 1.6 GB `names`: issue 80).
    names: list[str] = []
    if "names" in gold and _shape(gold, "names") == (len(keys),):
        names = [str(n) for n in gold["names"]]
    worst = 0.0
    for i, (name, o) in enumerate(zip(keys, outs)):
        key = f"{name} {shown(names[i])}" if names and names[i] else name  # its place in a dict
        shape = _shape(gold, name)
        if shape != o.shape:  # before reading it: a golden of another shape is never decompressed
            raise RunError(f"{key}: shape {list(o.shape)} != expected {list(shape)}")
        g = gold[name]
        if g.dtype.kind in "fc" and not np.all(np.isfinite(g)):
            raise RunError(f"{npz}: {key} holds NaN or Inf: no golden to compare with")
        largest = float(np.max(np.abs(g.astype(np.float64)))) if g.size else 0.0
        if largest > 0 and atol >= (1 - rtol) * largest:
            raise RunError(f"--atol {atol}: an all-zero {key} would pass (its largest |golden| value is "
                           f"{largest:.3g}, rtol {rtol}): give an --atol below {(1 - rtol) * largest:.3g}")
        err = float(np.max(np.abs(o.astype(np.float64) - g.astype(np.float64)))) if o.size else 0.0
        worst = max(worst, err if np.isfinite(err) else float("inf"))
        if not np.allclose(o, g, rtol=rtol, atol=atol):
            # A golden of another dtype (int32 against float32) looked like a miscompile: named.
            other = f"; the golden is {g.dtype}, the module returns {o.dtype}" if g.dtype != o.dtype else ""
            raise RunError(f"{key}: mismatch, max abs error {err:.3g} (rtol {rtol}, atol {atol}){other}")
    return worst


def check_finite_inputs(npz: Path, args: list[np.ndarray]) -> None:
    """A NaN or Inf input makes every result a mismatch whose culprit is the input, not the
    module: named before the outputs are compared."""
    for i, a in enumerate(args):
        if a.dtype.kind in "fc" and not np.all(np.isfinite(a)):
            nan = int(np.isnan(a).sum())
            raise RunError(f"{npz}: input_{i} holds {nan} NaN and {int((~np.isfinite(a)).sum()) - nan} Inf of "
                           f"{a.size} values: no input to check the module's outputs on")


def check_tolerances(rtol: float, atol: float) -> None:
    """`--atol inf` passed anything, a negative one nothing, and so did `--atol 1e300` or
    `--rtol 1e10`: refused beyond MAX_RTOL and MAX_ATOL (why: above them)."""
    for flag, value in (("--rtol", rtol), ("--atol", atol)):
        if not math.isfinite(value) or value < 0:
            raise RunError(f"{flag} {value}: a tolerance must be a finite number >= 0")
    if rtol >= MAX_RTOL:
        raise RunError(f"--rtol {rtol:g}: passes any output (at rtol >= {MAX_RTOL:g} an all-zero output matches "
                       "every golden): a relative tolerance is below 1")
    if atol > MAX_ATOL:
        raise RunError(f"--atol {atol:g}: passes any output near the golden's scale: an absolute tolerance is at "
                       f"most {MAX_ATOL:g} (a larger scale is --rtol's)")


def inputs_from(npz: Path, entry: dict) -> list[np.ndarray]:
    """The arguments of `entry` (a manifest's entry point; inputs None: unknown, --no-manifest)
    from input_0.. of `npz`, each checked against the entry's shape and dtype from its .npy header
    before it is read. An input_<i> the entry does not take, or an array that is neither an input
    nor a golden output, is refused: it was silently ignored (and decompressed) before."""
    data = load_npz(npz)
    if entry["inputs"] is None:  # --no-manifest: input_0, input_1, ... as they are (IREE checks them)
        count = 0
        while f"input_{count}" in data:
            count += 1
    else:
        count = len(entry["inputs"])
    taken = {f"input_{i}" for i in range(count)}
    for key in sorted(data, key=lambda k: (len(k), k)):
        if key.startswith("input_") and key not in taken:
            takes = f"input_0..input_{count - 1}" if count > 1 else "input_0" if count else "no input"
            raise RunError(f"{npz}: {shown(key)} is never passed: {shown(entry['name'])} takes {count} inputs "
                           f"({takes})")
        if not key.startswith(("input_", "output_")) and key != "names":
            raise RunError(f"{npz}: {shown(key)} is neither an input_<i> nor a golden output_<i> (nor names): nothing "
                           "reads it")
    if entry["inputs"] is None:
        return [np.asarray(data[f"input_{i}"], order="C") for i in range(count)]
    args = []
    for i, spec in enumerate(entry["inputs"]):
        key = f"input_{i}"
        if key not in data:
            raise RunError(f"{npz}: missing {key} for {shown(entry['name'])}")
        shape, dtype = data.header(key)  # before reading it: an input of another shape is never decompressed
        want = spec["shape"]
        if want is not None and (len(shape) != len(want) or any(d is not None and d != n for d, n in zip(want, shape))):
            raise RunError(f"{npz}: {key} has shape {list(shape)}, {shown(entry['name'])} expects {spec['shape']}")
        if spec["dtype"] == "bfloat16":
            raise RunError(f"{npz}: {shown(entry['name'])} takes {key} as bfloat16, which numpy (and so an .npz) cannot "
                           "hold")
        if dtype != np.dtype(spec["dtype"]):
            # Never cast: float64 or complex64 data silently narrowed would "match" anyway.
            raise RunError(f"{npz}: {key} is {dtype}, {shown(entry['name'])} takes {spec['dtype']}")
        args.append(np.asarray(data[key], order="C"))  # not ascontiguousarray: it makes a 0-d input 1-d
    return args


def time_calls(fn, args, runs: int) -> tuple[list[np.ndarray], list[float]]:
    times = []
    out = None
    for _ in range(runs):
        t0 = time.perf_counter()
        res = fn(*args)
        res = res if isinstance(res, (list, tuple)) else [res]
        out = [np.asarray(r) for r in res]  # forces completion
        times.append(time.perf_counter() - t0)
    return out, times


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m runtime.run", description=__doc__.splitlines()[0],
                                epilog="Before anything runs, the vmfb is checked against its manifest "
                                       "(runtime.manifest's): the vmfb it names, the sha256 it records for it "
                                       "and for each executable it embeds. A vmfb that differs (corrupted, or "
                                       "of another build) is refused with one line, nothing run.")
    p.add_argument("module", type=Path)
    p.add_argument("inputs", type=Path)
    p.add_argument("--runs", type=int, default=10, help="timed runs (at least 1)")
    p.add_argument("--warmup", type=int, default=2, help="untimed runs first (0 or more)")
    p.add_argument("--check", action="store_true", help="compare with output_* in the npz")
    p.add_argument("--rtol", type=float, default=1e-4,
                   help=f"relative tolerance of --check, in [0, {MAX_RTOL:g}): at {MAX_RTOL:g} an all-zero output "
                        "matches every golden")
    p.add_argument("--atol", type=float, default=1e-4,
                   help=f"absolute tolerance of --check, in [0, {MAX_ATOL:g}] (a larger scale is --rtol's), and "
                        "below (1 - rtol) x each golden output's largest |value|, where an all-zero output "
                        "would pass")
    p.add_argument("--function")
    which = p.add_mutually_exclusive_group()
    which.add_argument("--manifest", type=Path,
                       help="the vmfb's manifest (default: <module>.manifest.json beside it); the vmfb must be "
                            "the one it describes")
    which.add_argument("--no-manifest", action="store_true",
                       help="run a vmfb that has no manifest (compiled by hand) unchecked: its bytes, target "
                            "and inputs are not checked (IREE checks the inputs' shapes and dtypes). Without "
                            "it, a vmfb without a manifest is refused; with it, one whose manifest is beside "
                            "it is refused too (drop the flag to check it)")
    a = p.parse_args(argv)
    with OneLineErrors("runtime.run: error", a.module, (RunError,)) as cli:
        # max(1, runs) ran --runs 0 or -3 once without a word.
        if a.runs < 1:
            raise RunError(f"--runs {a.runs}: at least 1 run (the outputs and timings are of the runs)")
        if a.warmup < 0:
            raise RunError(f"--warmup {a.warmup}: 0 or more untimed runs")
        if a.check:
            check_tolerances(a.rtol, a.atol)
        fn, m, entry = load(a.module, a.function, a.manifest, a.no_manifest)
        args = inputs_from(a.inputs, entry)
        if a.check:
            check_finite_inputs(a.inputs, args)
        time_calls(fn, args, a.warmup)
        outs, times = time_calls(fn, args, a.runs)
        for i, o in enumerate(outs):
            print(f"output_{i}: shape={list(o.shape)} dtype={o.dtype} min={o.min():.6g} max={o.max():.6g} "
                  f"mean={o.mean():.6g}")
        built = (f"{shown(m['target']['name'])} ({'tuned' if m['tuned'] else 'IREE default'})" if m is not None
                 else "an unchecked module (--no-manifest)")
        print(f"{shown(entry['name'])} on {built}: median {statistics.median(times) * 1e3:.3f} ms over {len(times)} runs")
        if a.check:
            worst = check_outputs_against(load_npz(a.inputs), a.inputs, outs, a.rtol, a.atol)
            print(f"check: {len(outs)} outputs match (max abs error {worst:.3g})")
    if cli.failed:
        return cli.exit_code
    return 0


if __name__ == "__main__":
    sys.exit(main())
