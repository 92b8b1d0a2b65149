"""peers.iree_models finds the shipped build's perf report through its perf index, not its name."""

from __future__ import annotations

import json
import sys

import pytest

from peers.iree_models import shipped_perf
from peers.run import PeerError


def test_the_index_says_which_report_is_the_shipped_build(tmp_path):
    models = tmp_path / "models"
    models.mkdir()
    assert shipped_perf(models, "mlp", "ukernels") is None  # not built: the caller names the index
    (models / "mlp_riscv_shipped_perf_index.json").write_text(json.dumps(
        {"tuned": {"perf_json": "models/a.json"}, "ukernels": {"perf_json": "models/decoy_name.json"}}))
    assert shipped_perf(models, "mlp", "ukernels") == models / "decoy_name.json"
    with pytest.raises(PeerError, match="no measurement of the datatiling build mlp_riscv ships"):
        shipped_perf(models, "mlp", "datatiling")
    (models / "mlp_riscv_shipped_perf_index.json").write_text("[]")
    with pytest.raises(PeerError, match="not a perf index"):
        shipped_perf(models, "mlp", "tuned")


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q", "-p", "no:cacheprovider"]))
