"""Writes every results document from committed data: the one command behind docs/results*.md.

    bazel run //tools:report                        # docs/results.md, results_memory.md,
                                                    # results_strategies.md, peers.md (+ its
                                                    # tables' JSON and peers.svg)
    bazel run //tools:report -- --check             # exit 1 if any committed document differs
    bazel run //tools:report -- --collect memory    # first refresh docs/data/ from bazel-bin:
    bazel run //tools:report -- --collect riscv_stock   #   (build what each needs first, see below)
    bazel run //tools:report -- --collect bounds
    bazel run //tools:report -- --collect prediction   # ZigZag on what ships (after bounds)

The data come from measurements committed beside them:
  memory       docs/data/measured_choices.json, *.sweep.json  <- bazel build //models:zoo_measured_choices
  riscv_stock  docs/data/stock_iree_riscv.json  <- bazel build //models:zoo_stock_perf
  bounds       docs/data/shipped_bounds.json    <- bazel build //models:zoo_shipped_perf
  prediction   docs/data/shipped_prediction.json <- bazel build //models:zoo_measured_choices
               //models:zoo_tuning_records (then results.shipped_prediction runs ZigZag, ~20 s)
  host         docs/data/host_timings.json      <- bazel run //tools:host_timings
  peers        peers/data/*.json                <- bazel run //peers:measure, //peers:iree_gemm
  strategies   tuning/strategies/*.json         <- bazel run //tools:tune
All documents are rendered first and written together (or compared, with --check); a failure
names the file and writes nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from common.errors import first_line
from common.files import read_json, write_together
from results import bounds, memory, plots, prediction, strategies, summary

COLLECT = ("memory", "riscv_stock", "bounds", "prediction")


class ReportError(RuntimeError):
    pass


def peers_documents(root: Path) -> dict[Path, str]:
    from peers import report as peers_report

    try:
        return peers_report.documents(root)
    except peers_report.ReportError as err:
        raise ReportError(f"peers: {err}") from None


def _rendered(data: str, render):
    """`render()`, or ReportError naming the data it reads when a value there is not of the type
    the renderer indexes it as (a list where an object is: a 19-line traceback, issue 80). A file
    whose top level is of the wrong type is named alone by common.files.read_json."""
    try:
        return render()
    except (TypeError, AttributeError, IndexError, KeyError) as err:
        raise ReportError(f"{data}: data of an unexpected shape ({type(err).__name__}: {first_line(err)}): "
                          "restore the committed file or collect it again") from None


def documents(root: Path, splits: dict[str, str]) -> dict[Path, str]:
    """Every results document (workspace-relative path -> text) from the data under `root`."""
    out: dict[Path, str] = {}
    out |= _rendered(f"{root / memory.DATA}, {root / memory.RANKING}, {root / memory.TRAFFIC} or "
                     f"{root / 'docs/data'}/*.sweep.json", lambda: memory.documents(root))
    out |= _rendered(f"{root / strategies.RECORDS}/*.json, {root / strategies.MEASURED} or {root / strategies.HOST_TIMED}",
                     lambda: strategies.documents(root, splits))
    out |= _rendered(str(root / bounds.DATA), lambda: bounds.documents(root, splits))
    out |= _rendered(f"{root / prediction.DATA}, {root / prediction.BOUNDS} or {root / prediction.EXPLORE}/*/explore.json",
                     lambda: prediction.documents(root, splits))
    out |= _rendered(f"{root / 'peers/data'}/*.json, {root / memory.DATA} or {root / bounds.DATA}",
                     lambda: peers_documents(root))
    out[plots.PEERS_SVG] = plots.peers_figure(json.loads(out[summary.PEERS]), json.loads(out[summary.PEER_MODELS]))
    out |= _rendered(f"the data under {root / 'docs/data'}", lambda: summary.documents(root, splits, pending=dict(out)))
    return out


def collected(what: str, root: Path, splits: dict[str, str], infos: list[Path]) -> dict[Path, str]:
    bin_root = root / "bazel-bin"
    if what == "memory":
        return memory.collected(bin_root)
    if what == "bounds":
        return bounds.collected(bin_root, splits, [read_json(i, "report data", kind=dict) for i in infos])
    if what == "prediction":
        from results import shipped_prediction  # runs ZigZag

        try:
            return {prediction.DATA: shipped_prediction.collected(root / bounds.DATA, bin_root / "models")}
        except shipped_prediction.PredictionInputError as err:
            raise ReportError(str(err)) from None
    return strategies.collected(bin_root, splits)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="bazel run //tools:report --", description=__doc__.split("\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    p.add_argument("--infos", nargs="+", type=Path, required=True,
                   help="every <pipeline>_pipeline_info.json (//models:zoo; the binary passes them)")
    p.add_argument("--root", type=Path, default=None,
                   help="the workspace (default: BUILD_WORKSPACE_DIRECTORY, i.e. where `bazel run` started)")
    p.add_argument("--check", action="store_true", help="compare with the committed documents, write nothing")
    p.add_argument("--collect", choices=COLLECT, action="append", default=[],
                   help="first refresh this data from the workspace's bazel-bin (repeatable)")
    a = p.parse_args(argv)
    root = a.root or Path(os.environ.get("BUILD_WORKSPACE_DIRECTORY", "."))
    try:
        splits = strategies.splits_of(a.infos)
        if a.check and a.collect:
            raise ReportError("--check compares the committed documents; --collect would change their data")
        for what in a.collect:
            data = collected(what, root, splits, a.infos)
            write_together({root / path: text for path, text in data.items()})
            print(f"report: collected {what} -> {', '.join(str(p) for p in data)}")
        docs = documents(root, splits)
    except (ReportError, strategies.ResultsError, strategies.RecordError, bounds.BoundsError, prediction.PredictionError, OSError, ValueError,
            KeyError) as err:
        print(f"report: {str(err).splitlines()[0] if str(err) else type(err).__name__}", file=sys.stderr)
        return 1
    if a.check:
        stale = [str(path) for path, text in docs.items()
                 if not (root / path).is_file() or (root / path).read_text() != text]
        if stale:
            print(f"report: {', '.join(stale)} differ from what the committed data give: run "
                  "`bazel run //tools:report`", file=sys.stderr)
            return 1
        print(f"report: {len(docs)} documents regenerate byte for byte")
        return 0
    write_together({root / path: text for path, text in docs.items()})
    print(f"report: {len(docs)} documents -> {', '.join(str(p) for p in docs)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
