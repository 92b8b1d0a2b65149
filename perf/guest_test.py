"""perf/guest.py: nothing of the host reaches the guest's data placement. One module is measured
twice, once plainly and once under a deliberately different host (another /etc/ld.so.cache in a
mount namespace of its own, another environment with a long PATH and QEMU_* / GLIBC_TUNABLES
variables, another CPU affinity, a larger stack limit, another working directory and TMPDIR
depth), and the two perf reports must be byte-identical. Before perf.guest the host's
ld.so.cache and PATH both moved mlp_batch32's memory-aware cycles.

argv: <mlp_batch32's import: .mlirbc and .golden.npz> <libinsn_classes.so> <hal_runner_riscv64> <qemu-riscv64 (//tools/qemu)>
<llvm-mca (@llvm19: its directory is --llvm-bin)>
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from analysis.accelerator_target import main as derive_target
from perf import guest

ROOT = Path(__file__).absolute().parent.parent  # the runfiles tree
MODULE = next(Path(p).resolve() for p in sys.argv[1:3] if p.endswith(".mlirbc"))
PLUGIN, RUNNER, QEMU = (Path(p).resolve() for p in sys.argv[3:6])
LLVM_BIN = Path(sys.argv[6]).absolute().parent
HW = ROOT / "analysis" / "hardware" / "riscv_rvv.yaml"


def _measure_command(target: Path, out: Path) -> list[str]:
    build = target.parent / "build"  # compiled once (test_the_guest_sees_none_of_the_host)
    return [sys.executable, "-m", "perf.measure", "--vmfb", str(build / "build.vmfb"),
            "--layout", str(build / "build.layout.json"), "--compiled-report", str(build / "build.report.json"),
            "--module", str(MODULE), "--target", str(target),
            "--hardware", str(HW), "--runner", str(RUNNER), "--plugin", str(PLUGIN), "--qemu", str(QEMU),
            "--llvm-bin", str(LLVM_BIN), "--model-name", "mlp_batch32",
            "--out-json", str(out / "perf.json"), "--out-md", str(out / "perf.md")]


def _base_env() -> dict[str, str]:
    return {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), "HOME": os.environ.get("HOME", "/root"),
            **{k: v for k, v in os.environ.items() if k.startswith(("RUNFILES", "TEST_SRCDIR"))}}


def test_the_guest_sees_none_of_the_host(tmp_path):
    target = tmp_path / "target.yaml"
    assert derive_target(["--base", str(ROOT / "common" / "targets" / "riscv64_rvv.yaml"),
                          "--hardware", str(HW), "--out", str(target)]) == 0
    from codegen.compile import CompileOptions, compile_module

    compile_module(MODULE, CompileOptions(target, layout=True), tmp_path / "build")
    for tool in ("unshare", "mount", "taskset"):
        assert shutil.which(tool, path="/usr/bin:/bin:/usr/sbin:/sbin"), f"{tool} not found (util-linux)"

    plain = tmp_path / "plain"
    plain.mkdir()
    proc = subprocess.run(_measure_command(target, plain), capture_output=True, text=True, cwd=ROOT,
                          env={**_base_env(), "TMPDIR": str(tmp_path)})
    assert proc.returncode == 0, proc.stderr

    # The other host: every condition at once.
    other = tmp_path / "other"
    other.mkdir()
    deep = tmp_path.joinpath(*["a-much-deeper-working-directory"] * 5)
    deep.mkdir(parents=True)
    ld_cache = tmp_path / "another_ld.so.cache"
    ld_cache.write_bytes(os.urandom(100_003))  # another size: would move every later guest mapping
    long_path = ":".join([f"/opt/{'x' * 40}/bin"] * 6 + ["/usr/bin", "/bin"])
    env = {**_base_env(), "PATH": long_path, "TMPDIR": str(deep), "QEMU_RAND_SEED": "7",
           "QEMU_STACK_SIZE": "67108864", "GLIBC_TUNABLES": "glibc.malloc.mmap_threshold=4096",
           "LANG": "C.UTF-8", "SOME_LONG_VARIABLE": "y" * 500}
    inner = " ".join(f"'{a}'" for a in _measure_command(target, other))
    script = (f"mount --bind '{ld_cache}' /etc/ld.so.cache && ulimit -s 65536 && "
              f"exec taskset -c 0 {inner}")
    proc = subprocess.run(["unshare", "--mount", "--propagation", "private", "/bin/bash", "-c", script],
                          capture_output=True, text=True, cwd=deep, env=env)
    assert proc.returncode == 0, proc.stderr
    assert (other / "perf.json").read_bytes() == (plain / "perf.json").read_bytes()
    assert (other / "perf.md").read_bytes() == (plain / "perf.md").read_bytes()


def test_guest_root_shadows_the_host_files_the_loader_reads(tmp_path):
    sysroot = tmp_path / "sysroot"
    (sysroot / "lib").mkdir(parents=True)
    (sysroot / "lib" / "libc.so.6").write_bytes(b"libc")
    root = guest.guest_root(sysroot, tmp_path / "run")
    assert (root / "lib" / "libc.so.6").read_bytes() == b"libc"
    for name in ("etc/ld.so.cache", "etc/ld.so.preload"):
        assert (root / name).is_file() and (root / name).stat().st_size == 0
    cmd = guest.qemu_command(QEMU, root, 128)
    assert cmd[cmd.index("-L") + 1] == str(root.absolute()) and "-seed" in cmd and "-R" in cmd
    assert guest.environment() == {"PATH": "/usr/bin:/bin"}


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v", "-p", "no:cacheprovider"]))
