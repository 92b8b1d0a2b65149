"""perf.counts.join_page_splits: a block QEMU ended at a guest page boundary is priced joined
with the block it falls through into, so the same code costs the same wherever it is linked."""

from __future__ import annotations

import sys

import pytest

from perf.counts import PAGE_BYTES, Block, join_page_splits

ADDI = (0x00150513).to_bytes(4, "little")  # addi a0, a0, 1
BNEZ = (0xFE051EE3).to_bytes(4, "little")  # bnez a0, -4
VSETVLI_M2 = (0x0D107057).to_bytes(4, "little")  # vsetvli zero, zero, e32, m2, ta, ma
C_ADDI = (0x0505).to_bytes(2, "little")  # c.addi a0, 1
CLASSES = (1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)


def _block(code: bytes, execs: dict[int, int]) -> Block:
    n, at = 0, 0
    while at < len(code):  # 4-byte words end in 0b11, compressed ones do not
        n, at = n + 1, at + (4 if code[at] & 3 == 3 else 2)
    return Block(code, n, 0, 0, 0, 0, (n,) + (0,) * 10, tuple(sorted(execs.items())))


def _instructions(blocks: list[Block]) -> int:
    return sum(b.insns * b.count for b in blocks)


def test_a_block_split_at_a_page_is_priced_joined_with_its_fall_through():
    a = _block(ADDI * 4, {16: 10})  # ends exactly at the page: QEMU cut it there
    b = _block(ADDI + BNEZ, {16: 30})  # the loop's tail: entered from a and from its own branch
    raw = [(PAGE_BYTES - 16, a), (PAGE_BYTES, b)]
    priced = join_page_splits(raw)
    by_code = {p.code: p for p in priced}
    assert by_code[a.code + b.code].executions == ((16, 10),)
    assert by_code[b.code].executions == ((16, 20),)
    assert a.code not in by_code
    assert _instructions(priced) == _instructions([a, b])
    # The same code linked elsewhere in the page is one block: the same regions either way,
    # up to how QEMU would split it (the joined region is what an unsplit link executes).
    unsplit = join_page_splits([(0x100, _block(a.code + b.code, {16: 10})), (0x110, _block(b.code, {16: 20}))])
    assert sorted(p.code for p in unsplit) == sorted(by_code)


def test_an_instruction_straddling_a_page_is_joined_with_what_follows():
    """QEMU gives an instruction that crosses a page a block of its own (se_net's dispatch 13: a
    4-byte block at ...ffe in one link, part of a 16-byte block in another)."""
    a = _block(ADDI, {16: 64})  # at PAGE - 2: crosses into the next page
    b = _block(ADDI * 2 + BNEZ, {16: 64})
    priced = join_page_splits([(PAGE_BYTES - 2, a), (PAGE_BYTES + 2, b)])
    assert [p.code for p in priced] == [a.code + b.code]


def test_a_chain_of_splits_before_and_across_a_page_is_priced_as_one_region():
    """se_net's dispatch 13: a loop's 12-byte block in one link was three in another (a
    compressed instruction QEMU cut before the straddling instruction, the straddler, the
    rest) and priced 4.6% dearer; every split of the chain is joined."""
    head = _block(C_ADDI, {17: 18432})  # ends at PAGE - 2: the next instruction straddles
    straddler = _block(ADDI, {17: 18432})
    tail = _block(C_ADDI + ADDI, {17: 18432})
    priced = join_page_splits([(PAGE_BYTES - 4, head), (PAGE_BYTES - 2, straddler), (PAGE_BYTES + 2, tail)])
    assert [(p.code, p.executions) for p in priced] == [(C_ADDI + ADDI + C_ADDI + ADDI, ((17, 18432),))]
    elsewhere = join_page_splits([(0x100, _block(C_ADDI + ADDI + C_ADDI + ADDI, {17: 18432}))])
    assert [(p.code, p.insns, p.executions) for p in elsewhere] == [(p.code, p.insns, p.executions) for p in priced]


def test_the_entry_vtype_of_the_fall_through_follows_a_vset():
    a = _block(VSETVLI_M2 + ADDI, {64: 5})
    b = _block(ADDI + BNEZ, {17: 9})  # e32 m2 = slot 2*8+1
    priced = {p.code: p for p in join_page_splits([(PAGE_BYTES - 8, a), (PAGE_BYTES, b)])}
    assert priced[a.code + b.code].executions == ((64, 5),)
    assert priced[b.code].executions == ((17, 4),)


@pytest.mark.parametrize("case", ["branch at the end", "not at a page", "entries do not add up"])
def test_no_join_where_the_block_need_not_fall_through(case):
    a = _block(ADDI * 3 + (BNEZ if case == "branch at the end" else ADDI), {16: 10})
    b = _block(ADDI + BNEZ, {16: 5 if case == "entries do not add up" else 30})
    start = PAGE_BYTES - 16 - (32 if case == "not at a page" else 0)
    priced = join_page_splits([(start, a), (start + 16, b)])
    assert sorted(p.code for p in priced) == sorted([a.code, b.code])
    assert _instructions(priced) == _instructions([a, b])


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v", "-p", "no:cacheprovider"]))
