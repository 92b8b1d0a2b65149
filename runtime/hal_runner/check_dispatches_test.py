"""The driver over every dispatch of a small torch model (conv, depthwise
conv, relu, matmul): riscv64 under qemu against the host."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).parent
MODEL = HERE / "testdata" / "tiny_model.mlirbc"


def driver(*args):
    return subprocess.run(
        [sys.executable, "-m", "runtime.hal_runner.check_dispatches", *map(str, args)],
        capture_output=True, text=True,
    )


def test_every_dispatch_passes():
    out = driver(MODEL)
    assert out.returncode == 0, out.stdout + out.stderr
    total = re.search(r"^(\d+) checked, (\d+) passed$", out.stdout, re.M)
    assert total, out.stdout
    checked, passed = map(int, total.groups())
    assert checked >= 5 and checked == passed, out.stdout
    for kind in ("conv", "matmul"):
        assert re.search(rf"^PASS \S*{kind}\S*", out.stdout, re.M), out.stdout
    assert "qemu vlen=128" in out.stdout


def test_missing_module_is_an_error():
    out = driver(HERE / "testdata" / "missing.mlirbc")
    assert out.returncode == 2
    assert "input module not found" in out.stderr


def test_unknown_target_is_an_error():
    out = driver(MODEL, "--target", "no_such_target")
    assert out.returncode == 2
    assert "target file not found" in out.stderr


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q", "-p", "no:cacheprovider"]))
