"""Recorded ZigZag results: a build replays them instead of running ZigZag (issue 76).

ZigZag took 1,101 s of a newcomer's cold `bazel test //...` (58 analyses, up to 206 s each) although
its answer is a pure function of what it is given. Each run is keyed here by exactly that: the layer
(root op as a ZigZag workload entry), the accelerator and mapping YAML written for it, the loop count
and LOMA's settings, the zigzag-dse version, the sources its patch relies on and
`zigzag_cost.RESULT_VERSION` (bumped when what `zigzag_cost.run` extracts changes). A key found in
the committed results (analysis/zigzag_results/*.json) is replayed; any other runs ZigZag and is
said so in the analysis' ZigZag log (`<analysis>.zigzag.json`, output group `zigzag`), which
//tuning:zigzag_replay_test reads for every zoo analysis. The analysis.json is the same bytes
either way: a live result goes through the same JSON round trip a recorded one did.

    tools/bazel run //tuning:record_zigzag    # after a change that stales them: runs what is
                                              # missing and merges it into analysis/zigzag_results/
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from importlib import metadata
from pathlib import Path

from common.files import InputError, atomic_write, read_json

SCHEMA_VERSION = 1


class ZigZagResultsError(ValueError):
    """A results file or log that cannot be read; the message names it."""


def job_key(layer: dict, accelerator_yaml: str, mapping_yaml: str, nloops: int, lpf_limit: int,
            lpf_merge: str) -> str:
    """sha256 of everything a ZigZag run's result depends on."""
    from analysis import zigzag_cost

    payload = {
        "layer": layer,
        "accelerator": accelerator_yaml,
        "mapping": mapping_yaml,
        "nloops": nloops,
        "lpf_limit": lpf_limit,
        "lpf_merge": lpf_merge,
        "zigzag_dse": metadata.version("zigzag-dse"),
        "patched_sources": zigzag_cost.PATCHED_SOURCES_SHA256,
        "result_version": zigzag_cost.RESULT_VERSION,
    }
    return hashlib.sha256(json.dumps(payload, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def normalized(result: dict | None) -> dict | None:
    """`result` as it reads back from JSON: live and replayed results are the same values."""
    return None if result is None else json.loads(json.dumps(result, sort_keys=True))


def _load_json(path: Path) -> dict:
    try:
        data = read_json(path, "ZigZag results file")  # strict: names the file, refuses NaN
    except InputError as err:
        raise ZigZagResultsError(str(err)) from None
    if not isinstance(data, dict) or data.get("schema_version") != SCHEMA_VERSION \
            or not isinstance(data.get("entries"), dict):
        raise ZigZagResultsError(f"{path}: not a ZigZag results file of schema {SCHEMA_VERSION} "
                                 "({'schema_version', 'entries': {key: entry}})")
    for key, entry in data["entries"].items():
        if not isinstance(entry, dict) or ("result" not in entry and "failure" not in entry):
            raise ZigZagResultsError(f"{path}: entry {key[:12]} has neither a result nor a failure")
    return data


def load(paths: list[Path]) -> dict[str, dict]:
    """{key: entry} of every committed results file (entry: {'result': dict | None, 'failure'?})."""
    entries: dict[str, dict] = {}
    for path in paths:
        entries.update(_load_json(path)["entries"])
    return entries


@dataclasses.dataclass
class ZigZagLog:
    """An analysis' ZigZag log: every entry it used, and the keys that ran ZigZag there."""

    hardware: str = ""
    entries: dict[str, dict] = dataclasses.field(default_factory=dict)
    live: list[str] = dataclasses.field(default_factory=list)

    def text(self) -> str:
        return json.dumps({"schema_version": SCHEMA_VERSION, "hardware": self.hardware,
                           "entries": self.entries, "live": sorted(self.live)}, indent=1, sort_keys=True) + "\n"


def read_log(path: Path) -> dict:
    data = _load_json(path)
    if not isinstance(data.get("live"), list) or not isinstance(data.get("hardware"), str):
        raise ZigZagResultsError(f"{path}: not an analysis' ZigZag log (no 'live' list or 'hardware')")
    return data


def merge(results_dir: Path, logs: list[Path], prune: bool = False) -> dict[str, tuple[int, int]]:
    """Adds every logged entry to results_dir/<hardware>.json; {file name: (entries added, removed)}
    for each file that changed. `prune`: a file of a hardware the logs analyse keeps only the
    entries they used (runs of a description since changed are never replayed again)."""
    by_hardware: dict[str, dict[str, dict]] = {}
    for log in logs:
        data = read_log(log)
        by_hardware.setdefault(data["hardware"], {}).update(data["entries"])
    changed = {}
    for hardware, entries in sorted(by_hardware.items()):
        path = results_dir / f"{hardware}.json"
        current = _load_json(path)["entries"] if path.exists() else {}
        new = {k: v for k, v in entries.items() if k not in current}
        unused = [k for k in current if k not in entries] if prune else []
        if not new and not unused:
            continue
        current.update(new)
        for k in unused:
            del current[k]
        atomic_write(path, json.dumps({"schema_version": SCHEMA_VERSION, "entries": current},
                                      indent=1, sort_keys=True) + "\n")
        changed[path.name] = (len(new), len(unused))
    return changed
