"""The benchmark machinery shared by `//tools:bench` and `//tools:model_report`.

Three variants of one model go through the same pipeline and are timed in one process,
interleaved (each round in a carryover-balanced order, `balanced_orders`), after warm-up:
  tuned     //models:<name>_host          (ZigZag's tiles as lowering_configs)
  default   //models:<name>_host_iree_default  (IREE's heuristics, same target flags)
  framework torch eager / Keras through the model's factory `make_model()`
Per dispatch, each executable of the tuned and the default compile is rebuilt as its own
IREE dispatch benchmark (bench/prepare.py, in a child process) and timed with
iree-benchmark-module, again interleaved tuned/default over several rounds.
"""

from __future__ import annotations

import importlib
import json
import math
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

import numpy as np

from bench import riscv
from common import stats
from common.op_kinds import MAC_KINDS
from bench.artifacts import Artifacts
from common.analysis_schema import Analysis
from common.codegen_report import load_codegen_report

VARIANTS = ("tuned", "default", "framework")
# torch restricted to the ISA IREE's host target uses (x86-64-v3: AVX2 + FMA), next to torch's
# own default dispatch (which may use AVX-512 where the CPU has it).
TORCH_SAME_ISA = {"ATEN_CPU_CAPABILITY": "avx2"}
CONTRACTIONS = set(MAC_KINDS)  # the op kinds with multiply-accumulates (common/op_kinds.py)


class BenchError(RuntimeError):
    pass


class _NoBar:
    def __init__(self, iterable=None):
        self.iterable = iterable

    def __iter__(self):
        return iter(self.iterable)

    def update(self, n=1):
        pass

    def close(self):
        pass


def progress(iterable=None, total=None, desc="", disable=False):
    """tqdm on stderr (tqdm is in the lock through a dependency; no bar if it is missing)."""
    try:
        from tqdm import tqdm
    except ImportError:
        return _NoBar(iterable)
    return tqdm(iterable, total=total, desc=desc, file=sys.stderr, disable=disable, leave=False,
                dynamic_ncols=True)


# ---------------------------------------------------------------------------------------------
# End to end


def iree_callable(vmfb: Path, golden: Path) -> Callable[[], list]:
    """One call of `vmfb`'s entry point on the golden inputs, its outputs on the host."""
    from runtime.run import inputs_from, load

    fn, _, entry = load(vmfb)
    args = inputs_from(golden, entry)

    def call():
        res = fn(*args)
        res = res if isinstance(res, (list, tuple)) else [res]
        return [np.asarray(r) for r in res]  # forces completion (to_host)

    return call


def _framework_callable(art: Artifacts):
    mod = importlib.import_module(art.module)
    model, inputs = mod.make_model()
    if art.framework == "torch":
        import torch

        model.eval()

        def call():
            with torch.inference_mode():
                out = model(*inputs)
            out = out if isinstance(out, (list, tuple)) else [out]
            return [o.detach().numpy() for o in out]

        return call, f"torch {torch.__version__} eager, {torch.get_num_threads()} threads"
    if art.framework == "tensorflow":
        import tensorflow as tf

        xs = [tf.convert_to_tensor(x) for x in inputs]

        def call():
            out = model(xs[0] if len(xs) == 1 else xs, training=False)
            out = out if isinstance(out, (list, tuple)) else [out]
            return [np.asarray(o) for o in out]

        return call, f"keras {mod.__name__} on tensorflow {tf.__version__} (eager call)"
    raise BenchError(f"{art.name}: unknown framework '{art.framework}'")


class _WorkerCall:
    """A framework variant in a child process (bench/framework_worker.py), timed there."""

    def __init__(self, art: Artifacts, env: dict[str, str]):
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "bench.framework_worker", art.module], stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, text=True, env=child_env(**env))
        self.description = self.proc.stdout.readline().strip()
        if not self.description:
            raise BenchError(f"{art.name}: framework worker with {env} did not start")

    def seconds(self) -> float:
        self.proc.stdin.write("run\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise BenchError("framework worker died")
        return float(line)

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.stdin.write("quit\n")
            self.proc.stdin.close()
            self.proc.wait(timeout=30)


def timed(call: Callable[[], object]) -> Callable[[], float]:
    """A timer of `call`: seconds one call takes."""
    def seconds() -> float:
        t0 = time.perf_counter()
        call()
        return time.perf_counter() - t0
    return seconds


def balanced_orders(n: int) -> list[list[int]]:
    """Orders of n variants in which each variant goes first equally often and directly follows
    every other variant equally often (a Williams design: n rows for even n, 2n for odd).

    A plain rotation (A B C D, B C D A, ...) does the first but not the second: there B always
    follows A. Measured here, that made two byte-identical builds of a 200 us model (tuned,
    always run right after the torch worker, vs IREE's default, always right after tuned) come
    out 1.13-1.22x apart."""
    first = [0]
    for k in range(1, n):
        first.append((k + 1) // 2 if k % 2 else n - k // 2)
    rows = [[(v + r) % n for v in first] for r in range(n)]
    return rows if n % 2 == 0 else rows + [row[::-1] for row in rows]


def interleave(timers: dict, reps: int, warmup: int, desc: str, quiet: bool = False
               ) -> dict[str, list[float]]:
    """Seconds per call of each variant, measured in rounds whose order follows
    `balanced_orders`, so that drifting machine load and what ran just before (caches, a woken
    thread pool) fall on every variant alike; the first `warmup` rounds are dropped."""
    names = list(timers)
    orders = balanced_orders(len(names))
    times = {v: [] for v in names}
    for i in progress(range(warmup + reps), desc=desc, disable=quiet):
        for k in orders[i % len(orders)]:
            dt = timers[names[k]]()
            if i >= warmup:
                times[names[k]].append(dt)
    return times


def end_to_end(art: Artifacts, reps: int, warmup: int, quiet: bool = False) -> dict:
    """Median end-to-end latency of the variants, interleaved (`interleave`): tuned,
    default, the framework in this process and, for torch, torch restricted to AVX2 in a
    worker process."""
    calls = {
        "tuned": iree_callable(art.tuned_vmfb, art.golden),
        "default": iree_callable(art.default_vmfb, art.golden),
    }
    calls["framework"], fw_desc = _framework_callable(art)
    worker = _WorkerCall(art, TORCH_SAME_ISA) if art.framework == "torch" else None
    try:
        return _end_to_end(art, calls, fw_desc, worker, reps, warmup, quiet)
    finally:
        if worker is not None:
            worker.close()


def _end_to_end(art, calls, fw_desc, worker, reps, warmup, quiet) -> dict:
    golden = np.load(art.golden)
    want = golden["output_0"] if "output_0" in golden else None
    err = {}
    for v, c in calls.items():  # one call each first: numerics (not asserted, reported)
        out = c()[0]
        err[v] = float(np.max(np.abs(out.astype(np.float64) - want))) if want is not None and out.shape == want.shape else None
    timers = {v: timed(c) for v, c in calls.items()}
    if worker is not None:
        timers["framework_avx2"] = worker.seconds
    times = interleave(timers, reps, warmup, f"{art.name} end-to-end", quiet)
    res = {v: stats.summary(ts) | {"max_abs_err_vs_golden": err.get(v)} for v, ts in times.items()}
    res["framework"]["description"] = fw_desc
    if worker is not None:
        res["framework_avx2"]["description"] = worker.description
    t, d, f = (res[v]["median"] for v in VARIANTS)
    out = {"variants": res, "tuned_over_default": t / d, "tuned_over_framework": t / f,
           "reps": reps, "warmup": warmup,
           # the noise band of tuned/default: the larger relative IQR of the two
           "tuned_over_default_noise": max(res["tuned"]["iqr_rel"], res["default"]["iqr_rel"])}
    if "framework_avx2" in res:
        out["tuned_over_framework_avx2"] = t / res["framework_avx2"]["median"]
    return out


# ---------------------------------------------------------------------------------------------
# Per dispatch


def child_env(**extra: str) -> dict[str, str]:
    """This process' environment for a `python -m <repo module>` child: the repo root first on
    PYTHONPATH (plus `extra` variables)."""
    env = dict(os.environ, **extra)
    root = str(Path(os.path.abspath(__file__)).parent.parent)
    env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


def prepare_dispatches(art: Artifacts, work: Path, jobs: int, quiet: bool = False) -> dict:
    """Runs bench.prepare in a child process (IREE's MLIR libraries stay out of this one)."""
    cmd = [sys.executable, "-m", "bench.prepare", "--module", str(art.mlirbc), "--target", str(art.target),
           "--analysis", str(art.analysis), "--work", str(work), "--jobs", str(jobs)]
    env = child_env()
    if not quiet:
        print(f"[bench] compiling per-dispatch benchmarks of {art.name} (tuned + default) ...", file=sys.stderr)
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        lines = proc.stderr.strip().splitlines() or ["(no output)"]
        raise BenchError(f"preparing dispatch benchmarks failed: {lines[-1]}")
    return json.loads((work / "prepare.json").read_text())


def benchmark_tool() -> str:
    from iree.runtime.benchmark import benchmark_exe

    return os.path.realpath(benchmark_exe())


def time_dispatch(vmfb: str, function: str | None, device: str, batch: int, min_time: float) -> float:
    """Seconds per dispatch: iree-benchmark-module runs `batch` dispatches per iteration
    (KeepRunningBatch), so its real_time is already per dispatch."""
    cmd = [benchmark_tool(), f"--module={vmfb}", f"--device={device}", f"--batch_size={batch}",
           f"--benchmark_min_time={min_time}s", "--benchmark_format=json", "--benchmark_repetitions=1"]
    if function:
        cmd.append(f"--function={function}")
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        lines = (proc.stderr.strip() or proc.stdout.strip()).splitlines() or ["(no output)"]
        raise BenchError(f"{Path(vmfb).name}: iree-benchmark-module failed: {lines[-1]}")
    rows = [b for b in json.loads(proc.stdout)["benchmarks"] if b.get("run_type", "iteration") == "iteration"]
    if not rows:
        raise BenchError(f"{Path(vmfb).name}: iree-benchmark-module reported nothing")
    scale = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}[rows[0]["time_unit"]]
    return rows[0]["real_time"] * scale


def per_dispatch(prep: dict, rounds: int, device: str, batch: int, min_time: float, quiet: bool = False) -> dict:
    names = sorted(set(prep["tuned"]["dispatches"]) & set(prep["default"]["dispatches"]), key=_dispatch_key)
    times = {n: {"tuned": [], "default": []} for n in names}
    bar = progress(total=rounds * len(names) * 2, desc="dispatch benchmarks", disable=quiet)
    for r in range(rounds):
        for i, n in enumerate(names):
            order = ("tuned", "default") if (r + i) % 2 == 0 else ("default", "tuned")
            for v in order:
                d = prep[v]["dispatches"][n]
                times[n][v].append(time_dispatch(d["vmfb"], d["function"], device, batch, min_time))
                bar.update(1)
    bar.close()
    return times


def _dispatch_key(name: str):
    import re

    m = re.search(r"dispatch_(\d+)", name)
    return (int(m.group(1)) if m else 1 << 30, name)


# ---------------------------------------------------------------------------------------------
# Joining with the analysis and the compile reports


def _parse_config(text: str | None) -> dict | None:
    from common.iree_root import lowering_config_levels

    return lowering_config_levels(text) if text else None


def hardware_info(path: Path) -> dict:
    from common.hardware import load_hardware

    hw = load_hardware(path)
    return {"name": hw.name, "clock_ghz": hw.clock_ghz, "cores": hw.cores,
            "peak_f32_macs_per_cycle_per_core": hw.macs_per_cycle}


def join(art: Artifacts, prep: dict, times: dict, hw: dict) -> list[dict]:
    analysis = Analysis.model_validate_json(art.analysis.read_text())
    by_a = {d.name: d.model_dump(mode="json") for d in analysis.dispatches}
    rep_t = {d.name: d.model_dump(mode="json") for d in load_codegen_report(art.tuned_report).dispatches}
    rep_d = {d.name: d.model_dump(mode="json") for d in load_codegen_report(art.default_report).dispatches}
    hz = hw["clock_ghz"] * 1e9
    rows = []
    for name in sorted(times, key=_dispatch_key):
        a, t, d = by_a.get(name, {}), rep_t.get(name, {}), rep_d.get(name, {})
        loops = a.get("loops") or [{"name": f"d{i}", **l} for i, l in enumerate(t.get("loops", []))]
        bounds = [l["bound"] for l in loops]
        kind = a.get("kind") or "?"
        cost = a.get("cost") or {}
        tt, dt = stats.summary(times[name]["tuned"]), stats.summary(times[name]["default"])
        pred = cost.get("latency_cycles")
        points = math.prod(bounds) if bounds else None
        landed_t = t.get("landed_config")
        prep_t = prep["tuned"]["dispatches"][name]
        row = {
            "name": name, "executable": a.get("executable") or t.get("executable"),
            "root_op": a.get("root_op") or t.get("root_op"), "kind": kind,
            "shape": "x".join(str(b) for b in bounds),
            "loops": [f"{l['name']}:{l['bound']}{'r' if l['kind'] == 'reduction' else 'p'}" for l in loops],
            "calls": prep_t["calls"],
            "provenance": a.get("provenance") or t.get("provenance", "iree-default"),
            "reason": a.get("reason") or t.get("reason"),
            "cost_model": cost.get("model"), "predicted_cycles": pred,
            "predicted_s": pred / hz if pred is not None else None,
            "mac_utilization_pred": cost.get("mac_utilization"),
            "analysis_tiles": a.get("tiles"),
            "status": t.get("status"), "adjustments": t.get("adjustments"),
            "tuned_config": _parse_config(landed_t), "default_config": _parse_config(d.get("landed_config")),
            "tuned_pipeline": t.get("landed_pipeline"), "default_pipeline": d.get("landed_pipeline"),
            # The rebuilt benchmark must carry the config the Bazel-built module landed.
            "config_verified": (landed_t in prep_t["configs_in_benchmark"]) if landed_t else None,
            "tuned": tt, "default": dt,
            "speedup": dt["median"] / tt["median"],
            "measured_over_predicted": (tt["median"] * hz / pred) if pred else None,
            "iteration_points": points,
        }
        if kind in CONTRACTIONS and points:
            row["macs"] = points
            row["tuned_macs_per_cycle"] = points / (tt["median"] * hz)
            row["default_macs_per_cycle"] = points / (dt["median"] * hz)
        rows.append(row)
    return rows


def summarize(rows: list[dict], e2e: dict | None, hw: dict) -> dict:
    def corr(sel):
        xs = [r["predicted_cycles"] for r in sel]
        ys = [r["tuned"]["median"] for r in sel]
        return {"n": len(sel), "spearman": stats.spearman(xs, ys),
                "pearson_log": stats.pearson([math.log(x) for x in xs], [math.log(y) for y in ys]) if len(sel) > 1 and min(xs) > 0 else None}

    costed = [r for r in rows if r["predicted_cycles"]]
    zz = [r for r in costed if r["provenance"] == "zigzag"]
    contr = [r for r in rows if r["kind"] in CONTRACTIONS]
    ratio = lambda sel: stats.geomean([r["measured_over_predicted"] for r in sel if r["measured_over_predicted"]])
    by_kind = {}
    for r in rows:
        k = by_kind.setdefault(r["kind"], {"n": 0, "tuned_s": 0.0, "default_s": 0.0, "speedups": [], "ratios": []})
        k["n"] += 1
        k["tuned_s"] += r["tuned"]["median"] * max(1, r["calls"])
        k["default_s"] += r["default"]["median"] * max(1, r["calls"])
        k["speedups"].append(r["speedup"])
        if r["measured_over_predicted"]:
            k["ratios"].append(r["measured_over_predicted"])
    for k in by_kind.values():
        k["geomean_speedup"] = stats.geomean(k.pop("speedups"))
        k["geomean_measured_over_predicted"] = stats.geomean(k.pop("ratios"))
    out = {
        "dispatches": len(rows),
        "spearman_zigzag": corr(zz), "spearman_all_costed": corr(costed),
        "geomean_speedup_all": stats.geomean([r["speedup"] for r in rows]),
        "geomean_speedup_zigzag": stats.geomean([r["speedup"] for r in zz]),
        "geomean_speedup_contractions": stats.geomean([r["speedup"] for r in contr]),
        "tuned_faster": sum(r["speedup"] > 1 for r in rows),
        "tuned_faster_contractions": sum(r["speedup"] > 1 for r in contr), "contractions": len(contr),
        "geomean_measured_over_predicted_zigzag": ratio(zz),
        "geomean_measured_over_predicted_all": ratio(costed),
        "sum_dispatch_tuned_s": sum(r["tuned"]["median"] * max(1, r["calls"]) for r in rows),
        "sum_dispatch_default_s": sum(r["default"]["median"] * max(1, r["calls"]) for r in rows),
        "sum_predicted_s": sum((r["predicted_s"] or 0) * max(1, r["calls"]) for r in rows),
        "configs_verified": sum(bool(r["config_verified"]) for r in rows),
        "configs_applied": sum(r["status"] == "applied" for r in rows),
        "by_kind": by_kind,
    }
    return out


def environment(device: str) -> dict:
    import iree.runtime

    env = {"python": platform.python_version(), "machine": platform.machine(), "cpus": os.cpu_count(),
           "iree_runtime": getattr(iree.runtime, "version", None) and iree.runtime.version.VERSION,
           "dispatch_device": device}
    if (cpu := cpu_model()) is not None:
        env["cpu_model"] = cpu
    return env


def cpu_model() -> str | None:
    """This machine's CPU as /proc/cpuinfo names it (None where it does not)."""
    try:
        return next(l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name"))
    except (OSError, StopIteration):
        return None


def llvm_host_cpu() -> str | None:
    """This machine's CPU as LLVM names its scheduling model (`llc --version`'s "Host CPU", e.g.
    znver3), the core perf.code_model would price it on; None without llc (--llvm-bin) or an answer."""
    from perf import mca
    from perf.code_model.llvm_tools import LLC

    try:
        out = subprocess.run([mca.tool(LLC), "--version"], capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError, mca.McaError):
        return None
    return next((l.split(":", 1)[1].strip() for l in out.splitlines() if "Host CPU:" in l), None)


def run(art: Artifacts, reps: int = 20, warmup: int = 3, dispatch_rounds: int = 5, device: str = "local-task",
        batch: int = 10, min_time: float = 0.05, jobs: int = 2, work: Path | None = None, skip_dispatches: bool = False,
        skip_e2e: bool = False, quiet: bool = False) -> dict:
    hw = hardware_info(art.hardware)
    load0 = os.getloadavg()
    t0 = time.time()
    results: dict = {"model": art.name, "model_name": art.model_name, "framework": art.framework,
                     "split": art.split,
                     "target": "host", "hardware": hw, "environment": environment(device),
                     "settings": {"reps": reps, "warmup": warmup, "dispatch_rounds": dispatch_rounds,
                                  "dispatch_device": device, "dispatch_batch": batch,
                                  "dispatch_min_time_s": min_time}}
    # RISC-V: deterministic counts and model cycles from the build (perf/), nothing to time.
    results["riscv"] = riscv.results(art.riscv_perf_tuned, art.riscv_perf_default, art.riscv_analysis)
    with tempfile.TemporaryDirectory(prefix="bench.") as tmp:
        work = Path(work) if work else Path(tmp)
        prep = None
        if not skip_dispatches:
            # Compile first (child process, CPU heavy) so it does not overlap any timing.
            prep = prepare_dispatches(art, work, jobs, quiet)
        if not skip_e2e:
            results["end_to_end"] = end_to_end(art, reps, warmup, quiet)
        if prep is not None:
            times = per_dispatch(prep, dispatch_rounds, device, batch, min_time, quiet)
            rows = join(art, prep, times, hw)
            results["dispatches"] = rows
            results["summary"] = summarize(rows, results.get("end_to_end"), hw)
    results["environment"]["loadavg_before"] = list(load0)
    results["environment"]["loadavg_after"] = list(os.getloadavg())
    results["environment"]["wall_s"] = time.time() - t0
    return results
