"""PyTorch -> linalg-on-tensors through torch-mlir's FX importer (torch.export; never TorchScript)."""

import io

from frontend.errors import ImportFailure, first_line


def _flatten(value):
    import torch

    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (tuple, list)):
        return [t for v in value for t in _flatten(v)]
    if isinstance(value, dict):
        return [t for k in sorted(value) for t in _flatten(value[k])]
    raise ImportFailure(f"model output of type {type(value).__name__} is not a tensor")


def import_torch(model, inputs, np_inputs):
    """Returns (bytecode, [numpy outputs]) for a torch.nn.Module and its example inputs."""
    import torch

    if not isinstance(model, torch.nn.Module):
        raise ImportFailure(f"framework torch needs a torch.nn.Module, got {type(model).__name__}")
    # The golden inputs are exactly what the model sees.
    tensors = tuple(torch.from_numpy(x.copy()) for x in np_inputs)
    model = model.eval()
    with torch.no_grad():
        outputs = [t.detach().cpu().numpy().copy() for t in _flatten(model(*tensors))]

    import torch_mlir.fx
    from torch_mlir import passmanager

    try:
        module = torch_mlir.fx.export_and_import(model, *tensors, output_type="linalg-on-tensors")
    except Exception as e:  # noqa: BLE001
        raise ImportFailure(f"cannot be exported with torch.export: {type(e).__name__}: {first_line(e)}") from e
    with module.context:
        # Locations carry absolute source paths: strip them for location-independent output.
        passmanager.PassManager.parse("builtin.module(strip-debuginfo)").run(module.operation)
    buf = io.BytesIO()
    module.operation.write_bytecode(buf)
    return buf.getvalue(), outputs
