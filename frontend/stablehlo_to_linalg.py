"""StableHLO text -> linalg-on-tensors MLIR bytecode with IREE's input conversion.

    python -m frontend.stablehlo_to_linalg IN.mlir OUT.mlirbc

Run as its own process (by frontend.tf_importer): IREE's MLIR libraries must not
be loaded next to TensorFlow's. `iree-compile --compile-to=input` legalises
StableHLO to linalg and wraps functions in IREE's `util.func`; those are turned
back into plain `func.func`/`return` (the same entry form torch-mlir emits), then
locations are stripped and the module is written as bytecode.
"""

import re
import sys


def _fail(message):
    print(f"stablehlo_to_linalg: {message}", file=sys.stderr)
    return 1


class ConversionError(RuntimeError):
    """The input cannot be converted; the message names it."""


def convert(src, dst):
    from common.iree_tools import IreeCompileError, iree_compile

    try:
        text = iree_compile(["--iree-input-type=stablehlo", "--compile-to=input", src],
                            "StableHLO input conversion").stdout.decode("utf-8", errors="replace")
    except IreeCompileError as err:
        raise ConversionError(f"{src}: {err}") from None
    text = re.sub(r"\butil\.func (?:public )?@", "func.func @", text)
    text = re.sub(r"\butil\.func private @", "func.func private @", text)
    text = re.sub(r"\butil\.return\b", "return", text)
    text = re.sub(r"\butil\.call\b", "call", text)
    left = sorted(set(re.findall(r"\b(util\.[a-z_.]+)", text)))
    if left:
        raise ConversionError(f"{src}: IREE input conversion left ops that are not plain MLIR: {', '.join(left)}")

    import io

    from iree.compiler import ir, passmanager

    from common.files import atomic_write

    with ir.Context():
        module = ir.Module.parse(text)
        passmanager.PassManager.parse("builtin.module(strip-debuginfo)").run(module.operation)
        buf = io.BytesIO()
        module.operation.write_bytecode(buf)
    atomic_write(dst, buf.getvalue())  # an OutputError naming dst when it cannot be written


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 2:
        return _fail("usage: python -m frontend.stablehlo_to_linalg IN.mlir OUT.mlirbc")
    src, dst = argv
    from common.errors import OneLineErrors
    from common.files import check_outputs

    with OneLineErrors("stablehlo_to_linalg", src, (ConversionError,)) as cli:
        check_outputs({"OUT": dst}, {"IN": src})
        convert(src, dst)
    return cli.exit_code


if __name__ == "__main__":
    sys.exit(main())
