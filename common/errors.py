"""One-line error text, shared by every stage's CLI (each ends any error with one line)."""

from __future__ import annotations

import signal
import sys
import threading

from common import processes


def _first(lines, limit: int, continued: bool) -> str:
    lines = [line.strip() for line in lines if line.strip()]
    if not lines:
        return "(no message)"
    line = lines[0]
    if continued and line.endswith(":") and len(lines) > 1:
        # A header ("... failed with the following diagnostics:") is no reason: its next line is.
        line = f"{line} {lines[1]}"
    return line if len(line) <= limit else line[: limit - 3] + "..."


def first_line(text, limit: int = 300) -> str:
    """The first non-empty line of an error message, shortened; a first line that ends in ':'
    (a header) is continued by the next non-empty line."""
    return _first(str(text).splitlines(), limit, continued=True)


def last_line(text, limit: int = 300) -> str:
    """The last non-empty line of a crashed tool's stderr (qemu warns first and says why it
    aborted last), shortened."""
    return _first(reversed(str(text).splitlines()), limit, continued=False)


def validation_error_where(err) -> tuple[str, str]:
    """(where, why) of a pydantic ValidationError's first error: the dotted field path
    ("(top level)" for the whole document) and pydantic's message without its "Value error, "
    prefix (a validator's own text)."""
    first = err.errors()[0]
    where = ".".join(str(p) for p in first["loc"]) or "(top level)"
    return where, first["msg"].removeprefix("Value error, ")


class NamedError(Exception):
    """An error whose message begins with its culprit (a path, a flag) and says why: every CLI
    prints it as it is (common/files.py's OutputError and OutputClash are ones)."""


class Interrupted(KeyboardInterrupt):
    """SIGINT, SIGTERM, SIGHUP or SIGQUIT arrived while a CLI ran in OneLineErrors."""

    def __init__(self, signum: int):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


# SIGHUP too: a closed terminal or a killed session ends a CLI like Ctrl-C does (it left
# iree-compile orphaned and $TMPDIR/codegen.* behind: issue 62). SIGQUIT (Ctrl-\\) as well: it
# dumped core and left the same behind.
INTERRUPTS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)


def _interrupt(signum, frame):
    # Once: the unwinding that follows (temporary directories removed, outputs restored) is not
    # interrupted again by a second signal.
    for s in INTERRUPTS:
        signal.signal(s, signal.SIG_IGN)
    processes.kill_all()  # children in worker threads too: no KeyboardInterrupt reaches those
    raise Interrupted(signum)


class OneLineErrors:
    """A CLI's body in `with OneLineErrors(prog, culprit, expected) as cli:`; afterwards
    `cli.failed` says whether it raised and `cli.exit_code` is the CLI's status. An `expected`
    error (and any NamedError) names its own culprit and prints as `<prog>: <first line>`; any
    other exception is one line too, `<prog>: <culprit>: <Type>: <first line>`, never a
    traceback. SIGINT, SIGTERM and SIGHUP end the body like Ctrl-C does (temporaries removed as
    it unwinds, child processes killed: common/processes.py) and print
    `<prog>: <culprit>: interrupted by <SIGNAL>`, exit code 128 + the signal; a signal the CLI
    was started ignoring (`nohup`: SIGHUP) stays ignored. SystemExit passes through."""

    def __init__(self, prog: str, culprit: object, expected: tuple[type[Exception], ...] = ()):
        self.prog, self.culprit, self.expected = prog, culprit, expected
        self.failed = False
        self.exit_code = 0
        self._handlers: dict[int, object] = {}

    def __enter__(self) -> OneLineErrors:
        processes.reset()  # a CLI called in-process after an interrupted one starts children
        if threading.current_thread() is threading.main_thread():
            for s in INTERRUPTS:
                if s == signal.SIGHUP and signal.getsignal(s) == signal.SIG_IGN:
                    continue  # nohup: the caller asked for the CLI to outlive its terminal
                self._handlers[s] = signal.signal(s, _interrupt)
        return self

    def __exit__(self, kind, err, traceback) -> bool:
        for s, handler in self._handlers.items():
            signal.signal(s, handler)
        self._handlers = {}
        if isinstance(err, KeyboardInterrupt):
            signum = err.signum if isinstance(err, Interrupted) else signal.SIGINT
            print(f"{self.prog}: {self.culprit}: interrupted by {signal.Signals(signum).name}", file=sys.stderr)
            self.failed, self.exit_code = True, 128 + signum
            return True
        if not isinstance(err, Exception):
            return False
        if isinstance(err, self.expected + (NamedError,)):
            lines = [line for line in str(err).splitlines() if line.strip()]
            print(f"{self.prog}: {lines[0] if lines else type(err).__name__}", file=sys.stderr)
        else:
            print(f"{self.prog}: {self.culprit}: {type(err).__name__}: {first_line(err)}", file=sys.stderr)
        self.failed, self.exit_code = True, 1
        return True
