"""bench.analysis_time's own logic, on stand-in commands (the real analysis is what it times)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from bench import analysis_time as at

# Writes its --out like analysis.analyze and prints its summary line; fails when asked.
STAND_IN = """
import sys
args = sys.argv[1:]
if "fail" in args:
    sys.exit("analysis: bad.yaml: not a hardware description")
open(args[args.index("--out") + 1], "w").write("{}")
print("analysis m: 1 dispatches, 1 distinct ops")
"""


def test_pick_module_takes_the_one_module():
    assert at.pick_module([Path("m.golden.npz"), Path("m.mlirbc")]) == Path("m.mlirbc")


@pytest.mark.parametrize("paths", [[Path("m.golden.npz")], [Path("a.mlirbc"), Path("b.mlir")]])
def test_pick_module_refuses_none_or_two(paths):
    with pytest.raises(at.BenchError, match="expected one MLIR module"):
        at.pick_module(paths)


def test_analyse_once_times_and_hashes(tmp_path):
    seconds, digest, summary = at.analyse_once([sys.executable, "-c", STAND_IN], tmp_path / "a.json")
    assert seconds > 0 and len(digest) == 64 and summary.startswith("analysis m:")


def test_analyse_once_names_a_failing_analysis(tmp_path):
    with pytest.raises(at.BenchError, match="exit 1.*not a hardware description"):
        at.analyse_once([sys.executable, "-c", STAND_IN, "fail"], tmp_path / "a.json")


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))
