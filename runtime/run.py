"""Runs a compiled module with iree.runtime (local-task) on the inputs of an .npz.

    python -m runtime.run <module.vmfb> <input.npz> [--runs N] [--check] [--function F]

Reads `<module>.manifest.json` next to the vmfb (written by runtime/hal_module).
Only host-target modules can run here: there is no riscv64 IREE runtime on this machine.
--check compares output_<i> of the npz with the module's i-th result (a structured model's
golden names each by its place, `names`); it refuses a NaN or Inf input and a tolerance that is
negative or not finite.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time
import zipfile
from pathlib import Path

import numpy as np

from common.errors import OneLineErrors, first_line


class RunError(RuntimeError):
    pass


def manifest_for(vmfb: Path) -> dict:
    path = vmfb.with_name(vmfb.name[: -len(".vmfb")] + ".manifest.json") if vmfb.name.endswith(".vmfb") else None
    if path is None or not path.is_file():
        raise RunError(f"{vmfb}: no manifest next to it (expected {vmfb.stem}.manifest.json)")
    try:
        manifest = json.loads(path.read_text())
        manifest["target"]["runnable_on_host"], manifest["entry_points"]
    except (ValueError, KeyError, TypeError) as err:
        raise RunError(f"{path}: not a manifest: {type(err).__name__}: {first_line(err)}") from None
    return manifest


def load(vmfb: Path, function: str | None = None):
    """(callable, manifest, entry) for a host-runnable module."""
    if not vmfb.is_file():
        raise RunError(f"{vmfb}: module not found")
    m = manifest_for(vmfb)
    t = m["target"]
    if not t.get("runnable_on_host"):
        raise RunError(f"{vmfb.name}: compiled for {t['triple']} ({t['name']}); no {t['triple'].split('-')[0]} "
                       "IREE runtime exists on this machine, so it cannot run here")
    import iree.runtime as ireert

    entries = m["entry_points"]
    entry = next((e for e in entries if e["name"] == function), None) if function else (entries[0] if entries else None)
    if entry is None:
        raise RunError(f"{vmfb.name}: no entry point {function or ''} (have {[e['name'] for e in entries]})")
    config = ireert.Config("local-task")
    ctx = ireert.SystemContext(config=config)
    ctx.add_vm_module(ireert.VmModule.copy_buffer(ctx.instance, vmfb.read_bytes()))
    return ctx.modules.module[entry["name"]], m, entry


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
        args.append(np.ascontiguousarray(a))
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
    p = argparse.ArgumentParser(prog="python -m runtime.run", description=__doc__.splitlines()[0])
    p.add_argument("module", type=Path)
    p.add_argument("inputs", type=Path)
    p.add_argument("--runs", type=int, default=10)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--check", action="store_true", help="compare with output_* in the npz")
    p.add_argument("--rtol", type=float, default=1e-4)
    p.add_argument("--atol", type=float, default=1e-4)
    p.add_argument("--function")
    a = p.parse_args(argv)
    with OneLineErrors("runtime.run: error", a.module, (RunError,)) as cli:
        if a.check:
            check_tolerances(a.rtol, a.atol)
        fn, m, entry = load(a.module, a.function)
        args = inputs_from(a.inputs, entry)
        if a.check:
            check_finite_inputs(a.inputs, args)
        time_calls(fn, args, a.warmup)
        outs, times = time_calls(fn, args, max(1, a.runs))
        for i, o in enumerate(outs):
            print(f"output_{i}: shape={list(o.shape)} dtype={o.dtype} min={o.min():.6g} max={o.max():.6g} "
                  f"mean={o.mean():.6g}")
        print(f"{entry['name']} on {m['target']['name']} ({'tuned' if m['tuned'] else 'IREE default'}): "
              f"median {statistics.median(times) * 1e3:.3f} ms over {len(times)} runs")
        if a.check:
            worst = check_outputs_against(load_npz(a.inputs), a.inputs, outs, a.rtol, a.atol)
            print(f"check: {len(outs)} outputs match (max abs error {worst:.3g})")
    if cli.failed:
        return cli.exit_code
    return 0


if __name__ == "__main__":
    sys.exit(main())
