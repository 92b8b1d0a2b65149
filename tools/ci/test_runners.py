"""Every Python test file runs its tests under Bazel: a py_test runs its file as a script, so a file
without a `__main__` block (pytest.main, or a script's own main) defines its test functions, runs
none and passes. Two did
(//results:prediction_test and //bench:sweep_test, found 2026-12-07: a broken prediction passed).

    python3 tools/ci/test_runners.py      # from the workspace root; exit 1 naming each such file
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def missing_runner(root: Path) -> list[str]:
    """The tracked `*_test.py` files with no `if __name__ == "__main__":` block that exits with
    what it ran (`sys.exit(pytest.main(...))` or a script's `sys.exit(main(...))`)."""
    files = subprocess.run(["git", "ls-files", "*_test.py"], cwd=root, capture_output=True, text=True,
                           check=True).stdout.split()
    out = []
    for name in files:
        if not (root / name).is_file():  # deleted in the working tree
            continue
        text = (root / name).read_text()
        main = text.split('if __name__ == "__main__":', 1)
        if len(main) < 2 or "sys.exit(" not in main[1]:
            out.append(name)
    return out


def main() -> int:
    root = Path(__file__).resolve().parents[2]
    bad = missing_runner(root)
    for name in bad:
        print(f"{name}: no `if __name__ == \"__main__\": sys.exit(pytest.main([...]))`: under Bazel it "
              "runs no test and passes", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
