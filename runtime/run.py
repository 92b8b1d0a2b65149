"""Runs a compiled module with iree.runtime (local-task) on the inputs of an .npz.

    python -m runtime.run <module.vmfb> <input.npz> [--runs N] [--check] [--function F]

Reads `<module>.manifest.json` next to the vmfb (written by runtime/hal_module).
Only host-target modules can run here: there is no riscv64 IREE runtime on this machine.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np

from common.errors import OneLineErrors


class RunError(RuntimeError):
    pass


def manifest_for(vmfb: Path) -> dict:
    path = vmfb.with_name(vmfb.name[: -len(".vmfb")] + ".manifest.json") if vmfb.name.endswith(".vmfb") else None
    if path is None or not path.is_file():
        raise RunError(f"{vmfb}: no manifest next to it (expected {vmfb.stem}.manifest.json)")
    return json.loads(path.read_text())


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


def inputs_from(npz: Path, entry: dict) -> list[np.ndarray]:
    if not npz.is_file():
        raise RunError(f"{npz}: input file not found")
    data = np.load(npz)
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
        fn, m, entry = load(a.module, a.function)
        args = inputs_from(a.inputs, entry)
        time_calls(fn, args, a.warmup)
        outs, times = time_calls(fn, args, max(1, a.runs))
        for i, o in enumerate(outs):
            print(f"output_{i}: shape={list(o.shape)} dtype={o.dtype} min={o.min():.6g} max={o.max():.6g} "
                  f"mean={o.mean():.6g}")
        print(f"{entry['name']} on {m['target']['name']} ({'tuned' if m['tuned'] else 'IREE default'}): "
              f"median {statistics.median(times) * 1e3:.3f} ms over {len(times)} runs")
        if a.check:
            gold = np.load(a.inputs)
            worst = 0.0
            for i, o in enumerate(outs):
                key = f"output_{i}"
                if key not in gold:
                    raise RunError(f"{a.inputs}: --check needs {key}")
                g = gold[key]
                if g.shape != o.shape:
                    raise RunError(f"{key}: shape {list(o.shape)} != expected {list(g.shape)}")
                worst = max(worst, float(np.max(np.abs(o - g))) if o.size else 0.0)
                if not np.allclose(o, g, rtol=a.rtol, atol=a.atol):
                    raise RunError(f"{key}: mismatch, max abs error {worst:.3g} (rtol {a.rtol}, atol {a.atol})")
            print(f"check: {len(outs)} outputs match (max abs error {worst:.3g})")
    if cli.failed:
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
