"""Bad input to the peers CLIs (peers.measure, peers.report, peers.onnxrt, peers.export_onnx,
peers.iree_models): each refused with one line naming the culprit and the reason, a non-zero
exit, and the directory as it was (common/probe.py)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from common.probe import Probe

ROOT = Path(__file__).absolute().parent.parent


@pytest.fixture
def p(tmp_path):
    probe = Probe(tmp_path)
    probe.write("harness", "not a riscv64 binary")
    probe.write("VERSION", "libc6 2.41-12+deb13u5\n")
    probe.put(ROOT / "analysis" / "hardware" / "riscv_rvv.yaml")
    probe.write("model.onnx", "not an onnx model")
    probe.write("mlp_pipeline_info.json", '{"name": "mlp", "model_name": "mlp", "module": "models.mlp", '
                '"framework": "torch", "split": "calibration"}\n')
    probe.write("keras_cnn_pipeline_info.json", '{"name": "keras_cnn", "model_name": "keras_cnn", '
                '"module": "models.keras_cnn", "framework": "tensorflow", "split": "calibration"}\n')
    probe.write("bin/mlp_riscv.manifest.json", '{"strategy_choice": {"chosen": "ukernels"}}\n')
    return probe


def measure(*extra, harness="autovec=harness", repo="VERSION", out="out.json"):
    return ["peers.measure", f"--harness={harness}", f"--peers-repo={repo}", "--qemu=qemu", "--plugin=plugin.so",
            "--hardware=riscv_rvv.yaml", "--llvm-bin=llvm", f"--out={out}", *extra]


def onnxrt(*extra, harness="harness", model="mlp=model.onnx,mlp_pipeline_info.json", out="out.json"):
    return ["peers.onnxrt", f"--harness={harness}", f"--model={model}", "--peers-repo=VERSION", "--qemu=qemu",
            "--plugin=plugin.so", "--hardware=riscv_rvv.yaml", "--llvm-bin=llvm", f"--out={out}", *extra]


PROGS = {"peers.measure": "peers", "peers.report": "peers.report", "peers.onnxrt": "onnxrt",
         "peers.export_onnx": "export_onnx", "peers.iree_models": "collect_ours"}

CASES = {
    "harness without a name": lambda: (measure(harness="harness"), "--harness harness", "expected NAME=PATH"),
    "missing @peers_riscv64": lambda: (measure(repo="nothing/VERSION"), "nothing/VERSION", "VERSION not found"),
    "missing harness": lambda: (measure(harness="autovec=gone"), "gone", "harness not found"),
    "output over an input": lambda: (measure(out="riscv_rvv.yaml"), "riscv_rvv.yaml", "the same file as"),
    "report without committed data": lambda: (["peers.report", "--root", "."], "gemm_measured.json", "not found"),
    "ORT model without its info": lambda: (onnxrt(model="mlp=model.onnx"), "--model mlp=model.onnx",
                                           "expected NAME=ONNX,INFO"),
    "ORT missing harness": lambda: (onnxrt(harness="gone"), "gone", "harness not found"),
    "ORT unknown model subset": lambda: (onnxrt("--models", "mlp,resnet"), "--models resnet", "not among"),
    "ORT output over the model": lambda: (onnxrt(out="model.onnx"), "model.onnx", "the same file as"),
    "export of a TensorFlow pipeline": lambda: (
        ["peers.export_onnx", "--info", "keras_cnn_pipeline_info.json", "--out", "k.onnx"], "keras_cnn",
        "only torch models"),
    "export without a pipeline info": lambda: (["peers.export_onnx", "--info", "none.json", "--out", "k.onnx"],
                                               "none.json", "not a pipeline info"),
    "ours without the shipped perf report": lambda: (
        ["peers.iree_models", "--pipeline", "mlp=mlp_pipeline_info.json", "--bin", "bin", "--out", "ours.json"],
        "mlp_riscv_shipped_perf_index.json", "not built"),
    "ours without a manifest": lambda: (
        ["peers.iree_models", "--pipeline", "keras_cnn=keras_cnn_pipeline_info.json", "--bin", "bin", "--out",
         "ours.json"], "keras_cnn_riscv.manifest.json", "tools/bazel build //models:keras_cnn_riscv"),
    "ours with another pipeline's info": lambda: (
        ["peers.iree_models", "--pipeline", "se_net=mlp_pipeline_info.json", "--out", "ours.json"],
        "mlp_pipeline_info.json", "the info of 'mlp', not of se_net"),
}


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_refused(p, case):
    argv, culprit, reason = case()
    p.refused(*argv, prog=PROGS[argv[0]], culprit=culprit, reason=reason)


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q", "-p", "no:cacheprovider"]))
