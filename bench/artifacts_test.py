"""bench.artifacts finds riscv_perf's measurements through a perf_index (written from PerfInfo),
and a bad index is one line naming the file."""

import json
import sys

import pytest

from bench.artifacts import ArtifactError, perf_index


def test_builds_map_to_their_perf_json_under_the_output_root(tmp_path):
    index = tmp_path / "models" / "m_riscv_perf_index.json"
    index.parent.mkdir()
    index.write_text(json.dumps({
        "tuned": {"label": "//models:m_riscv_perf", "perf_json": "models/m_riscv_perf.perf.json",
                  "perf_md": "models/m_riscv_perf.perf.md"},
        "codegen": {"label": "//models:m_riscv_iree_default_perf", "perf_json": "models/other.perf.json",
                    "perf_md": "models/other.perf.md"},
    }))
    assert perf_index(index, tmp_path) == {"tuned": tmp_path / "models" / "m_riscv_perf.perf.json",
                                           "codegen": tmp_path / "models" / "other.perf.json"}


@pytest.mark.parametrize("text", ["[]", "{", '{"tuned": {"perf_md": "x"}}', None])
def test_a_bad_index_names_the_file(tmp_path, text):
    index = tmp_path / "i.json"
    if text is not None:
        index.write_text(text)
    with pytest.raises(ArtifactError, match=r"i\.json: not a perf index") as e:
        perf_index(index, tmp_path)
    assert "\n" not in str(e.value)


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))
