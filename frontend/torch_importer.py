"""PyTorch -> linalg-on-tensors through torch-mlir's FX importer (torch.export; never TorchScript)."""

import contextlib
import io
import os
import sys
import tempfile

from frontend.errors import ImportFailure, first_line


@contextlib.contextmanager
def _diagnostics():
    """Captures file descriptor 2, where MLIR's C++ diagnostics go (torch-mlir's exception says
    only "failed with the following diagnostics:"), and the files torch-mlir leaves in the temp
    directory (its reproducer); yields a function returning what was written to fd 2, which is
    passed on to the previous fd 2 afterwards (--verbose shows it)."""
    sys.stderr.flush()
    saved = os.dup(2)
    previous_tempdir = tempfile.tempdir
    with tempfile.TemporaryDirectory(prefix="torch_mlir_") as tmp, tempfile.TemporaryFile() as sink:
        os.dup2(sink.fileno(), 2)
        tempfile.tempdir = tmp

        def captured() -> str:
            sys.stderr.flush()
            sink.seek(0)
            return sink.read().decode("utf-8", errors="replace")

        try:
            yield captured
        finally:
            tempfile.tempdir = previous_tempdir
            text = captured()
            os.dup2(saved, 2)
            os.close(saved)
            os.write(2, text.encode())


def _flatten(value):
    """[(name, tensor)] of a model's output in the order torch.export returns it: torch's own
    pytree flattening (dicts in insertion order, tuples, lists, namedtuples, nested), each named by
    its place in the structure (`['zeta']`, `[1]['b']`, `.x`; a bare tensor: ""). Sorting dict
    keys here put the golden out of the module's order (issue 62)."""
    import torch
    from torch.utils import _pytree as pytree

    out = []
    for path, leaf in pytree.tree_flatten_with_path(value)[0]:
        if not isinstance(leaf, torch.Tensor):
            where = f" at {pytree.keystr(path)}" if path else ""
            raise ImportFailure(f"model output{where} of type {type(leaf).__name__} is not a tensor")
        out.append((pytree.keystr(path), leaf))
    return out


def forward(model, tensors: tuple) -> list:
    """[(name, numpy output)] of one inference of `model` on `tensors`: eval mode, no_grad."""
    import torch

    model.eval()  # not `model = model.eval()`: a PT2E-converted GraphModule's eval() returns None
    with torch.no_grad():
        return [(name, t.detach().cpu().numpy().copy()) for name, t in _flatten(model(*tensors))]


def import_torch(model, inputs, np_inputs):
    """Returns (bytecode, [(name, numpy output)]) for a torch.nn.Module and its example inputs,
    the outputs in the order the module returns them."""
    import torch

    if not isinstance(model, torch.nn.Module):
        keras = sys.modules.get("keras")
        hint = ": declare framework tensorflow" if keras is not None and isinstance(model, keras.Model) else ""
        raise ImportFailure(f"framework torch needs a torch.nn.Module, got {type(model).__name__}{hint}")
    # The golden inputs are exactly what the model sees.
    tensors = tuple(torch.from_numpy(x.copy()) for x in np_inputs)
    outputs = forward(model, tensors)

    import torch_mlir.fx
    from torch_mlir import passmanager

    # torch.export first, then torch-mlir on its program: a failure names the stage that failed
    # (a PT2E reference model exports, and torch-mlir's FX importer has no `out_dtype`).
    try:
        program = torch.export.export(model, tensors, strict=False)
    except Exception as e:  # noqa: BLE001
        raise ImportFailure(f"cannot be exported with torch.export: {type(e).__name__}: {first_line(e)}") from e
    with _diagnostics() as captured:
        try:
            module = torch_mlir.fx.export_and_import(program, output_type="linalg-on-tensors")
        except Exception as e:  # noqa: BLE001
            from common.iree_tools import summarize

            diagnostics = captured()
            if "error:" in diagnostics:  # torch-mlir's lowering: MLIR said why
                raise ImportFailure(f"cannot be lowered to linalg by torch-mlir: {summarize(diagnostics)}") from e
            raise ImportFailure(f"cannot be imported by torch-mlir's FX importer: {type(e).__name__}: "
                                f"{first_line(e)}") from e
    with module.context:
        # Locations carry absolute source paths: strip them for location-independent output.
        passmanager.PassManager.parse("builtin.module(strip-debuginfo)").run(module.operation)
    buf = io.BytesIO()
    module.operation.write_bytecode(buf)
    return buf.getvalue(), outputs
