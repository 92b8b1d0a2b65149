"""A dispatch layout names its executables as plain files: never a path (issue 80, BAD 6:
`perf.measure --layout` with an executable named `../../../../tmp/X.so` wrote the ELF there)."""

import sys

import pytest

from common.dispatch_layout import LayoutError, ModuleLayout, dump_layout, load_layout

SHA = "0" * 64


def _write(tmp_path, name):
    path = tmp_path / "m.layout.json"
    path.write_text(dump_layout(ModuleLayout("riscv64_rvv_zvl128", {name: SHA}, {})))
    return path


@pytest.mark.parametrize("name", ["../../../../tmp/X.so", "/tmp/X.so", "sub/X.so", "..", ".", "",
                                  "a\nb.so", "\x1b[31mX.so"])
def test_a_path_as_an_executable_name_is_refused(tmp_path, name):
    with pytest.raises(LayoutError, match="not a plain file name") as err:
        load_layout(_write(tmp_path, name))
    assert str(tmp_path) in str(err.value)


def test_a_plain_name_loads(tmp_path):
    layout = load_layout(_write(tmp_path, "module_main_dispatch_0.so"))
    assert layout.executables_sha256 == {"module_main_dispatch_0.so": SHA}



@pytest.mark.parametrize("field, value", [("workgroup_count", (-1, 1, 1)), ("workgroup_count", (1, 2**32, 1)),
                                          ("binding_lengths", [64, -8])])
def test_a_workgroup_count_or_length_the_runner_cannot_take_is_refused(tmp_path, field, value):
    # issue 80: a workgroup count of -1 reached the runner as 4,294,967,295 workgroups (qemu ran
    # for hours); a negative binding length is no buffer
    from common.dispatch_layout import Dispatch

    d = Dispatch("e", workgroup_count=(1, 1, 1), binding_lengths=[64, 32], calls=1)
    setattr(d, field, value)
    path = tmp_path / "m.layout.json"
    path.write_text(dump_layout(ModuleLayout("riscv64_rvv_zvl128", {"e.so": SHA}, {"e": d})))
    with pytest.raises(LayoutError, match=f"not a dispatch layout .*{field}") as err:
        load_layout(path)
    assert str(err.value).startswith(f"{path}: ")
    setattr(d, field, (2**32 - 1, 1, 1) if field == "workgroup_count" else [64, 0])  # the bounds themselves load
    path.write_text(dump_layout(ModuleLayout("riscv64_rvv_zvl128", {"e.so": SHA}, {"e": d})))
    assert getattr(load_layout(path).dispatches["e"], field) == getattr(d, field)


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q", "-p", "no:cacheprovider"]))
