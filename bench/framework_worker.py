"""Runs a model's framework (torch eager) in its own process, e.g. with ATEN_CPU_CAPABILITY=avx2,
for the bench to time it interleaved with the in-process variants.

    python -m bench.framework_worker models.resnet18

Protocol (stdin/stdout, one line each): it first prints a description; then for every line
`run` it calls the model once and prints the call's seconds (timed here, so the pipe is not in
the figure); `quit` ends it.
"""

from __future__ import annotations

import importlib
import sys
import time


def main() -> int:
    import torch

    mod = importlib.import_module(sys.argv[1])
    model, inputs = mod.make_model()
    model.eval()
    cap = torch.backends.cpu.get_cpu_capability()
    print(f"torch {torch.__version__} eager, {torch.get_num_threads()} threads, CPU capability {cap}",
          flush=True)
    for line in sys.stdin:
        if line.strip() != "run":
            break
        t0 = time.perf_counter()
        with torch.inference_mode():
            model(*inputs)
        print(f"{time.perf_counter() - t0:.9f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
