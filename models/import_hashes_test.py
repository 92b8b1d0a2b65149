"""Every zoo import is the committed bytes (models/import_hashes.json), on any machine.

A tuning record is keyed by the sha256 of the module it was measured on, so an import that
depends on the machine that made it re-measures (and may ship other code) there: Keras models
with BatchNorm did, until their statistics were computed in float64 (models/batchnorm.py).
This test names the import that moved. Goldens are not hashed: they are the framework's
float32 outputs on this machine, compared with a tolerance by the pipeline tests.

    tools/bazel test //models:import_hashes_test
    tools/bazel run //models:import_hashes_test -- --write   # after a deliberate model change
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from pathlib import Path

HASHES = "models/import_hashes.json"


def built_imports(paths: list[str]) -> dict[str, str]:
    """{module file name: sha256} of the .mlirbc files among `paths`."""
    return {Path(p).name: hashlib.sha256(Path(p).read_bytes()).hexdigest()
            for p in paths if p.endswith(".mlirbc")}


def differences(committed: dict[str, str], built: dict[str, str]) -> list[str]:
    out = []
    for name in sorted(set(committed) | set(built)):
        if name not in built:
            out.append(f"{name}: committed but no zoo pipeline imports it")
        elif name not in committed:
            out.append(f"{name}: imported ({built[name][:12]}) but not committed")
        elif committed[name] != built[name]:
            out.append(f"{name}: imports to {built[name][:12]} here, committed {committed[name][:12]}")
    return out


def main(argv: list[str]) -> int:
    write = "--write" in argv
    paths = [a for a in argv if a != "--write"]
    built = built_imports(paths)
    if not built:
        print("import_hashes_test: no .mlirbc among the arguments (is //models:zoo_imports its data?)")
        return 1
    text = json.dumps(built, indent=1, sort_keys=True) + "\n"
    if write:
        workspace = os.environ.get("BUILD_WORKSPACE_DIRECTORY")
        if not workspace:
            print("import_hashes_test --write: run it with `tools/bazel run`, which names the workspace")
            return 2
        Path(workspace, HASHES).write_text(text)
        print(f"wrote {HASHES}: {len(built)} imports")
        return 0
    runfiles = Path(__file__).resolve().parent / "import_hashes.json"
    committed = json.loads(runfiles.read_text())
    diffs = differences(committed, built)
    for line in diffs:
        print(line)
    if diffs:
        print(f"{len(diffs)} of {len(built)} imports differ from {HASHES}: a model that imports to other "
              "bytes on this machine depends on its arithmetic (fix the model); after a deliberate change, "
              "`tools/bazel run //models:import_hashes_test -- --write` and refresh its records")
        return 1
    print(f"{len(built)} imports match {HASHES}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
