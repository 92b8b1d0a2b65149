"""Loads a YAML file into a pydantic model with one-line errors naming the file and field.

Shared by the pipeline's description files (IREE targets, hardware descriptions).
"""

from __future__ import annotations

from pathlib import Path
from typing import TypeVar

import yaml
from pydantic import BaseModel, ValidationError

M = TypeVar("M", bound=BaseModel)


def load_yaml_model(path: str | Path, model: type[M], what: str, error: type[Exception]) -> M:
    """`model` validated from the YAML mapping in `path`; raises `error("<path>: ...")`.

    `what` names the kind of file in messages (e.g. "target", "hardware").
    """
    path = Path(path)
    try:
        data = yaml.safe_load(path.read_text())
    except FileNotFoundError:
        raise error(f"{path}: {what} file not found") from None
    except yaml.YAMLError as err:
        raise error(f"{path}: not valid YAML: {str(err).splitlines()[0]}") from None
    if not isinstance(data, dict):
        raise error(f"{path}: expected a mapping of {what} fields")
    try:
        return model(**data)
    except ValidationError as err:
        first = err.errors()[0]
        field = ".".join(str(p) for p in first["loc"]) or "(top level)"
        raise error(f"{path}: field '{field}': {first['msg'].removeprefix('Value error, ')}") from None
