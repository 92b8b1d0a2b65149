"""Whole zoo models through ONNX Runtime under qemu: numerics against the framework golden, counts priced.

    tools/bazel run //peers:measure_onnxrt [-- --models mlp,se_net]

Per model (`--model NAME=ONNX,INFO`: the .onnx peers/export_onnx.py exported and the pipeline
info with its split; the pipeline import's golden .npz, `<model_name>.golden.npz`, is beside the
info, both outputs of the models package):

1. The golden's inputs are written as the harness's input files and peers/harness/onnxrt_model.c
   runs the model under the plugin-capable qemu with `-L` the trixie riscv64 sysroot
   (@peers_riscv64, ONNX Runtime 1.21 and what it loads) exactly as peers/run.py runs a GEMM
   harness: same guest directory scheme, `-R`, PATH-only environment, the `insn_classes` plugin
   with the description's caches at its VLEN. The harness runs ORT's `Run` once untimed (arena,
   prepacking), then once inside the window markers: the plugin counts that Run only.
2. Every output is compared with the golden (the framework's own output): the largest error must
   be within `TOLERANCE` of the golden's largest magnitude, else `PeerError`.
3. The window is priced by peers.run.price (perf/mca.py on the description's `model_core`,
   perf/memory_model.py): model cycles and memory-aware cycles of one inference.
4. Once more without the plugin and with ORT's profiler on (a run that is never priced: the
   profiler adds work to each Run), for the kernels ORT ran: each node of the optimized graph
   with its op (after ORT's fusions) and execution provider.

Writes peers/data/onnxrt_measured.json (relative to the workspace under `bazel run`); nothing if
any model fails. No absolute paths or times in it; tool versions, the harness's, each model's
and golden's sha256 are.
"""

from __future__ import annotations

import argparse
import collections
import concurrent.futures
import json
import re
import struct
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from common.hardware import HardwareError, load_hardware
from common import processes
from common.core_models import MODEL_IGNORES
from common.errors import OneLineErrors, last_line
from common.files import check_outputs, sha256_file, write_together
from common.scratch import scratch_directory
from perf import counts as cnt
from perf import mca
from perf import memory_model as mem
from perf import guest
from perf.guest import GUEST_RUN_PREFIX, GUEST_RUN_ROOT
from perf.measure import _qemu_version
from peers import run as pr

FORMAT = 1
# Largest |ORT - golden| allowed, as a fraction of the golden output's largest magnitude: the
# whole-model tolerance of the pipeline's own host check (models/pipeline_test.py F32_TOLERANCE).
TOLERANCE = 1e-4
LIBRARY = "usr/lib/riscv64-linux-gnu/libonnxruntime.so.1.21"  # in the sysroot; NEEDED by the harness
OUT = Path("peers/data/onnxrt_measured.json")


@dataclass(frozen=True)
class Model:
    name: str  # the zoo pipeline
    onnx: Path
    golden: Path
    info: Path


@dataclass
class OrtRun:
    info: dict[str, str]
    errors: list[dict]  # per output: max_abs_error, golden_max
    counts: cnt.DispatchCounts | None
    kernels: list[dict] | None  # with a profile: per node, op and provider


def parse_model(spec: str) -> Model:
    """NAME=ONNX,INFO: the golden is the import's <NAME>.golden.npz beside the pipeline info."""
    name, sep, rest = spec.partition("=")
    parts = rest.split(",")
    if not sep or not name or len(parts) != 2 or not all(parts):
        raise pr.PeerError(f"--model {spec}: expected NAME=ONNX,INFO")
    onnx, info = (Path(p) for p in parts)
    return Model(name, onnx, info.parent / f"{name}.golden.npz", info)


def golden(model: Model) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """The import's golden inputs and outputs (input_<i>, output_<i>), f32."""
    try:
        with np.load(model.golden) as g:
            ins = [g[f"input_{i}"] for i in range(sum(k.startswith("input_") for k in g.files))]
            outs = [g[f"output_{i}"] for i in range(sum(k.startswith("output_") for k in g.files))]
    except (OSError, ValueError, KeyError) as err:
        raise pr.PeerError(f"{model.golden}: not a golden .npz of input_<i>/output_<i> ({err})") from None
    if not ins or not outs or any(a.dtype != np.float32 for a in ins + outs):
        raise pr.PeerError(f"{model.golden}: the ORT harness takes f32 inputs and outputs only")
    return ins, outs


def check_tools(harness: Path, qemu: Path, sysroot: Path, plugin: Path | None = None) -> None:
    pr.check_tools(harness, qemu, sysroot, plugin)
    if not (Path(sysroot) / LIBRARY).is_file():
        raise pr.PeerError(f"{sysroot}: no {LIBRARY} (@peers_riscv64 without ONNX Runtime)")


def riscv_arch(path: Path) -> str:
    """The Tag_RISCV_arch string of a riscv64 ELF's .riscv.attributes section: the ISA the
    library was compiled for (no `v`: not one RVV instruction can be in it)."""
    data = Path(path).read_bytes()
    if data[:6] != b"\x7fELF\x02\x01":
        raise pr.PeerError(f"{path}: not a little-endian ELF64 file")
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)

    def section(i):
        name, _, _, _, offset, size = struct.unpack_from("<IIQQQQ", data, shoff + i * shentsize)
        return name, offset, size

    _, strings, _ = section(shstrndx)
    for i in range(shnum):
        name, offset, size = section(i)
        if data[strings + name:].split(b"\0", 1)[0] == b".riscv.attributes":
            found = re.search(rb"rv64[a-z0-9_]+", data[offset:offset + size])
            if found:
                return found.group().decode()
    raise pr.PeerError(f"{path}: no Tag_RISCV_arch in .riscv.attributes")


def _kernels(profile: Path) -> list[dict]:
    """Each node ORT's profiler saw run, once, in order: name, op (after ORT's fusions), provider."""
    try:
        events = json.loads(profile.read_text())
    except (OSError, json.JSONDecodeError) as err:
        raise pr.PeerError(f"ORT profile {profile.name}: unreadable ({err})") from None
    nodes: dict[str, dict] = {}
    for e in events:
        if e.get("cat") == "Node" and e.get("name", "").endswith("_kernel_time"):
            node = e["name"][: -len("_kernel_time")]
            nodes.setdefault(node, {"node": node, "op": e["args"]["op_name"], "provider": e["args"]["provider"]})
    if not nodes:
        raise pr.PeerError(f"ORT profile {profile.name}: no node ran")
    return list(nodes.values())


def run(harness: Path, model: Model, *, qemu: Path, sysroot: Path, vlen: int, plugin: Path | None = None,
        plugin_args: list[str] | None = None, profile: bool = False) -> OrtRun:
    """Runs the model through the harness on the golden inputs and checks every output."""
    check_tools(harness, qemu, sysroot, plugin)
    ins, outs = golden(model)
    if not Path(model.onnx).is_file():
        raise pr.PeerError(f"{model.onnx}: model not found")
    with scratch_directory(GUEST_RUN_PREFIX, GUEST_RUN_ROOT, suffix="") as tmp:
        here = Path(tmp)
        shutil.copy(harness, here / "harness")
        shutil.copy(model.onnx, here / "model.onnx")
        for i, x in enumerate(ins):
            np.ascontiguousarray(x).tofile(here / f"input_{i}.bin")
        cmd = pr.qemu_command(qemu, sysroot, vlen, here)
        counts_path = here / "counts.txt"
        if plugin is not None:
            spec = ",".join([str(Path(plugin).absolute()), f"out={counts_path}", *(plugin_args or [])])
            cmd = [cmd[0], "-plugin", spec, *cmd[1:]]
        cmd += ["./harness", "model.onnx", "."] + (["ort_profile"] if profile else [])
        proc = processes.run(cmd, capture_output=True, text=True, cwd=here,
                             env=guest.environment())
        if proc.returncode != 0:
            raise pr.PeerError(f"{Path(harness).name}: failed under qemu on {model.name} (exit {proc.returncode}): "
                               f"{last_line(proc.stderr) if proc.stderr.strip() else 'no message'}")
        info = {}
        for line in proc.stdout.splitlines():
            if line.startswith("info "):
                _, key, value = (line.split(" ", 2) + [""])[:3]
                info[key] = value
        errors = []
        for i, ref in enumerate(outs):
            path = here / f"output_{i}.bin"
            if not path.is_file():
                raise pr.PeerError(f"{Path(harness).name}: wrote no output_{i} on {model.name}")
            got = np.fromfile(path, dtype=np.float32)
            if got.size != ref.size:
                raise pr.PeerError(f"{Path(harness).name}: output_{i} of {model.name} has {got.size} floats, "
                                   f"the golden {ref.size}")
            err = float(np.max(np.abs(got.reshape(ref.shape).astype(np.float64) - ref)))
            scale = float(np.max(np.abs(ref)))
            if not np.isfinite(err) or err > TOLERANCE * scale:
                raise pr.PeerError(f"{Path(harness).name}: wrong result on {model.name} output_{i}: "
                                   f"max |ORT - golden| = {err:.3g}, allowed {TOLERANCE:g} x {scale:.3g}")
            errors.append({"output": i, "max_abs_error": err, "golden_max": scale})
        counts = kernels = None
        if plugin is not None:
            try:
                counts = cnt.read_counts(counts_path)
            except cnt.CountsError as e:
                raise pr.PeerError(f"{model.name}: {str(e).split(': ', 1)[-1]}") from None
        if profile:
            found = sorted(here.glob("ort_profile*.json"))
            if len(found) != 1 or info.get("profile") != found[0].name:
                raise pr.PeerError(f"{model.name}: ORT wrote {len(found)} profiles")
            kernels = _kernels(found[0])
    return OrtRun(info=info, errors=errors, counts=counts, kernels=kernels)


def measure(harness: Path, sysroot: Path, qemu: Path, plugin: Path, hardware: list[Path], models: list[Model],
            jobs: int) -> dict:
    hws = []
    for path in hardware:
        hw = load_hardware(path)
        if hw.model_core is None:
            raise pr.PeerError(f"{path}: no model_core: peers are priced on a core model")
        hws.append((hw, path))
    check_tools(harness, qemu, sysroot, plugin)
    for tool in (mca.LLVM_MC, mca.LLVM_MCA):
        mca.tool(tool)
    splits = {}
    for m in models:
        try:
            info = json.loads(m.info.read_text())
        except (OSError, json.JSONDecodeError) as err:
            raise pr.PeerError(f"{m.info}: not a pipeline info ({err})") from None
        if info.get("name") != m.name or info.get("model_name") != m.name:
            raise pr.PeerError(f"{m.info}: the info of {info.get('name')!r} (model {info.get('model_name')!r}), "
                               f"not of {m.name}")
        splits[m.name] = info["split"]

    def one(job):
        hw, m = job
        r = run(harness, m, qemu=qemu, sysroot=sysroot, vlen=hw.compute.vector_bits, plugin=plugin,
                plugin_args=mem.plugin_cache_args(hw))
        # MACs are not counted for ORT's Run (no dispatch list): energy and the FMA-peak share are
        # left to the report, which takes the model's MACs from our measurement of it.
        priced = pr.price(r.counts, hw, 0)
        priced.pop("fma_peak_share")
        priced["memory"].pop("energy_pj")
        return {"model": m.name, "hardware": hw.name, "core": hw.model_core, "vlen": hw.compute.vector_bits,
                "info": r.info, "outputs": r.errors, **priced}

    def kernels(m):
        return m.name, run(harness, m, qemu=qemu, sysroot=sysroot, vlen=hws[0][0].compute.vector_bits,
                           profile=True).kernels

    jobs_list = [(hw, m) for hw, _ in hws for m in models]
    results = []
    with concurrent.futures.ThreadPoolExecutor(max(1, jobs)) as pool:
        profiled = dict(pool.map(kernels, models))
        for res in pool.map(one, jobs_list):
            results.append(res)
            print(f"onnxrt: {res['hardware']} {res['model']}: {res['model_cycles']:,} model cycles, "
                  f"{res['memory']['cycles']:,} memory-aware, vector share {res['vector_share']:.1%}", flush=True)
    out_models = {}
    for m in models:
        ops = collections.Counter(k["op"] for k in profiled[m.name])
        out_models[m.name] = {
            "split": splits[m.name], "onnx_sha256": sha256_file(m.onnx), "golden_sha256": sha256_file(m.golden),
            "kernels": profiled[m.name],
            "ops": dict(sorted(ops.items(), key=lambda kv: (-kv[1], kv[0]))),
            "providers": sorted({k["provider"] for k in profiled[m.name]}),
        }
    return {
        "format": FORMAT,
        "what": "zoo models exported to ONNX (peers/export_onnx.py), one ONNX Runtime Run (single thread, "
                "sequential) under qemu + insn_classes after one untimed warm-up Run, priced by perf/'s llvm-mca "
                "and memory model (peers/onnxrt.py)",
        "produced_by": "tools/bazel run //peers:measure_onnxrt",
        "model_ignores": MODEL_IGNORES,
        "memory_model_ignores": mem.MEMORY_MODEL_IGNORES,
        "tolerance": TOLERANCE,
        "tools": {"qemu": _qemu_version(str(Path(qemu).absolute())), "llvm-mca": mca.tool_version(mca.LLVM_MCA)},
        "hardware": {hw.name: {"core": hw.model_core, "vlen": hw.compute.vector_bits,
                               "peak_macs_per_cycle": hw.macs_per_cycle, "sha256": sha256_file(p)}
                     for hw, p in hws},
        "harness_sha256": sha256_file(harness),
        "models": out_models,
        "results": sorted(results, key=lambda r: (r["hardware"], [m.name for m in models].index(r["model"]))),
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m peers.onnxrt", description=__doc__.split("\n")[0])
    p.add_argument("--harness", required=True, type=Path, help="onnxrt_model_riscv64")
    p.add_argument("--model", action="append", required=True, metavar="NAME=ONNX,INFO")
    pr.add_run_arguments(p)
    p.add_argument("--models", default="", help="comma-separated subset of the --model names (default: all)")
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--out", type=Path, default=OUT)
    args = p.parse_args(argv)
    llvm_bin = args.llvm_bin.parent if args.llvm_bin.is_file() else args.llvm_bin
    mca.use_llvm_bin(llvm_bin)
    out = pr.workspace_path(args.out)
    with OneLineErrors("onnxrt", args.out, (pr.PeerError, HardwareError, mca.McaError)) as cli:
        models = [parse_model(s) for s in args.model]
        check_outputs({"--out": out}, {"--harness": args.harness, "--peers-repo": args.peers_repo,
                                       "--qemu": args.qemu, "--plugin": args.plugin, "--hardware": args.hardware,
                                       "--model": [f for m in models for f in (m.onnx, m.golden, m.info)]})
        wanted = [k for k in args.models.split(",") if k]
        unknown = sorted(set(wanted) - {m.name for m in models})
        if unknown:
            raise pr.PeerError(f"--models {','.join(unknown)}: not among the --model names")
        if wanted:
            models = [m for m in models if m.name in wanted]
        if not args.peers_repo.is_file():
            raise pr.PeerError(f"{args.peers_repo}: @peers_riscv64's VERSION not found")
        data = measure(args.harness, args.peers_repo.parent / "sysroot", args.qemu, args.plugin, args.hardware,
                       models, args.jobs)
        data["packages"] = args.peers_repo.read_text().splitlines()
        data["onnxruntime_arch"] = riscv_arch(args.peers_repo.parent / "sysroot" / LIBRARY)
        write_together({out: json.dumps(data, indent=1) + "\n"})
    if cli.failed:
        return cli.exit_code
    print(f"onnxrt: {len(data['results'])} runs of {len(data['models'])} models -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
