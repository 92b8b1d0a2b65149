"""Builds one benchmark module per dispatch for the tuned and the default compile of a model.

    python -m bench.prepare --module M.mlirbc --target host.yaml --analysis A.json --work DIR

Runs codegen's own route (codegen.compile.tuned_sources: IREE's executable configurations
with the analysis' tiles written in; none for the default build), compiles the rewritten
executable sources with `--iree-hal-dump-executable-benchmarks-to`, then compiles every
dumped benchmark (one per executable, its lowering_config kept) to a vmfb.
Writes DIR/prepare.json. Runs in its own process: it loads IREE's MLIR libraries, which
must not share a process with torch or TensorFlow.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

_SYM = r'@"?([^"\s:{}(),]+)"?'
_DISPATCH_RE = re.compile(r"stream\.cmd\.dispatch " + _SYM + "::" + _SYM + "::" + _SYM)
_EXPORT_RE = re.compile(r"hal\.executable\.export public " + _SYM)
_BENCH_FN_RE = re.compile(r"util\.func public " + _SYM + r"\(%arg0: i32\)")
_CONFIG_RE = re.compile(r"lowering_config = (#[\w.]+lowering_config<[^>]*>)")
_RESOURCE_USE_RE = re.compile(r'dense_resource<"?([^">]+)"?>')
_RESOURCE_DEF_RE = re.compile(r'^\s*"?([^":\s]+)"?: "(0x[0-9A-Fa-f]*)"', re.M)


def resource_blobs(text: str) -> dict[str, str]:
    """The builtin dialect resources (key -> hex blob) printed at the end of an MLIR file."""
    at = text.rfind("{-#")
    return dict(_RESOURCE_DEF_RE.findall(text[at:])) if at >= 0 else {}


def add_resources(bench_text: str, blobs: dict[str, str]) -> str:
    """IREE dumps a dispatch benchmark without the resources its inlined constants refer to
    (`dense_resource<...>`, e.g. a bias); append the ones it uses so it parses and compiles."""
    used = sorted(set(_RESOURCE_USE_RE.findall(bench_text)))
    if not used or "{-#" in bench_text:
        return bench_text
    missing = [k for k in used if k not in blobs]
    if missing:
        raise RuntimeError(f"dispatch benchmark refers to resource '{missing[0]}' not found in the module")
    body = "\n".join(f'      "{k}": "{blobs[k]}",' for k in used).rstrip(",")
    return bench_text.rstrip() + "\n\n{-#\n  dialect_resources: {\n    builtin: {\n" + body + "\n    }\n  }\n#-}\n"


def call_counts(cfg_text: str) -> dict[str, int]:
    """export symbol -> number of dispatch sites in the program (IREE dedups executables)."""
    counts: dict[str, int] = {}
    for m in _DISPATCH_RE.finditer(cfg_text):
        counts[m.group(3)] = counts.get(m.group(3), 0) + 1
    return counts


def prepare_variant(module: Path, analysis: Path | None, target: Path, work: Path, jobs: int) -> dict:
    from codegen.compile import tuned_sources
    from common.iree_tools import iree_compile

    ts = tuned_sources(module, analysis, target, work)
    iree_compile([ts.path.name, *ts.flags, "--compile-from=executable-sources",
                  "--iree-hal-dump-executable-benchmarks-to=bench", "-o", "model.vmfb"],
                 "dispatch benchmarks", cwd=work)
    counts = call_counts((work / "cfg.mlir").read_text())
    files = sorted((work / "bench").glob("*.mlir"))
    if not files:
        raise RuntimeError(f"{work}: iree-compile dumped no dispatch benchmarks")

    blobs = resource_blobs(ts.path.read_text())
    for f in files:
        f.write_text(add_resources(f.read_text(), blobs))

    def build(f: Path) -> tuple[Path, Path]:
        out = f.with_suffix(".vmfb")
        # The dump is at the executable-sources phase (configs already set), as codegen's own route.
        iree_compile([f.name, *ts.flags, "--compile-from=executable-sources", "-o", out.name],
                     f"dispatch benchmark {f.name}", cwd=f.parent)
        return f, out

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        built = list(pool.map(build, files))

    by_name = {e["name"]: e for e in ts.entries}
    dispatches = {}
    for f, vmfb in built:
        text = f.read_text()
        exports = _EXPORT_RE.findall(text)
        fns = _BENCH_FN_RE.findall(text)
        configs = set(_CONFIG_RE.findall(text))
        for ex in exports:
            fn = next((x for x in fns if x.endswith(ex)), None)
            e = by_name.get(ex, {})
            dispatches[ex] = {
                "executable": e.get("executable"), "vmfb": str(vmfb), "function": fn,
                "calls": counts.get(ex, 0), "configs_in_benchmark": sorted(configs),
                "status": e.get("status"), "applied": e.get("applied"),
            }
    missing = sorted(set(by_name) - set(dispatches))
    return {"flags": ts.flags, "dispatches": dispatches, "missing": missing, "model_vmfb": str(work / "model.vmfb")}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.prepare", description=__doc__.splitlines()[0])
    p.add_argument("--module", required=True, type=Path)
    p.add_argument("--target", required=True, type=Path)
    p.add_argument("--analysis", type=Path, help="analysis.json for the tuned variant")
    p.add_argument("--work", required=True, type=Path)
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--variants", default="tuned,default")
    a = p.parse_args(argv)
    from codegen.compile import CompileError

    out = {}
    try:
        for v in a.variants.split(","):
            if v == "tuned" and a.analysis is None:
                raise CompileError("the tuned variant needs --analysis")
            out[v] = prepare_variant(a.module, a.analysis if v == "tuned" else None, a.target, a.work / v, a.jobs)
            print(f"bench.prepare: {v}: {len(out[v]['dispatches'])} dispatch benchmarks", file=sys.stderr)
    except (CompileError, RuntimeError) as err:
        print(f"bench.prepare: error: {err}", file=sys.stderr)
        return 1
    (a.work / "prepare.json").write_text(json.dumps(out, indent=1, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
