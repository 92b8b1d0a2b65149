"""peers/run.py's pricing: the same prices as perf/mca.py, except that `fence` (which llvm-mca 19
cannot schedule on sifive-p670) is left out and counted.

argv: <@llvm19's llvm-mca> (its directory holds llvm-mc too)
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from perf import mca
from peers import run as pr

LLVM_BIN = Path(sys.argv[1]).parent if len(sys.argv) > 1 else None
ATTRS = "+m,+a,+f,+d,+c,+v,+zvl128b"
FENCE = (0x0330000F).to_bytes(4, "little")  # fence rw, rw
ADDI = (0x00150513).to_bytes(4, "little")  # addi a0, a0, 1
FMADD = (0x00B57543).to_bytes(4, "little")  # fmadd.s fa0, fa0, fa1, ft0 (rm=dyn)
FENCE_TSO = (0x8330000F).to_bytes(4, "little")  # fence.tso


@pytest.fixture(autouse=True)
def llvm():
    assert LLVM_BIN is not None, "pass @llvm19's llvm-mca"
    mca.use_llvm_bin(LLVM_BIN)


def test_llvm_mca_still_cannot_price_a_fence_on_p670():
    """Why run.py leaves fences out; when LLVM learns it, this goes red and the workaround goes."""
    with pytest.raises(mca.McaError, match="scheduling class"):
        mca.region_cycles([mca.Region(FENCE + ADDI, 2, None)], "sifive-p670", ATTRS)


def test_llvm_mca_still_cannot_price_a_fence_tso_on_p670():
    with pytest.raises(mca.McaError, match="scheduling class"):
        mca.region_cycles([mca.Region(FENCE_TSO + ADDI, 2, None)], "sifive-p670", ATTRS)


def test_a_fence_tso_is_left_out_and_counted():
    fenced = mca.Region(ADDI + FENCE_TSO + FMADD, 3, None)
    ours, left_out = pr.region_cycles([fenced], "sifive-p670", ATTRS)
    assert left_out == {fenced: 1}
    assert ours[fenced] == next(iter(mca.region_cycles([mca.Region(ADDI + FMADD, 2, None)], "sifive-p670", ATTRS).values()))


def test_a_block_without_fences_is_priced_as_perf_mca_prices_it():
    regions = [mca.Region(ADDI + FMADD, 2, None), mca.Region(FMADD + FMADD + ADDI, 3, None)]
    ours, left_out = pr.region_cycles(regions, "sifive-p670", ATTRS)
    assert ours == mca.region_cycles(regions, "sifive-p670", ATTRS) and not left_out


def test_a_fence_is_left_out_and_counted():
    fenced = mca.Region(FENCE + ADDI + FMADD, 3, None)
    ours, left_out = pr.region_cycles([fenced], "sifive-p670", ATTRS)
    plain = mca.region_cycles([mca.Region(ADDI + FMADD, 2, None)], "sifive-p670", ATTRS)
    assert left_out == {fenced: 1}
    assert ours[fenced] == next(iter(plain.values()))


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q", "-p", "no:cacheprovider"]))
