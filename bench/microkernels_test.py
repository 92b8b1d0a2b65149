"""The microkernels report on synthetic measurements: one call of the model weights each
dispatch by its calls, initializers stay apart, pack/unpack is its own class, the cheapest
variant per class wins."""

import sys

import pytest

from bench import microkernels as mk
from common.perf_schema import CLASS_NAMES, CoreRun, DispatchPerf, PerfReport


def _dispatch(name, kind, cycles, calls=1, init=0, fp=10, scalar=5):
    classes = dict.fromkeys(CLASS_NAMES, 0)
    classes["vector_fp"], classes["scalar_int"] = fp, scalar
    return DispatchPerf(name=name, kind=kind, workgroups=(1, 1, 1), calls=calls,
                        initializer_calls=init, macs=0, instructions=fp + scalar, classes=classes,
                        vector_fma=fp, vector_lmul_weighted=fp, vector_lmul_unknown=0, blocks=1,
                        model_cycles=cycles, fma_peak_share=None)


def _report(strategy, variant, dispatches):
    run = CoreRun(hardware="riscv_rvv", hardware_sha256="0" * 64, core="sifive-p670", vlen=128,
                  peak_macs_per_cycle=8, model_ignores="caches", dispatches=dispatches,
                  instructions=sum(d.instructions for d in dispatches),
                  model_cycles=sum(d.model_cycles for d in dispatches),
                  inference_instructions=sum(d.instructions * d.calls for d in dispatches),
                  inference_model_cycles=sum(d.model_cycles * d.calls for d in dispatches),
                  memory_model_ignores="prefetchers",
                  memory_aware_cycles=sum(d.model_cycles for d in dispatches), energy_pj=1.0,
                  inference_memory_aware_cycles=sum(d.model_cycles * d.calls for d in dispatches),
                  inference_energy_pj=1.0)
    return PerfReport(model="m", module_sha256="0" * 64, target="t", target_vector_bits=128,
                      strategy=strategy, variant=variant, analysis_sha256=None, tools={}, runs=[run])


def test_one_call_weights_calls_and_keeps_initializers_apart():
    codegen = _report("codegen", "iree-default", [_dispatch("main_dispatch_0_matmul", "matmul", 1000, calls=3)])
    tuned = _report("codegen", "tuned", [_dispatch("main_dispatch_0_matmul", "matmul", 900, calls=3)])
    packed = [_dispatch("_encoding_0_encode_w", "elementwise", 500, calls=0, init=1),
              _dispatch("main_dispatch_1_pack", "elementwise", 50, calls=3),
              _dispatch("main_dispatch_0_matmul", "matmul", 200, calls=3)]
    datatiling = _report("datatiling", "iree-default", packed)
    ukernels = _report("ukernels", "iree-default", packed[:2] + [_dispatch("main_dispatch_0_matmul", "matmul", 180, calls=3)])
    directconv = _report("directconv", "iree-default", [_dispatch("main_dispatch_0_conv", "conv", 1500, calls=3)])
    channelslast = _report("channelslast", "iree-default", packed[:2] + [_dispatch("main_dispatch_0_matmul", "matmul", 210, calls=3)])
    dwchannelslast = _report("dwchannelslast", "iree-default", [_dispatch("main_dispatch_0_matmul", "matmul", 950, calls=3)])
    rows = mk.summarize({"m": {"codegen": codegen, "tuned": tuned, "datatiling": datatiling, "ukernels": ukernels,
                               "directconv": directconv, "channelslast": channelslast,
                               "dwchannelslast": dwchannelslast}})
    (row,) = rows
    v = row["variants"]
    assert v["codegen"]["cycles"] == 3000 and v["tuned"]["cycles"] == 2700
    assert v["ukernels"]["cycles"] == 3 * (50 + 180)
    assert v["ukernels"]["initializer_cycles"] == 500 and v["ukernels"]["layout_cycles"] == 150
    assert v["ukernels"]["by_kind"] == {"pack/unpack": 150, "matmul": 540}
    text = mk.markdown(rows, {"llvm-mca": "LLVM 19"})
    assert "| m | sifive-p670 | matmul | 0.003M | 0.003M | 0.001M | 0.001M | - | 0.001M | 0.003M | ukernels |" in text
    assert "| m | sifive-p670 | conv | - | - | - | - | 0.004M | - | - | directconv |" in text
    assert "| 0.23x | 0.25x | 0.92x | 1.50x | 21.7% |" in text  # ukernels 690, datatiling 750, directconv 4500 / 3000


def _rows():
    """One model whose five builds cost, per call: codegen 3000, tuned 2700, datatiling 750,
    ukernels 690, directconv 4500 model cycles."""
    codegen = _report("codegen", "iree-default", [_dispatch("d_matmul", "matmul", 1000, calls=3)])
    tuned = _report("codegen", "tuned", [_dispatch("d_matmul", "matmul", 900, calls=3)])
    datatiling = _report("datatiling", "iree-default", [_dispatch("d_matmul", "matmul", 250, calls=3)])
    ukernels = _report("ukernels", "iree-default", [_dispatch("d_matmul", "matmul", 230, calls=3)])
    directconv = _report("directconv", "iree-default", [_dispatch("d_conv", "conv", 1500, calls=3)])
    return mk.summarize({"m": {"codegen": codegen, "tuned": tuned, "datatiling": datatiling,
                               "ukernels": ukernels, "directconv": directconv}})


@pytest.mark.parametrize("manifest, row", [
    # priced by the code model: datatiling shipped, ukernels measured 0.92x of it
    ({"tuned": False, "target": {"strategy": "datatiling"},
      "strategy_choice": {"by": "one call of the model, code-model cycles on sifive-p670 (riscv_rvv)",
                          "chosen": "datatiling", "candidates": {"tuned": 1000, "datatiling": 400}}},
     "| m | held_out | sifive-p670 | datatiling | auto | 0.40x | 0.25x | 0.28x | ukernels | 1.09x |"),
    # measured under qemu: no price, and the choice is the best measured
    ({"tuned": False, "target": {"strategy": "ukernels"},
      "strategy_choice": {"by": "one call of the model, model cycles on sifive-p670 (riscv_rvv)",
                          "chosen": "ukernels", "candidates": {"ukernels": 690}}},
     "| m | held_out | sifive-p670 | ukernels | measured | - | 0.23x | 0.26x | ukernels | 1.00x |"),
    # a fixed strategy: the build's own
    ({"tuned": True, "target": {"strategy": "codegen"}},
     "| m | held_out | sifive-p670 | tuned | fixed | - | 0.90x | 1.00x | ukernels | 3.91x |"),
])
def test_shipped_build_against_every_measured_strategy(manifest, row):
    text = "\n".join(mk.shipped_markdown(_rows(), {"m": manifest}, {"m": "held_out"}))
    assert row in text, text
    ships = mk.shipped_strategy(manifest)
    assert f"| held_out | sifive-p670 | 1 | {_rows()[0]['variants'][ships]['cycles'] / 3000:.3f}x |" in text


@pytest.mark.parametrize("n", range(1, 8))
def test_each_variant_goes_first_and_follows_each_other_equally_often(n):
    """What ran just before a variant must not favour one of them (a plain rotation always ran
    IREE's default right after tuned, and tuned right after the torch worker)."""
    from collections import Counter

    from bench.core import balanced_orders

    orders = balanced_orders(n)
    assert all(sorted(o) == list(range(n)) for o in orders)
    assert len(set(Counter(o[0] for o in orders).values())) == 1
    follows = Counter((a, b) for o in orders for a, b in zip(o, o[1:]))
    assert n < 2 or (len(follows) == n * (n - 1) and len(set(follows.values())) == 1)


def test_interleave_follows_the_balanced_orders_and_drops_warmup():
    from bench.core import interleave
    from bench.microkernels import host_markdown

    seen = []
    timers = {v: (lambda v=v: seen.append(v) or 1.0) for v in ("a", "b", "c")}
    times = interleave(timers, reps=3, warmup=1, desc="t", quiet=True)
    assert seen == ["a", "b", "c", "b", "c", "a", "c", "a", "b", "c", "b", "a"]
    assert {v: len(ts) for v, ts in times.items()} == {"a": 3, "b": 3, "c": 3}
    s = {"median": 0.002, "iqr_rel": 0.1}
    text = "\n".join(host_markdown({"m": {"codegen": s, "as built": s, "datatiling": s,
                                          "ukernels": dict(s, median=0.001), "directconv": dict(s, median=0.003),
                                          "channelslast": dict(s, median=0.0015),
                                          "dwchannelslast": dict(s, median=0.0019)}}, 30))
    assert "| m | 2.000 ms ±10% |" in text and text.endswith("| 1.00x | 1.00x | 0.50x | 1.50x | 0.75x | 0.95x |")


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q", "-p", "no:cacheprovider"]))
