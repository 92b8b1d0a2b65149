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


def test_the_longest_pipeline_name_owns_it():
    """`mlp_riscv` and `mlp_riscv_x_riscv` would both prefix a name; the record is the longer's."""
    assert _strategy_tile_owner("a_b_riscv_directconv", {"a_b_riscv", "a"}) == "a_b_riscv"


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v", "-p", "no:cacheprovider"]))
