"""The versions that key committed records (tuning/records/, tuning/strategies/) in place of the
source of the code that measures.

A record is replayed only while its key equals the tree's. Keying the Python that compiles, runs
and prices a candidate by its source hash re-measured the whole zoo (one to two hours here) after
any edit of those modules, a refactor or a comment included. So the key names a version instead,
and the figures themselves guard it: //tuning:reproduce_test measures records again and compares
every figure byte for byte, and //tuning:*_figures_agree_test compares shipped perf reports with
the records. A change that moves a figure fails them until the version is bumped and the records
are refreshed (`tools/bazel run //tools:tune -- all`).

Bump MEASUREMENT_VERSION when a change may move a measured or priced figure: what a candidate
compiles to (codegen.compile, codegen.configs, codegen.layout, common.module_rewrites,
common.iree_tools), how it runs under qemu (perf.guest, runtime.hal_runner.dispatch,
common.dispatch_layout), how counts and caches become
cycles and energy (perf.counts, perf.mca, perf.measure, perf.memory_model, common.core_models) or
what the code model prices (perf.code_model). Bump STRATEGY_CHOICE_VERSION when choice.choose may
decide differently from the same figures. Tools (iree-base-compiler, @llvm19, qemu, its plugin,
the riscv64 runner) and every input file stay keyed by version or sha256 of their own.
"""

MEASUREMENT_VERSION = 2
STRATEGY_CHOICE_VERSION = 1
