"""Exports a zoo model to ONNX from the same PyTorch definition its pipeline imports.

    python -m peers.export_onnx --info models/<pipeline>_pipeline_info.json --out <pipeline>.onnx

The pipeline info (models/defs.bzl `_pipeline_info`: module, framework, split) names the
model's module; its `make_model()` (the factory every torch pipeline of the zoo imports with,
fixed seeds) gives the model and the example inputs, the same the import's golden .npz holds
(frontend/import_model.py). The export is torch's TorchScript exporter (`dynamo=False`: the
dynamo exporter needs onnxscript, which the environment does not have) at opset `OPSET`, in
eval mode without gradients, with static shapes (the example inputs'), inputs named
`input_<i>` and outputs `output_<i>` like the golden's keys, constants folded. The written
model passes onnx's checker. Byte-identical on every run (peers/onnx_test.py checks).

Bad input (not a torch pipeline, a factory that fails, an export error): one line naming the
model, exit 1, nothing written.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import io
import json
import os
import sys
import warnings
from pathlib import Path

from common.errors import NamedError, OneLineErrors
from common.files import write_together
from common.processes import fd2_into

OPSET = 17  # LayerNormalization is a standard op from 17; ORT 1.21 runs opsets up to 22
FACTORY = "make_model"


@contextlib.contextmanager
def _quiet_fd2():
    """torch's exporter prints warnings from C++ on fd 2; the CLI's stderr is for the one error line."""
    with open(os.devnull, "w") as null, fd2_into(null):
        yield


def export(module: str, name: str) -> bytes:
    """The ONNX bytes of `module`'s model, exported on its example inputs."""
    import onnx
    import torch

    torch.manual_seed(0)
    model, inputs = getattr(importlib.import_module(module), FACTORY)()
    if not isinstance(model, torch.nn.Module):
        raise NamedError(f"{name}: {module}.{FACTORY}() gives no torch.nn.Module")
    inputs = tuple(x if isinstance(x, torch.Tensor) else torch.from_numpy(x) for x in inputs)
    model.eval()
    with torch.no_grad():
        outputs = model(*inputs)
    n_out = len(outputs) if isinstance(outputs, (tuple, list)) else 1
    buf = io.BytesIO()
    with torch.no_grad(), warnings.catch_warnings(), _quiet_fd2():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, inputs, buf, dynamo=False, opset_version=OPSET, do_constant_folding=True,
                          input_names=[f"input_{i}" for i in range(len(inputs))],
                          output_names=[f"output_{i}" for i in range(n_out)])
    proto = onnx.load_from_string(buf.getvalue())
    onnx.checker.check_model(proto, full_check=True)
    return buf.getvalue()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m peers.export_onnx", description=__doc__.split("\n")[0])
    p.add_argument("--info", required=True, type=Path, help="the pipeline's <pipeline>_pipeline_info.json")
    p.add_argument("--out", required=True, type=Path, help="the .onnx to write")
    args = p.parse_args(argv)
    with OneLineErrors("export_onnx", args.info, (NamedError,)) as cli:
        try:
            info = json.loads(args.info.read_text())
        except (OSError, json.JSONDecodeError) as err:
            raise NamedError(f"{args.info}: not a pipeline info ({err})") from None
        name = info.get("name", str(args.info))
        if info.get("framework") != "torch":
            raise NamedError(f"{name}: framework {info.get('framework')!r}: only torch models are exported to ONNX here")
        try:
            data = export(info["module"], name)
        except NamedError:
            raise
        except Exception as err:  # noqa: BLE001 - the model's or the exporter's: one line, no traceback
            first = (str(err).strip().splitlines() or [""])[0]
            raise NamedError(f"{name}: {type(err).__name__}: {first}") from None
        write_together({args.out: data})
    return cli.exit_code


if __name__ == "__main__":
    sys.exit(main())
