"""Rewrites of an imported linalg module that a lowering strategy asks for, before iree-compile.

Some lowerings are not a flag of IREE's: IREE vectorises a depthwise convolution only in the
channels-last form (`linalg.depthwise_conv_2d_nhwc_hwc`, its convolution pipeline), and PyTorch's
NCHW depthwise convolutions reach codegen as generic loops it leaves scalar (1-9% vector
instructions, issue 58). A strategy names its rewrites (common/targets.py STRATEGY_FLAGS); every
stage that hands the module to iree-compile for a target goes through `IreeTarget.compile_input`,
so analysis, codegen, perf and the dispatch tests see the same rewritten program.

The rewritten module is a temporary file: only the executable configurations IREE derives from
it reach a build (codegen compiles from those), and they do not carry the module's path.
"""

from __future__ import annotations

import atexit
import functools
import shutil
import tempfile
from pathlib import Path
from typing import Callable

from common.files import sha256_file


class RewriteError(ValueError):
    """A module could not be rewritten; the message names the module and the reason."""


# IREE's own passes for the convolutions it already turns channels-last: regular 2-D convs to
# NHWC/HWCF with transposes around them (propagated away between layers), then im2col + GEMM,
# as the target's global im2col flag would (a strategy with this rewrite leaves that flag out:
# it would also turn the NHWC depthwise convs into im2col copies and matrix-vector products).
_IREE_CHANNELS_LAST = ("builtin.module(func.func(iree-preprocessing-convert-conv-to-channels-last,"
                       "iree-global-opt-convert-conv2d-to-img2col))")


def _as_value(result):
    """The single result of a builder (which returns a Value, an OpView or a result list)."""
    from iree.compiler import ir

    if isinstance(result, ir.OpView):
        result = result.results
    if isinstance(result, ir.OpResultList):
        result = result[0]
    return result


def _transposed(value, permutation: list[int]):
    from iree.compiler import ir
    from iree.compiler.dialects import linalg, tensor

    shaped = ir.RankedTensorType(value.type)
    empty = tensor.EmptyOp([shaped.shape[p] for p in permutation], shaped.element_type).result
    return _as_value(linalg.transpose(value, outs=[empty], permutation=permutation))


def _depthwise_nchw_to_nhwc(module) -> int:
    """Each `linalg.depthwise_conv_2d_nchw_chw` becomes `linalg.depthwise_conv_2d_nhwc_hwc`
    between transposes (input, filter and init in; result out). Returns how many."""
    from iree.compiler import ir
    from iree.compiler.dialects import linalg

    convs = []

    def visit(op):
        if op.name == "linalg.depthwise_conv_2d_nchw_chw":
            convs.append(op)
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    for op in convs:
        with ir.InsertionPoint(op), op.location:
            image, filt, init = (op.operands[i] for i in range(3))
            strides = [int(s) for s in ir.DenseIntElementsAttr(op.attributes["strides"])]
            dilations = [int(d) for d in ir.DenseIntElementsAttr(op.attributes["dilations"])]
            nhwc = _as_value(linalg.depthwise_conv_2d_nhwc_hwc(
                _transposed(image, [0, 2, 3, 1]), _transposed(filt, [1, 2, 0]),
                outs=[_transposed(init, [0, 2, 3, 1])], strides=strides, dilations=dilations))
            nchw = _transposed(nhwc, [0, 3, 1, 2])
        op.results[0].replace_all_uses_with(nchw)
        op.erase()
    return len(convs)


def _channels_last(module) -> int:
    from iree.compiler import passmanager

    passmanager.PassManager.parse(_IREE_CHANNELS_LAST).run(module.operation)
    return _depthwise_nchw_to_nhwc(module)


# The registry of rewrites: name -> function rewriting a parsed module in place (returns how many
# ops it rewrote). A strategy names them in common/targets.py STRATEGY_FLAGS.
REWRITES: dict[str, Callable] = {
    # Convolutions channels-last: regular 2-D convs as im2col GEMMs over NHWC (IREE's passes),
    # depthwise 2-D convs as IREE's vectorising NHWC depthwise convolution.
    "channels_last": _channels_last,
}


def rewrite_module(source: bytes, rewrites: tuple[str, ...], what: str) -> bytes:
    """`source` (MLIR bytecode or text) with `rewrites` applied, as bytecode. Raises
    RewriteError naming `what`."""
    from iree.compiler import ir

    unknown = [r for r in rewrites if r not in REWRITES]
    if unknown:
        raise RewriteError(f"rewrite '{unknown[0]}': expected one of {', '.join(REWRITES)}")
    with ir.Context():
        try:
            module = ir.Module.parse(source)
        except ir.MLIRError as err:
            raise RewriteError(f"{what}: not an MLIR module ({str(err).splitlines()[0]})") from None
        for name in rewrites:
            try:
                REWRITES[name](module)
            except ir.MLIRError as err:
                raise RewriteError(f"{what}: rewrite '{name}' failed: {str(err).splitlines()[0]}") from None
        if not module.operation.verify():
            raise RewriteError(f"{what}: rewrite {', '.join(rewrites)} produced an invalid module")
        out = tempfile.SpooledTemporaryFile()
        module.operation.write_bytecode(out)
        out.seek(0)
        return out.read()


_scratch: Path | None = None


def _scratch_dir() -> Path:
    global _scratch
    if _scratch is None:
        _scratch = Path(tempfile.mkdtemp(prefix="module_rewrites_"))
        atexit.register(shutil.rmtree, _scratch, True)
    return _scratch


def prepared_module(module: Path, rewrites: tuple[str, ...]) -> Path:
    """The module iree-compile gets: `module` itself without rewrites, else its rewritten
    bytecode in this process' scratch directory (once per module bytes and rewrites)."""
    if not rewrites:
        return Path(module)
    if not Path(module).is_file():
        raise RewriteError(f"{module}: module file not found")
    return _prepared(str(module), sha256_file(module), tuple(rewrites))


@functools.lru_cache(maxsize=4)
def _prepared(module: str, module_sha256: str, rewrites: tuple[str, ...]) -> Path:
    out = _scratch_dir() / f"{module_sha256[:16]}_{'_'.join(rewrites)}.mlirbc"
    out.write_bytes(rewrite_module(Path(module).read_bytes(), rewrites, module))
    return out
