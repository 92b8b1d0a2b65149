"""Bad input to the peers CLIs (peers.measure, peers.report): each refused with one line naming
the culprit and the reason, a non-zero exit, and the directory as it was (common/probe.py)."""

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
    return probe


def measure(*extra, harness="autovec=harness", repo="VERSION", out="out.json"):
    return ["peers.measure", f"--harness={harness}", f"--peers-repo={repo}", "--qemu=qemu", "--plugin=plugin.so",
            "--hardware=riscv_rvv.yaml", "--llvm-bin=llvm", f"--out={out}", *extra]


CASES = {
    "harness without a name": lambda: (measure(harness="harness"), "--harness harness", "expected NAME=PATH"),
    "missing @peers_riscv64": lambda: (measure(repo="nothing/VERSION"), "nothing/VERSION", "VERSION not found"),
    "missing harness": lambda: (measure(harness="autovec=gone"), "gone", "harness not found"),
    "output over an input": lambda: (measure(out="riscv_rvv.yaml"), "riscv_rvv.yaml", "the same file as"),
    "report without committed data": lambda: (["peers.report", "--root", "."], "gemm_measured.json", "not found"),
}


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_refused(p, case):
    argv, culprit, reason = case()
    p.refused(*argv, prog=argv[0].replace("peers.measure", "peers"), culprit=culprit, reason=reason)


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q", "-p", "no:cacheprovider"]))
