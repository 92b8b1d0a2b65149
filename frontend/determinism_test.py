"""Two imports of the same model (CLI, separate temp dirs) give byte-identical MLIR and goldens."""

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest


# The workspace (or runfiles) root, so the CLI runs from any working directory.
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COMMITTED_HASHES = Path(ROOT) / "models" / "import_hashes.json"


def import_into(directory, module, framework, name, host=None, factory="make_model", cpus=None):
    directory.mkdir()
    pythonpath = os.pathsep.join(p for p in (ROOT, os.environ.get("PYTHONPATH")) if p)
    env = dict(
        os.environ,
        HOME=str(directory / "home"),
        KERAS_HOME=str(directory / "keras"),
        PYTHONHASHSEED="0",
        PYTHONPATH=pythonpath,
        **(host or {}),
    )
    out_mlir, out_golden = directory / f"{name}.mlirbc", directory / f"{name}.golden.npz"
    proc = subprocess.run(
        [sys.executable, "-m", "frontend.import_model", "--model-module", module, "--factory", factory,
         "--framework", framework, "--name", name, "--out-mlir", str(out_mlir), "--out-golden", str(out_golden)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=str(directory),
        # A machine with fewer cores (taskset): thread pools sized from the affinity mask.
        preexec_fn=(lambda: os.sched_setaffinity(0, cpus)) if cpus else None,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.strip() == ""
    return out_mlir, out_golden


def sha256(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.parametrize(
    "module,framework,name", [("models.mlp", "torch", "mlp"), ("models.keras_cnn", "tensorflow", "keras_cnn")]
)
def test_two_imports_are_byte_identical(tmp_path, module, framework, name):
    first = import_into(tmp_path / "first", module, framework, name)
    second = import_into(tmp_path / "second", module, framework, name)
    for a, b in zip(first, second):
        assert sha256(a) == sha256(b), a.name
    # No temp dir, workspace path or user name leaks into the artifacts.
    data = first[0].read_bytes()
    for leak in (str(tmp_path), os.getcwd(), "/tmp/", os.path.expanduser("~")):
        assert leak.encode() not in data, leak
    golden = np.load(first[1])
    assert golden.files[0] == "input_0" and any(k.startswith("output_") for k in golden.files)


# Two hosts as the frameworks see them: the kernels' instruction set and thread count. Before the
# import pinned its kernels (import_model.PORTABLE_KERNELS), se_net's calibrated batch-norm
# weights differed between these two, and so did the module every tuning record is keyed by.
HOSTS = ({"ATEN_CPU_CAPABILITY": "avx512", "OMP_NUM_THREADS": "2", "TF_ENABLE_ONEDNN_OPTS": "1"},
         {"ATEN_CPU_CAPABILITY": "avx2", "ONEDNN_MAX_CPU_ISA": "AVX2", "OMP_NUM_THREADS": "1",
          "TF_ENABLE_ONEDNN_OPTS": "1", "MKL_ENABLE_INSTRUCTIONS": "AVX2"})


# The imports that once depended on the host's kernels: imported on both hosts, goldens compared too.
KERNEL_SENSITIVE = [
    ("models.se_net", "torch", "se_net", "make_model"),
    ("models.keras_mobilenet", "tensorflow", "keras_mobilenet", "make_model"),
    ("models.keras_separable", "tensorflow", "keras_separable", "make_model"),
    # oneDNN's int8 matmul below VNNI saturates: an AVX2 host wrote a golden off by 1e5.
    ("models.matmul_shapes", "torch", "matmul_shapes_i8", "make_int8_model")]


@pytest.mark.parametrize("module,framework,name,factory", KERNEL_SENSITIVE)
def test_the_import_does_not_depend_on_the_hosts_kernels(tmp_path, module, framework, name, factory):
    first = import_into(tmp_path / "first", module, framework, name, HOSTS[0], factory)
    second = import_into(tmp_path / "second", module, framework, name, HOSTS[1], factory, cpus={0})
    for a, b in zip(first, second):  # the goldens too: an AVX2 host once wrote an int8 one off by 1e5
        assert sha256(a) == sha256(b), a.name
    # And both are the bytes committed for the zoo (issue 76: a newcomer's AVX-512 machine imported
    # keras_mobilenet and keras_separable to other bytes, and every record of theirs re-measured).
    committed = json.loads(COMMITTED_HASHES.read_text())
    assert sha256(first[0]) == committed[first[0].name], f"{first[0].name}: not models/import_hashes.json's"


def _zoo_imports():
    """(module, framework, model name, factory) of every zoo import, from the pipeline infos."""
    found = {}
    for info in sorted((Path(ROOT) / "models").glob("*_pipeline_info.json")):
        d = json.loads(info.read_text())
        found[d["model_name"]] = (d["module"], d["framework"], d["model_name"], d["factory"])
    return [found[name] for name in sorted(found)]


def test_the_zoo_is_every_committed_import():
    names = {f"{name}.mlirbc" for _, _, name, _ in _zoo_imports()}
    assert names and names == set(json.loads(COMMITTED_HASHES.read_text())), "zoo infos vs import_hashes.json"


@pytest.mark.parametrize("module,framework,name,factory",
                         [z for z in _zoo_imports() if z not in KERNEL_SENSITIVE], ids=lambda v: str(v))
def test_every_zoo_import_is_its_committed_bytes_on_another_host(tmp_path, module, framework, name, factory):
    """Issue 76: a machine with other CPU features (oneDNN capped at AVX2, MKL at AVX2, one CPU,
    oneDNN's graph rewrites on) imports every zoo model to the bytes its records are keyed by."""
    mlir, _ = import_into(tmp_path / "other", module, framework, name, HOSTS[1], factory, cpus={0})
    committed = json.loads(COMMITTED_HASHES.read_text())
    assert sha256(mlir) == committed[mlir.name], f"{mlir.name}: not models/import_hashes.json's on this host"


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q", "-p", "no:cacheprovider"]))
