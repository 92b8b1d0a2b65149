"""perf.explore priced on Ray (`--ray-address local`: a Ray instance of this machine's own) gives the
figures a local run gives, leaves no scratch directory behind, and a cluster that is not there is
one line naming `--ray-address`, with nothing written.

argv: <mlp's explore index (perf/defs.bzl explore_index)>
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from perf import explore

INDEX = Path(sys.argv[1]).absolute() if len(sys.argv) > 1 else None
SPACE = "axes:\n  l1.size_bytes: [8192, 65536]\n  dram.read_bytes_per_cycle: [1, 8]\n  l2.size_bytes: [262144, 1048576]\n"


def _run(tmp_path: Path, name: str, *extra: str) -> tuple[int, Path]:
    space = tmp_path / "space.yaml"
    space.write_text(SPACE)
    out = tmp_path / name
    return explore.main(["mlp", str(space), "--index", str(INDEX), "--out", str(out), "--measure-top", "0", *extra]), out


def test_ray_prices_what_local_processes_price(tmp_path: Path, monkeypatch):
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setenv("TMPDIR", str(scratch))
    code, local = _run(tmp_path, "local", "--jobs", "1")
    assert code == 0
    code, on_ray = _run(tmp_path, "ray", "--ray-address", "local")
    assert code == 0
    a = json.loads((local / "explore.json").read_text())
    b = json.loads((on_ray / "explore.json").read_text())
    assert b["jobs"] == "ray" and len(b["variants"]) == 8
    assert a["variants"] == b["variants"]  # every figure, the Pareto front included
    assert "on Ray" in (on_ray / "explore.md").read_text()
    assert not [p.name for p in scratch.iterdir() if p.name.startswith("explore_zz_")]


def test_a_cluster_that_is_not_there_is_named(tmp_path: Path, capsys):
    code, out = _run(tmp_path, "none", "--ray-address", "127.0.0.1:9")
    assert code != 0 and not out.exists()
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("explore: --ray-address 127.0.0.1:9: ")


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q", "-p", "no:cacheprovider"]))
