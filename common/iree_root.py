"""Which op of a dispatch is its root: the one rule analysis and codegen share.

Both stages look at `iree-compile --compile-to=executable-configurations` output, where
IREE's CPU strategy selection has attached a `lowering_config` to the ops it will tile.
The root op is the op codegen configures: the *last* op (pre-order walk of the dispatch's
`func.func`) whose `lowering_config` has tiling levels, recognised by its `distribution`
level (the level tiled across workgroups). Other configured ops (the accumulator's
`linalg.fill`, fused consumers) only carry projections of the root's tiles.

Works on IREE MLIR Python binding operations (`iree.compiler.ir.Operation`) by duck
typing; this module imports nothing from IREE so that any stage can use it.
"""

from __future__ import annotations

ROOT_LEVEL = "distribution"


def walk(op):
    """Pre-order walk over `op` and everything nested in it."""
    yield op
    for region in op.regions:
        for block in region.blocks:
            for child in block.operations:
                yield from walk(child.operation)


def is_root_config(lowering_config) -> bool:
    """True for a lowering_config (attribute or its text) that has the workgroup level."""
    return f"{ROOT_LEVEL} = " in str(lowering_config)


def config_ops(func) -> list:
    """Ops nested in `func` that carry a `lowering_config`, in pre-order walk order."""
    return [o for o in walk(func) if o is not func and "lowering_config" in o.attributes]


def root_index(ops) -> int | None:
    """Index into `config_ops(func)` of the root op; None when no op has tiling levels."""
    roots = [i for i, o in enumerate(ops) if is_root_config(o.attributes["lowering_config"])]
    return roots[-1] if roots else None


def lowering_config_levels(lowering_config) -> dict[str, list[int]]:
    """`#iree_cpu.lowering_config<distribution = [64, 64, 0], ...>` (attribute or its text)
    -> {"distribution": [64, 64, 0], ...}. IREE's Python bindings have no typed accessor for
    iree_cpu attributes; this reads only the `name = [ints]` entries of that one attribute."""
    import re

    return {name: [int(x) for x in values.split(",") if x.strip()]
            for name, values in re.findall(r"(\w+) = \[([-\d, ]*)\]", str(lowering_config))}
