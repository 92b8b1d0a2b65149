"""The one place the pipeline runs `iree-compile` (the binary `iree.compiler.tools` finds).

Every stage (frontend's StableHLO conversion, analysis, codegen) calls `iree_compile`, which
keeps IREE's full diagnostics on failure (decoded without ever failing on binary output), gives
a one-line summary that is the diagnostic itself rather than its header, and returns the
warnings of a successful run so callers can refuse the ones that mean a wrong target (LLVM's
"not a recognized feature", which iree-compile only warns about).
"""

from __future__ import annotations

import errno
import functools
import os
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from common import processes
from common.files import sha256_file

_DIAGNOSTIC = re.compile(r"(?:^|:\s)(error|warning):\s*(.*)$")
UNKNOWN_FEATURE = re.compile(r"'([^']+)' is not a recognized feature for this target")
UNKNOWN_CPU = re.compile(r"'([^']+)' is not a recognized processor for this target")
# What iree-compile and LLVM say of flags they cannot use (a target file's triple, cpu or
# global_flags), before any diagnostic about the module.
_FLAG_PROBLEM = re.compile(r"Unknown command line argument|Cannot find option named|Unknown CPU|"
                           r"is not a recognized processor|createTargetMachine|CPU-features|"
                           r"for the -?-?[\w-]+ option")


class CompileError(RuntimeError):
    """The project's one compile failure: a one-line, user-facing message; `diagnostics` keeps
    iree-compile's full output when it was iree-compile that refused (None for a failure found
    before or after it: a bad analysis, a config that did not land)."""

    def __init__(self, message: str, diagnostics: str | None = None):
        super().__init__(message)
        self.diagnostics = diagnostics


class IreeCompileError(CompileError):
    """iree-compile itself failed; `summary` is one line, `diagnostics` all of its stderr.
    `of_flags`: it refused its flags (a target's), not the module: no diagnostic has a location."""

    def __init__(self, what: str, summary: str, diagnostics: str):
        super().__init__(f"iree-compile failed ({what}): {summary}", diagnostics)
        self.summary = summary
        self.of_flags = not any(_DIAGNOSTIC.search(l) for l in diagnostics.splitlines()) and \
            bool(_FLAG_PROBLEM.search(diagnostics))


@dataclass(frozen=True)
class IreeResult:
    stdout: bytes
    warnings: str  # iree-compile's stderr of a successful run

    def unknown_cpu_features(self) -> list[str]:
        """CPU features LLVM said it does not know (and silently ignored)."""
        return sorted(set(UNKNOWN_FEATURE.findall(self.warnings)))

    def unknown_cpus(self) -> list[str]:
        """CPUs LLVM said it does not know (and silently ignored)."""
        return sorted(set(UNKNOWN_CPU.findall(self.warnings)))


def summarize(diagnostics: str) -> str:
    """The first error's message (falling back to the first non-empty line); an error whose
    message ends in ':' continues on the next line, which is kept."""
    lines = [l.rstrip() for l in diagnostics.splitlines()]
    for i, line in enumerate(lines):
        m = _DIAGNOSTIC.search(line)
        if m and m.group(1) == "error":
            text = m.group(2).strip()
            rest = [l.strip() for l in lines[i + 1:] if l.strip()]
            if (not text or text.endswith(":")) and rest:
                text = f"{text} {rest[0]}".strip()
            return text or line.strip()
    return next((l.strip() for l in lines if l.strip()), "(no diagnostics)")


def iree_compile(args: list[str], what: str, cwd: Path | None = None) -> IreeResult:
    """Runs `iree-compile *args` in `cwd` (relative names stay relative: IREE records source
    names in a module's debug info). Raises IreeCompileError.

    The tool is the one `iree.compiler.tools` finds (the installed iree-base-compiler). It is run
    here rather than through `iree.compiler.tools.binaries.invoke_immediate`, which has no working
    directory and writes the warnings of a successful run to the process-wide sys.stderr, where
    they cannot be checked and where threads (bench builds dispatches in parallel) would mix them.
    """
    from iree.compiler.tools.binaries import find_tool

    # processes.run: an interrupted CLI kills it, from whichever thread started it.
    proc = processes.run([find_tool("iree-compile"), *map(str, args)], capture_output=True, cwd=cwd)
    stderr = proc.stderr.decode("utf-8", errors="replace")  # IREE may echo binary input
    if proc.returncode != 0:
        summary = summarize(stderr)
        full = full_temp_directory()
        if full:  # lld said "target emulation unknown": its object files were never written
            summary = f"{full}: iree-compile could not write its temporary files (it said: {summary})"
        raise IreeCompileError(what, summary, stderr)
    return IreeResult(proc.stdout, stderr)


def full_temp_directory(probe_bytes: int = 1 << 20) -> str | None:
    """When the temporary directory iree-compile (LLVM) writes to cannot take `probe_bytes`:
    `$TMPDIR <dir> is full (<reason>)`, else None. Asked after a failure only: a full TMPDIR
    made iree-compile's linker say "target emulation unknown" (issue 62)."""
    var, directory = next(((v, os.environ[v]) for v in ("TMPDIR", "TMP", "TEMP", "TEMPDIR") if os.environ.get(v)),
                          ("TMPDIR", "/tmp"))  # LLVM's order (llvm::sys::path::system_temp_directory)
    try:
        fd, path = tempfile.mkstemp(prefix="iree_tools_space_", dir=directory)
    except OSError as err:
        return f"${var} {directory} is full ({err.strerror})" if err.errno in (errno.ENOSPC, errno.EDQUOT) else None
    try:
        left = memoryview(bytes(probe_bytes))
        while left:
            left = left[os.write(fd, left):]
        os.fsync(fd)
    except OSError as err:
        if err.errno in (errno.ENOSPC, errno.EDQUOT):
            return f"${var} {directory} is full ({err.strerror})"
    finally:
        os.close(fd)
        os.unlink(path)
    return None


# How many configurations executable_configurations keeps (ResNet-18's are 94 MB; a measured
# choice uses three flag sets; bench.calibrate goes through every zoo model in one process).
KEPT_CONFIGURATIONS = 4


def executable_configurations(module: Path, flags: Sequence[str], out: Path, what: str) -> IreeResult:
    """`iree-compile module --compile-to=executable-configurations *flags -o out`, run once per
    process for the same module (path and bytes) and flags; later calls write the same bytes
    to `out`.

    The measured choice (choice/tune.py) compiles one module a dozen times, each time with other
    tiles written into the same configurations (IREE's output here depends on the module and the
    flags only). Raises IreeCompileError like `iree_compile`; a failure is not remembered.
    """
    if not Path(module).is_file():  # iree-compile's own error names the missing module
        return iree_compile([str(module), "--compile-to=executable-configurations", *map(str, flags),
                             "-o", str(out)], what)
    try:
        # The path is in the key because IREE records it in the output's locations.
        text, result = _configurations(str(module), sha256_file(module), tuple(map(str, flags)))
    except IreeCompileError as err:
        raise IreeCompileError(what, err.summary, err.diagnostics) from None
    Path(out).write_bytes(text)
    return result


@functools.lru_cache(maxsize=KEPT_CONFIGURATIONS)
def _configurations(module: str, module_sha256: str, flags: tuple[str, ...]) -> tuple[bytes, IreeResult]:
    with tempfile.TemporaryDirectory(prefix="configurations_") as tmp:
        out = Path(tmp) / "configurations.mlir"
        result = iree_compile([module, "--compile-to=executable-configurations", *flags, "-o", str(out)],
                              "executable configurations")
        return out.read_bytes(), result
