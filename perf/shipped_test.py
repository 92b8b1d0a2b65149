"""perf/shipped.py: the report of the build the manifest names, and refusals."""

from __future__ import annotations

import json
import sys

import pytest

from perf import shipped


def _setup(tmp_path, chosen, report_sha="aa"):
    (tmp_path / "m").mkdir()
    for build, sha in (("tuned", "bb"), ("dwchannelslast", report_sha)):
        (tmp_path / "m" / f"{build}.perf.json").write_text(json.dumps({"executables_sha256": {"x.so": sha}}))
        (tmp_path / "m" / f"{build}.perf.md").write_text(f"# {build}\n")
    index = {b: {"label": f"//m:{b}", "perf_json": f"m/{b}.perf.json", "perf_md": f"m/{b}.perf.md"}
             for b in ("tuned", "dwchannelslast")}
    (tmp_path / "index.json").write_text(json.dumps(index))
    manifest = {"executables_sha256": {"x.so": "aa"}, "target": {"strategy": "codegen"}, "tuned": True}
    if chosen:
        manifest["strategy_choice"] = {"chosen": chosen}
    (tmp_path / "manifest.json").write_text(json.dumps(manifest))
    return ["--manifest", str(tmp_path / "manifest.json"), "--index", str(tmp_path / "index.json"),
            "--root", str(tmp_path), "--out-md", str(tmp_path / "out.md"), "--out-json", str(tmp_path / "out.json")]


def test_the_report_of_the_chosen_build(tmp_path):
    assert shipped.main(_setup(tmp_path, "dwchannelslast")) == 0
    assert (tmp_path / "out.md").read_text() == "# dwchannelslast\n"


@pytest.mark.parametrize("chosen, sha, message", [
    ("ukernels", "aa", "ships build 'ukernels', which"),
    ("dwchannelslast", "cc", "measured other executables"),
    (None, "aa", "measured other executables"),  # a fixed tuned build: the tuned report's sha is bb
])
def test_refusals_name_the_file_and_write_nothing(tmp_path, capsys, chosen, sha, message):
    assert shipped.main(_setup(tmp_path, chosen, sha)) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0], err
    assert not (tmp_path / "out.md").exists() and not (tmp_path / "out.json").exists()


def test_an_index_that_is_no_json_is_named_not_the_manifest(tmp_path, capsys):
    """Issue 62, own probe: an empty index was "manifest.json: JSONDecodeError: Expecting value"."""
    argv = _setup(tmp_path, "dwchannelslast")
    (tmp_path / "index.json").write_text("")
    assert shipped.main(argv) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "index.json: not a perf index: not JSON" in err[0] and "manifest" not in err[0], err
    assert not (tmp_path / "out.md").exists() and not (tmp_path / "out.json").exists()


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q", "-p", "no:cacheprovider"]))
