"""The plugin's cache simulation (perf/qemu_plugin/cache_sim.h) validated before anything trusts it:

(a) kernels whose traffic is known by arithmetic (perf/testdata/memory_kernels.c), run inside
    the dispatch window on riscv_rvv.yaml's hierarchy (32 KiB 8-way L1, 512 KiB 8-way L2, 64 B
    lines): a streaming copy, a matmul whose operands fit L1 (compulsory misses only), a sweep
    over twice L1 (LRU misses every line, every pass);
(b) the same programs, whole, through QEMU's own contrib/plugins/cache.c (built from the pinned
    QEMU 10.0.2 source, run under the qemu-riscv64 built from it) with the same geometry and
    LRU: the same L1D accesses and misses; its unified L2 also sees instruction fetches, which
    ours does not simulate, and the difference is exactly its L1I misses.

argv: <libinsn_classes.so> <memory_kernels (riscv64)> <QEMU's libcache.so> <qemu-riscv64>
<the riscv64 sysroot's lib/ld-linux-riscv64-lp64d.so.1 (//tools/riscv:sysroot_loader)>
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from common.hardware import load_hardware
from perf import counts as cnt
from perf import memory_model as mem

ROOT = Path(__file__).absolute().parent.parent
PLUGIN, KERNELS, QEMU_CACHE_PLUGIN, QEMU = (Path(p).resolve() for p in sys.argv[1:5])
HW = load_hardware(ROOT / "analysis" / "hardware" / "riscv_rvv.yaml")
SYSROOT = str(Path(sys.argv[5]).absolute().parents[1])  # the pinned riscv64 glibc (//tools/riscv:sysroot)
LINE = 64


def _ours(tmp_path: Path, args: list[str], caches: list[str], window: bool = True) -> cnt.DispatchCounts:
    out = tmp_path / "counts.txt"
    spec = ",".join([str(PLUGIN), f"out={out}", *caches] + ([] if window else ["window=all"]))
    proc = subprocess.run([str(QEMU), "-cpu", "rv64,v=true,vlen=128", "-L", SYSROOT, "-plugin", spec, str(KERNELS), *args],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return cnt.read_counts(out)


def test_the_hardware_description_sets_the_simulated_caches():
    assert mem.plugin_cache_args(HW) == ["cache=32768:8:64:wb", "cache=524288:8:64:wb"]


def test_streaming_copy(tmp_path):
    n = 16384  # floats: two 64 KiB arrays, twice L1, within L2
    lines = n * 4 // LINE
    c = _ours(tmp_path, ["copy", str(n)], mem.plugin_cache_args(HW))
    l1, l2 = c.caches
    # One plugin access per vector element.
    assert (l1.read_accesses, l1.write_accesses) == (n, n)
    assert (l1.read_misses, l1.write_misses) == (lines, lines)  # write-allocate: dst misses too
    assert l1.fill_bytes == 2 * n * 4
    assert l1.writeback_bytes == n * 4  # every dst line, evicted or flushed at the window's end
    assert (l2.read_accesses, l2.write_accesses) == (2 * lines, lines)
    assert (l2.read_misses, l2.write_misses) == (2 * lines, 0)  # dst lines were filled before
    assert (c.dram_read_bytes, c.dram_write_bytes) == (2 * n * 4, n * 4)


@pytest.mark.parametrize("size,passes,l1_misses", [
    (16384, 4, 16384 // LINE),          # fits L1: compulsory misses only
    (65536, 3, 3 * 65536 // LINE),      # twice L1: LRU misses every line on every pass
])
def test_sweep(tmp_path, size, passes, l1_misses):
    c = _ours(tmp_path, ["sweep", str(size), str(passes)], mem.plugin_cache_args(HW))
    l1, l2 = c.caches
    assert l1.read_accesses == passes * size // 4
    assert (l1.read_misses, l1.write_misses) == (l1_misses, 0)
    assert l2.read_misses == size // LINE  # L2 holds it: compulsory only
    assert (c.dram_read_bytes, c.dram_write_bytes) == (size, 0)


def test_matmul_within_l1_has_compulsory_misses_only(tmp_path):
    n = 32  # three 4 KiB matrices
    c = _ours(tmp_path, ["matmul", str(n)], mem.plugin_cache_args(HW))
    l1 = c.caches[0]
    lines = n * n * 4 // LINE
    assert (l1.read_accesses, l1.write_accesses) == (2 * n ** 3, n * n)
    assert (l1.read_misses, l1.write_misses) == (2 * lines, lines)
    assert (c.dram_read_bytes, c.dram_write_bytes) == (3 * n * n * 4, n * n * 4)


@pytest.mark.parametrize("size", [16384, 262144])
def test_one_store_per_line_dirties_and_writes_back_each_line(tmp_path, size):
    """A partial-line store miss fetches the line, dirties it, and it is written back once
    (evicted or at the window's end), at both levels."""
    lines = size // LINE
    c = _ours(tmp_path, ["touch", str(size)], mem.plugin_cache_args(HW))
    l1, l2 = c.caches
    assert (l1.write_accesses, l1.write_misses, l1.fill_bytes, l1.writeback_bytes) == (
        lines, lines, size, size)
    assert (l2.write_accesses, l2.writeback_bytes) == (lines, size)
    assert (c.dram_read_bytes, c.dram_write_bytes) == (size, size)


def test_write_through_passes_every_store_on(tmp_path):
    n = 4096
    c = _ours(tmp_path, ["copy", str(n)], ["cache=32768:8:64:wt", "cache=524288:8:64:wb"])
    l1, l2 = c.caches
    # No write-allocate: every store misses and goes on to L2; only src lines are filled.
    assert (l1.read_misses, l1.write_misses) == (n * 4 // LINE, n)
    assert l1.fill_bytes == n * 4
    assert l1.writeback_bytes == n * 4 and l2.write_accesses == n  # every element store passed on


def _qemu_cache_c(tmp_path: Path, args: list[str]) -> dict[str, int]:
    log = tmp_path / "cache_c.log"
    spec = (f"{QEMU_CACHE_PLUGIN},dcachesize=32768,dassoc=8,dblksize=64,icachesize=1048576,iassoc=16,"
            f"iblksize=64,evict=lru,l2=on,l2cachesize=524288,l2assoc=8,l2blksize=64")
    proc = subprocess.run([str(QEMU), "-cpu", "rv64,v=true,vlen=128", "-L", SYSROOT, "-d", "plugin", "-D", str(log),
                           "-plugin", spec, str(KERNELS), *args], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    text = log.read_text()
    row = re.search(r"^core #, data accesses.*\n(0\s+.*)$", text, re.M)
    assert row, f"no summary from cache.c in {text[:400]!r}"
    f = row.group(1).split()
    return {"daccess": int(f[1]), "dmiss": int(f[2]), "iaccess": int(f[4]), "imiss": int(f[5]),
            "l2access": int(f[7]), "l2miss": int(f[8])}


@pytest.mark.parametrize("args", [["copy", "16384"], ["matmul", "48"], ["matmul", "64"], ["sweep", "65536", "2"]])
def test_agrees_with_qemus_own_cache_plugin(tmp_path, args):
    ours = _ours(tmp_path, args, mem.plugin_cache_args(HW), window=False)
    theirs = _qemu_cache_c(tmp_path, args)
    l1, l2 = ours.caches
    # cache.c looks an access up at its first byte only; ours splits one that spans two lines
    # (libc's unaligned string and printf code outside the kernels), one more access each, which
    # may hit or miss.
    assert l1.read_accesses + l1.write_accesses == theirs["daccess"] + l1.split_requests
    assert abs(l1.read_misses + l1.write_misses - theirs["dmiss"]) <= l1.split_requests
    # cache.c's L2 is unified and keeps no dirty lines: it sees every L1D and L1I miss, no
    # write-backs. Ours sees L1D fills (a full-line store allocates without one) and write-backs.
    full_line_store_misses = l1.write_misses - (l1.fill_bytes // LINE - l1.read_misses)
    assert l1.fill_bytes // LINE + full_line_store_misses + theirs["imiss"] == theirs["l2access"]
    # The kernels are linked statically (no dynamic loader reading code lines as data): code and
    # data share no line, and everything fits the L2, so every instruction line missed in L1I
    # misses L2 once.
    assert l2.read_misses + l2.write_misses + theirs["imiss"] == theirs["l2miss"]


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q", "-p", "no:cacheprovider"]))
