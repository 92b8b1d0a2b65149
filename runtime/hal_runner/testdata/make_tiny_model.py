"""Regenerates tiny_model.mlirbc: conv + depthwise conv + relu + matmul.

Run from the workspace root with the dev environment:
    python runtime/hal_runner/testdata/make_tiny_model.py
The output is linalg-on-tensors MLIR bytecode with locations stripped.
"""

import sys
from pathlib import Path

import torch
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


def main() -> int:
    torch.manual_seed(0)
    model = TinyModel().eval()
    example = torch.randn(1, 3, 8, 8)
    module = fx.export_and_import(model, example, output_type="linalg-on-tensors")
    with module.context:
        PassManager.parse("builtin.module(strip-debuginfo)").run(module.operation)
    out = Path(__file__).with_name("tiny_model.mlirbc")
    tmp = out.with_suffix(".tmp")
    with open(tmp, "wb") as f:
        module.operation.write_bytecode(f)
    tmp.replace(out)
    print(f"wrote {out.name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
