"""common/analysis_schema.py's Dispatch: the tiles compiled are its chosen candidate's (issue 62).

An analysis whose dispatch `tiles` had been edited away from its chosen candidate's (the measured
one) was compiled as given: `codegen.compile --analysis` applied register [2, 4, 1] where the
measured choice was [4, 8, 1]. The schema refuses it now, naming the dispatch and both tile sets.
"""

from __future__ import annotations

import sys

import pytest
from pydantic import ValidationError

from common.analysis_schema import Dispatch

DEFAULT_TILES = {"register": [4, 8, 1], "l1": [4, 64, 8], "l2": [4, 128, 64]}
ZIGZAG_TILES = {"register": [2, 8, 1], "l1": [4, 32, 16], "l2": [4, 128, 64]}


def _candidate(name: str, generator: str, tiles: dict) -> dict:
    return {"name": name, "generator": generator, "tiles": tiles, "features": {}, "predicted_cycles": 1.0,
            "reason": "test"}


def _dispatch(chosen: str | None, tiles: dict | None, provenance: str = "zigzag") -> dict:
    return {"name": "main_dispatch_0_matmul_4x128x64_f32", "executable": "main_dispatch_0",
            "root_op": "linalg.matmul", "kind": "matmul",
            "loops": [{"name": "d0", "bound": 4, "kind": "parallel"}, {"name": "d1", "bound": 128, "kind": "parallel"},
                      {"name": "d2", "bound": 64, "kind": "reduction"}],
            "operands": [], "signature": "s", "provenance": provenance, "reason": "test", "tiles": tiles,
            "candidates": [_candidate("iree-default", "iree-default", DEFAULT_TILES),
                           _candidate("zigzag", "zigzag", ZIGZAG_TILES)],
            "chosen": chosen}


def _refused(data: dict) -> str:
    with pytest.raises(ValidationError) as err:
        Dispatch.model_validate(data)
    return str(err.value)


def test_tiles_other_than_the_chosen_candidates_are_refused():
    """The probe's case: one register tile edited by hand (the chosen candidate's is [2, 8, 1])."""
    edited = {**ZIGZAG_TILES, "register": [2, 4, 1]}
    why = _refused(_dispatch("zigzag", edited))
    assert "main_dispatch_0_matmul_4x128x64_f32: tiles register [2, 4, 1]" in why
    assert "are not its chosen candidate zigzag's register [2, 8, 1] l1 [4, 32, 16] l2 [4, 128, 64]" in why


def test_a_chosen_candidate_without_its_tiles_is_refused():
    """No tiles compiles IREE's default: not what a chosen zigzag candidate says."""
    why = _refused(_dispatch("zigzag", None))
    assert "tiles none (IREE's default configuration) are not its chosen candidate zigzag's" in why


def test_iree_default_chosen_compiles_no_tiles_of_ours():
    """Choosing IREE's default means IREE configures the dispatch (tiles None, as analysis.analyze
    and choice/tune.py write it); tiles given with it would be compiled instead."""
    why = _refused(_dispatch("iree-default", ZIGZAG_TILES, provenance="iree-default"))
    assert "tiles register [2, 8, 1]" in why and "chosen candidate iree-default's none" in why


def test_consistent_dispatches_validate():
    Dispatch.model_validate(_dispatch("zigzag", ZIGZAG_TILES))
    Dispatch.model_validate(_dispatch("iree-default", None, provenance="iree-default"))
    # Without candidates there is no choice to hold the tiles to (a hand-written analysis).
    Dispatch.model_validate({**_dispatch(None, {**ZIGZAG_TILES, "register": [1, 1, 1]}), "candidates": []})


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q", "-p", "no:cacheprovider"]))
