"""Tuning records (common/tuning_schema.py): a measured choice's key, and its figures replayed.

choice/tune.py computes the key of what it is asked to choose (`record_key`), and when a committed
record has that key it hands the record's figures (`code_results`, `measurements`) to the same
decision code a measurement feeds, instead of compiling and running candidates; otherwise it
measures and writes the record a refresh commits (`make_record`).

A record's figures are sealed by the tool that writes it: `figures_sha256` (a tile record's) and
`choice_sha256` (a strategy record's) hash the canonical JSON of its key and figures, and
`load_record` / `load_strategy_record` refuse a record whose figures do not match, or that has no
hash, with one line naming it and its refresh command. A figure edited by hand is never replayed.

The seal is no defence against a forger: it is an unkeyed hash of data in the same file, and
`dump_record` re-seals anything. What ships is therefore checked against what decides and what
measures, not against the seal: tuning/audit.py (`//tools:audit`, run by CI) re-derives every
strategy record's choice from its figures and measures a rotating sample of figures again.

The `refresh` field is outside the seal and is printed as the command to run, so a record whose
refresh is not exactly the command the tools write (`bazel run //tools:tune -- //<package>:<its
pipeline>`) is refused: an edited one could be `curl ... | sh`. A record is read only from a
regular file of at most MAX_RECORD_BYTES (a FIFO blocked the read forever, /dev/zero read to
MemoryError).
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import os
import re
import stat
from pathlib import Path

from pydantic import ValidationError

from common.analysis_schema import Analysis, Candidate, Dispatch
from common.errors import validation_error_where
from common.files import InputError, check_input, parse_json, read_json_text, sha256_file
from common.measurement_version import MEASUREMENT_VERSION, STRATEGY_CHOICE_VERSION
from common.tuning_schema import (CandidateResult, DispatchKey, Measurement, RecordKey, StrategyCandidateKey,
                                  StrategyKey, StrategyRecord, TuningRecord)

IREE_DISTRIBUTION = "iree-base-compiler"


class RecordError(RuntimeError):
    """A record file is unreadable or not a tuning record; the message names it."""


# The largest committed record (mobilenet_v2_riscv's) is 66 KB and a record grows with its
# dispatches and candidates only; 64 MiB is ~1000 times that, yet small enough to hold in memory:
# anything larger is no record, and is refused before it is read whole.
MAX_RECORD_BYTES = 64 << 20

# The refresh command the tools write (choice/tune.py _refresh_command, choice/choose.py, from
# choice/defs.bzl's `//<package>:<record name>`): Bazel package and target names of plain
# characters only, so no shell syntax can ride along. Its target must be the record's pipeline.
_REFRESH = re.compile(r"bazel run //tools:tune -- "
                      r"//(?P<package>(?:[A-Za-z0-9_][A-Za-z0-9_.-]*)(?:/[A-Za-z0-9_][A-Za-z0-9_.-]*)*)?"
                      r":(?P<name>[A-Za-z0-9_][A-Za-z0-9_.-]*)")


def _sha256_json(value: object) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def dispatch_key(d: Dispatch) -> DispatchKey:
    """The dispatch's fingerprint and its candidate list's hash."""
    what = d.model_dump(mode="json", include={"executable", "root_op", "kind", "loops", "operands", "signature"})
    cands = [c.model_dump(mode="json", include={"name", "generator", "tiles"}) for c in d.candidates]
    return DispatchKey(fingerprint=_sha256_json(what), candidates_sha256=_sha256_json(cands))


def _files_sha256(files: list[tuple[str, Path]]) -> str:
    h = hashlib.sha256()
    for name, path in files:
        h.update(f"{name}\0{sha256_file(path)}\n".encode())
    return h.hexdigest()


def llvm_sha256(llvm_bin: Path) -> str:
    """sha256 over @llvm19's files (the pinned Debian packages: wrappers, binaries, libraries)."""
    from perf.mca import LLVM_TOOLS  # noqa: PLC0415 (only the tool names)
    names = [t for t in LLVM_TOOLS] + [f"_bin/{t}" for t in LLVM_TOOLS]
    names += sorted(f"lib/{p.name}" for p in (llvm_bin / "lib").iterdir())
    return _files_sha256([(n, llvm_bin / n) for n in names])


def tool_versions(llvm_bin: Path, qemu: Path, plugin: Path, runner: Path) -> dict[str, str]:
    return {
        IREE_DISTRIBUTION: importlib.metadata.version(IREE_DISTRIBUTION),
        "llvm19": llvm_sha256(llvm_bin),
        "qemu": sha256_file(qemu),
        "qemu_plugin": sha256_file(plugin),
        "hal_runner_riscv64": sha256_file(runner),
        "measurement_version": str(MEASUREMENT_VERSION),
    }


def record_key(analysis: Analysis, target_name: str, target: Path, hardware: Path, module: Path,
               candidates: int, code_ranked: int, tools: dict[str, str], placements: int = 1) -> RecordKey:
    """The key of a measured choice of `analysis` (the predicted one, before any costing)."""
    return RecordKey(
        model=analysis.model, target=target_name, target_sha256=sha256_file(target),
        hardware=analysis.hardware, hardware_sha256=sha256_file(hardware),
        module_sha256=sha256_file(module), candidates_per_dispatch=candidates, code_ranked=code_ranked,
        placements=placements,
        tools=tools, dispatches={d.name: dispatch_key(d) for d in analysis.dispatches})


def _plain_and_tool_differences(a: dict, b: dict, fields, structured: tuple[str, ...]) -> tuple[list[str], list[str]]:
    """(the plain `fields` of two dumped keys that differ, the tools that differ), one phrase each;
    `structured` fields are the caller's to compare."""
    plain = [f"{f} {a[f]} (recorded) vs {b[f]}" for f in fields
             if f not in ("tools", *structured) and a[f] != b[f]]
    tools = [f"tool {t} {a['tools'].get(t)} (recorded) vs {b['tools'].get(t)}"
             for t in sorted(set(a["tools"]) | set(b["tools"])) if a["tools"].get(t) != b["tools"].get(t)]
    return plain, tools


def key_differences(recorded: RecordKey, tree: RecordKey) -> list[str]:
    """What differs between a record's key and the tree's, one phrase each (empty: equal)."""
    a, b = recorded.model_dump(), tree.model_dump()
    plain, tools = _plain_and_tool_differences(a, b, RecordKey.model_fields, ("dispatches",))
    out = plain + tools
    for name in sorted(set(a["dispatches"]) | set(b["dispatches"])):
        x, y = a["dispatches"].get(name), b["dispatches"].get(name)
        if x is None:
            out.append(f"dispatch {name} not in the record")
        elif y is None:
            out.append(f"dispatch {name} no longer in the module")
        elif x["fingerprint"] != y["fingerprint"]:
            out.append(f"dispatch {name} changed (fingerprint)")
        elif x != y:
            out.append(f"dispatch {name}'s candidate list changed")
    return out


def _read_record_text(path: Path, what: str) -> str:
    """The text of the record file `path`, checked by parse_json, or InputError naming it: not
    found, not a regular file (check_input: a FIFO blocked the read forever, /dev/zero read to
    MemoryError), larger than MAX_RECORD_BYTES, not UTF-8, not JSON."""
    path = check_input(path, what)
    try:
        # O_NONBLOCK and fstat: a file swapped for a FIFO since check_input still never blocks.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        with os.fdopen(fd, "rb") as f:
            if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
                raise InputError(f"{path}: not a regular file: not a {what}")
            data = f.read(MAX_RECORD_BYTES + 1)  # never more than the cap, whatever the file claims
    except InputError:
        raise
    except OSError as err:
        raise InputError(f"{path}: cannot read the {what}: {err.strerror or err}") from None
    if len(data) > MAX_RECORD_BYTES:
        raise InputError(f"{path}: not a {what}: larger than {MAX_RECORD_BYTES >> 20} MiB (a record is KBs)")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise InputError(f"{path}: not a {what}: not UTF-8 text (byte {err.start})") from None
    parse_json(text, path, what)  # not JSON, a key given twice, NaN
    return text


def _check_refresh(path: Path, record) -> None:
    """RecordError unless the record's `refresh` is the command its tool writes for its pipeline:
    it is printed as the command to run, and the seal does not cover it."""
    m = _REFRESH.fullmatch(record.refresh)
    if m is None or m["name"] != record.pipeline:
        raise RecordError(f"{path}: field 'refresh' is not the command the tools write "
                          "(`bazel run //tools:tune -- //<package>:<pipeline>`, the record's pipeline): "
                          "refused, not printed")


def _load(path: Path, model, what: str):
    """The record at `path`, or RecordError in one line naming it and the field: a truncated record
    gave pydantic's whole report ("1 validation error for TuningRecord ... [type=json_invalid,
    input_value=...] For further information visit ..."), and a key given twice was read as its
    last value; a refresh command not of the tools' form is refused (_check_refresh)."""
    try:
        record = model.model_validate_json(_read_record_text(path, what))
    except InputError as err:  # missing, not a regular file, too large, not UTF-8, not JSON
        raise RecordError(str(err)) from None
    except ValidationError as err:
        where, why = validation_error_where(err)
        raise RecordError(f"{path}: not a {what}: field '{where}': {why}") from None
    _check_refresh(path, record)
    return record


def figures_sha256(record: TuningRecord) -> str:
    """sha256 of the canonical JSON (sorted keys, no spaces) of the record's key and results: what a
    replay feeds the decision code."""
    return _sha256_json(record.model_dump(mode="json", exclude_none=True, include={"key", "results"}))


def choice_sha256(record: StrategyRecord) -> str:
    """sha256 of the canonical JSON of the strategy record's key and choice: what a replay ships."""
    return _sha256_json(record.model_dump(mode="json", include={"key", "choice"}))


def _sealed(record, field: str, digest) -> object:
    """`record` with its hash `field` set to `digest(record)`; a record carrying another hash had
    its figures changed after they were sealed, and is refused."""
    want = digest(record)
    have = getattr(record, field)
    if have is not None and have != want:
        raise RecordError(f"{record.pipeline}: its figures changed after its {field} was computed; "
                          f"`{record.refresh}` rewrites it")
    return record.model_copy(update={field: want})


def _check_sealed(path: Path, record, field: str, digest) -> None:
    have = getattr(record, field)
    if have is None:
        raise RecordError(f"{path}: no {field} (a record is written by its tool with the hash of its figures); "
                          f"`{record.refresh}` rewrites it")
    if have != digest(record):
        raise RecordError(f"{path}: its figures do not match its {field} (edited by hand?): not replayed; "
                          f"`{record.refresh}` rewrites it")


def load_record(path: Path) -> TuningRecord:
    """The tile record at `path`, its figures checked against its figures_sha256."""
    record = _load(path, TuningRecord, "tuning record")
    _check_sealed(path, record, "figures_sha256", figures_sha256)
    return record


def seal_record(record: TuningRecord) -> TuningRecord:
    """`record` with its figures_sha256 (what the measuring tool writes)."""
    return _sealed(record, "figures_sha256", figures_sha256)


def dump_record(record: TuningRecord) -> str:
    """The record's file text, sealed (figures_sha256): key order as written (traffic levels
    innermost first), 1-space indent, so that a refresh's diff shows which figures moved."""
    return json.dumps(seal_record(record).model_dump(mode="json", exclude_none=True), indent=1) + "\n"


def code_results(record: TuningRecord) -> tuple[dict[tuple[str, str], float], dict[tuple[str, str], str]]:
    """The record's code-model figures as choice.tune.code_rank keeps them: (cycles, errors)."""
    cycles, errors = {}, {}
    for d, cands in record.results.items():
        for c, r in cands.items():
            if r.code_model_cycles is not None:
                cycles[(d, c)] = r.code_model_cycles
            if r.code_error is not None:
                errors[(d, c)] = r.code_error
    return cycles, errors


def measurements(record: TuningRecord) -> tuple[dict[tuple[str, str], Measurement], dict[tuple[str, str], str]]:
    """The record's measurements as choice.tune.tune keeps them: (measured, failed)."""
    measured, failed = {}, {}
    for d, cands in record.results.items():
        for c, r in cands.items():
            if r.measured is not None:
                measured[(d, c)] = r.measured
            if r.measure_error is not None:
                failed[(d, c)] = r.measure_error
    return measured, failed


def make_record(pipeline: str, refresh: str, key: RecordKey, analysis: Analysis) -> TuningRecord:
    """The record of a measured choice: every candidate's code-model and measured figures, as
    the chosen analysis holds them (dispatches and candidates in the analysis' order)."""
    results: dict[str, dict[str, CandidateResult]] = {}
    for d in analysis.dispatches:
        tried = {c.name: _result_of(c) for c in d.candidates if _tried(c)}
        if tried:
            results[d.name] = tried
    return seal_record(TuningRecord(pipeline=pipeline, refresh=refresh, key=key, results=results))


def _tried(c: Candidate) -> bool:
    return any(x is not None for x in (c.code_model_cycles, c.code_error, c.measured_model_cycles, c.measure_error))


def _result_of(c: Candidate) -> CandidateResult:
    measured = None
    if c.measured_model_cycles is not None:
        measured = Measurement(model_cycles=c.measured_model_cycles,
                               memory_aware_cycles=c.measured_memory_aware_cycles,
                               energy_pj=c.measured_energy_pj, traffic_bytes=c.measured_traffic_bytes,
                               placement_memory_aware_cycles=c.measured_placement_memory_aware_cycles)
    return CandidateResult(code_model_cycles=c.code_model_cycles, code_error=c.code_error,
                           measured=measured, measure_error=c.measure_error)


def applied_tiles_sha256(analysis: Path) -> str:
    """sha256 of what a compile takes from `analysis` (codegen.compile.apply_analysis checks and
    applies): the target, lanes and hardware it was made for and, per dispatch, the names, root op,
    loops, provenance and tiles. Its predictions (costs, candidates' figures, ZigZag's mapping and
    energy) decide no byte of the build, so a change to them leaves a strategy record replaying."""
    try:
        a = Analysis.model_validate_json(read_json_text(analysis, "analysis file", "malformed analysis"))
    except ValidationError as err:
        where, why = validation_error_where(err)
        raise RecordError(f"{analysis}: malformed analysis: {where}: {why}") from None
    applied = {
        "model": a.model, "target": a.target, "vector_lanes_f32": a.vector_lanes_f32,
        "hardware": a.hardware, "hardware_sha256": a.hardware_sha256,
        "dispatches": [d.model_dump(mode="json", include={"name", "executable", "root_op", "loops",
                                                          "provenance", "tiles"})
                       for d in a.dispatches],
    }
    return _sha256_json(applied)


def strategy_key(pipeline: str, module: Path, hardware: Path, hardware_name: str, margin: float,
                 candidates: list[tuple[str, Path, Path | None]], llvm_bin: Path,
                 confirm: tuple[Path, Path, Path] | None) -> StrategyKey:
    """The key of a strategy choice among (strategy, target file, analysis or None) candidates,
    the baseline first; `confirm`: (qemu, plugin, runner) when the choice is measured too."""
    tools = {
        IREE_DISTRIBUTION: importlib.metadata.version(IREE_DISTRIBUTION),
        "llvm19": llvm_sha256(llvm_bin),
        "measurement_version": str(MEASUREMENT_VERSION),
        "strategy_choice_version": str(STRATEGY_CHOICE_VERSION),
    }
    if confirm is not None:
        qemu, plugin, runner = confirm
        tools.update(qemu=sha256_file(qemu), qemu_plugin=sha256_file(plugin),
                     hal_runner_riscv64=sha256_file(runner))
    return StrategyKey(
        pipeline=pipeline, module_sha256=sha256_file(module), hardware=hardware_name,
        hardware_sha256=sha256_file(hardware), margin=margin, confirmed=confirm is not None,
        candidates=[StrategyCandidateKey(strategy=s, target_sha256=sha256_file(t),
                                         applied_tiles_sha256=applied_tiles_sha256(a) if a is not None else None)
                    for s, t, a in candidates],
        tools=tools)


def strategy_key_differences(recorded: StrategyKey, tree: StrategyKey) -> list[str]:
    """What differs between a strategy record's key and the tree's, one phrase each."""
    a, b = recorded.model_dump(), tree.model_dump()
    out, tools = _plain_and_tool_differences(a, b, StrategyKey.model_fields, ("candidates",))
    ra, rb = {c["strategy"]: c for c in a["candidates"]}, {c["strategy"]: c for c in b["candidates"]}
    if list(ra) != list(rb):
        out.append(f"candidates {list(ra)} (recorded) vs {list(rb)}")
    for s in ra.keys() & rb.keys():
        for f in ("target_sha256", "applied_tiles_sha256"):
            if ra[s][f] != rb[s][f]:
                out.append(f"{s}'s {f.removesuffix('_sha256')} changed")
    return out + tools


def load_strategy_record(path: Path) -> StrategyRecord:
    """The strategy record at `path`, its key and choice checked against its choice_sha256."""
    record = _load(path, StrategyRecord, "strategy record")
    _check_sealed(path, record, "choice_sha256", choice_sha256)
    return record


def seal_strategy_record(record: StrategyRecord) -> StrategyRecord:
    """`record` with its choice_sha256 (what the choosing tool writes)."""
    return _sealed(record, "choice_sha256", choice_sha256)


def dump_strategy_record(record: StrategyRecord) -> str:
    """The strategy record's file text, sealed (choice_sha256)."""
    return json.dumps(seal_strategy_record(record).model_dump(mode="json"), indent=1) + "\n"
