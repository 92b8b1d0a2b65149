"""Each peer harness computes the GEMM numpy computes, under qemu with the trixie sysroot, and
nothing is skipped: a library missing from the sysroot is a failure with its name.

argv: --harness=NAME=PATH (autovec, openblas, blis, xnnpack, eigen) --conv-harness=NAME=PATH (autovec,
      xnnpack) --peers-repo=<@peers_riscv64 VERSION> --qemu=<//tools/qemu:qemu-riscv64>
The convolution harnesses (harness/conv_main.c) likewise against numpy's sum over the window.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from pathlib import Path

import numpy as np
import pytest

from peers import run as pr
from peers.conv_shapes import CONV_SHAPES, ConvShape
from peers.shapes import SHAPES, GemmShape

_p = argparse.ArgumentParser()
_p.add_argument("--harness", action="append", default=[])
_p.add_argument("--conv-harness", action="append", default=[])
_p.add_argument("--peers-repo", type=Path)
_p.add_argument("--qemu", type=Path)
ARGS, _ = _p.parse_known_args(sys.argv[1:])
HARNESSES = {spec.split("=", 1)[0]: Path(spec.split("=", 1)[1]) for spec in ARGS.harness}
CONV_HARNESSES = {spec.split("=", 1)[0]: Path(spec.split("=", 1)[1]) for spec in ARGS.conv_harness}
SYSROOT = ARGS.peers_repo.parent / "sysroot" if ARGS.peers_repo else Path("missing")
VLEN = 128

# Ragged sizes (no multiple of a vector or a register block), both B layouts, and one larger
# than the libraries' inner blocks along every dimension.
SMALL = [
    GemmShape("test", "calibration", "ragged_nn", 7, 13, 19, False, ""),
    GemmShape("test", "calibration", "ragged_nt", 5, 17, 23, True, ""),
    GemmShape("test", "calibration", "blocked_nn", 67, 45, 300, False, ""),
    GemmShape("test", "calibration", "blocked_nt", 33, 70, 260, True, ""),
]


def test_every_library_is_here():
    assert sorted(HARNESSES) == ["autovec", "blis", "eigen", "openblas", "xnnpack"]
    for name, path in HARNESSES.items():
        pr.check_tools(path, ARGS.qemu, SYSROOT)  # raises: never skipped


@pytest.mark.parametrize("name", ["autovec", "openblas", "blis", "xnnpack", "eigen"])
@pytest.mark.parametrize("shape", SMALL, ids=[s.dispatch for s in SMALL])
def test_harness_matches_numpy(name, shape):
    r = pr.run(HARNESSES[name], shape, qemu=ARGS.qemu, sysroot=SYSROOT, vlen=VLEN)  # PeerError if wrong
    assert r.max_abs_error <= pr.TOLERANCE * r.reference_max
    assert r.info["library"] == name


# Convolutions: ragged, padded, strided, depthwise (one channel per group), grouped, batched.
SMALL_CONVS = [
    ConvShape("test", "calibration", ("regular",), 1, 7, 6, 5, 3, 3, 1, 1, 9, 1, ""),
    ConvShape("test", "calibration", ("depthwise_s2",), 2, 9, 9, 6, 3, 3, 2, 1, 6, 6, ""),
    ConvShape("test", "calibration", ("grouped",), 1, 8, 8, 6, 3, 3, 1, 0, 4, 2, ""),
    ConvShape("test", "calibration", ("wide",), 1, 12, 12, 40, 1, 1, 1, 0, 24, 1, ""),
]


def test_every_convolution_harness_is_here():
    assert sorted(CONV_HARNESSES) == ["autovec", "xnnpack"]
    for path in CONV_HARNESSES.values():
        pr.check_tools(path, ARGS.qemu, SYSROOT)


@pytest.mark.parametrize("name", ["autovec", "xnnpack"])
@pytest.mark.parametrize("shape", SMALL_CONVS, ids=[s.dispatches[0] for s in SMALL_CONVS])
def test_convolution_harness_matches_numpy(name, shape):
    r = pr.run_conv(CONV_HARNESSES[name], shape, qemu=ARGS.qemu, sysroot=SYSROOT, vlen=VLEN)
    assert r.max_abs_error <= pr.TOLERANCE * r.reference_max
    assert r.info["library"] == name


def test_a_wrong_convolution_result_is_an_error(monkeypatch):
    true_reference = pr.conv_reference
    monkeypatch.setattr(pr, "conv_reference", lambda s, x, f: true_reference(s, x, f) * 1.001)
    with pytest.raises(pr.PeerError, match="wrong result"):
        pr.run_conv(CONV_HARNESSES["xnnpack"], SMALL_CONVS[0], qemu=ARGS.qemu, sysroot=SYSROOT, vlen=VLEN)


def test_the_zoo_convolutions_are_those_of_their_dispatch_names():
    """A direct or depthwise dispatch's name carries its output and window (NHWC); an im2col
    GEMM's its M x N x K."""
    for s in CONV_SHAPES:
        name = s.dispatches[-1]
        if "_matmul_" in name:
            assert f"_{s.oc}x{s.oh * s.ow}x{s.kh * s.kw * s.c}_f32" in name, name
        elif s.depthwise:
            assert f"_{s.oh}x{s.ow}x{s.c}x{s.kh}x{s.kw}_f32" in name, name
        else:
            assert f"_{s.oh}x{s.ow}x{s.oc}x{s.kh}x{s.kw}x{s.c}_f32" in name, name


def test_the_zoo_shapes_are_gemms_of_their_dispatch_names():
    for s in SHAPES:
        assert f"_{s.m}x{s.n}x{s.k}_f32" in s.dispatch


def test_the_libraries_say_what_they_chose():
    openblas = pr.run(HARNESSES["openblas"], SMALL[0], qemu=ARGS.qemu, sysroot=SYSROOT, vlen=VLEN).info
    assert openblas["corename"] and "0.3.29" in openblas["config"]
    blis = pr.run(HARNESSES["blis"], SMALL[0], qemu=ARGS.qemu, sysroot=SYSROOT, vlen=VLEN).info
    assert blis["version"] == "1.1" and blis["arch"]
    # XNNPACK: its RVV kernels are enabled by AT_HWCAP's V bit; one operator per B layout.
    for s, operator in ((SMALL[0], "batch_matrix_multiply_nc_f32"), (SMALL[1], "fully_connected_nc_f32")):
        xnnpack = pr.run(HARNESSES["xnnpack"], s, qemu=ARGS.qemu, sysroot=SYSROOT, vlen=VLEN).info
        assert xnnpack["hwcap_v"] == "1" and xnnpack["operator"].split(" ")[0] == operator
    # Eigen 3.4 has no RISC-V packet math: it says so.
    assert pr.run(HARNESSES["eigen"], SMALL[0], qemu=ARGS.qemu, sysroot=SYSROOT, vlen=VLEN).info["simd"] == "None"


def test_a_wrong_result_is_an_error(monkeypatch):
    true_reference = pr.reference
    monkeypatch.setattr(pr, "reference", lambda s, a, b: true_reference(s, a, b) * 1.001)
    with pytest.raises(pr.PeerError, match="wrong result"):
        pr.run(HARNESSES["openblas"], SMALL[0], qemu=ARGS.qemu, sysroot=SYSROOT, vlen=VLEN)


def _sysroot_without(tmp_path: Path, missing: str) -> Path:
    """A copy of the sysroot (symbolic links to its files) lacking one file."""
    root = tmp_path / "sysroot"
    for dirpath, _, files in os.walk(SYSROOT, followlinks=True):
        for f in files:
            rel = (Path(dirpath) / f).relative_to(SYSROOT)
            if str(rel) == missing:
                continue
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).symlink_to((Path(dirpath) / f).resolve())
    assert not (root / missing).exists() and (root / "lib" / "ld-linux-riscv64-lp64d.so.1").exists()
    return root


@pytest.mark.parametrize("name", ["openblas", "blis", "xnnpack", "eigen", "xnnpack-dependency"])
def test_a_missing_library_fails_not_skips(tmp_path, name):
    library = pr.DEPENDENCIES["xnnpack"] if name == "xnnpack-dependency" else pr.LIBRARIES[name]
    name = name.split("-")[0]
    sysroot = _sysroot_without(tmp_path, library)
    with pytest.raises(pr.PeerError, match=re.escape(Path(library).name)):
        pr.run(HARNESSES[name], SMALL[0], qemu=ARGS.qemu, sysroot=sysroot, vlen=VLEN)


def test_a_missing_sysroot_or_harness_fails(tmp_path):
    with pytest.raises(pr.PeerError, match="not a riscv64 sysroot"):
        pr.run(HARNESSES["blis"], SMALL[0], qemu=ARGS.qemu, sysroot=tmp_path, vlen=VLEN)
    with pytest.raises(pr.PeerError, match="harness not found"):
        pr.run(tmp_path / "nothing", SMALL[0], qemu=ARGS.qemu, sysroot=SYSROOT, vlen=VLEN)


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q", "-p", "no:cacheprovider", *[a for a in sys.argv[1:] if not a.startswith("--")]]))
