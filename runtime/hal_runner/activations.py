"""Real activations for the dispatch checks: every dispatch's input and output tensors from a host
run of the model on its golden inputs.

IREE's own tracing does the capture: the host build is compiled with
`--iree-flow-trace-dispatch-tensors` (a `flow.tensor.trace` of each dispatch's operands before it
and of its results after it), run with `iree.runtime` on the golden inputs, and each trace reaches a
`HalModuleDebugSink` as the buffer views themselves (no text to parse). A tensor in a data-tiled
(encoded) layout reaches it decoded to row-major ("... decoded to row major layout"): every captured
tensor is the logical one, the same on any target.

The traced build is IREE's build of the reference target's flags (strategy flags included); its
executables are those of check_dispatches' host reference, so the host runner must reproduce
each captured output (check_dispatches checks that: it proves the tensors were placed in the right
bindings). The zoo's dispatch tests get it built ahead (runtime.hal_runner.reference, a Bazel
action, `compile_traced`): the test itself compiles nothing.
"""

from __future__ import annotations

import gc
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from common.errors import first_line
from common.targets import IreeTarget

TRACE_FLAG = "--iree-flow-trace-dispatch-tensors"
# The host build must reproduce the framework's golden as models/pipeline_test requires of it;
# otherwise the captured tensors are not the model's activations.
GOLDEN_TOLERANCE = 1e-4


class CaptureError(RuntimeError):
    """The activations cannot be captured; the message names the culprit and the reason."""


@dataclass
class Call:
    """One dispatch call's operands and results, logical (row-major) tensors."""

    inputs: list[np.ndarray]
    outputs: list[np.ndarray]


@dataclass
class Capture:
    calls: dict[str, list[Call]] = field(default_factory=dict)  # export name -> its calls kept
    counts: dict[str, int] = field(default_factory=dict)  # export name -> calls in the run
    golden_error: float = 0.0  # max abs error of the traced run's outputs vs the golden outputs
    seconds: float = 0.0  # compile + run

    # Each export's traces not yet paired, per side. A trace of inputs that are the function's own
    # arguments depends on nothing the dispatch does, so IREE's stream scheduler may emit it after
    # the dispatch's outputs (PT2E's first quantize, pt2e_cnn): the k-th inputs trace of an export
    # pairs with its k-th outputs trace, whichever arrives first.
    pending: dict[tuple[str, str], list[list[np.ndarray]]] = field(default_factory=dict)

    @property
    def nbytes(self) -> int:
        return sum(a.nbytes for cs in self.calls.values() for c in cs for a in (*c.inputs, *c.outputs))

    def add(self, key: str, arrays: list[np.ndarray], every_call: bool) -> None:
        """One dispatch trace (`key` as IREE names it): a call once both its sides arrived; all
        of an export's calls kept with `every_call`, else its first."""
        export, side = _export_of(key)
        other = self.pending.get((export, "outputs" if side == "inputs" else "inputs"))
        if not other:
            self.pending.setdefault((export, side), []).append(arrays)
            return
        inputs, outputs = (arrays, other.pop(0)) if side == "inputs" else (other.pop(0), arrays)
        self.counts[export] = self.counts.get(export, 0) + 1
        kept = self.calls.setdefault(export, [])
        if every_call or not kept:
            kept.append(Call(inputs, outputs))

    def unpaired(self) -> list[str]:
        """'<export> <side>' of every trace whose other side never came."""
        return sorted(f"{export} {side}" for (export, side), left in self.pending.items() if left)


def _export_of(key: str) -> tuple[str, str]:
    """`<executable>::<export> inputs[ with {0} decoded to row major layout]` -> (export, side)."""
    head = key.split(" with ", 1)[0]
    name, _, side = head.rpartition(" ")
    if side not in ("inputs", "outputs") or "::" not in name:
        raise CaptureError(f"unexpected dispatch trace key {key!r}")
    return name.rsplit("::", 1)[1], side


def compile_traced(module: Path, target: IreeTarget, out_vmfb: Path) -> None:
    """IREE's build of |module| for the host |target| (its flags, strategy flags included) with
    dispatch tracing, written to |out_vmfb|. Raises CaptureError naming what failed."""
    from common.iree_tools import CompileError, iree_compile

    if not target.runnable_on_host:
        raise CaptureError(f"target '{target.name}' cannot run on this machine: no host run to capture")
    try:
        iree_compile([str(target.compile_input(module)), *target.compile_flags(), TRACE_FLAG, "-o", str(out_vmfb)],
                 "traced host build")
    except CompileError as err:
        raise CaptureError(str(err)) from None


def capture(module: Path, target: IreeTarget, golden: Path, workdir: Path, every_call: bool = False,
            traced: Path | None = None) -> Capture:
    """Runs |module|'s host |target| build with dispatch tracing (|traced|, from compile_traced;
    compiled here into |workdir| when None) on the golden inputs of |golden| (runtime.run's
    input_<i>/output_<i> .npz) and returns every export's
    first call, or all of its calls with |every_call| (an export runs once per layer it serves:
    ResNet-18's 40 exports make 61 calls, a recurrent model's cell one per step). Raises
    CaptureError when the target cannot run here, the golden does not fit the entry point, the
    traced build or run fails, or the run does not reproduce the golden outputs."""
    import iree.runtime as rt

    from runtime.manifest import ManifestError, entry_points
    from runtime.run import RunError, check_outputs_against, inputs_from, load_npz

    if not target.runnable_on_host:
        raise CaptureError(f"target '{target.name}' cannot run on this machine: no host run to capture")
    start = time.monotonic()
    workdir.mkdir(parents=True, exist_ok=True)
    try:
        entries = entry_points(module)
        if not entries:
            raise CaptureError(f"{module}: no public function to run")
        args = inputs_from(golden, entries[0])
        gold = load_npz(golden)
    except (ManifestError, RunError) as err:
        raise CaptureError(str(err)) from None
    vmfb = traced
    if vmfb is None:
        vmfb = workdir / "traced.vmfb"
        compile_traced(module, target, vmfb)
    elif not vmfb.is_file():
        raise CaptureError(f"{vmfb}: traced host build not found")

    result = Capture()
    problems: list[str] = []  # raised after the run: an exception would end inside IREE's C callback

    def sink(key: str, views) -> None:
        try:
            _record(key, views)
        except CaptureError as err:
            problems.append(str(err))

    def _record(key: str, views) -> None:
        # A copy: the views' memory is the run's transient allocation, reused by later dispatches.
        arrays = [np.array(v.map().asarray(v.shape, rt.HalElementType.map_to_dtype(v.element_type)))
                  for v in views]
        result.add(key, arrays, every_call)

    config = rt.Config("local-sync")  # one thread: traces arrive in program order
    hal = rt.create_hal_module(config.vm_instance, config.device, debug_sink=rt.HalModuleDebugSink(sink))
    modules = rt.load_vm_modules(hal, rt.VmModule.copy_buffer(config.vm_instance, vmfb.read_bytes()),
                                 config=config)
    try:
        outs = getattr(modules[-1], entries[0]["name"])(*args)
        outs = [np.asarray(o) for o in (outs if isinstance(outs, (list, tuple)) else [outs])]
    except Exception as err:  # noqa: BLE001 - IREE raises RuntimeError/ValueError alike
        raise CaptureError(f"{module.name}: the traced host run failed: {first_line(err)}") from None
    finally:
        del modules, hal, config
        gc.collect()
    unpaired = result.unpaired()
    if unpaired and not problems:
        problems.append(f"{module.name}: dispatch traces without their other side: {', '.join(unpaired[:3])}")
    if problems:
        raise CaptureError(problems[0])
    try:
        result.golden_error = check_outputs_against(gold, golden, outs, GOLDEN_TOLERANCE, GOLDEN_TOLERANCE)
    except RunError as err:
        raise CaptureError(f"{golden.name}: the traced host run does not reproduce the golden: {err}") from None
    result.seconds = time.monotonic() - start
    return result
