"""Figures of the results documents, as SVG text rendered from committed data.

SVG because it is text a test can compare byte for byte: text is drawn as paths (no font lookup),
the element ids' salt is fixed and no date is written, so the same data and the same pinned
matplotlib give the same bytes.
"""

from __future__ import annotations

import io
from pathlib import Path

PEERS_SVG = Path("docs/peers.svg")
# The per-op columns plotted, in order: the peers, then IREE's tuned build, what the model ships
# (whatever its strategy) and the GEMM alone through IREE's microkernels.
OP_TOOLS = {"autovec": "naive C, clang-19 autovec", "openblas": "OpenBLAS", "blis": "BLIS", "xnnpack": "XNNPACK",
            "iree-tuned": "IREE tuned (our tiles)", "iree-shipped": "IREE as shipped",
            "iree-ukernels": "IREE mmt4d ukernels"}


def _svg(fig) -> str:
    buf = io.StringIO()
    fig.savefig(buf, format="svg", metadata={"Date": None, "Creator": None})
    return buf.getvalue()


def peers_figure(ops: dict, models: dict) -> str:
    """Left: share of the FMA peak per zoo GEMM and tool (memory-aware cycles); right: our shipped
    build over ONNX Runtime per model (model and memory-aware cycles), calibration and held-out
    models apart."""
    import matplotlib

    matplotlib.use("Agg")
    # From matplotlib's defaults, whatever an earlier import set (ZigZag, imported by `--collect
    # prediction`, changes rcParams): the same data give the same bytes.
    with matplotlib.rc_context():
        matplotlib.rcdefaults()
        matplotlib.rcParams.update({"svg.hashsalt": "riscv-ml-toolchain", "svg.fonttype": "path"})
        return _peers_figure(ops, models)


def _peers_figure(ops: dict, models: dict) -> str:
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(13, 4.8), gridspec_kw={"width_ratios": [3, 2]})
    labels = [f"{o['model']}\n{o['m']}x{o['n']}x{o['k']}" + ("*" if o["split"] == "held_out" else "")
              for o in ops["ops"]]
    width = 0.8 / len(OP_TOOLS)
    for i, (tool, name) in enumerate(OP_TOOLS.items()):
        shares = [100 * o["tools"][tool]["memory_aware_fma_peak_share"] for o in ops["ops"]]
        left.bar([x + (i - len(OP_TOOLS) / 2 + 0.5) * width for x in range(len(labels))], shares, width,
                 label=name)
    left.set_xticks(range(len(labels)), labels, fontsize=7)
    left.set_ylabel("% of the FMA peak (memory-aware cycles)")
    left.set_title(f"Per-op GEMMs on {ops['core']} (VLEN {ops['vlen']}); * held-out", fontsize=10)
    left.set_ylim(0, 118)
    left.legend(fontsize=7, ncol=3, loc="upper center")
    rows = sorted(models["models"], key=lambda m: (m["split"], m["model"]))
    names = [m["model"] + ("*" if m["split"] == "held_out" else "") for m in rows]
    y = range(len(rows))
    right.barh([v - 0.2 for v in y], [m["ours_over_ort_model_cycles"] for m in rows], 0.4, label="model cycles")
    right.barh([v + 0.2 for v in y], [m["ours_over_ort_memory_aware_cycles"] for m in rows], 0.4,
               label="memory-aware cycles")
    right.axvline(1.0, color="black", linewidth=0.8)
    right.set_yticks(list(y), names, fontsize=8)
    right.set_xlabel("ours as shipped / ONNX Runtime (below 1: ours faster)")
    right.set_title("Whole models, one inference; * held-out", fontsize=10)
    right.legend(fontsize=7, loc="center right")
    fig.tight_layout()
    svg = _svg(fig)
    plt.close(fig)
    return svg
