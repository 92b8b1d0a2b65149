"""perf.code_model: trip counts, LLVM-IR downgrade and static cycles on hand-written IR.

argv: <llvm-mca (@llvm19: its directory has LLVM 19's opt, llc, llvm-mc and llvm-mca)>"""

import subprocess
import sys
from pathlib import Path

import pytest

from perf import mca
from perf.code_model import cost, errors, ir_text, ir_values, llvm_tools, loops, machine, scev

mca.use_llvm_bin(Path(sys.argv[1]).absolute().parent)  # Bazel's @llvm19 (not PATH)

FEATURES = ["+m", "+a", "+f", "+d", "+c", "+v", "+zvl128b"]
CORE = "sifive-p670"

# Two passes over 12 floats, 8 at a time: the inner trip count depends on the outer
# induction variable (8, then 4), as IREE's peeled remainders do.
_RAGGED = """
define void @m_dispatch_0(ptr %p) {
entry:
  br label %outer
outer:
  %i = phi i64 [ 0, %entry ], [ %i.next, %latch ]
  %i8 = mul nuw nsw i64 %i, 8
  %left = sub nuw nsw i64 12, %i8
  %bound = call i64 @llvm.umin.i64(i64 %left, i64 8)
  br label %inner
inner:
  %j = phi i64 [ 0, %outer ], [ %j.next, %inner ]
  %idx = add nuw nsw i64 %i8, %j
  %addr = getelementptr float, ptr %p, i64 %idx
  %v = load float, ptr %addr
  %w = fadd float %v, 1.0
  store float %w, ptr %addr
  %j.next = add nuw nsw i64 %j, 1
  %more = icmp ult i64 %j.next, %bound
  br i1 %more, label %inner, label %latch
latch:
  %i.next = add nuw nsw i64 %i, 1
  %again = icmp ult i64 %i.next, 2
  br i1 %again, label %outer, label %exit
exit:
  ret void
}
declare i64 @llvm.umin.i64(i64, i64)
"""


def _nest(outer: int, inner: int) -> str:
    return f"""
define void @m_dispatch_0(ptr %p) {{
entry:
  br label %outer
outer:
  %i = phi i64 [ 0, %entry ], [ %i.next, %latch ]
  br label %inner
inner:
  %j = phi i64 [ 0, %outer ], [ %j.next, %inner ]
  %row = mul nuw nsw i64 %i, {inner}
  %idx = add nuw nsw i64 %row, %j
  %addr = getelementptr float, ptr %p, i64 %idx
  %v = load float, ptr %addr
  %w = fmul float %v, %v
  %x = fadd float %w, 1.0
  store float %x, ptr %addr
  %j.next = add nuw nsw i64 %j, 1
  %more = icmp ult i64 %j.next, {inner}
  br i1 %more, label %inner, label %latch
latch:
  %i.next = add nuw nsw i64 %i, 1
  %again = icmp ult i64 %i.next, {outer}
  br i1 %again, label %outer, label %exit
exit:
  ret void
}}
"""


# What IREE's newer LLVM prints and LLVM 19 cannot read: float bits as f0x, `samesign`,
# `captures(...)`, masked loads/stores/gathers/scatters with their alignment on the pointer
# (a gather is what an embedding lookup becomes).
_NEWER_SYNTAX = """
define void @m_dispatch_0(ptr %p, <4 x i1> %m, <4 x ptr> %ps) {
  %v = call <4 x float> @llvm.masked.load.v4f32.p0(ptr align 4 %p, <4 x i1> %m, <4 x float> poison)
  %c = fcmp oeq float 0.0, f0x3F800000
  %d = icmp samesign ult i64 1, 2
  %n = select i1 %c, float +nan, float -nan
  %k = fcmp olt float %n, -8.780000e+01
  call void @llvm.masked.store.v4f32.p0(<4 x float> %v, ptr align 4 %p, <4 x i1> %m)
  %g = tail call <4 x float> @llvm.masked.gather.v4f32.v4p0(<4 x ptr> align 4 %ps, <4 x i1> splat (i1 true), <4 x float> poison)
  call void @llvm.masked.scatter.v4f32.v4p0(<4 x float> %g, <4 x ptr> align 4 %ps, <4 x i1> %m)
  ret void
}
declare <4 x float> @llvm.masked.load.v4f32.p0(ptr captures(none), <4 x i1>, <4 x float>)
declare void @llvm.masked.store.v4f32.p0(<4 x float>, ptr captures(none), <4 x i1>)
declare <4 x float> @llvm.masked.gather.v4f32.v4p0(<4 x ptr>, <4 x i1>, <4 x float>)
declare void @llvm.masked.scatter.v4f32.v4p0(<4 x float>, <4 x ptr>, <4 x i1>)
"""


def _opt_reads(tmp_path: Path, text: str) -> subprocess.CompletedProcess:
    path = tmp_path / "t.ll"
    path.write_text(text)
    return subprocess.run([mca.tool(llvm_tools.OPT), "-disable-output", str(path)],
                          capture_output=True, text=True)


def test_a_region_without_a_vtype_is_priced_the_same_whatever_is_priced_beside_it():
    """llvm-mca carries an LMUL instrument into the next region: a region with no known vtype
    was priced at its neighbour's (se_net's dispatch 21 moved by 8% between a tuning round and
    the perf report). It must cost the same alone and after an M1 region."""
    code = ["vfmacc.vv v8, v16, v24", "vle32.v v0, (a0)", "addi a0, a0, 16"]
    mca._PRICED.clear()
    alone = mca.text_cycles([(code, None)], "sifive-p670")[0]
    mca._PRICED.clear()
    after_m1 = mca.text_cycles([(["vfadd.vv v8, v16, v24"], ("M1", "E32")), (code, None)], "sifive-p670")[1]
    mca._PRICED.clear()
    assert after_m1 == alone


def test_trip_counts_are_evaluated_per_iteration_of_the_enclosing_loop():
    rec = scev.parse_scev("(-1 + (8 umin {12,+,-8}<nsw><%outer>))<nsw>")
    assert rec.loops() == {"%outer"}
    assert [rec.value({"%outer": i}) for i in (0, 1)] == [7, 3]
    assert scev.parse_scev("i64 7").value({}) == 7
    with pytest.raises(scev.UnknownTripCount):
        scev.parse_scev("((-4 + (4 * (%2 /u 4))<nuw>) /u 4)")


def test_a_ragged_inner_loop_runs_its_real_number_of_times(tmp_path):
    path = tmp_path / "ragged.ll"
    path.write_text(_RAGGED)
    [outer] = loops.loop_forests(path)["m_dispatch_0"]
    counts = loops.header_counts([outer])
    [inner] = outer.children
    assert counts[outer] == 2
    assert counts[inner] == 12  # 8 + 4, not 2 x 8


def _cycles(tmp_path: Path, ir: str, asm: str | None = None) -> cost.CallCycles:
    return cost.call_cycles(ir, asm, CORE, FEATURES, tmp_path / "work")


def _plain_asm(tmp_path: Path, ir: str) -> str:
    """Assembly without llc's comments, as IREE writes it."""
    (tmp_path / "plain.ll").write_text(ir)
    subprocess.run([mca.tool(llvm_tools.LLC), "-O3", "-mtriple=riscv64-unknown-linux-gnu",
                    f"-mattr={','.join(FEATURES)}", "-asm-verbose=false", str(tmp_path / "plain.ll"),
                    "-o", str(tmp_path / "plain.s")], check=True)
    return (tmp_path / "plain.s").read_text()


# IREE's count of an inner loop over the ragged last tile of a dimension: the ceiling of
# min(left, 4) / 2, written with a select between two sdivs. opt's SCEV leaves it `%count`.
_CEILING_COUNT = """
define void @m_dispatch_0(ptr %p) {
entry:
  br label %outer
outer:
  %i = phi i64 [ 0, %entry ], [ %i.next, %outer.latch ]
  %step = mul nsw i64 %i, -4
  %left = add nsw i64 10, %step
  %m = tail call i64 @llvm.smin.i64(i64 %left, i64 4)
  %none = icmp slt i64 %left, 1
  %neg = sub i64 0, %m
  %dec = add i64 %m, -1
  %num = select i1 %none, i64 %neg, i64 %dec
  %q = sdiv i64 %num, 2
  %negq = sub nsw i64 0, %q
  %incq = add nsw i64 %q, 1
  %count = select i1 %none, i64 %negq, i64 %incq
  %any = icmp sgt i64 %count, 0
  br i1 %any, label %inner, label %outer.latch
inner:
  %j = phi i64 [ 0, %outer ], [ %j.next, %inner ]
  %addr = getelementptr float, ptr %p, i64 %j
  store float 0.0, ptr %addr
  %j.next = add nuw nsw i64 %j, 1
  %more = icmp slt i64 %j.next, %count
  br i1 %more, label %inner, label %outer.latch
outer.latch:
  %i.next = add nuw nsw i64 %i, 1
  %done = icmp eq i64 %i.next, 4
  br i1 %done, label %exit, label %outer
exit:
  ret void
}
declare i64 @llvm.smin.i64(i64, i64)
"""


def test_a_count_scev_leaves_as_a_value_is_evaluated_through_the_ir(tmp_path):
    """The inner loop runs ceil(min(10 - 4i, 4) / 2) times: 2, 2, 1, then 0 (left -2)."""
    with pytest.raises(scev.UnknownTripCount):
        scev.parse_scev("(-1 + %count)")  # without the IR it stays a run-time value
    path = tmp_path / "ceiling.ll"
    path.write_text(_CEILING_COUNT)
    [outer] = loops.loop_forests(path)["m_dispatch_0"]
    [inner] = outer.children
    assert inner.backedges_printed == "(-1 + %count)" and inner.backedges.loops() == {"%outer"}
    counts = loops.header_counts([outer])
    assert (counts[outer], counts[inner]) == (4, 5)
    # Through the workgroup counting the code model uses: the same counts.
    _, counted = loops.call_header_counts(_CEILING_COUNT, {"m_dispatch_0"}, {}, tmp_path)
    assert counted["m_dispatch_0"] == ({"%outer": 4, "%inner": 5}, 1)


def test_ir_values_divide_as_llvm_does_and_refuse_run_time_values():
    values = ir_values.IrValues("""
define i64 @f(i64 %arg) {
bb:
  %a = sdiv i64 -7, 2
  %b = srem i64 -7, 2
  %c = add i64 %arg, 1
  %d = load i64, ptr null
  ret i64 %a
}""", {})
    assert (values.value("%a", {}), values.value("%b", {})) == (-3, -1)  # toward zero, not floor
    for run_time in ("%c", "%d", "%arg"):
        with pytest.raises(scev.UnknownTripCount, match="run-time value"):
            values.depends(run_time)


def test_a_trip_count_never_exceeds_the_constant_maximum():
    loop = loops.Loop("%l", 1, {"%l"}, backedges=scev.parse_scev("i64 100"), max_backedges=7)
    assert loops.header_counts([loop])[loop] == 8


def test_a_run_time_trip_count_is_not_costed_at_its_index_types_maximum():
    """A loop bounded by a run-time value (data tiling's K loop reads it from a push constant)
    has a 'constant maximum' of ~2^61: costing it would swamp the module, so it is refused."""
    with pytest.raises(scev.UnknownTripCount):  # (-1 + %n): %n is no loop's induction variable
        scev.parse_scev("(-1 + %n)<nsw>")
    loop = loops.Loop("%l", 1, {"%l"}, backedges=None, max_backedges=2305843009213693950)
    with pytest.raises(errors.UncostableFunction, match="run-time value"):
        loops.header_counts([loop])


def test_a_maximum_printed_as_minus_one_is_the_types_maximum(tmp_path):
    """`smin(7 - 2 * x, 2)` iterations may wrap, so SCEV's unsigned maximum is 2^64 - 1, which
    opt prints as -1: a run-time count, not a loop that never runs (or runs -1 times)."""
    ir = """
define void @m_dispatch_0(ptr %p, i32 %x) {
entry:
  %x64 = zext i32 %x to i64
  %twice = shl nuw nsw i64 %x64, 1
  %left = sub nsw i64 7, %twice
  %n = call i64 @llvm.smin.i64(i64 %left, i64 2)
  br label %loop
loop:
  %i = phi i64 [ 0, %entry ], [ %i.next, %loop ]
  %addr = getelementptr float, ptr %p, i64 %i
  store float 0.0, ptr %addr
  %i.next = add nuw nsw i64 %i, 1
  %done = icmp eq i64 %i.next, %n
  br i1 %done, label %exit, label %loop
exit:
  ret void
}
declare i64 @llvm.smin.i64(i64, i64)
"""
    path = tmp_path / "wraps.ll"
    path.write_text(ir)
    [loop] = loops.loop_forests(path)["m_dispatch_0"]
    assert loop.max_backedges == (1 << 64) - 1
    with pytest.raises(errors.UncostableFunction, match="run-time value"):
        loops.header_counts([loop])


def test_cycles_grow_with_the_trip_counts(tmp_path):
    small = _cycles(tmp_path, _nest(4, 8)).cycles["m_dispatch_0"]
    large = _cycles(tmp_path, _nest(4, 64)).cycles["m_dispatch_0"]
    assert small > 0
    assert 6.0 < large / small < 8.5  # 8x the inner iterations, plus the same fixed part


def test_irees_own_code_is_costed_when_its_loops_line_up(tmp_path):
    ir = _nest(4, 64)
    ours = _cycles(tmp_path, ir)
    theirs = _cycles(tmp_path, ir, _plain_asm(tmp_path, ir))
    assert theirs.llc_code == set()
    assert theirs.cycles["m_dispatch_0"] == pytest.approx(ours.cycles["m_dispatch_0"], rel=1e-6)
    # Code of another loop structure (no inner loop) cannot take these trip counts.
    flat = _plain_asm(tmp_path, _RAGGED.replace("%more = icmp ult i64 %j.next, %bound", "%more = icmp ult i64 %j.next, 0")
                      .replace("br i1 %more, label %inner, label %latch", "br label %latch")
                      .replace("%j = phi i64 [ 0, %outer ], [ %j.next, %inner ]", "%j = phi i64 [ 0, %outer ]"))
    fallback = _cycles(tmp_path, ir, flat)
    assert fallback.llc_code == {"m_dispatch_0"}
    assert fallback.cycles == ours.cycles


def test_blocks_are_costed_as_qemu_translates_them(monkeypatch):
    """perf.measure costs qemu's translation blocks, which end after a vsetvli and after 512
    instructions; the static cost must cut the code the same way to rank like it."""
    seen = []
    monkeypatch.setattr(mca, "text_cycles",
                        lambda regions, core, triple: seen.extend(regions) or [1] * len(regions))
    block = machine.MachineBlock(None, None, ["vsetivli zero, 8, e32, m2, ta, ma", "vfadd.vv v8, v8, v10",
                                              "vsetivli zero, 4, e32, m1, ta, ma", "vfadd.vv v8, v8, v9"])
    long = machine.MachineBlock(None, None, ["addi a0, a0, 1"] * 600)
    assert machine.block_cycles([block, long], [3.0, 2.0], CORE) == 3 * 3 + 2 * 2
    assert [(len(lines), vtype) for lines, vtype in seen] == [
        (1, None), (2, ("M2", "E32")), (1, ("M1", "E32")), (512, ("M1", "E32")), (88, ("M1", "E32"))]
    # Natively run code (the host) has no translation blocks: a basic block is one piece.
    seen.clear()
    native = machine.MachineBlock(None, None, ["addq $1, %rax"] * 600)
    assert machine.block_cycles([native], [2.0], "znver2", machine.X86_64) == 2
    assert [len(lines) for lines, _ in seen] == [600]


# The layout llc gives a guarded function (ResNet-18's riscv slow_memcpy dispatch): the early
# return is placed before the block that branches to it, and the real loop comes after.
_EXIT_PLACED_FIRST = """
f:
\tli a0, 3
\tbge a2, a0, .LBB0_3
\tbgeu a0, a3, .LBB0_4
.LBB0_2:
\tli a0, 0
\tret
.LBB0_3:
\tli a0, 3
\tbltu a0, a3, .LBB0_2
.LBB0_4:
\taddi a5, a5, -1
\tbnez a5, .LBB0_4
\tj .LBB0_2
.Lfunc_end0:
"""


def test_a_branch_back_to_an_exit_is_no_loop():
    """Only a backward branch whose target leads back to it closes a loop: one back to a
    return placed earlier is an exit, and costing it as a loop found no IR loop for it."""
    blocks = machine.machine_blocks(_EXIT_PLACED_FIRST, "f")
    found = machine.layout_loops(blocks)
    assert [(blocks[a].label, blocks[b].label) for a, b in found] == [(".LBB0_4", ".LBB0_4")]
    # x86: a return ends the flow too
    x86 = machine.machine_blocks("\nf:\n\tjmp .LBB0_2\n.LBB0_1:\n\tretq\n.LBB0_2:\n\tjne .LBB0_1\n.Lfunc_end0:\n",
                                 "f", machine.X86_64)
    assert machine.layout_loops(x86, machine.X86_64) == []


def test_zicbop_prefetches_are_priced_as_the_measurement_disassembles_them():
    """IREE's RVV microkernels prefetch; llvm-mca-19 has no sifive-p670 scheduling class for
    `prefetch.r`, and without zicbop in the target the perf stage disassembles the same
    encoding as an `ori` to x0, so the code model prices it as that."""
    block = machine.MachineBlock(None, None, ["prefetch.r 64(a2)", "prefetch.w -32(sp)", "addi a0, a0, 1"])
    assert [machine.RISCV64.for_mca(line) for line in block.lines] == [
        "ori zero, a2, 65", "ori zero, sp, -29", "addi a0, a0, 1"]
    assert machine.block_cycles([block], [1.0], CORE) > 0


def test_llvm_mca_prices_each_region_once_per_process(monkeypatch):
    """The measured choice prices mostly the same code every round: a region priced before
    is not sent to llvm-mca again, and keeps the cycles llvm-mca gave it."""
    mca._PRICED.clear()
    a = (["vsetivli zero, 8, e32, m2, ta, ma", "vfadd.vv v8, v8, v10"], None)
    b = (["vadd.vv v8, v8, v16"], ("M8", "E32"))
    first = mca.text_cycles([a, b], CORE)
    sent, run = [], subprocess.run

    def spy(cmd, **kwargs):
        sent.append(kwargs["input"].count("LLVM-MCA-BEGIN"))
        return run(cmd, **kwargs)

    monkeypatch.setattr(mca.subprocess, "run", spy)
    c = (["addi a0, a0, 1"], None)
    again = mca.text_cycles([b, c, a, c], CORE)
    assert sent == [1]  # c alone, once
    assert (again[0], again[2]) == (first[1], first[0]) and again[1] == again[3]
    assert mca.text_cycles([(b[0], ("M1", "E32"))], CORE)[0] < first[1]  # other instruments: priced
    assert sent == [1, 1]
    mca.text_cycles([b], "sifive-x280")  # another core: priced
    assert sent == [1, 1, 1]


def test_newer_llvm_syntax_is_downgraded_for_llvm19(tmp_path):
    assert _opt_reads(tmp_path, _NEWER_SYNTAX).returncode != 0
    proc = _opt_reads(tmp_path, ir_text.downgrade_ir(_NEWER_SYNTAX))
    assert proc.returncode == 0, proc.stderr
    assert "ptr %p, i32 4, <4 x i1> %m" in ir_text.downgrade_ir(_NEWER_SYNTAX)
    # Alias-scope domains with the newer i1 operand (IREE's x86 microkernels carry them).
    scoped = ("define float @m_dispatch_0(ptr %p) {\n  %v = load float, ptr %p, !alias.scope !2\n"
              "  ret float %v\n}\n!0 = distinct !{!0, i1 false, !\"uk\"}\n"
              "!1 = distinct !{!1, !0, !\"uk: a\"}\n!2 = !{!1}\n")
    assert _opt_reads(tmp_path, scoped).returncode != 0
    proc = _opt_reads(tmp_path, ir_text.downgrade_ir(scoped))
    assert proc.returncode == 0, proc.stderr


def _x86_cycles(tmp_path: Path, ir: str, asm: str | None = None) -> cost.CallCycles:
    return cost.call_cycles(ir, asm, "znver2", [], tmp_path / "x86", isa=machine.X86_64, cpu="x86-64-v3")


def test_x86_code_is_costed_on_a_named_x86_core(tmp_path):
    """The host's code (x86-64-v3): x86 branches close its loops, llvm-mca prices it on an
    x86 core model, and the same trip counts scale it."""
    small = _x86_cycles(tmp_path, _nest(4, 8)).cycles["m_dispatch_0"]
    large = _x86_cycles(tmp_path, _nest(4, 64))
    assert small > 0
    assert 5.0 < large.cycles["m_dispatch_0"] / small < 8.5
    (tmp_path / "plain.ll").write_text(_nest(4, 64))
    subprocess.run([mca.tool(llvm_tools.LLC), "-O3", "-mtriple=x86_64-unknown-linux-gnu",
                    "-mcpu=x86-64-v3", "-asm-verbose=false", str(tmp_path / "plain.ll"),
                    "-o", str(tmp_path / "plain.s")], check=True)
    theirs = _x86_cycles(tmp_path, _nest(4, 64), (tmp_path / "plain.s").read_text())
    assert theirs.llc_code == set()  # IREE-style assembly: its loops found from x86 branches
    assert theirs.cycles["m_dispatch_0"] == pytest.approx(large.cycles["m_dispatch_0"], rel=1e-6)


# IREE's dispatch signature (environment, dispatch state, workgroup state) with its workgroup
# count capped: tiles are distributed by loops stepping by the count read from the dispatch
# state (offset 12: x). Like a data-tiled dispatch with a pack fused in, a short first loop
# (4 tiles of 64) runs only on the workgroups whose id is below 4; the second (32 tiles of 8)
# runs on all.
_DISTRIBUTED = """
define i32 @m_dispatch_1(ptr %env, ptr %state, ptr %wg) {
entry:
  %count.addr = getelementptr inbounds nuw i8, ptr %state, i64 12
  %count32 = load i32, ptr %count.addr, align 4
  %count = zext i32 %count32 to i64
  %id32 = load i32, ptr %wg, align 16
  %id = zext i32 %id32 to i64
  %buf.addr = getelementptr inbounds nuw i8, ptr %state, i64 32
  %p = load ptr, ptr %buf.addr, align 16
  %first = icmp ult i64 %id, 4
  br i1 %first, label %pack, label %second
pack:
  %t = phi i64 [ %id, %entry ], [ %t.next, %pack.latch ]
  br label %pack.inner
pack.inner:
  %j = phi i64 [ 0, %pack ], [ %j.next, %pack.inner ]
  %row = mul nuw nsw i64 %t, 64
  %idx = add nuw nsw i64 %row, %j
  %addr = getelementptr float, ptr %p, i64 %idx
  %v = load float, ptr %addr
  %w = fmul float %v, %v
  store float %w, ptr %addr
  %j.next = add nuw nsw i64 %j, 1
  %more = icmp ult i64 %j.next, 64
  br i1 %more, label %pack.inner, label %pack.latch
pack.latch:
  %t.next = add nuw nsw i64 %t, %count
  %again = icmp ult i64 %t.next, 4
  br i1 %again, label %pack, label %second
second:
  %go = icmp ult i64 %id, 32
  br i1 %go, label %tile, label %exit
tile:
  %u = phi i64 [ %id, %second ], [ %u.next, %tile.latch ]
  br label %tile.inner
tile.inner:
  %k = phi i64 [ 0, %tile ], [ %k.next, %tile.inner ]
  %row2 = mul nuw nsw i64 %u, 8
  %idx2 = add nuw nsw i64 %row2, %k
  %addr2 = getelementptr float, ptr %p, i64 %idx2
  %x = load float, ptr %addr2
  %y = fadd float %x, 1.0
  store float %y, ptr %addr2
  %k.next = add nuw nsw i64 %k, 1
  %more2 = icmp ult i64 %k.next, 8
  br i1 %more2, label %tile.inner, label %tile.latch
tile.latch:
  %u.next = add nuw nsw i64 %u, %count
  %again2 = icmp ult i64 %u.next, 32
  br i1 %again2, label %tile, label %exit
exit:
  ret i32 0
}
"""


def test_loops_over_workgroups_are_counted_as_one_workgroup_running_every_tile(tmp_path):
    """A dispatch whose tiles are distributed by loops stepping by the workgroup count: with
    the count read as 1, one call runs every tile of the axis (4 x 64 + 32 x 8 iterations)
    and is the dispatch's work along it; multiplying it by the workgroup count would count
    the 4 pack tiles once per workgroup."""
    path = tmp_path / "plain.ll"
    path.write_text(_DISTRIBUTED)
    with pytest.raises(errors.UncostableFunction, match="no trip count"):  # the count unread: a run-time step
        loops.header_counts(loops.loop_forests(path)["m_dispatch_1"])
    counted, looped = ir_text.one_workgroup_ir(_DISTRIBUTED)
    assert looped == {"m_dispatch_1": {0}}
    assert "%count32 = add i32 0, 1" in counted and "%id32 = load i32" in counted
    path.write_text(counted)
    roots = loops.loop_forests(path)["m_dispatch_1"]
    counts = {loop.header: n for loop, n in loops.header_counts(roots).items()}
    assert counts == {"%pack": 4, "%pack.inner": 256, "%tile": 32, "%tile.inner": 256}
    costed = _x86_cycles(tmp_path, _DISTRIBUTED)
    assert costed.looped_axes == {"m_dispatch_1": {0}} and costed.cycles["m_dispatch_1"] > 0
    # Only the axes not looped over are counted workgroup by workgroup.
    assert cost.workgroup_grid((9, 2, 3), {0}) == (1, 2, 3)
    assert cost.workgroup_grid((9, 2, 3), set()) == (9, 2, 3)


# Two workgroups share 12 columns, 8 each (`umin(12 - 8 * id, 8)`, as IREE distributes a
# ragged dimension): the first runs the full-tile nest (100 steps), the last only the guarded
# remainder loop over its 4 columns. The workgroup id is the first field of the workgroup
# state, the third parameter.
_RAGGED_WORKGROUPS = """
define i32 @m_dispatch_0(ptr %env, ptr %state, ptr %wg) {
entry:
  %id = load i32, ptr %wg, align 16
  %id64 = zext i32 %id to i64
  %start = mul nuw nsw i64 %id64, 8
  %left = sub nuw nsw i64 12, %start
  %cols = call i64 @llvm.umin.i64(i64 %left, i64 8)
  %full = icmp eq i64 %cols, 8
  br i1 %full, label %body, label %tail.pre
body:
  %j = phi i64 [ 0, %entry ], [ %j.next, %body ]
  %addr = getelementptr float, ptr %env, i64 %j
  %v = load float, ptr %addr
  %w = fmul float %v, %v
  store float %w, ptr %addr
  %j.next = add nuw nsw i64 %j, 1
  %more = icmp ult i64 %j.next, 100
  br i1 %more, label %body, label %exit
tail.pre:
  br label %tail
tail:
  %t = phi i64 [ 0, %tail.pre ], [ %t.next, %tail ]
  %taddr = getelementptr float, ptr %env, i64 %t
  %tv = load float, ptr %taddr
  %tw = fadd float %tv, 1.0
  store float %tw, ptr %taddr
  %t.next = add nuw nsw i64 %t, 1
  %tmore = icmp ult i64 %t.next, %cols
  br i1 %tmore, label %tail, label %exit
exit:
  ret i32 0
}
declare i64 @llvm.umin.i64(i64, i64)
"""


def test_workgroups_are_counted_one_by_one_when_the_id_decides_their_loops(tmp_path):
    """With the id unknown, the remainder loop takes its maximum (8) and both arms of the guard
    are counted; with each workgroup's id a constant, the first runs only the full nest and
    the last only its 4 remainder columns."""
    functions = {"m_dispatch_0"}
    _, unknown = loops.call_header_counts(_RAGGED_WORKGROUPS, functions, {}, tmp_path)
    assert unknown["m_dispatch_0"] == ({"%body": 100, "%tail": 8}, 1)
    structure, counted = loops.call_header_counts(_RAGGED_WORKGROUPS, functions, {"m_dispatch_0": (2, 1, 1)}, tmp_path)
    assert counted["m_dispatch_0"] == ({"%body": 100, "%tail": 4}, 2)
    assert [loop.header for loop in structure["m_dispatch_0"]] == ["%body", "%tail"]
    # Beyond the cap: the first workgroup for all but one, the last for the last.
    loops.MAX_ENUMERATED_WORKGROUPS, cap = 1, loops.MAX_ENUMERATED_WORKGROUPS
    try:
        _, capped = loops.call_header_counts(_RAGGED_WORKGROUPS, functions, {"m_dispatch_0": (2, 1, 1)}, tmp_path)
    finally:
        loops.MAX_ENUMERATED_WORKGROUPS = cap
    assert capped == counted
    # Workgroups alike (the id does not reach a branch) are counted once and multiplied.
    nest = _nest(3, 8).replace("@m_dispatch_0(ptr %p)", "@m_dispatch_0(ptr %p, ptr %state, ptr %wg)")
    _, alike = loops.call_header_counts(nest, functions, {"m_dispatch_0": (5, 1, 1)}, tmp_path)
    assert alike["m_dispatch_0"] == ({"%outer": 15, "%inner": 120}, 5)
    # Through call_cycles: the summed workgroups cost less than twice the unknown-id call.
    one_call = _cycles(tmp_path, _RAGGED_WORKGROUPS)
    both = cost.call_cycles(_RAGGED_WORKGROUPS, None, CORE, FEATURES, tmp_path / "wg",
                            workgroup_counts={"m_dispatch_0": (2, 1, 1)})
    assert both.all_workgroups == {"m_dispatch_0"} and one_call.all_workgroups == set()
    assert both.cycles["m_dispatch_0"] < 2 * one_call.cycles["m_dispatch_0"]


def test_a_workgroup_copy_has_its_id_as_a_constant_and_no_debug_info():
    ir = ("define i32 @m_dispatch_0(ptr %a, ptr %b, ptr %c) #0 !dbg !7 {\n"
          "  %x = load i32, ptr %c, align 16, !dbg !9\n"
          "  %py = getelementptr inbounds nuw i8, ptr %c, i64 4\n"
          "  %y = load i32, ptr %py, align 4\n"
          "  %pz = getelementptr inbounds i8, ptr %c, i64 8\n"
          "  %z = load i16, ptr %pz, align 8\n"
          "    #dbg_value(i32 %x, !10, !DIExpression(), !9)\n"
          "  ret i32 0\n}")
    [(name, definition)] = ir_text.function_definitions(ir).items()
    copy = ir_text.workgroup_copy(definition, name, (3, 1, 2))
    assert copy.startswith("define i32 @m_dispatch_0.wg.3_1_2(ptr %a, ptr %b, ptr %c) #0 {")
    assert "%x = add i32 0, 3" in copy and "%y = add i32 0, 1" in copy and "%z = add i16 0, 2" in copy
    assert "dbg" not in copy


def test_a_branch_on_a_constant_takes_only_its_target():
    ir = ("define i32 @f() {\nbb:\n  br i1 false, label %dead, label %live\ndead:\n  br label %live\n"
          "live:\n  switch i32 %x, label %out [\n    i32 0, label %case\n  ]\ncase:\n  br label %out\n"
          "out:\n  ret i32 0\n}")
    assert ir_text.reachable_blocks(ir) == {"f": {"%bb", "%live", "%case", "%out"}}
    # An entry block without a label is still where the walk starts.
    unlabeled = ir.replace("bb:\n", "")
    assert ir_text.reachable_blocks(unlabeled) == {"f": {"%<entry>", "%live", "%case", "%out"}}
    assert scev.parse_scev("i1 false").value({}) == 0


def test_an_unknown_architecture_is_refused_in_one_line():
    assert machine.isa_of("x86_64-unknown-linux-gnu") is machine.X86_64
    assert machine.isa_of("riscv64-unknown-linux-gnu") is machine.RISCV64
    with pytest.raises(errors.CodeCostError, match="'aarch64-none-elf'.*not aarch64"):
        machine.isa_of("aarch64-none-elf")


def test_a_missing_llvm_tool_fails_with_one_line_naming_it(tmp_path, monkeypatch):
    monkeypatch.setattr(mca, "_llvm_bin", tmp_path)  # a --llvm-bin directory without the tools
    with pytest.raises(errors.CodeCostError, match=r"^opt not found in --llvm-bin "):
        _cycles(tmp_path, _nest(2, 2))
    monkeypatch.setattr(mca, "_llvm_bin", None)
    with pytest.raises(errors.CodeCostError, match=r"^opt: no LLVM 19 tools given \(--llvm-bin"):
        _cycles(tmp_path, _nest(2, 2))


def test_a_function_missing_from_the_module_is_named(tmp_path):
    with pytest.raises(errors.CodeCostError, match="m_dispatch_9: not in the module"):
        cost.call_cycles(_nest(2, 2), None, CORE, FEATURES, tmp_path / "w", functions={"m_dispatch_9"})


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q", "-p", "no:cacheprovider"]))


# IREE's x86 code for keras_cnn's direct conv_13x13x16x3x3x8 (stock IREE, x86-64-v3): per
# output pixel and 8 channels one accumulator carried through 3 x 3 taps x 8 input channels,
# 72 chained FMAs, then stored. The chain restarts every iteration of .LBB0_2.
_DIRECT_CONV = """
f:
\txorl\t%esi, %esi
.LBB0_1:
\tmovq\t%rsi, %r8
\tshlq\t$6, %r8
\taddq\t%rax, %r8
\tmovb\t$1, %r9b
\txorl\t%r10d, %r10d
.LBB0_2:
\tleaq\t(%rcx,%r10,4), %r11
\tmovq\t%rdx, %rbx
\tvxorps\t%xmm1, %xmm1, %xmm1
\txorl\t%r14d, %r14d
.LBB0_3:
\tmovq\t%r11, %r15
\txorl\t%r12d, %r12d
.LBB0_4:
""" + "".join(f"\tvbroadcastss\t{-28 + 4 * c}(%rbx,%r12), %ymm{2 if c % 2 == 0 else 1}\n"
              f"\tvfmadd132ps\t{-448 + 64 * c}(%r15), %ymm{1 if c % 2 == 0 else 2}, %ymm{2 if c % 2 == 0 else 1}\n"
              for c in range(8)) + """\taddq\t$32, %r12
\taddq\t$512, %r15
\tcmpq\t$96, %r12
\tjne\t.LBB0_4
\tincq\t%r14
\taddq\t$480, %rbx
\taddq\t$1536, %r11
\tcmpq\t$3, %r14
\tjne\t.LBB0_3
\tvaddps\t(%rdi,%r10,4), %ymm1, %ymm1
\tvmaxps\t%ymm0, %ymm1, %ymm2
\tvmovaps\t%ymm2, (%r8,%r10,4)
\tmovl\t$8, %r10d
\ttestb\t$1, %r9b
\tmovl\t$0, %r9d
\tjne\t.LBB0_2
\tincq\t%rsi
\taddq\t$32, %rdx
\tcmpq\t$13, %rsi
\tjne\t.LBB0_1
\tretq
.Lfunc_end0:
"""


def _conv_nest(loop_counts: list[float]):
    blocks = machine.machine_blocks(_DIRECT_CONV, "f", machine.X86_64)
    loops = machine.layout_loops(blocks, machine.X86_64)
    assert len(loops) == 4  # pixel row, pixel and channel half, kernel row, kernel column
    counts = [loop_counts[k] if (k := cost._innermost(loops, i)) is not None else 1.0 for i in range(len(blocks))]
    return blocks, loops, counts


def test_native_code_overlaps_the_chains_of_successive_outer_iterations():
    """The known case: the nest above, timed natively on the AMD EPYC (Zen 3) this project's host
    runs on, takes about 150 cycles per output vector (`bazel run //bench:chain_overlap`, the same
    chain: 72 FMAs of 4 cycles' latency, 288 back to back): two iterations' chains overlap.
    Priced block by block, llvm-mca's steady state of the innermost block runs the chain forever
    (32 cycles x 9 per vector); priced as one region per pixel iteration, it overlaps them."""
    loop_counts = [13.0, 26.0, 78.0, 234.0]  # one row of 13 pixels x 2 channel halves x 3 x 3
    blocks, loops, counts = _conv_nest(loop_counts)
    per_block = machine.block_cycles(blocks, counts, "znver3", machine.X86_64)
    nested = machine.nest_cycles(blocks, loops, loop_counts, counts, "znver3", machine.X86_64)
    per_vector = nested / 26
    print(f"per output vector: {per_block / 26:.1f} cycles block by block, {per_vector:.1f} as nests")
    assert per_block / 26 > 280  # the chain run on forever
    assert 140 < per_vector < 200, per_vector  # near the 156 measured, far from 288


def test_an_irregular_nest_is_priced_block_by_block():
    """Inner trips that are not a whole number per outer iteration (a guard, a triangular nest):
    no iteration to unroll, so every block is priced as before; a nest never entered costs
    nothing."""
    loop_counts = [13.0, 26.0, 78.0, 235.0]  # 235 / 78 taps: not a whole number
    blocks, loops, counts = _conv_nest(loop_counts)
    per_block = machine.block_cycles(blocks, counts, "znver3", machine.X86_64)
    # 235 / 78 trips of .LBB0_4 per kernel row are not whole, so no enclosing loop's iteration
    # unrolls; only .LBB0_4 alone is a region, priced as its one block would be
    assert machine.nest_iteration(blocks, loops, loop_counts, 0) is None
    assert machine.nest_cycles(blocks, loops, loop_counts, counts, "znver3", machine.X86_64) == pytest.approx(per_block)
    never = machine.nest_cycles(blocks, loops, [0.0] * 4, [1.0 if k is None else 0.0 for k in
                                                          (cost._innermost(loops, i) for i in range(len(blocks)))],
                                "znver3", machine.X86_64)
    assert never == pytest.approx(machine.block_cycles(blocks[:1] + blocks[-1:], [1.0, 1.0], "znver3", machine.X86_64))


def test_risc_v_code_is_priced_as_qemu_translates_it_not_as_nests():
    """The RISC-V code model predicts perf.measure, which prices qemu's translation blocks one by
    one: it does not overlap iterations."""
    assert machine.X86_64.overlaps_iterations and not machine.RISCV64.overlaps_iterations


def test_a_long_inner_loop_is_not_unrolled_into_memory():
    """An inner loop of a billion trips per outer iteration is too long to price as one region:
    refused before its instructions are repeated, and priced block by block."""
    loop_counts = [13.0, 26.0, 78.0, 78.0e9]
    blocks, loops, counts = _conv_nest(loop_counts)
    assert machine.nest_iteration(blocks, loops, loop_counts, 2) is None
    assert machine.nest_cycles(blocks, loops, loop_counts, counts, "znver3", machine.X86_64) == pytest.approx(
        machine.block_cycles(blocks, counts, "znver3", machine.X86_64))
