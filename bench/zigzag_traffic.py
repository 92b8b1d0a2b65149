"""ZigZag's predicted traffic per memory level against the cache simulation, with and without
the hardware's write-allocate fills, for every compiled ZigZag candidate.

    python -m bench.zigzag_traffic --analysis bazel-bin/models/mlp_riscv_analysis.analysis.json \\
        [--analysis ...] --out-json docs/data/zigzag_traffic.json

Reads measured-choice analyses (schema 6). For each matmul or convolution dispatch whose `zigzag`
candidate was measured (its simulated bytes per level in `measured_traffic_bytes`), ZigZag's cost
model prices (1) ZigZag's own mapping (`Dispatch.zigzag`, analysis.zigzag_cost.evaluate_mapping)
and (2) the zigzag candidate's tiles as compiled, forced level by level (evaluate_tiles), each
per operand. ZigZag writes outputs into a level without reading them; the accelerator's
write-back caches allocate on a write miss (perf/qemu_plugin/cache_sim.c), so each output line's
first write makes the level behind fetch it. analysis.zigzag_cost.write_allocate_fills adds
those bytes, from ZigZag's own per-operand counts and the description's write policies: no
constant is fitted. results.memory renders the comparison.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

from common import hardware as hwmod
from analysis import zigzag_cost
from common.op_kinds import MAC_KINDS
from bench.run_bench import out_path
from analysis.zigzag_pricer import nest_from_json
from bench.zigzag_ranking import HARDWARE_DIR, SCHEMA, RankingInputError, _split_of
from common.errors import OneLineErrors
from common.files import atomic_write, check_outputs, sha256_file

CONTRACTIONS = MAC_KINDS  # the op kinds with multiply-accumulates (common/op_kinds.py)


def _levels(result: dict, fills: dict[str, int]) -> dict[str, dict[str, int]]:
    plain = result["traffic_bytes"]
    return {"zigzag": dict(plain), "zigzag_write_allocate": {lv: b + fills.get(lv, 0) for lv, b in plain.items()}}


def compare_analysis(path: Path, log) -> list[dict]:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as err:
        raise RankingInputError(f"{path}: cannot read: {err}") from None
    if data.get("schema_version") != SCHEMA or not data.get("measured_choice"):
        raise RankingInputError(f"{path}: not a measured-choice analysis of schema {SCHEMA}")
    hw_path = HARDWARE_DIR / f"{data['hardware']}.yaml"
    if sha256_file(hw_path) != data["hardware_sha256"]:
        raise RankingInputError(f"{path}: analysed with another {hw_path.name} than the tree's")
    hw = hwmod.load_hardware(hw_path)
    allocating = {c.name for c in hw.caches if c.write_policy == "write-back"}
    split = _split_of(path, data["model"])
    rows = []
    with tempfile.TemporaryDirectory(prefix="zztraffic_") as tmp:
        acc, mapping = hwmod.write_zigzag_inputs(hw, Path(tmp) / "inputs")
        for disp in data["dispatches"]:
            own = disp.get("zigzag")
            compiled = next((c for c in disp["candidates"] if c["name"] == "zigzag"
                             and c.get("measured_traffic_bytes")), None)
            if disp["kind"] not in CONTRACTIONS or not own or compiled is None:
                continue
            nest = nest_from_json(disp)
            n = len(nest.loops)
            layer = zigzag_cost.to_layer(disp["kind"], nest, max_searched_loops=None)
            row = {"model": data["model"], "split": split, "dispatch": disp["name"], "kind": disp["kind"],
                   "simulated": compiled["measured_traffic_bytes"]}
            try:
                mine = zigzag_cost.evaluate_mapping(layer, acc, mapping, own["temporal_mapping"],
                                                    own["spatial_mapping"], n, dump_root=Path(tmp))
                row["own_mapping"] = _levels(mine, zigzag_cost.write_allocate_fills(
                    mine["traffic_by_operand"], allocating))
                forced = zigzag_cost.evaluate_tiles(layer, acc, mapping, compiled["tiles"], list(range(n)), n,
                                                    kinds=[k for _, _, k in nest.loops], dump_root=Path(tmp))
                row["compiled_tiles"] = _levels(forced, zigzag_cost.write_allocate_fills(
                    forced["traffic_by_operand"], allocating))
            except (zigzag_cost.ZigZagFailed, ValueError) as err:
                row["error"] = str(err)
            rows.append(row)
            log(f"{data['model']} {disp['name']}: " + ("error" if "error" in row else "priced"))
    return rows


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--analysis", type=Path, action="append", required=True,
                   help="a measured-choice analysis.json (schema 6), repeatable")
    p.add_argument("--out-json", type=Path, required=True)
    p.add_argument("--quiet", action="store_true")
    a = p.parse_args(argv)
    a.analysis, a.out_json = [out_path(x) for x in a.analysis], out_path(a.out_json)
    with OneLineErrors("zigzag_traffic", a.out_json, (RankingInputError,)) as cli:
        check_outputs({"--out-json": a.out_json}, {"--analysis": a.analysis})

        def log(msg: str) -> None:
            if not a.quiet:
                print(msg, file=sys.stderr, flush=True)

        rows = [row for path in a.analysis for row in compare_analysis(path, log)]
        result = {"what": "ZigZag's predicted bytes per level, as ZigZag counts them and with the write-allocate "
                          "fills of the description's write-back caches, against the simulated bytes of the "
                          "compiled zigzag candidate",
                  "produced_by": "python -m bench.zigzag_traffic", "analyses": sorted(x.name for x in a.analysis),
                  "dispatches": rows}
        atomic_write(a.out_json, json.dumps(result, indent=1, sort_keys=True) + "\n")
        log(f"zigzag_traffic: {len(rows)} dispatches -> {a.out_json}")
    return cli.exit_code


if __name__ == "__main__":
    sys.exit(main())
