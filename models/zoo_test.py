"""//models:zoo_models holds every model_pipeline's module: the bench and the report, which run
the frameworks, import it from there (a new stanza needs no second list)."""

import glob
import importlib.util
import json
import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
INFOS = sorted(glob.glob(os.path.join(HERE, "*_pipeline_info.json")))


def test_the_zoo_has_pipelines():
    assert INFOS, f"no *_pipeline_info.json next to {__file__} (is //models:zoo a data dependency?)"


@pytest.mark.parametrize("info_path", INFOS, ids=[os.path.basename(p) for p in INFOS])
def test_every_pipeline_module_is_importable(info_path):
    with open(info_path) as f:
        info = json.load(f)
    assert importlib.util.find_spec(info["module"]) is not None, (
        f"{info['name']}: module {info['module']} is not in //models:zoo_models' runfiles"
    )


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q", "-p", "no:cacheprovider"]))
