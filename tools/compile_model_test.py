"""tools/compile_model.py (//tools:compile): the workspace it writes and the inputs it refuses.
The build it runs is the out-of-tree example's (.ci/run builds examples/out_of_tree and runs
//tools:compile on a model file outside the repository)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tools import compile_model as cm

ROOT = Path(__file__).absolute().parent.parent  # the runfiles tree
MODEL = '''import numpy as np
import torch


def make_model():
    return torch.nn.Linear(4, 2).eval(), (torch.from_numpy(np.ones((1, 4), np.float32)),)
'''


def test_the_workspace_loads_the_project_and_declares_the_accelerator(tmp_path):
    model = tmp_path / "My Model.py"
    model.write_text(MODEL)
    accel = ROOT / "analysis" / "hardware" / "riscv_rvv512.yaml"
    files = cm.workspace_files(ROOT, "tiny", model, "torch", accel, "auto")
    assert f'path = "{ROOT}"' in files["WORKSPACE"] and "riscv_ml_toolchain_dependencies" in files["WORKSPACE"]
    build = files["BUILD.bazel"]
    assert 'accelerator(\n    name = "tiny_accelerator",\n    hardware = "tiny_accelerator.yaml"' in build
    assert 'accelerator = ":tiny_accelerator"' in build and 'module = "tiny_model"' in build
    assert files["tiny_model.py"] == MODEL and files["tiny_accelerator.yaml"] == accel.read_text()
    assert "--incompatible_enable_cc_toolchain_resolution" in files[".bazelrc"]
    assert "remote_cache" not in files[".bazelrc"]
    # without --accelerator: the registered riscv target, no accelerator declared
    plain = cm.workspace_files(ROOT, "tiny", model, "torch", None, "tuned")["BUILD.bazel"]
    assert "accelerator(" not in plain.split("load(")[-1] and '"riscv": "tuned"' in plain


@pytest.mark.parametrize("case, message", [
    ("missing", "model file not found"),
    ("not_python", "not a Python file"),
    ("no_factory", "defines no make_model()"),
    ("bad_accel", "accelerator description not found"),
    ("bad_yaml", "riscv_rvv512"),
    ("bad_name", "lower-case letters"),
    ("full_out", "exists and is not an empty directory"),
])
def test_bad_input_is_one_line_and_writes_nothing(tmp_path, monkeypatch, capsys, case, message):
    model = tmp_path / "net.py"
    model.write_text(MODEL)
    args = [str(model), "--out", str(tmp_path / "out")]
    if case == "missing":
        args[0] = str(tmp_path / "absent.py")
    elif case == "not_python":
        (tmp_path / "net.txt").write_text(MODEL)
        args[0] = str(tmp_path / "net.txt")
    elif case == "no_factory":
        model.write_text("x = 1\n")
    elif case == "bad_accel":
        args += ["--accelerator", str(tmp_path / "absent.yaml")]
    elif case == "bad_yaml":
        bad = tmp_path / "riscv_rvv512.yaml"
        bad.write_text((ROOT / "analysis" / "hardware" / "riscv_rvv512.yaml").read_text()
                       .replace("vector_bits: 512", "vector_bits: 500"))
        args += ["--accelerator", str(bad)]
    elif case == "bad_name":
        args += ["--name", "Bad-Name"]
    elif case == "full_out":
        (tmp_path / "out").mkdir()
        (tmp_path / "out" / "keep").write_text("mine")
    monkeypatch.setenv("BUILD_WORKSPACE_DIRECTORY", str(ROOT))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert cm.main(args) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("compile: ") and message in err[0], err
    assert not (tmp_path / "cache").exists()
    if case == "full_out":
        assert (tmp_path / "out" / "keep").read_text() == "mine"


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v", "-p", "no:cacheprovider"]))
