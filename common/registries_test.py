"""The registries are the only lists of op kinds and strategies, and Starlark sees them as Python does.

- common/registries.bzl is what `python -m common.registries_bzl` writes from the Python
  registries (Bazel 4 cannot load a generated .bzl, so it is checked in);
- no source outside the registries spells a list of op kinds or strategies by hand: a tuple,
  list, set or dict-keys literal naming two or more of them (tests' fixtures aside).

Run by Bazel on the sources in its runfiles (//common:registries_test's data), or with pytest
from the repository root on the whole tree.
"""

from __future__ import annotations

import ast
import os
import sys
from pathlib import Path

import pytest

from common import op_kinds
from common import registries_bzl, targets

# Where each vocabulary may be listed: its registry and the generated constants.
REGISTRIES = {"common/op_kinds.py", "common/targets.py", "common/registries.bzl"}
VOCABULARIES = {
    "op kinds (common/op_kinds.py)": frozenset(op_kinds.REGISTRY),
    "strategies (common/targets.py)": frozenset(targets.STRATEGY_FLAGS) | {targets.TUNED},
}


def _root() -> Path:
    # Under Bazel the working directory is the runfiles tree of this workspace.
    return Path(os.environ["TEST_SRCDIR"]) / os.environ["TEST_WORKSPACE"] if "TEST_SRCDIR" in os.environ \
        else Path(__file__).resolve().parent.parent


def _sources(root: Path) -> list[Path]:
    found = []
    for dirpath, dirnames, filenames in os.walk(root, followlinks=True):
        # Bazel's convenience symlinks and external repositories are not this project's sources.
        dirnames[:] = [d for d in dirnames if not d.startswith(("bazel-", ".", "external"))
                       and not d.endswith(".runfiles")]
        for f in filenames:
            if f.endswith((".py", ".bzl")) or f in ("BUILD.bazel", "BUILD"):
                found.append(Path(dirpath) / f)
    return sorted(found)


def _is_fixture(rel: str) -> bool:
    """Unit tests and their data spell kinds and strategies as inputs, not as the concept's list.
    The pipeline's own checks (models/*_test.py, run on every model) are code like any other."""
    name = rel.rsplit("/", 1)[-1]
    return (name.endswith("_test.py") and not rel.startswith("models/")) or "/testdata/" in f"/{rel}"


def hand_lists(source: str, vocabularies: dict[str, frozenset[str]] = VOCABULARIES) -> list[tuple[int, str, list[str]]]:
    """(line, vocabulary, names) of every literal in `source` (Python or Starlark) that lists two
    or more names of one vocabulary."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            elements = node.elts
        elif isinstance(node, ast.Dict):
            elements = [k for k in node.keys if k is not None]
        else:
            continue
        strings = {e.value for e in elements if isinstance(e, ast.Constant) and isinstance(e.value, str)}
        for vocabulary, names in vocabularies.items():
            hit = sorted(strings & names)
            if len(hit) >= 2:
                found.append((node.lineno, vocabulary, hit))
    return found


def test_generated_constants_match_the_registries():
    checked_in = _root() / "common" / "registries.bzl"
    assert checked_in.is_file(), f"{checked_in}: missing (a data dependency of this test)"
    assert checked_in.read_text() == registries_bzl.render(), (
        f"common/registries.bzl is stale against the Python registries: run `{registries_bzl.COMMAND}`")


def test_no_hand_list_outside_the_registries():
    root = _root()
    sources = _sources(root)
    # The scan must see the code that used to hold hand lists, or it proves nothing.
    seen = {p.relative_to(root).as_posix() for p in sources}
    for expected in ("perf/measure.py", "bench/microkernels.py", "models/defs.bzl", "codegen/defs.bzl",
                     "models/pipeline_test.py"):
        assert expected in seen, f"{expected}: not among the scanned sources under {root}"
    problems = []
    for path in sources:
        rel = path.relative_to(root).as_posix()
        if rel in REGISTRIES or _is_fixture(rel):
            continue
        for line, vocabulary, names in hand_lists(path.read_text()):
            problems.append(f"{rel}:{line}: a hand list of {vocabulary}: {', '.join(names)}; "
                            f"derive it from the registry")
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("source, hits", [
    ('KINDS = ("matmul", "conv")', 1),
    ('{"tuned": 1, "ukernels": 2}', 1),
    ('x = ["matmul"]; y = {"codegen": "_iree_default"}', 0),
    ('candidates = ["tuned", "codegen"] + list(STRATEGIES)', 1),
    ('MAC_KINDS = tuple(k for k, v in REGISTRY.items() if v.macs)', 0),
])
def test_the_scan_finds_hand_lists(source, hits):
    assert len(hand_lists(source)) == hits


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))
