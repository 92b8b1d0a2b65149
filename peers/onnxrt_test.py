"""Each exported zoo model, run through ONNX Runtime under qemu with the trixie sysroot, gives its
framework golden; a wrong output, a missing library or a missing tool is a failure, never a skip.

argv: --harness=<onnxrt_model_riscv64> --peers-repo=<@peers_riscv64 VERSION>
      --qemu=<//tools/qemu:qemu-riscv64> --model=NAME=ONNX,INFO ...
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import numpy as np
import pytest

from peers import onnxrt
from peers import run as pr

_p = argparse.ArgumentParser()
_p.add_argument("--harness", type=Path, default=Path("missing"))
_p.add_argument("--peers-repo", type=Path)
_p.add_argument("--qemu", type=Path, default=Path("missing"))
_p.add_argument("--model", action="append", default=[])
ARGS, _ = _p.parse_known_args(sys.argv[1:])
MODELS = {m.name: m for m in map(onnxrt.parse_model, ARGS.model)}
SYSROOT = ARGS.peers_repo.parent / "sysroot" if ARGS.peers_repo else Path("missing")
VLEN = 128


def _run(model: onnxrt.Model, **kwargs) -> onnxrt.OrtRun:
    return onnxrt.run(ARGS.harness, model, qemu=ARGS.qemu, sysroot=kwargs.pop("sysroot", SYSROOT), vlen=VLEN, **kwargs)


def test_every_model_and_tool_is_here():
    assert len(MODELS) >= 5, "the milestone asks for at least 5 zoo models"
    onnxrt.check_tools(ARGS.harness, ARGS.qemu, SYSROOT)  # raises: never skipped


@pytest.mark.parametrize("name", sorted(MODELS))
def test_the_export_computes_the_golden_on_the_host(name):
    """onnx's reference evaluator on the exported file: an exporter error shows here, apart from ORT."""
    from onnx.reference import ReferenceEvaluator

    ins, outs = onnxrt.golden(MODELS[name])
    got = ReferenceEvaluator(str(MODELS[name].onnx)).run(None, {f"input_{i}": x for i, x in enumerate(ins)})
    assert len(got) == len(outs)
    for y, ref in zip(got, outs):
        assert np.max(np.abs(y - ref)) <= onnxrt.TOLERANCE * np.max(np.abs(ref))


@pytest.mark.parametrize("name", sorted(MODELS))
def test_ort_under_qemu_computes_the_golden(name):
    r = _run(MODELS[name])  # PeerError if any output is off
    assert r.info["library"] == "onnxruntime" and r.info["version"] == "1.21.0"
    assert all(e["max_abs_error"] <= onnxrt.TOLERANCE * e["golden_max"] for e in r.errors)
    assert len(r.errors) == len(onnxrt.golden(MODELS[name])[1])


def test_the_profile_says_which_kernels_ran():
    r = _run(MODELS["mlp"], profile=True)
    assert {k["op"] for k in r.kernels} >= {"Gemm"}
    assert {k["provider"] for k in r.kernels} == {"CPUExecutionProvider"}


def _perturbed(tmp_path: Path, model: onnxrt.Model, factor: float) -> onnxrt.Model:
    with np.load(model.golden) as g:
        arrays = {k: g[k] * np.float32(factor) if k.startswith("output_") else g[k] for k in g.files}
    path = tmp_path / "perturbed.golden.npz"
    np.savez(path, **arrays)
    return onnxrt.Model(model.name, model.onnx, path, model.info)


def test_a_wrong_result_is_an_error(tmp_path):
    # 0.1% off: ten times the tolerance.
    with pytest.raises(pr.PeerError, match="wrong result on mlp output_0"):
        _run(_perturbed(tmp_path, MODELS["mlp"], 1.001))


def test_within_the_tolerance_is_not_an_error(tmp_path):
    # 0.001% off: a tenth of the tolerance (the check is not just "anything fails").
    _run(_perturbed(tmp_path, MODELS["mlp"], 1.00001))


def _sysroot_without(tmp_path: Path, missing: str) -> Path:
    """A copy of the sysroot (symbolic links to its files) lacking one file."""
    root = tmp_path / "sysroot"
    for dirpath, _, files in os.walk(SYSROOT, followlinks=True):
        for f in files:
            rel = (Path(dirpath) / f).relative_to(SYSROOT)
            if str(rel) == missing:
                continue
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).symlink_to((Path(dirpath) / f).resolve())
    assert not (root / missing).exists() and (root / "lib" / "ld-linux-riscv64-lp64d.so.1").exists()
    return root


def test_a_sysroot_without_onnxruntime_fails(tmp_path):
    sysroot = _sysroot_without(tmp_path, onnxrt.LIBRARY)
    with pytest.raises(pr.PeerError, match=r"libonnxruntime\.so\.1\.21"):
        _run(MODELS["mlp"], sysroot=sysroot)


def test_a_library_onnxruntime_loads_missing_fails_with_its_name(tmp_path):
    sysroot = _sysroot_without(tmp_path, "usr/lib/riscv64-linux-gnu/libre2.so.11")
    with pytest.raises(pr.PeerError, match=r"failed under qemu on mlp.*libre2\.so\.11"):
        _run(MODELS["mlp"], sysroot=sysroot)


def test_a_missing_harness_model_or_qemu_fails(tmp_path):
    with pytest.raises(pr.PeerError, match="harness not found"):
        onnxrt.run(tmp_path / "nothing", MODELS["mlp"], qemu=ARGS.qemu, sysroot=SYSROOT, vlen=VLEN)
    with pytest.raises(pr.PeerError, match="qemu-riscv64 .* not found"):
        onnxrt.run(ARGS.harness, MODELS["mlp"], qemu=tmp_path / "qemu", sysroot=SYSROOT, vlen=VLEN)
    m = MODELS["mlp"]
    with pytest.raises(pr.PeerError, match="model not found"):
        _run(onnxrt.Model(m.name, tmp_path / "none.onnx", m.golden, m.info))


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q", "-p", "no:cacheprovider", *[a for a in sys.argv[1:] if not a.startswith("--")]]))
