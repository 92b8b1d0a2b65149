"""Measures the peers' GEMMs (or convolutions) on the zoo's shapes: counts, model cycles, memory-aware cycles.

    tools/bazel run //peers:measure [-- --shapes KEY,KEY] [--hardware riscv_rvv512.yaml ...]
    tools/bazel run //peers:measure_conv   (--op conv: peers/conv_shapes.py, conv harnesses)

Every (shape of peers/shapes.py, harness, hardware description) runs under the plugin-capable
qemu at the description's VLEN with its caches simulated, its output checked against numpy
(peers/run.py), and is priced on the description's `model_core` by perf/'s llvm-mca and memory
model, the code that prices IREE's dispatches. Writes one JSON (default
peers/data/gemm_measured.json, relative to the workspace under `bazel run`): per run the
library's run-time choice (OpenBLAS's core, BLIS's configuration), the instruction classes,
the vector share, model cycles, share of the FMA peak, and the memory-aware figures. No
absolute paths or times in it; the tools' versions and the harnesses' sha256 are.
Fails with one line and writes nothing if any run fails or any result is wrong.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import sys
from pathlib import Path

from common.hardware import HardwareError, load_hardware
from common.errors import OneLineErrors
from common.files import check_outputs, sha256_file, write_together
from common.core_models import MODEL_IGNORES
from perf import mca
from perf import memory_model as mem
from perf.measure import _qemu_version
from peers import run as pr
from peers.conv_shapes import CONV_SHAPES, conv_shape
from peers.shapes import SHAPES, shape

FORMAT = 1


def _harnesses(specs: list[str]) -> dict[str, Path]:
    out = {}
    for spec in specs:
        name, sep, path = spec.partition("=")
        if not sep or not name or not path:
            raise pr.PeerError(f"--harness {spec}: expected NAME=PATH")
        out[name] = Path(path)
    return out


def _gemm_fields(s) -> dict:
    return {"m": s.m, "n": s.n, "k": s.k, "trans_b": s.trans_b, "dispatch": s.dispatch}


def _conv_fields(s) -> dict:
    return {"dispatches": list(s.dispatches), "n": s.n, "h": s.h, "w": s.w, "c": s.c, "kh": s.kh, "kw": s.kw,
            "stride": s.stride, "pad": s.pad, "oc": s.oc, "groups": s.groups, "oh": s.oh, "ow": s.ow}


# What `--op` measures: (its shapes, the shape of a key, the harness runner, its fields in a result).
OPS = {
    "gemm": (SHAPES, shape, pr.run, _gemm_fields),
    "conv": (CONV_SHAPES, conv_shape, pr.run_conv, _conv_fields),
}


def measure(harnesses: dict[str, Path], sysroot: Path, qemu: Path, plugin: Path, hardware: list[Path],
            keys: list[str], jobs: int, op: str = "gemm") -> dict:
    hws = []
    for path in hardware:
        hw = load_hardware(path)
        if hw.model_core is None:
            raise pr.PeerError(f"{path}: no model_core: peers are priced on a core model")
        hws.append((hw, path))
    all_shapes, shape_of, runner, fields = OPS[op]
    shapes = [shape_of(k) for k in keys] if keys else list(all_shapes)
    for name, path in harnesses.items():
        pr.check_tools(path, qemu, sysroot, plugin)
    for tool in (mca.LLVM_MC, mca.LLVM_MCA):
        mca.tool(tool)
    jobs_list = [(hw, s, name, path) for hw, _ in hws for s in shapes for name, path in harnesses.items()]

    def one(job):
        hw, s, name, path = job
        r = runner(path, s, qemu=qemu, sysroot=sysroot, vlen=hw.compute.vector_bits, plugin=plugin,
                   plugin_args=mem.plugin_cache_args(hw))
        priced = pr.price(r.counts, hw, s.macs)
        return {"tool": name, "shape": s.key, "model": s.model, "split": s.split, **fields(s),
                "macs": s.macs, "hardware": hw.name,
                "core": hw.model_core, "vlen": hw.compute.vector_bits, "info": r.info,
                "max_abs_error": r.max_abs_error, "reference_max": r.reference_max, **priced}

    results = []
    with concurrent.futures.ThreadPoolExecutor(max(1, jobs)) as pool:
        for job, res in zip(jobs_list, pool.map(one, jobs_list)):
            results.append(res)
            print(f"peers: {res['hardware']} {res['tool']:9s} {res['shape']}: {res['model_cycles']:,} model cycles, "
                  f"{res['fma_peak_share']:.1%} of FMA peak, vector share {res['vector_share']:.1%}", flush=True)
    order = {s.key: i for i, s in enumerate(all_shapes)}
    tools = list(harnesses)
    results.sort(key=lambda r: (r["hardware"], order[r["shape"]], tools.index(r["tool"])))
    return {
        "format": FORMAT,
        "what": f"peers' f32 {'GEMMs' if op == 'gemm' else 'convolutions'} on zoo shapes under qemu + "
                "insn_classes, priced by perf/'s llvm-mca and memory model (peers/measure.py)",
        "produced_by": "tools/bazel run //peers:measure" + ("" if op == "gemm" else "_" + op),
        "model_ignores": MODEL_IGNORES,
        "memory_model_ignores": mem.MEMORY_MODEL_IGNORES,
        "tolerance": pr.TOLERANCE,
        "tools": {"qemu": _qemu_version(str(Path(qemu).absolute())), "llvm-mca": mca.tool_version(mca.LLVM_MCA)},
        "hardware": {hw.name: {"core": hw.model_core, "vlen": hw.compute.vector_bits,
                               "peak_macs_per_cycle": hw.macs_per_cycle, "sha256": sha256_file(p)}
                     for hw, p in hws},
        "harness_sha256": {name: sha256_file(path) for name, path in harnesses.items()},
        "results": results,
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m peers.measure", description=__doc__.split("\n")[0])
    p.add_argument("--harness", action="append", required=True, metavar="NAME=PATH",
                   help="riscv64 harness binary (repeatable: autovec, openblas, blis, xnnpack, eigen)")
    pr.add_run_arguments(p)
    p.add_argument("--op", choices=tuple(OPS), default="gemm",
                   help="GEMMs (peers/shapes.py) or convolutions (peers/conv_shapes.py)")
    p.add_argument("--shapes", default="", help="comma-separated shape keys (default: all of --op's)")
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--out", required=True, type=Path)
    args = p.parse_args(argv)
    llvm_bin = args.llvm_bin.parent if args.llvm_bin.is_file() else args.llvm_bin
    mca.use_llvm_bin(llvm_bin)
    out = pr.workspace_path(args.out)
    with OneLineErrors("peers", args.out, (pr.PeerError, HardwareError, mca.McaError, KeyError)) as cli:
        check_outputs({"--out": out}, {"--harness": [Path(h.partition("=")[2]) for h in args.harness],
                                       "--peers-repo": args.peers_repo, "--qemu": args.qemu,
                                       "--plugin": args.plugin, "--hardware": args.hardware})
        if not args.peers_repo.is_file():
            raise pr.PeerError(f"{args.peers_repo}: @peers_riscv64's VERSION not found")
        data = measure(_harnesses(args.harness), args.peers_repo.parent / "sysroot", args.qemu, args.plugin,
                       args.hardware, [k for k in args.shapes.split(",") if k], args.jobs, args.op)
        data["packages"] = args.peers_repo.read_text().splitlines()
        write_together({out: json.dumps(data, indent=1) + "\n"})
    if cli.failed:
        return cli.exit_code
    print(f"peers: {len(data['results'])} runs -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
