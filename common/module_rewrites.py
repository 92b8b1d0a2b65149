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


def _ops_named(module, name: str) -> list:
    from iree.compiler import ir

    found = []

    def visit(op):
        if op.name == name:
            found.append(op)
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    return found


def _window(op, attribute: str) -> list[int]:
    from iree.compiler import ir

    return [int(v) for v in ir.DenseIntElementsAttr(op.attributes[attribute])]


def _reshaped(value, shape: list[int], groups: list[list[int]], expand: bool):
    """`value` expanded to (or collapsed from) `shape` by `groups` of dims."""
    from iree.compiler import ir
    from iree.compiler.dialects import tensor

    shaped = ir.RankedTensorType(value.type)
    result = ir.RankedTensorType.get(shape, shaped.element_type)
    if expand:
        return _as_value(tensor.expand_shape(result, value, groups, [], shape))
    return _as_value(tensor.collapse_shape(result, value, groups))


def _slice(value, index: int, dim: int):
    """value[..., index, ...] along `dim`, that dim dropped."""
    from iree.compiler import ir
    from iree.compiler.dialects import tensor

    shaped = ir.RankedTensorType(value.type)
    shape = list(shaped.shape)
    offsets, sizes = [0] * len(shape), list(shape)
    offsets[dim], sizes[dim] = index, 1
    result = ir.RankedTensorType.get(shape[:dim] + shape[dim + 1:], shaped.element_type)
    return _as_value(tensor.extract_slice(result, value, [], [], [], offsets, sizes, [1] * len(shape)))


def _inserted(part, into, index: int, dim: int):
    """`into` with `part` (which lacks `dim`) at `index` along `dim`."""
    from iree.compiler import ir
    from iree.compiler.dialects import tensor

    shape = list(ir.RankedTensorType(into.type).shape)
    offsets, sizes = [0] * len(shape), list(shape)
    offsets[dim], sizes[dim] = index, 1
    return _as_value(tensor.insert_slice(part, into, [], [], [], offsets, sizes, [1] * len(shape)))


def _conv_1d_as_2d(module) -> int:
    """Each `linalg.conv_1d_ncw_fcw` becomes a `linalg.conv_2d_nchw_fchw` over a unit height, so
    the 2-D rewrites below (and IREE's im2col) reach it."""
    from iree.compiler import ir
    from iree.compiler.dialects import linalg

    convs = _ops_named(module, "linalg.conv_1d_ncw_fcw")
    for op in convs:
        with ir.InsertionPoint(op), op.location:
            image, filt, init = (op.operands[i] for i in range(3))
            n, c, w = ir.RankedTensorType(image.type).shape
            f, _, k = ir.RankedTensorType(filt.type).shape
            _, _, ow = ir.RankedTensorType(init.type).shape
            conv = _as_value(linalg.conv_2d_nchw_fchw(
                _reshaped(image, [n, c, 1, w], [[0], [1], [2, 3]], expand=True),
                _reshaped(filt, [f, c, 1, k], [[0], [1], [2, 3]], expand=True),
                outs=[_reshaped(init, [n, f, 1, ow], [[0], [1], [2, 3]], expand=True)],
                strides=[1] + _window(op, "strides"), dilations=[1] + _window(op, "dilations")))
            flat = _reshaped(conv, [n, f, ow], [[0], [1], [2, 3]], expand=False)
        op.results[0].replace_all_uses_with(flat)
        op.erase()
    return len(convs)


def _grouped_as_per_group(module) -> int:
    """Each grouped `linalg.conv_2d_ngchw_gfchw` becomes one `linalg.conv_2d_nchw_fchw` per group
    (IREE lowers the grouped op to scalar loops; its regular convs become GEMMs)."""
    from iree.compiler import ir
    from iree.compiler.dialects import linalg

    convs = _ops_named(module, "linalg.conv_2d_ngchw_gfchw")
    for op in convs:
        with ir.InsertionPoint(op), op.location:
            image, filt, init = (op.operands[i] for i in range(3))
            result = init
            for g in range(ir.RankedTensorType(filt.type).shape[0]):
                part = _as_value(linalg.conv_2d_nchw_fchw(
                    _slice(image, g, 1), _slice(filt, g, 0), outs=[_slice(init, g, 1)],
                    strides=_window(op, "strides"), dilations=_window(op, "dilations")))
                result = _inserted(part, result, g, 1)
        op.results[0].replace_all_uses_with(result)
        op.erase()
    return len(convs)


def _strided(value, offsets: list[int], sizes: list[int], strides: list[int]):
    from iree.compiler import ir
    from iree.compiler.dialects import tensor

    shaped = ir.RankedTensorType(value.type)
    result = ir.RankedTensorType.get(sizes, shaped.element_type)
    return _as_value(tensor.extract_slice(result, value, [], [], [], offsets, sizes, strides))


def _dilated_as_phases(module) -> int:
    """Each dilated, unit-stride `linalg.conv_2d_nchw_fchw` becomes one undilated conv per phase
    (output rows and columns of one residue modulo the dilation read input rows and columns of
    that residue only). IREE's im2col skips dilated convs, and IREE 3.13's CPU configuration of
    a dilated conv fed by a transpose fails ("slice along dimension N runs out-of-bounds")."""
    from iree.compiler import ir
    from iree.compiler.dialects import linalg, tensor

    convs = [op for op in _ops_named(module, "linalg.conv_2d_nchw_fchw")
             if set(_window(op, "dilations")) != {1} and set(_window(op, "strides")) == {1}]
    for op in convs:
        dy, dx = _window(op, "dilations")
        with ir.InsertionPoint(op), op.location:
            image, filt, init = (op.operands[i] for i in range(3))
            n, c, hi, wi = ir.RankedTensorType(image.type).shape
            _, f, ho, wo = ir.RankedTensorType(init.type).shape
            result = init
            for a in range(min(dy, ho)):
                for b in range(min(dx, wo)):
                    rows, cols = -(-(ho - a) // dy), -(-(wo - b) // dx)  # output rows/cols of this phase
                    in_rows, in_cols = -(-(hi - a) // dy), -(-(wi - b) // dx)
                    part = _as_value(linalg.conv_2d_nchw_fchw(
                        _strided(image, [0, 0, a, b], [n, c, in_rows, in_cols], [1, 1, dy, dx]), filt,
                        outs=[_strided(init, [0, 0, a, b], [n, f, rows, cols], [1, 1, dy, dx])],
                        strides=[1, 1], dilations=[1, 1]))
                    result = _as_value(tensor.insert_slice(part, result, [], [], [], [0, 0, a, b],
                                                           [n, f, rows, cols], [1, 1, dy, dx]))
        op.results[0].replace_all_uses_with(result)
        op.erase()
    return len(convs)


def _nhwc_input(image):
    """`image` (NCHW) as NHWC. When it is a constant spatial padding of another value, that value
    is transposed and padded in NHWC instead, so the transpose meets (and cancels with) the
    producer's from the channels-last GEMMs rather than sitting after the pad."""
    from iree.compiler import ir
    from iree.compiler.dialects import tensor

    pad = image.owner if isinstance(image, ir.OpResult) else None
    if pad is None or pad.name != "tensor.pad" or len(pad.operands) != 1:  # dynamic padding: leave it
        return _transposed(image, [0, 2, 3, 1])
    low = list(ir.DenseI64ArrayAttr(pad.attributes["static_low"]))
    high = list(ir.DenseI64ArrayAttr(pad.attributes["static_high"]))
    body = pad.regions[0].blocks[0]
    yielded = list(body.operations)[-1].operands[0]
    if low[:2] != [0, 0] or high[:2] != [0, 0] or isinstance(yielded, ir.BlockArgument) \
            or yielded.owner.parent == pad:  # padding computed per element: leave it
        return _transposed(image, [0, 2, 3, 1])
    source = _transposed(pad.operands[0], [0, 2, 3, 1])
    shape = ir.RankedTensorType(image.type).shape
    result = ir.RankedTensorType.get([shape[0], shape[2], shape[3], shape[1]],
                                     ir.RankedTensorType(image.type).element_type)
    padded = tensor.PadOp(result, source, [], [], [0, low[2], low[3], 0], [0, high[2], high[3], 0])
    block = padded.regions[0].blocks.append(*[ir.IndexType.get()] * 4)
    with ir.InsertionPoint(block):
        tensor.YieldOp(yielded)
    return padded.result


def _depthwise_nchw_to_nhwc(module) -> int:
    """Each `linalg.depthwise_conv_2d_nchw_chw` becomes `linalg.depthwise_conv_2d_nhwc_hwc`
    between transposes (input, filter and init in; result out). Returns how many."""
    from iree.compiler import ir
    from iree.compiler.dialects import linalg

    from iree.compiler.dialects import util

    convs = _ops_named(module, "linalg.depthwise_conv_2d_nchw_chw")
    for op in convs:
        with ir.InsertionPoint(op), op.location:
            image, filt, init = (op.operands[i] for i in range(3))
            # A barrier keeps IREE from fusing the input's transpose into the convolution (the
            # fused op is a generic loop nest its convolution pipeline does not take: scalar again).
            nhwc_image = _nhwc_input(image)
            nhwc_image = _as_value(util.optimization_barrier([nhwc_image.type], [nhwc_image]))
            nhwc = _as_value(linalg.depthwise_conv_2d_nhwc_hwc(
                nhwc_image, _transposed(filt, [1, 2, 0]),
                outs=[_transposed(init, [0, 2, 3, 1])], strides=_window(op, "strides"),
                dilations=_window(op, "dilations")))
            nchw = _transposed(nhwc, [0, 3, 1, 2])
        op.results[0].replace_all_uses_with(nchw)
        op.erase()
    return len(convs)


# PyTorch's NCHW poolings reach codegen as loops over a strided innermost (W) dimension that IREE
# leaves scalar (resnet's max pool: 0.2% vector instructions, 12% of its bound); their NHWC forms
# vectorise over channels (Keras' poolings: 48-70% vector).
_NCHW_POOLINGS = {
    "linalg.pooling_nchw_max": "pooling_nhwc_max",
    "linalg.pooling_nchw_sum": "pooling_nhwc_sum",
}


def _pooling_nchw_to_nhwc(module) -> int:
    """Each NCHW max or sum pooling becomes its NHWC form between transposes (input and init in,
    result out; the window tensor is layout-free). Returns how many."""
    from iree.compiler import ir
    from iree.compiler.dialects import linalg, util

    count = 0
    for name, nhwc_name in _NCHW_POOLINGS.items():
        pools = _ops_named(module, name)
        for op in pools:
            with ir.InsertionPoint(op), op.location:
                image, window, init = (op.operands[i] for i in range(3))
                # As for depthwise convs: IREE would fuse the input's transpose into the pooling,
                # a generic loop nest its pooling pipeline does not take.
                nhwc_image = _nhwc_input(image)
                nhwc_image = _as_value(util.optimization_barrier([nhwc_image.type], [nhwc_image]))
                nhwc = _as_value(getattr(linalg, nhwc_name)(
                    nhwc_image, window, outs=[_transposed(init, [0, 2, 3, 1])],
                    strides=_window(op, "strides"), dilations=_window(op, "dilations")))
                nchw = _transposed(nhwc, [0, 3, 1, 2])
            op.results[0].replace_all_uses_with(nchw)
            op.erase()
        count += len(pools)
    return count


def _channels_last(module) -> int:
    from iree.compiler import passmanager

    count = _conv_1d_as_2d(module) + _grouped_as_per_group(module) + _dilated_as_phases(module)
    passmanager.PassManager.parse(_IREE_CHANNELS_LAST).run(module.operation)
    return count + _depthwise_nchw_to_nhwc(module) + _pooling_nchw_to_nhwc(module)


# IREE's im2col for the regular 2-D convolutions, in the layout they were imported in (NCHW
# from PyTorch): what the target's global im2col flag does, but before the depthwise rewrite below,
# which that flag would turn into im2col copies and matrix-vector products.
_IREE_IM2COL = "builtin.module(func.func(iree-global-opt-convert-conv2d-to-img2col))"


def _depthwise_channels_last(module) -> int:
    """Only the depthwise convolutions (and the poolings) channels-last; every other convolution stays in its
    imported layout as IREE's im2col GEMM. One lowering per op kind: PyTorch's NCHW depthwise
    convs vectorise as NHWC, while the NCHW GEMMs beside them keep IREE's code emission and the
    analysis' tiles (channelslast's NHWC GEMMs cost se_net more than its depthwise convs gain)."""
    from iree.compiler import passmanager

    passmanager.PassManager.parse(_IREE_IM2COL).run(module.operation)
    return _depthwise_nchw_to_nhwc(module) + _pooling_nchw_to_nhwc(module)


# The registry of rewrites: name -> function rewriting a parsed module in place (returns how many
# ops it rewrote). A strategy names them in common/targets.py STRATEGY_FLAGS.
REWRITES: dict[str, Callable] = {
    # Convolutions channels-last: 1-D convs as 2-D ones of unit height, grouped convs one per
    # group, dilated ones one per phase, then regular 2-D convs as im2col GEMMs over NHWC (IREE's
    # passes), depthwise 2-D convs as IREE's vectorising NHWC depthwise convolution and NCHW
    # poolings as NHWC ones.
    "channels_last": _channels_last,
    # Depthwise 2-D convs as IREE's vectorising NHWC depthwise convolution and NCHW poolings as
    # NHWC ones, every other 2-D conv as IREE's im2col GEMM in its imported layout.
    "depthwise_channels_last": _depthwise_channels_last,
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
