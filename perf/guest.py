"""How a measured riscv64 program is started under qemu-user so that nothing of the host
reaches the guest's data placement, which the cache simulation sees.

What reached it, and how each is shut out (docs/design.md, "A yardstick that reproduces"):
- host files: `qemu -L ROOT` falls back to the host's file for any path ROOT lacks, so the
  guest's dynamic loader mapped the host's `/etc/ld.so.cache` (its size moves every later
  mapping: mlp_batch32 moved by 26 memory-aware cycles under a bind-mounted cache of another
  size) and would read a host `/etc/ld.so.preload`. The guest runs in a root of its own
  (`guest_root`): the sysroot's entries plus an empty `etc/ld.so.cache` and `etc/ld.so.preload`,
  which the loader reads as "no cache" and "nothing to preload" without mapping anything;
- the environment: qemu passes its own to the guest, onto the guest stack; the guest gets
  `GUEST_ENVIRONMENT`, whatever the caller's (a longer PATH moved mlp_batch32 by 0.2%);
- randomness: the guest's AT_RANDOM and getrandom() come from `-seed`, not the host;
- paths: the runner and its inputs are copied or linked under fixed names into a directory of
  fixed path length (`GUEST_RUN_ROOT`/`GUEST_RUN_PREFIX`), because qemu puts the resolved
  executable path (AT_EXECFN) and argv on the guest stack;
- addresses: `-R` gives the guest an address space of its own, independent of qemu's own host
  allocations.
Checked not to matter (mlp_batch32, byte-identical reports): CPU affinity, RLIMIT_STACK,
the host's vm.mmap_min_addr (4096 vs 65536). `perf/guest_test.py` measures under such
conditions and compares the reports byte for byte.
"""

from __future__ import annotations

from pathlib import Path

# A guest address space of its own (qemu -R): without it qemu places guest mappings around its
# own host allocations, so guest addresses moved with the build's location.
GUEST_ADDRESS_SPACE = "64G"

# Where the guest runs: a directory whose absolute path has the same length on every machine.
GUEST_RUN_ROOT = "/tmp"
GUEST_RUN_PREFIX = "riscv-perf-"

# The guest's whole environment (qemu-user hands its own environment to the guest).
GUEST_ENVIRONMENT = {"PATH": "/usr/bin:/bin"}

# The guest's random bytes (AT_RANDOM, getrandom) come from this seed.
GUEST_RANDOM_SEED = "1"

# Files the guest's loader looks for outside its sysroot; empty, they mean "none".
_EMPTY_GUEST_FILES = ("etc/ld.so.cache", "etc/ld.so.preload")


def guest_root(sysroot: Path, directory: Path) -> Path:
    """A directory for `qemu -L` holding the sysroot's entries (as links) and the files the guest
    would otherwise take from the host, empty. Made under `directory`, returned."""
    sysroot = Path(sysroot).absolute()
    root = Path(directory) / "guest_root"
    root.mkdir(parents=True, exist_ok=False)
    for entry in sorted(sysroot.iterdir()):
        if entry.name != "etc":
            (root / entry.name).symlink_to(entry)
    (root / "etc").mkdir()
    if (sysroot / "etc").is_dir():
        for entry in sorted((sysroot / "etc").iterdir()):
            (root / "etc" / entry.name).symlink_to(entry)
    for name in _EMPTY_GUEST_FILES:
        path = root / name
        if not path.exists():
            path.write_bytes(b"")
    return root


def qemu_command(qemu: Path | str, root: Path, vlen: int) -> list[str]:
    """qemu-riscv64 with the guest's CPU, address space, random seed and root; the guest
    program and its arguments follow. Run it with `env=GUEST_ENVIRONMENT`."""
    return [str(Path(qemu).absolute()), "-cpu", f"rv64,v=true,vlen={vlen}", "-R", GUEST_ADDRESS_SPACE,
            "-seed", GUEST_RANDOM_SEED, "-L", str(Path(root).absolute())]


def environment() -> dict[str, str]:
    """The environment a qemu process runs in: the guest's, nothing of the caller's."""
    return dict(GUEST_ENVIRONMENT)


__all__ = ["GUEST_ADDRESS_SPACE", "GUEST_ENVIRONMENT", "GUEST_RANDOM_SEED", "GUEST_RUN_PREFIX",
           "GUEST_RUN_ROOT", "environment", "guest_root", "qemu_command"]
