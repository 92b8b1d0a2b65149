"""common.pipeline_info: the zoo is read from the pipelines' info files, under a root or its bazel-bin."""

import json
import sys
from pathlib import Path

import pytest

from common.pipeline_info import PipelineInfo, PipelineInfoError, zoo_infos


def _info(models: Path, name: str, split: str) -> None:
    models.mkdir(parents=True, exist_ok=True)
    (models / f"{name}_pipeline_info.json").write_text(json.dumps(
        {"name": name, "model_name": name + "_m", "module": f"models.{name}", "framework": "torch", "split": split}))


def test_infos_come_from_the_first_root_that_has_them_in_name_order(tmp_path):
    empty, built = tmp_path / "empty", tmp_path / "ws"
    empty.mkdir()
    _info(built / "bazel-bin" / "models", "resnet", "calibration")
    _info(built / "bazel-bin" / "models", "mlp", "held_out")
    infos = zoo_infos([empty, built])
    assert [i.name for i in infos] == ["mlp", "resnet"]
    assert infos[1] == PipelineInfo("resnet", "resnet_m", "models.resnet", "torch", "calibration")


def test_no_info_files_names_where_it_looked(tmp_path):
    with pytest.raises(PipelineInfoError, match=f"no models/\\*_pipeline_info.json under {tmp_path}"):
        zoo_infos([tmp_path])


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))
