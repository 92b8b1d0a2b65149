"""Static model cycles of compiled dispatches: a cost model of the generated code.

The tile-level cost model (analysis/cost_model.py) prices the counts the tiles imply; what a
candidate costs on RISC-V is mostly decided by what IREE's vectorizer makes of them (spills,
gathers, peeled remainders). This model reads the code instead, without running it:

1. IREE's optimized LLVM IR of every dispatch (`--iree-hal-dump-executable-intermediates-to`)
   is rewritten into the syntax of Debian's LLVM 19 (`ir_text.downgrade_ir`; IREE's LLVM is
   newer).
2. `opt-19` names every block and prints each loop's backedge-taken count (scalar
   evolution). Counts that depend on an enclosing loop's induction variable (peeled
   remainders) are evaluated per iteration of that loop. The workgroup id is made a constant
   in a copy of the function per workgroup (`loops.call_header_counts`): instsimplify then folds
   what it decides, a ragged last tile's trip counts and the guards that choose between a
   full-tile nest and a remainder nest, and a loop behind a branch never taken is not
   counted. Other counts that depend on run-time values take their constant maximum.
3. `llc-19` compiles the same IR with verbose assembly, which names the IR block each
   machine block starts, so each of its loops gets the trip count of its IR loop. IREE's own
   assembly (its .s dump) is costed when its loops, found from backward branches in layout
   order, line up with llc-19's one for one; otherwise llc-19's code is costed
   (`cost.CallCycles.llc_code`).
4. The code is cut as qemu translates it (after every vsetvli, at most 512 instructions),
   because that is the unit perf.measure costs; each piece is costed by llvm-mca on the core
   model (`perf.mca.text_cycles`) with the LMUL/SEW of the preceding vsetvli in layout order,
   and counted as often as its innermost loop's header runs per call. A dispatch's cycles
   are that sum times its workgroup count (the axes it loops over counted inside the call:
   `ir_text.one_workgroup_ir`).

The instruction set is the target's (`machine.Isa`, from its triple): RISC-V as above; x86-64
(the host) with x86 branches closing loops and each basic block one piece (no qemu), priced on
a named x86 core model (e.g. sapphirerapids, znver2).

What it ignores, beyond `common.core_models.MODEL_IGNORES`: branches inside a loop body that
no constant decides (every block of a loop is counted at its header's count, each arm of such
a branch too), a vtype set on another path than the layout-preceding one, and, where IREE's
loops do not line up, LLVM 19's code generation differing from IREE's (more spills in IREE's
code, typically).

The modules, by responsibility (callers import from the module that defines a name):

- `errors`: CodeCostError, MissingCode, UncostableFunction;
- `llvm_tools`: the LLVM 19 tools run (opt, llc) and their first error;
- `ir_text`: the downgrade to LLVM 19's syntax and the surgery on a dispatch's IR;
- `scev`: opt's printed scalar-evolution expressions, parsed and evaluated;
- `ir_values`: the integer IR values SCEV leaves as `%value`, interpreted;
- `loops`: opt's printed loops, their trip counts and header counts per call and workgroup;
- `machine`: instruction sets, machine blocks, layout loops and llvm-mca's cycles of them;
- `cost`: a module's and a compiled build's cycles (CallCycles), from all of the above.
"""
