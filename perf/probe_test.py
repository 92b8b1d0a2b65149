"""Bad input to the perf CLIs (perf.measure, choice.tune, choice.choose): each refused with one line
naming the culprit and the reason, a non-zero exit, and the directory as it was (common/probe.py).
Issue 51's cases: outputs aliasing inputs, evidence from another build (a perf report of another
candidate or module, a compile report of another module or target), --keep-temps not the
command's own, unwritable outputs (a traceback before), a runner of another architecture, and
SIGTERM while qemu runs (it left qemu children and gigabytes of temporaries). Issue 62's: a cache
simulation with another write policy than the description's.

argv (Bazel passes them): <libinsn_classes.so> <hal_runner_riscv64> <qemu-riscv64> <llvm-mca (@llvm19)>,
for the SIGTERM probe.
"""

import hashlib
import json
import os
import shutil
import signal
import sys
from pathlib import Path

import pytest

from common.perf_schema import CLASS_NAMES, CoreRun, DispatchPerf, PerfReport
from common.probe import MATMUL_MLIR, Probe, alive, cmdline, snapshot

ROOT = Path(__file__).parent.parent
TARGETS = ROOT / "common" / "targets"
HW = ROOT / "analysis" / "hardware"
# The plugin, runner, qemu and @llvm19's llvm-mca: Bazel's arguments, or
# PERF_PROBE_TOOLS="<plugin> <runner> <qemu> <llvm-mca>" under plain pytest.
TOOLS = [Path(a).resolve() for a in (os.environ.get("PERF_PROBE_TOOLS", "").split() or sys.argv[1:5])]
TOOLS = TOOLS if len(TOOLS) == 4 and TOOLS[0].suffix == ".so" and all(t.is_file() for t in TOOLS) else []
LLVM_BIN = str(TOOLS[3].parent) if TOOLS else "llvm"  # the repository's directory: lib/ is beside it


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _perf(d: Path, report: str, cycles: int, **change) -> dict:
    """A perf.json of the build `report` describes (as perf.measure would write it), `change`d."""
    rep = json.loads((d / report).read_text())
    classes = dict.fromkeys(CLASS_NAMES, 0)
    classes["vector_fp"] = 1
    disp = DispatchPerf(name="main_dispatch_0", kind="matmul", workgroups=(1, 1, 1), calls=1, initializer_calls=0,
                        macs=0, instructions=1, classes=classes, vector_fma=1, vector_lmul_weighted=1,
                        vector_lmul_unknown=0, blocks=1, model_cycles=cycles, fma_peak_share=None)
    run = CoreRun(hardware="riscv_rvv", hardware_sha256="0" * 64, core="sifive-p670", vlen=128,
                  peak_macs_per_cycle=8, model_ignores="caches", dispatches=[disp], instructions=1,
                  model_cycles=cycles, inference_instructions=1, inference_model_cycles=cycles,
                  memory_model_ignores="prefetchers", memory_aware_cycles=cycles, energy_pj=1.0,
                  inference_memory_aware_cycles=cycles, inference_energy_pj=1.0)
    analysis = rep["inputs_sha256"].get("analysis")
    fields = dict(model="m", module_sha256=rep["inputs_sha256"]["module"], target=rep["target"],
                  target_vector_bits=256, strategy=rep["strategy"], variant="tuned" if analysis else "iree-default",
                  analysis_sha256=analysis, tools={}, runs=[run],
                  executables_sha256=rep.get("executables_sha256", {}))
    fields.update(change)
    if fields.get("failed"):
        fields["runs"] = []
    return json.loads(PerfReport(**fields).model_dump_json())


@pytest.fixture(scope="module")
def builds(tmp_path_factory):
    """The matmul built for the host tuned (t), untuned (u) and with microkernels (k), each
    with the perf.json perf.measure would give it; analyses; a compile report of a riscv build
    IREE refused (recorded, as codegen.compile --record-failure writes it)."""
    d = tmp_path_factory.mktemp("builds")
    p = Probe(d)
    p.write("m.mlir", MATMUL_MLIR)
    p.write("other.mlir", "// another module\n" + MATMUL_MLIR)
    p.put(TARGETS / "host.yaml")
    p.put(TARGETS / "riscv64_rvv.yaml")
    p.put(HW / "host.yaml", "host_hw.yaml")
    p.put(HW / "riscv_rvv.yaml")
    p.put(ROOT / "perf" / "testdata" / "riscv_rvv256.yaml")
    steps = [("analysis.analyze", "--module", "m.mlir", "--target", "host.yaml", "--hardware", "host_hw.yaml",
              "--model-name", "m", "--out", "a.json"),
             ("codegen.strategy_target", "--base", "host.yaml", "--strategy", "ukernels", "--out", "host_uk.yaml")]
    for name, target, extra in (("t", "host.yaml", ("--analysis", "a.json")), ("u", "host.yaml", ()),
                                ("k", "host_uk.yaml", ())):
        steps.append(("codegen.compile", "--module", "m.mlir", "--target", target, *extra, "--out-vmfb",
                      f"{name}.c.vmfb", "--out-configs", f"{name}.configs.mlir", "--out-report", f"{name}.report.json"))
    steps.append(("codegen.compile", "--module", "m.mlir", "--target", "riscv64_rvv.yaml", "--out-vmfb", "rv.vmfb",
                  "--out-configs", "rv.configs.mlir", "--out-report", "rv.report.json", "--out-layout", "rv.layout.json"))
    for step in steps:
        r = p.run(*step)
        assert r.returncode == 0, r.stderr
    for name, cycles in (("t", 300), ("u", 200), ("k", 100)):
        p.write(f"{name}.perf.json", json.dumps(_perf(d, f"{name}.report.json", cycles)))
    p.write("r.report.json", json.dumps({
        "failed": "'linalg.pack' op failed", "target": "riscv64_rvv", "triple": "riscv64-unknown-linux-gnu",
        "strategy": "codegen", "vmfb_sha256": hashlib.sha256(b"").hexdigest(), "tuned": False,
        "inputs_sha256": {"module": _sha(d / "m.mlir"), "target": _sha(d / "riscv64_rvv.yaml")}}))
    analysis = json.loads((d / "a.json").read_text())
    for hw in ("riscv_rvv", "riscv_rvv256"):  # the host analysis said to be of another description
        p.write(f"a_{hw}.json", json.dumps({**analysis, "hardware": hw, "hardware_sha256": _sha(d / f"{hw}.yaml")}))
    shutil.rmtree(d / "tmp")
    return d


@pytest.fixture
def p(tmp_path, builds):
    probe = Probe(tmp_path)
    for f in builds.iterdir():
        probe.put(f)
    assert TOOLS, "needs <libinsn_classes.so> <hal_runner_riscv64> <qemu-riscv64> <llvm-mca> as arguments (Bazel)"
    probe.put(TOOLS[2], "qemu")
    return probe


def measure(*extra, module="m.mlir", target="riscv64_rvv.yaml", out_json="o.perf.json", out_md="o.perf.md",
            runner="runner", plugin="plugin.so", build="rv"):
    return ("perf.measure", "--vmfb", f"{build}.vmfb", "--layout", f"{build}.layout.json", "--module", module,
            "--target", target,
            "--hardware", "riscv_rvv.yaml",
            "--runner", runner, "--plugin", plugin, "--qemu", "qemu", "--llvm-bin", LLVM_BIN, "--model-name", "m",
            *extra, *([] if "--compiled-report" in extra else ["--no-compiled-report"]),
            "--out-json", out_json,
            "--out-md", out_md)


def _measure_json_is_module(p):
    return measure(out_json="m.mlir"), "--out-json m.mlir", "the same file as --module m.mlir"


def _measure_json_is_md(p):
    return measure(out_json="o.out", out_md="o.out"), "--out-md o.out", "the same file as --out-json o.out"


def _measure_jobs_zero(p):  # issue 80: ran as one job and exited 0
    return measure("--jobs", "0"), "--jobs 0", "at least 1"


def _measure_placements_zero(p):  # issue 80: "placements ()", the flag unnamed
    return measure("--placements", "0"), "--placements 0", "at least 1"


def _measure_md_is_compiled_report(p):
    return measure("--compiled-report", "r.report.json", out_md="r.report.json"), "--out-md r.report.json", \
        "the same file as --compiled-report"


def _measure_layout_not_a_layout(p):
    for tool in TOOLS[:2]:
        p.put(tool)
    p.write("junk.layout.json", "{}")
    args = measure(runner=TOOLS[1].name, plugin=TOOLS[0].name)
    return args[:4] + ("junk.layout.json",) + args[5:], "junk.layout.json", "not a dispatch layout"


def _measure_keep_temps_not_empty(p):
    p.write("keep/mine.txt", "mine")
    return measure("--keep-temps", "keep"), "--keep-temps keep", "directory exists and is not empty"


def _measure_report_of_another_module(p):
    return measure("--compiled-report", "r.report.json", module="other.mlir"), "other.mlir", \
        "not the module r.report.json was compiled from"


def _measure_report_of_another_target(p):
    return measure("--compiled-report", "u.report.json"), "riscv64_rvv.yaml", \
        "not the target file u.report.json was compiled for"


def _measure_report_of_a_tuned_build_measured_untuned(p):
    return measure("--compiled-report", "t.report.json", target="host.yaml"), "t.report.json", \
        "a build tuned by an analysis, given as an untuned one"


def _measure_report_not_a_report(p):
    p.write("junk.json", "{not json")
    return measure("--compiled-report", "junk.json"), "junk.json", "not a codegen report"


def _measure_json_under_a_file(p):
    return measure("--compiled-report", "r.report.json", out_json="m.mlir/o.json"), "m.mlir/o.json", \
        "m.mlir is not a directory"


def _measure_md_is_a_directory(p):
    (p.root / "md").mkdir()
    return measure("--compiled-report", "r.report.json", out_md="md"), "md", "is a directory"


def _measure_runner_of_another_architecture(p):
    p.put(Path(sys.executable).resolve(), "runner")  # an x86-64 binary
    p.write("plugin.so", b"")
    return measure(), "runner", ("listing", "Invalid ELF image for this architecture")


def _measure_qemu_exits_0_without_running(p):
    """Was blamed on the runner: the qemu's name was cut off the message (issue 62)."""
    p.write("runner", b"#!/bin/sh\n").chmod(0o755)
    p.write("plugin.so", b"")
    p.write("qemu", b"#!/bin/sh\nexit 0\n").chmod(0o755)
    return measure(), "perf: qemu: exited 0 but did not run the runner", "listing"


def _measure_two_hardware_of_one_name(p):
    """Two descriptions of one name gave two identical headings and one counts file (issue 62)."""
    p.put(p.root / "riscv_rvv.yaml", "again.yaml")
    return measure("--hardware", "again.yaml"), "again.yaml", ("hardware name", "also riscv_rvv.yaml's")


def _measure_runner_not_executable(p):
    p.write("runner", b"#!/bin/sh\n")
    p.write("plugin.so", b"")
    return measure(), "runner", "not executable"


def _measure_l1_simulated_write_through(p):
    """A qemu wrapper made the plugin's L1 write-through for this write-back hardware: perf
    reported 48,721 cycles (the hardware's are 47,648) as the description's (issue 62)."""
    for tool in TOOLS[:2]:
        p.put(tool)
    (p.root / "qemu").rename(p.root / "qemu.real")
    p.write("qemu", '#!/bin/sh\n# the first cache level of -plugin ...,cache=S:A:L:wb,... made write-through\n'
                    'for a; do shift; set -- "$@" "$(printf %s "$a" | sed "s/:wb,/:wt,/")"; done\n'
                    'exec "$(dirname "$0")/qemu.real" "$@"\n').chmod(0o755)
    return measure(runner=TOOLS[1].name, plugin=TOOLS[0].name), "main_dispatch_0", \
        "level 'l1d' simulated write-through (no write allocate), the description says write-back"


def tune(*extra, analysis="a_riscv_rvv256.json", hardware="riscv_rvv256.yaml", out="o.json", out_md="o.md",
         target="riscv64_rvv.yaml"):
    return ("choice.tune", "--module", "m.mlir", "--target", target, "--analysis", analysis, "--hardware", hardware,
            "--runner", "runner", "--plugin", "plugin.so", "--qemu", "qemu", "--llvm-bin", LLVM_BIN,
            "--model-name", "m", "--candidates", "2", *extra,
            "--out", out, "--out-md", out_md)


def _tune_out_is_analysis(p):
    return tune(out="a_riscv_rvv256.json"), "--out a_riscv_rvv256.json", "the same file as --analysis"


def _tune_out_is_out_md(p):
    return tune(out="o.x", out_md="o.x"), "--out-md o.x", "the same file as --out o.x"


def _tune_out_under_a_file(p):
    return tune("--allow-no-core-model", out="m.mlir/o.json"), "m.mlir/o.json", "m.mlir is not a directory"


def _tune_target_not_the_analysis(p):
    return tune(analysis="a_riscv_rvv.json", hardware="riscv_rvv.yaml"), "riscv64_rvv.yaml", \
        "not the target a_riscv_rvv.json was made for ('host')"


def _tune_hardware_not_the_analysis(p):
    return tune(hardware="riscv_rvv.yaml"), "a_riscv_rvv256.json", "analysed against 'riscv_rvv256'"


def choose(*candidates, module="m.mlir", out_choice="c.choice.json", out_vmfb="c.chosen.vmfb",
           out_report="c.chosen.report.json", by=()):
    args = ["choice.choose", "--module", module, *by, "--llvm-bin", LLVM_BIN]
    for c in candidates:
        args += ["--candidate", *c]
    return (*args, "--out-choice", out_choice, "--out-chosen-vmfb", out_vmfb, "--out-chosen-report", out_report)


def cand(name, build, target="host.yaml", last=None):
    strategy = {"t": "tuned", "u": "codegen", "k": "ukernels"}[build] if name is None else name
    return (strategy, f"{build}.c.vmfb", f"{build}.report.json", target, last or f"{build}.perf.json")


def _choose_perf_reports_swapped(p):
    """The tuned build given the untuned build's perf report (and the other way round)."""
    return choose(cand(None, "t", last="u.perf.json"), cand(None, "u", last="t.perf.json")), "u.perf.json", \
        ("measured another build than t.report.json describes", "analysis")


def _choose_perf_of_another_strategy(p):
    return choose(cand(None, "u"), cand(None, "k", "host_uk.yaml", last="u.perf.json")), "u.perf.json", \
        "measured another build than k.report.json describes (target: host vs host_ukernels)"


def _choose_perf_of_another_module(p):
    p.write("x.perf.json", json.dumps(_perf(p.root, "u.report.json", 50, module_sha256="1" * 64)))
    return choose(cand(None, "t"), cand(None, "u", last="x.perf.json")), "x.perf.json", "(module: 111111111111"


def _choose_perf_says_refused_but_it_compiled(p):
    p.write("x.perf.json", json.dumps(_perf(p.root, "k.report.json", 0, failed="IREE refused")))
    return choose(cand(None, "t"), cand(None, "k", "host_uk.yaml", last="x.perf.json")), "x.perf.json", \
        "refused by IREE: True vs False"


def _choose_perf_not_a_report(p):
    p.write("x.perf.json", "[]")
    return choose(cand(None, "t"), cand(None, "u", last="x.perf.json")), "x.perf.json", "not a perf report"


def _choose_candidate_not_a_strategy(p):
    """An unknown label was shipped as the manifest's strategy (issue 62 probe)."""
    return choose(cand(None, "t"), cand("fastest", "u")), "candidate fastest", "not a strategy"


def _choose_candidates_tuned_and_codegen_swapped(p):
    """The tuned build labelled codegen and the untuned one tuned: the manifest recorded the
    other's strategy as shipped (issue 62 probe)."""
    return choose(cand("codegen", "t"), cand("tuned", "u")), "t.report.json", \
        "candidate codegen's compile report is of a tuned build"


def _choose_target_not_the_reports(p):
    return choose(cand(None, "t"), cand(None, "k", "host.yaml")), "host.yaml", \
        "not the target file k.report.json was compiled for"


def _choose_module_not_the_candidates(p):
    return choose(cand(None, "t"), cand(None, "u"), module="other.mlir"), "other.mlir", \
        "not the module t.report.json was compiled from"


def _choose_manifest_is_a_report(p):
    return choose(cand(None, "t"), cand(None, "u"), out_choice="u.report.json"), "--out-choice u.report.json", \
        "the same file as --candidate codegen u.report.json"


def _choose_vmfb_is_manifest(p):
    return choose(cand(None, "t"), cand(None, "u"), out_vmfb="c.x", out_choice="c.x"), "--out-chosen-vmfb c.x", \
        "the same file as --out-choice c.x"


def _choose_manifest_under_a_file(p):
    return choose(cand(None, "t"), cand(None, "u"), out_choice="m.mlir/c.json"), "m.mlir/c.json", \
        "m.mlir is not a directory"


CODE = ("--by", "code-cycles", "--hardware", "host_hw.yaml")


def _choose_code_analysis_not_the_builds(p):
    p.write("a2.json", (p.root / "a.json").read_text() + "\n")
    return choose(cand(None, "t", last="a2.json"), cand(None, "u", last="none"), by=CODE), "a2.json", \
        "not the analysis t.report.json was compiled with"


def _choose_code_tuned_build_given_as_untuned(p):
    return choose(cand(None, "t", last="none"), cand(None, "u", last="none"), by=CODE), "t.report.json", \
        "a build tuned by an analysis, given as an untuned one"


CASES = [_measure_jobs_zero, _measure_placements_zero, _measure_json_is_module, _measure_json_is_md, _measure_md_is_compiled_report, _measure_layout_not_a_layout,
         _measure_keep_temps_not_empty,
         _measure_report_of_another_module, _measure_report_of_another_target,
         _measure_report_of_a_tuned_build_measured_untuned, _measure_report_not_a_report, _measure_json_under_a_file,
         _measure_md_is_a_directory, _measure_runner_of_another_architecture, _measure_qemu_exits_0_without_running,
         _measure_two_hardware_of_one_name, _measure_runner_not_executable,
         _measure_l1_simulated_write_through, _tune_out_is_analysis,
         _tune_out_is_out_md, _tune_out_under_a_file, _tune_target_not_the_analysis, _tune_hardware_not_the_analysis,
         _choose_perf_reports_swapped, _choose_perf_of_another_strategy, _choose_perf_of_another_module,
         _choose_perf_says_refused_but_it_compiled, _choose_perf_not_a_report, _choose_candidate_not_a_strategy,
         _choose_candidates_tuned_and_codegen_swapped, _choose_target_not_the_reports,
         _choose_module_not_the_candidates, _choose_manifest_is_a_report, _choose_vmfb_is_manifest,
         _choose_manifest_under_a_file, _choose_code_analysis_not_the_builds, _choose_code_tuned_build_given_as_untuned]
PROGS = {"perf.measure": "perf", "choice.tune": "choice.tune", "choice.choose": "choice.choose"}


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.__name__.strip("_"))
def test_refused(p, case):
    argv, culprit, reason = case(p)
    p.refused(*argv, prog=PROGS[argv[0]], culprit=culprit, reason=reason)


def test_consistent_evidence_is_still_chosen_from(p):
    """The checks refuse only what does not belong: the builds' own reports choose as before."""
    r = p.run(*choose(cand(None, "t"), cand(None, "u"), cand(None, "k", "host_uk.yaml")))
    assert r.returncode == 0 and "ukernels: fewest memory-aware cycles" in r.stdout, r.stderr
    r = p.run(*measure("--compiled-report", "r.report.json", out_json="r.perf.json", out_md="r.perf.md"))
    assert r.returncode == 0 and "not measured" in r.stdout, r.stderr


def test_sigterm_while_qemu_runs_is_one_line_and_leaves_nothing(p):
    """qemu runs in worker threads, where no KeyboardInterrupt arrives: it is killed at once
    (a 1024^3 matmul runs about 10 s under qemu), not waited for, and nothing is left."""
    plugin, runner = (p.put(t) for t in TOOLS[:2])
    p.write("big.mlir", MATMUL_MLIR.replace("64x96", "1024x1024").replace("96x128", "1024x1024")
            .replace("64x128", "1024x1024"))
    r = p.run("codegen.compile", "--module", "big.mlir", "--target", "riscv64_rvv.yaml", "--out-vmfb", "big.vmfb",
              "--out-configs", "big.configs.mlir", "--out-report", "big.report.json", "--out-layout", "big.layout.json")
    assert r.returncode == 0, r.stderr
    before = snapshot(p.root)
    result, seen = p.interrupt(*measure(module="big.mlir", runner=runner.name, plugin=plugin.name, build="big"),
                               when=lambda pid, kids: any("-plugin" in cmdline(k) for k in kids))
    assert seen, "qemu never ran a dispatch"
    p.check_refused(result, before, "perf", "big.mlir", "interrupted by SIGTERM")
    assert result.returncode == 128 + signal.SIGTERM
    assert not alive(seen), f"children outlived perf.measure: {[cmdline(k) for k in alive(seen)]}"
    assert p.seconds_to_exit < 5, f"{p.seconds_to_exit:.1f} s from SIGTERM to exit: qemu was waited for"


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q", "-p", "no:cacheprovider"]))
