"""strategy_choice's rule: fewest model cycles per call on the first core, ties to the earlier
candidate, every figure recorded; candidates measured elsewhere or without cycles refused."""

import sys

import pytest

from common.perf_schema import CLASS_NAMES, CoreRun, DispatchPerf, PerfReport
from perf.choose import ChoiceError, choose


def _perf(tmp_path, name, cycles, calls, hardware="riscv_rvv", core="sifive-p670"):
    classes = dict.fromkeys(CLASS_NAMES, 0)
    classes["vector_fp"] = 1
    d = DispatchPerf(name="main_dispatch_0", kind="matmul", workgroups=(1, 1, 1), calls=calls,
                     initializer_calls=0, macs=0, instructions=1, classes=classes, vector_fma=1,
                     vector_lmul_weighted=1, vector_lmul_unknown=0, blocks=1, model_cycles=cycles,
                     fma_peak_share=None)
    run = CoreRun(hardware=hardware, hardware_sha256="0" * 64, core=core, vlen=128,
                  peak_macs_per_cycle=8, model_ignores="caches", dispatches=[d], instructions=1,
                  model_cycles=cycles if core else None, inference_instructions=calls,
                  inference_model_cycles=cycles * calls if core else None)
    report = PerfReport(model="m", module_sha256="0" * 64, target="t", target_vector_bits=128,
                        strategy="codegen", variant="iree-default", analysis_sha256=None,
                        tools={}, runs=[run])
    path = tmp_path / f"{name}.perf.json"
    path.write_text(report.model_dump_json())
    return path


def test_fewest_cycles_per_call_wins_and_every_figure_is_recorded(tmp_path):
    # One dispatch of 100 cycles called 3 times loses to 250 cycles called once.
    chosen, record = choose([("tuned", _perf(tmp_path, "a", 100, 3)),
                             ("ukernels", _perf(tmp_path, "b", 250, 1))])
    assert chosen == "ukernels" and record["candidates"] == {"tuned": 300, "ukernels": 250}
    assert record["reason"].startswith("ukernels: fewest model cycles") and "1.20x" in record["reason"]


def test_tie_goes_to_the_earlier_candidate(tmp_path):
    chosen, _ = choose([("tuned", _perf(tmp_path, "a", 100, 1)), ("codegen", _perf(tmp_path, "b", 100, 1))])
    assert chosen == "tuned"


def test_candidates_on_other_hardware_or_without_cycles_are_refused(tmp_path):
    with pytest.raises(ChoiceError, match="same accelerator"):
        choose([("tuned", _perf(tmp_path, "a", 100, 1)),
                ("ukernels", _perf(tmp_path, "b", 90, 1, "riscv_rvv512", "sifive-x280"))])
    with pytest.raises(ChoiceError, match="no core model"):
        choose([("tuned", _perf(tmp_path, "c", 100, 1, core=None))])


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q", "-p", "no:cacheprovider"]))
