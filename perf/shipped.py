"""The perf report of what a pipeline ships: of the builds `<name>_riscv` may package, the one its
manifest names, checked to be the same executables.

    python -m perf.shipped --manifest M.manifest.json --index I.json --out-md R.perf.md --out-json R.perf.json

The index is `<name>_riscv_shipped_perf_index` (perf:perf_index: build -> its riscv_perf report).
Refuses, naming the file, a manifest whose build has no report in the index and a report of other
executables than the manifest's (the sha256 each records).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from common.errors import OneLineErrors
from common.files import check_outputs, read_json, write_together
from runtime.manifest import shipped_build


class ShippedPerfError(RuntimeError):
    """The manifest and the reports do not agree; the message names the file."""


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m perf.shipped", description=__doc__.split("\n")[0])
    p.add_argument("--manifest", required=True, type=Path)
    p.add_argument("--index", required=True, type=Path, help="perf_index of the builds the pipeline may ship")
    p.add_argument("--root", type=Path, default=Path("."), help="what the index' paths are relative to")
    p.add_argument("--out-md", required=True, type=Path)
    p.add_argument("--out-json", required=True, type=Path)
    a = p.parse_args(argv)
    with OneLineErrors("perf.shipped", a.manifest, (ShippedPerfError,)) as cli:
        check_outputs({"--out-md": a.out_md, "--out-json": a.out_json}, {"--manifest": a.manifest, "--index": a.index})
        # Each file read names itself when it is no JSON (an empty index was blamed on the manifest).
        manifest = read_json(a.manifest, "manifest")
        build = shipped_build(manifest)
        index = read_json(a.index, "perf index")
        if build not in index:
            raise ShippedPerfError(f"{a.manifest}: ships build '{build}', which {a.index} has no report of "
                                   f"(it has {', '.join(sorted(index)) or 'none'})")
        report_json = a.root / index[build]["perf_json"]
        report = read_json(report_json, "perf report")
        if report.get("executables_sha256") != manifest.get("executables_sha256"):
            raise ShippedPerfError(f"{report_json}: measured other executables than {a.manifest} ships")
        write_together({a.out_md: (a.root / index[build]["perf_md"]).read_text(), a.out_json: report_json.read_text()})
    return cli.exit_code


if __name__ == "__main__":
    sys.exit(main())
