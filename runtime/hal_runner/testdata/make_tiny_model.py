"""Regenerates tiny_model.mlirbc (conv + depthwise conv + relu + matmul) with its golden
tiny_model.golden.npz (input_0 / output_0, as frontend/ writes them), tiny_model_perturbed.mlirbc
(the same weights, the depthwise conv's relu a leaky relu: the same dispatches and bindings, one
of them computing something else, i.e. a deliberately wrong executable for check_dispatches'
negative test) and mish_upsample_model.mlirbc (conv + Mish + nearest upsampling + ELU: its conv's
RVV code aborts Debian bookworm's qemu 7.2, QEMU issue 1441, and runs under qemu 10).

Run from the workspace root with the dev environment:
    python runtime/hal_runner/testdata/make_tiny_model.py [NAME ...]
(default: every file). Each module is linalg-on-tensors MLIR bytecode with locations stripped.
"""

import sys
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from torch_mlir import fx
from torch_mlir.passmanager import PassManager


class TinyModel(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.depthwise = torch.nn.Conv2d(8, 8, 3, padding=1, groups=8)
        self.fc = torch.nn.Linear(8 * 8 * 8, 10)

    def forward(self, x):
        x = torch.relu(self.conv(x))
        x = torch.relu(self.depthwise(x))
        return self.fc(x.flatten(1))


class TinyModelPerturbed(TinyModel):
    """TinyModel with the depthwise conv's relu leaky: built after the same seed, same weights."""

    def forward(self, x):
        x = torch.relu(self.conv(x))
        x = F.leaky_relu(self.depthwise(x), 0.01)
        return self.fc(x.flatten(1))


class MishUpsampleModel(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)

    def forward(self, x):
        y = F.mish(self.conv(x))
        y = F.interpolate(y, scale_factor=2, mode="nearest")
        return F.elu(y)


MODELS = {"tiny_model.mlirbc": TinyModel, "tiny_model_perturbed.mlirbc": TinyModelPerturbed,
          "mish_upsample_model.mlirbc": MishUpsampleModel}
GOLDEN = {"tiny_model.mlirbc": "tiny_model.golden.npz"}


def main() -> int:
    names = sys.argv[1:] or list(MODELS)
    for name in names:
        model_class = MODELS[name]
        torch.manual_seed(0)
        model = model_class().eval()
        example = torch.randn(1, 3, 8, 8)
        if name in GOLDEN:
            with torch.no_grad():
                expected = model(example).numpy()
            golden = Path(__file__).with_name(GOLDEN[name])
            np.savez(golden, input_0=example.numpy(), output_0=expected)
            print(f"wrote {golden.name}")
        module = fx.export_and_import(model, example, output_type="linalg-on-tensors")
        with module.context:
            PassManager.parse("builtin.module(strip-debuginfo)").run(module.operation)
        out = Path(__file__).with_name(name)
        tmp = out.with_suffix(".tmp")
        with open(tmp, "wb") as f:
            module.operation.write_bytecode(f)
        tmp.replace(out)
        print(f"wrote {out.name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
