"""hal_runner: a real dispatch on a stand-in library, and every bad input.

argv: <the riscv64 sysroot's lib/ld-linux-riscv64-lp64d.so.1 (//tools/riscv:sysroot_loader)>
"""

import struct
import subprocess
import sys
from pathlib import Path

import pytest

from runtime.hal_runner.dispatch import find_qemu

HERE = Path(__file__).parent
RUNNER = HERE / "hal_runner"
RISCV_RUNNER = HERE / "hal_runner_riscv64"
DATA = HERE / "testdata"
# qemu 10 from bookworm-backports, found as the dispatch checker finds it.
QEMU_BINARY = find_qemu()
# The pinned riscv64 glibc (@riscv64_gcc, a runfile): the directory whose lib/ holds the loader.
SYSROOT = Path(sys.argv[1]).absolute().parents[1]
QEMU = [str(QEMU_BINARY), "-cpu", "rv64,v=true,vlen=128", "-L", str(SYSROOT)]


def run(*args, runner=None):
    cmd = (runner or [str(RUNNER)]) + [str(a) for a in args]
    return subprocess.run(cmd, capture_output=True, text=True)


def test_info_lists_exports():
    out = run(DATA / "fake_library_v6.so", "--info")
    assert out.returncode == 0, out.stderr
    assert "version 6 exports 1" in out.stdout
    assert "export 0 name=add_one constants=1 bindings=2" in out.stdout


def test_runs_whole_grid_with_constants(tmp_path):
    data = tmp_path / "in.bin"
    data.write_bytes(struct.pack("<8I", *range(8)))
    out0, out1 = tmp_path / "o0.bin", tmp_path / "o1.bin"
    res = run(DATA / "fake_library_v6.so", "--export", 0, "--workgroup-count", "2,1,1",
              "--constants", "0x1234", "--binding", data, "--binding", "zeros:4",
              "--output", f"0={out0}", "--output", f"1={out1}")
    assert res.returncode == 0, res.stderr
    assert struct.unpack("<8I", out0.read_bytes()) == tuple(range(1, 9))
    assert struct.unpack("<I", out1.read_bytes()) == (0x1234,)
    assert not list(tmp_path.glob("*.tmp"))


@pytest.mark.parametrize(
    "args, code, message",
    [
        ([DATA / "not_a_library.txt", "--info"], 3, "not a loadable shared library"),
        ([DATA / "missing.so", "--info"], 3, "not a loadable shared library"),
        ([DATA / "plain_library.so", "--info"], 3, "no iree_hal_executable_library_query symbol"),
        ([DATA / "fake_library_v5.so", "--info"], 4, "ABI version 5, this runner supports only 6"),
        ([DATA / "fake_library_v6.so", "--export", 1, "--workgroup-count", "1,1,1"], 5,
         "export index 1 out of range (library has 1 exports)"),
        ([DATA / "fake_library_v6.so", "--export", 0, "--workgroup-count", "1,1,1",
          "--binding", "zeros:4", "--binding", "zeros:4"], 6, "takes 1 push constants, 0 given"),
        ([DATA / "fake_library_v6.so", "--export", 0, "--workgroup-count", "1,1"], 2, "needs X,Y,Z"),
        ([DATA / "fake_library_v6.so", "--export", 0, "--workgroup-count", "1,1,1",
          "--constants", "1", "--binding", DATA / "nope.bin", "--binding", "zeros:4"], 6,
         "cannot open binding file"),
    ],
)
def test_bad_input(args, code, message):
    out = run(*args)
    assert out.returncode == code, (out.returncode, out.stderr)
    assert message in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1


def test_riscv_runner_rejects_host_library_and_text():
    # A missing qemu fails this test with its reason; it never skips into a green run.
    assert QEMU_BINARY.is_file(), f"{QEMU_BINARY} not found: a runfile of @qemu_user_backport"
    for path in (DATA / "not_a_library.txt", DATA / "fake_library_v6.so"):
        out = run(path, "--info", runner=QEMU + [str(RISCV_RUNNER)])
        assert out.returncode == 3, out.stderr
        assert "not a loadable shared library" in out.stderr


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q", "-p", "no:cacheprovider"]))
