"""Writes small_golden.npz: fixed-seed inputs (input_0..) and numpy reference outputs (output_0..) of small.mlir."""

from pathlib import Path

import numpy as np


def golden():
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((64, 128), dtype=np.float32), rng.standard_normal((128, 96), dtype=np.float32)
    x, w = rng.standard_normal((1, 8, 18, 18), dtype=np.float32), rng.standard_normal((16, 8, 3, 3), dtype=np.float32)
    dw, e = rng.standard_normal((16, 3, 3), dtype=np.float32), rng.standard_normal((64, 256), dtype=np.float32)
    win = np.lib.stride_tricks.sliding_window_view(x[0], (3, 3), axis=(1, 2))
    conv = np.einsum("chwij,fcij->fhw", win, w)[None]
    cp = np.pad(conv, ((0, 0), (0, 0), (1, 1), (1, 1)))
    dconv = np.einsum("chwij,cij->chw", np.lib.stride_tricks.sliding_window_view(cp[0], (3, 3), axis=(1, 2)), dw)[None]
    pool = dconv.reshape(1, 16, 8, 2, 8, 2).max(axis=(3, 5))
    ins = [a, b, x, w, dw, e]
    outs = [a @ b, conv, pool, np.maximum(e, 0), e.sum(1)]
    return {**{f"input_{i}": v for i, v in enumerate(ins)},
            **{f"output_{i}": v.astype(np.float32) for i, v in enumerate(outs)}}


if __name__ == "__main__":
    np.savez(Path(__file__).parent / "small_golden.npz", **golden())
