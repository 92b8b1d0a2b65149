"""A variant of an accelerator description: one line in a `hardware_sweep` becomes one YAML file.

    python -m analysis.hardware_variant --base analysis/hardware/riscv_rvv.yaml \\
        --name vlen256_l1_16k --set compute.vector_bits=256 --set l1.size_bytes=16384 --out v.yaml

`--set KEY=VALUE` changes one field: `compute.<field>`, `<role>.<field>` for a memory level by
its role (register, l1, l2, l3, dram), or a top-level field. What follows from the vector
length is derived, never set by hand, so the variant cannot contradict itself: the register
level's size (`vector_registers` x VLEN/8) and access width, and `model_core`, the LLVM core
model of that VLEN when one exists (common/core_models.py) and none otherwise (the variant's
code is then measured in instructions only). The result is validated like any description.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import yaml

from common.hardware import ROLES, HardwareError, load_hardware
from common.errors import OneLineErrors
from common.files import atomic_write, check_outputs
from common.core_models import CORE_MODELS, RISCV
from common.yaml_model import bounded_safe_load

DERIVED = ("register.size_bytes", "register.access_bits", "model_core")


class VariantError(ValueError):
    pass


def _value(key: str, text: str) -> int | float | str:
    try:
        value = yaml.safe_load(text)
    except yaml.YAMLError as err:
        # Blamed on --base before ("riscv_rvv.yaml: ScannerError: mapping values are not allowed here").
        raise VariantError(f"--set {key}: {text!r} is not a number or string: "
                           f"{str(err).splitlines()[0]}") from None
    # No hardware field is a boolean: YAML 1.1's true/yes/on would become the number 1
    # (`--set cores=true` gave cores: 1, issue 62).
    if isinstance(value, bool):
        raise VariantError(f"--set {key}={text}: {text!r} is a YAML boolean, not a number (no hardware "
                           "field is a boolean)")
    if not isinstance(value, (int, float, str)):
        raise VariantError(f"--set {key}: value {text!r} is not a number or string")
    return value


def apply(base: dict, name: str, settings: list[str]) -> dict:
    """The description `base` (a parsed YAML mapping) with `settings` applied and the
    VLEN-dependent fields derived."""
    data = yaml.safe_load(yaml.safe_dump(base))  # a deep copy
    data["name"] = name
    data["description"] = f"{base.get('name')} with {', '.join(settings) or 'no change'}"
    levels = {m.get("role"): m for m in data.get("memory", [])}
    given: dict[str, str] = {}
    for setting in settings:
        key, sep, text = setting.partition("=")
        if not sep:
            raise VariantError(f"--set {setting!r}: expected KEY=VALUE")
        # Refused like a YAML key given twice: the last one would win silently.
        if key in given:
            raise VariantError(f"--set {key} given twice ({given[key]} and {setting}): which one is meant?")
        given[key] = setting
        if key in DERIVED:
            raise VariantError(f"--set {key}: derived from compute.vector_bits, not set by hand")
        if key in ("name", "description"):
            raise VariantError(f"--set {key}: the variant's {key} comes from --name")
        head, _, field = key.partition(".")
        if head == "compute" and field:
            data.setdefault("compute", {})[field] = _value(key, text)
        elif head in levels and field:
            levels[head][field] = _value(key, text)
        elif head in (*ROLES, "l3") and field:
            raise VariantError(f"--set {key}: {base.get('name')} has no {head} level")
        elif not field:
            data[head] = _value(key, text)
        else:
            raise VariantError(f"--set {key}: expected compute.<field>, <role>.<field> or a "
                               "top-level field")
    compute = data.get("compute", {})
    vlen = compute.get("vector_bits")
    if "register" in levels and isinstance(vlen, int):
        levels["register"]["size_bytes"] = compute.get("vector_registers", 0) * vlen // 8
        levels["register"]["access_bits"] = vlen
    # A variant is priced on a core of its base's instruction set (RISC-V when the base names none).
    base_core = CORE_MODELS.get(base.get("model_core") or "")
    isa = base_core.isa if base_core else RISCV
    cores = [c.name for c in CORE_MODELS.values() if c.vlen == vlen and c.isa == isa]
    data["model_core"] = cores[0] if cores else None
    return data


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m analysis.hardware_variant", description=__doc__.split("\n")[0])
    p.add_argument("--base", required=True, type=Path, help="accelerator description to vary")
    p.add_argument("--name", required=True, help="the variant's name")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    p.add_argument("--out", required=True, type=Path)
    a = p.parse_args(argv)
    with OneLineErrors("hardware_variant", a.base, (HardwareError, VariantError)) as cli:
        check_outputs({"--out": a.out}, {"--base": a.base})
        load_hardware(a.base)  # the base must be valid on its own
        data = apply(bounded_safe_load(a.base.read_text()), a.name, a.set)
        text = (f"# Generated by analysis/hardware_variant.py from {a.base.name}: "
                f"{' '.join(a.set) or 'no change'}\n" + yaml.safe_dump(data, sort_keys=False))
        # The variant is validated as the file it will be, before anything is written beside --out.
        with tempfile.TemporaryDirectory(prefix="hardware_variant_") as tmp:
            staged = Path(tmp) / "variant.yaml"
            staged.write_text(text)
            try:
                load_hardware(staged)
            except HardwareError as err:
                # A name with a newline cut the one line before its reason: such a name is quoted.
                shown = a.name if a.name.isprintable() else repr(a.name)
                raise VariantError(str(err).replace(str(staged), f"variant {shown}")) from None
        atomic_write(a.out, text)
    return cli.exit_code


if __name__ == "__main__":
    sys.exit(main())
