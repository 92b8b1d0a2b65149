"""The host side of a shipped build's dispatch test, built ahead of the test (a Bazel action),
so the test compiles nothing (issue 63).

    python -m runtime.hal_runner.reference MODULE MANIFEST --riscv RISCV.yaml --host HOST.yaml \
        [--strategy S=RISCV_S.yaml ...] [--host-strategy S=HOST_S.yaml ...] \
        --out-vmfb REF.vmfb --out-layout REF.layout.json --out-traced TRACED.vmfb

`plan` says what a shipped build is checked against, from its manifest's strategy: a codegen
build (tuned or IREE's defaults) against the host's IREE defaults; another strategy's build
against the host built with the same strategy (its dispatches are the same ops), a packed one's
dispatches run even where the host packs otherwise. The action compiles that host reference
through codegen's one compile path (codegen.compile.compile_module: the vmfb and the layout its
compile wrote) and its traced twin (activations.compile_traced), whose run on the golden inputs
gives each dispatch its real activations. models/riscv_dispatch_test.py makes the same plan from
the same manifest and runs check_dispatches with `--reference-build` and `--traced`.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path

from codegen.compile import CompileError, CompileOptions, compile_module
from common.errors import NamedError, OneLineErrors
from common.files import write_together
from common.scratch import scratch_directory
from common.targets import PACKED_STRATEGIES, TargetError, load_target
from runtime.hal_runner.activations import CaptureError, compile_traced


class PlanError(NamedError):
    """A manifest whose strategy has no target here; the message names the manifest."""


@dataclass(frozen=True)
class CheckPlan:
    strategy: str  # the manifest's: what the shipped build was compiled with
    target: str  # the riscv target file the shipped build was compiled for
    reference: str  # the host target file it is checked against
    run_unmatched: bool  # a packed build: run the dispatches the host lays out otherwise


def plan(manifest_path: Path, riscv: str, host: str, strategies: dict[str, str],
         host_strategies: dict[str, str]) -> CheckPlan:
    """What the build `manifest_path` ships is checked against (module docstring). Raises
    PlanError for a manifest that is no manifest or a strategy without a target here."""
    try:
        manifest = json.loads(Path(manifest_path).read_text())
        strategy = manifest["target"]["strategy"]
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise PlanError(f"{manifest_path}: not a manifest with target.strategy ({err})") from None
    if strategy == "codegen":  # the analysis' tiles or IREE's own defaults on the riscv target
        return CheckPlan(strategy, riscv, host, False)
    if strategy in strategies and strategy in host_strategies:
        return CheckPlan(strategy, strategies[strategy], host_strategies[strategy], strategy in PACKED_STRATEGIES)
    raise PlanError(f"{manifest_path}: strategy {strategy!r} has no target here ({sorted(strategies)})")


def strategy_files(pairs: list[str], flag: str) -> dict[str, str]:
    """{strategy: target file} of `S=FILE` arguments."""
    out = {}
    for pair in pairs:
        name, sep, path = pair.partition("=")
        if not sep or not name or not path:
            raise PlanError(f"{flag} {pair!r}: expected STRATEGY=TARGET.yaml")
        out[name] = path
    return out


def build_reference(module: Path, reference: Path, out_vmfb: Path, out_layout: Path, out_traced: Path) -> None:
    """The host reference (IREE's defaults on `reference`: vmfb and layout) and its traced twin,
    written together or not at all."""
    target = load_target(reference)
    with scratch_directory("reference_") as tmp:
        tmp = Path(tmp)
        build = compile_module(module, CompileOptions(Path(reference), layout=True), tmp / "reference")
        compile_traced(module, target, tmp / "traced.vmfb")
        write_together({out_vmfb: build.vmfb.read_bytes(), out_layout: build.layout.read_text(),
                        out_traced: (tmp / "traced.vmfb").read_bytes()})


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m runtime.hal_runner.reference", description=__doc__.split("\n")[0])
    p.add_argument("module", type=Path, help="the imported model (MLIR bytecode or text)")
    p.add_argument("manifest", type=Path, help="the shipped build's manifest (runtime.manifest)")
    p.add_argument("--riscv", required=True, help="the riscv target file of the pipeline")
    p.add_argument("--host", required=True, help="the host target file (IREE's defaults)")
    p.add_argument("--strategy", action="append", default=[], metavar="S=FILE", help="riscv target of strategy S")
    p.add_argument("--host-strategy", action="append", default=[], metavar="S=FILE", help="host target of strategy S")
    p.add_argument("--out-vmfb", type=Path, required=True)
    p.add_argument("--out-layout", type=Path, required=True)
    p.add_argument("--out-traced", type=Path, required=True)
    args = p.parse_args(argv)
    with OneLineErrors("reference", args.manifest, (PlanError, TargetError, CompileError, CaptureError)) as cli:
        for path, what in ((args.module, "module"), (args.manifest, "manifest")):
            if not path.is_file():
                raise PlanError(f"{path}: {what} not found")
        chosen = plan(args.manifest, args.riscv, args.host, strategy_files(args.strategy, "--strategy"),
                      strategy_files(args.host_strategy, "--host-strategy"))
        build_reference(args.module, Path(chosen.reference), args.out_vmfb, args.out_layout, args.out_traced)
    if cli.failed:
        return cli.exit_code
    print(f"reference: {chosen.strategy} checked against {chosen.reference}: {args.out_vmfb.name}, "
          f"{args.out_layout.name}, {args.out_traced.name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
