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
negative or not finite.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import statistics
import sys
import time
import zipfile
from pathlib import Path

import numpy as np

from common import vmfb_executables
from common.errors import OneLineErrors, first_line


class RunError(RuntimeError):
    pass


def manifest_path(vmfb: Path) -> Path:
    """Where a vmfb's manifest is: `<name>.manifest.json` beside `<name>.vmfb`."""
    stem = vmfb.name[: -len(".vmfb")] if vmfb.name.endswith(".vmfb") else vmfb.name
    return vmfb.with_name(stem + ".manifest.json")


def manifest_for(vmfb: Path, path: Path | None = None) -> dict:
    """The manifest of `vmfb` (at `path`, default beside it), checked to be one."""
    given = path is not None
    path = path if given else manifest_path(vmfb)
    if not path.is_file():
        if given:
            raise RunError(f"{path}: manifest not found")
        raise RunError(f"{vmfb}: no manifest next to it (expected {path.name}): nothing says it is the build "
                       "that was shipped; give --manifest, or --no-manifest to run it unchecked")
    try:
        manifest = json.loads(path.read_text())
        manifest["target"]["runnable_on_host"], manifest["entry_points"]
        if not isinstance(manifest["vmfb"], str) or not isinstance(manifest["inputs_sha256"]["vmfb"], str):
            raise TypeError("vmfb or inputs_sha256.vmfb is not a string")
        if not isinstance(manifest.get("executables_sha256") or {}, dict):
            raise TypeError("executables_sha256 is not an object")
    except (ValueError, KeyError, TypeError) as err:
        raise RunError(f"{path}: not a manifest: {type(err).__name__}: {first_line(err)}") from None
    return manifest


def verify(vmfb: Path, data: bytes, manifest: dict, path: Path) -> None:
    """`data` (the bytes of `vmfb` about to be loaded) is the vmfb `manifest` (read from `path`)
    describes: the one it names, of the sha256 it records, embedding the executables it records
    (when it records them); else RunError naming the vmfb and what differs."""
    if manifest["vmfb"] != vmfb.name:
        raise RunError(f"{vmfb}: {path.name} is the manifest of {manifest['vmfb']}, not of {vmfb.name}")
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
        which = f"{changed[0]} is not" if len(changed) == 1 else f"{len(changed)} of them are not"
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
        raise RunError(f"{vmfb.name}: " + (f"no function {function} (has {names})" if function
                                           else f"exports {len(names)} functions {names}: say which with --function"))
    return {"name": name, "inputs": None}


def load(vmfb: Path, function: str | None = None, manifest: Path | None = None, unchecked: bool = False):
    """(callable, manifest, entry) for a host-runnable module, checked against its manifest
    (`manifest`, default the one beside it) before anything runs. `unchecked` (no manifest: a vmfb
    compiled by hand): nothing is checked, the manifest is None and the entry's inputs are
    unknown (None)."""
    if not vmfb.is_file():
        raise RunError(f"{vmfb}: module not found")
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
        raise RunError(f"{vmfb.name}: compiled for {t['triple']} ({t['name']}); no {t['triple'].split('-')[0]} "
                       "IREE runtime exists on this machine, so it cannot run here")
    entries = m["entry_points"]
    entry = next((e for e in entries if e["name"] == function), None) if function else (entries[0] if entries else None)
    if entry is None:
        raise RunError(f"{vmfb.name}: no entry point {function or ''} (have {[e['name'] for e in entries]})")
    data = vmfb.read_bytes()  # read once: the bytes checked are the bytes loaded
    verify(vmfb, data, m, manifest if manifest is not None else manifest_path(vmfb))
    ctx, _ = _context(vmfb, data)
    return ctx.modules.module[entry["name"]], m, entry


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


def load_npz(npz: Path) -> dict[str, np.ndarray]:
    """The arrays of an .npz (no pickles); RunError naming it when it is not one."""
    if not npz.is_file():
        raise RunError(f"{npz}: input file not found")
    if not zipfile.is_zipfile(npz):
        # np.load takes anything else for a pickle and blamed "pickled data" (a text file, an .npy).
        raise RunError(f"{npz}: not a readable .npz: not a zip archive (an .npz is a zip of .npy arrays; "
                       f"starts with {npz.read_bytes()[:8]!r})")
    try:
        with np.load(npz, allow_pickle=False) as data:
            return {key: data[key] for key in data.files}
    except Exception as err:  # noqa: BLE001 - zipfile, numpy and OS errors alike: the npz is bad
        raise RunError(f"{npz}: not a readable .npz: {type(err).__name__}: {first_line(err)}") from None


def check_outputs_against(gold: dict[str, np.ndarray], npz: Path, outs: list[np.ndarray], rtol: float,
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
    names = [str(n) for n in gold["names"]] if "names" in gold and gold["names"].ndim == 1 else []
    worst = 0.0
    for i, (key, o) in enumerate(zip(keys, outs)):
        g = gold[key]
        key = f"{key} {names[i]}" if len(names) == len(keys) and names[i] else key  # its place in a dict
        if g.dtype.kind in "fc" and not np.all(np.isfinite(g)):
            raise RunError(f"{npz}: {key} holds NaN or Inf: no golden to compare with")
        if g.shape != o.shape:
            raise RunError(f"{key}: shape {list(o.shape)} != expected {list(g.shape)}")
        err = float(np.max(np.abs(o.astype(np.float64) - g.astype(np.float64)))) if o.size else 0.0
        worst = max(worst, err if np.isfinite(err) else float("inf"))
        if not np.allclose(o, g, rtol=rtol, atol=atol):
            raise RunError(f"{key}: mismatch, max abs error {err:.3g} (rtol {rtol}, atol {atol})")
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
    """`--atol inf` passed anything, a negative one nothing: both refused."""
    for flag, value in (("--rtol", rtol), ("--atol", atol)):
        if not math.isfinite(value) or value < 0:
            raise RunError(f"{flag} {value}: a tolerance must be a finite number >= 0")


def inputs_from(npz: Path, entry: dict) -> list[np.ndarray]:
    data = load_npz(npz)
    if entry["inputs"] is None:  # --no-manifest: input_0, input_1, ... as they are (IREE checks them)
        args = []
        while f"input_{len(args)}" in data:
            args.append(np.asarray(data[f"input_{len(args)}"], order="C"))
        return args
    args = []
    for i, spec in enumerate(entry["inputs"]):
        key = f"input_{i}"
        if key not in data:
            raise RunError(f"{npz}: missing {key} for {entry['name']}")
        a = data[key]
        if spec["shape"] is not None and list(a.shape) != [d if d is not None else a.shape[j] for j, d in enumerate(spec["shape"])]:
            raise RunError(f"{npz}: {key} has shape {list(a.shape)}, {entry['name']} expects {spec['shape']}")
        if a.dtype != np.dtype(spec["dtype"]):
            # Never cast: float64 or complex64 data silently narrowed would "match" anyway.
            raise RunError(f"{npz}: {key} is {a.dtype}, {entry['name']} takes {spec['dtype']}")
        args.append(np.asarray(a, order="C"))  # not ascontiguousarray: it makes a 0-d input 1-d
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
    p.add_argument("--runs", type=int, default=10)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--check", action="store_true", help="compare with output_* in the npz")
    p.add_argument("--rtol", type=float, default=1e-4)
    p.add_argument("--atol", type=float, default=1e-4)
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
        if a.check:
            check_tolerances(a.rtol, a.atol)
        fn, m, entry = load(a.module, a.function, a.manifest, a.no_manifest)
        args = inputs_from(a.inputs, entry)
        if a.check:
            check_finite_inputs(a.inputs, args)
        time_calls(fn, args, a.warmup)
        outs, times = time_calls(fn, args, max(1, a.runs))
        for i, o in enumerate(outs):
            print(f"output_{i}: shape={list(o.shape)} dtype={o.dtype} min={o.min():.6g} max={o.max():.6g} "
                  f"mean={o.mean():.6g}")
        built = (f"{m['target']['name']} ({'tuned' if m['tuned'] else 'IREE default'})" if m is not None
                 else "an unchecked module (--no-manifest)")
        print(f"{entry['name']} on {built}: median {statistics.median(times) * 1e3:.3f} ms over {len(times)} runs")
        if a.check:
            worst = check_outputs_against(load_npz(a.inputs), a.inputs, outs, a.rtol, a.atol)
            print(f"check: {len(outs)} outputs match (max abs error {worst:.3g})")
    if cli.failed:
        return cli.exit_code
    return 0


if __name__ == "__main__":
    sys.exit(main())
