"""tuning.refresh: which pipeline a tiled strategy's own tile record belongs to (what a refresh
deletes when that pipeline ships another strategy)."""

import sys

import pytest

from tuning.refresh import _strategy_tile_owner


def test_a_tiled_strategys_record_belongs_to_its_pipeline():
    pipelines = {"se_net_riscv", "se_net_host", "keras_cnn_riscv"}
    assert _strategy_tile_owner("se_net_riscv_dwchannelslast", pipelines) == "se_net_riscv"
    assert _strategy_tile_owner("keras_cnn_riscv_directconv", pipelines) == "keras_cnn_riscv"


@pytest.mark.parametrize("name", ["se_net_riscv", "se_net_riscv_datatiling", "mlp_riscv_directconv",
                                  "se_net_riscv_dwchannelslast_extra"])
def test_anything_else_is_no_strategys_tile_record(name):
    """The pipeline's own record, a packed strategy (no tiles of its own), another pipeline's."""
    assert _strategy_tile_owner(name, {"se_net_riscv", "keras_cnn_riscv"}) is None


def test_the_longest_pipeline_name_owns_it(monkeypatch):
    """With a strategy name that ends in another's after an underscore (a hypothetical
    `dw_channelslast` beside `channelslast`), `x` and `x_dw` would both own
    `x_dw_channelslast`; the record is the longer pipeline's."""
    from tuning import refresh

    monkeypatch.setattr(refresh, "TILED_STRATEGIES", ("channelslast", "dw_channelslast"))
    assert refresh._strategy_tile_owner("x_dw_channelslast", {"x", "x_dw"}) == "x_dw"


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v", "-p", "no:cacheprovider"]))
