"""The LLVM 19 tools the code model runs (opt, llc): perf.mca's, from its --llvm-bin directory."""

from __future__ import annotations

from perf import mca
from perf.code_model.errors import CodeCostError

OPT = "opt"  # LLVM 19's, from --llvm-bin (perf.mca.tool)
LLC = "llc"


def tool(name: str) -> str:
    try:
        return mca.tool(name)  # the same --llvm-bin directory (@llvm19) as llvm-mca
    except mca.McaError as err:
        raise CodeCostError(str(err)) from None


def first_error(stderr: str) -> str:
    lines = [l.strip() for l in stderr.splitlines() if l.strip()]
    return next((l for l in lines if "error" in l.lower()), lines[0] if lines else "(no message)")
