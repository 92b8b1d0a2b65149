"""import_model's bad-input contract: one stderr line, non-zero exit, no output left behind."""

import os
import subprocess
import sys
import zipfile

import numpy as np
import pytest


def run_import(tmp_path, module, factory, framework="torch", name="bad"):
    out_mlir, out_golden = tmp_path / f"{name}.mlirbc", tmp_path / f"{name}.golden.npz"
    env = dict(os.environ, HOME=str(tmp_path / "home"), KERAS_HOME=str(tmp_path / "keras"), PYTHONHASHSEED="0")
    proc = subprocess.run(
        [sys.executable, "-m", "frontend.import_model", "--model-module", module, "--factory", factory,
         "--framework", framework, "--name", name, "--out-mlir", str(out_mlir), "--out-golden", str(out_golden)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
    )
    return proc, out_mlir, out_golden


def assert_clean_failure(proc, tmp_path, name, *fragments):
    lines = [l for l in proc.stderr.splitlines() if l.strip()]
    assert proc.returncode != 0
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith(f"import_model: {name}: "), lines[0]
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    leftovers = [p.name for p in tmp_path.iterdir() if p.name not in ("home", "keras")]
    assert leftovers == [], leftovers


BAD = "frontend.testdata.bad_models"


def test_missing_module(tmp_path):
    proc, _, _ = run_import(tmp_path, "frontend.testdata.no_such_model", "make_model")
    assert_clean_failure(proc, tmp_path, "bad", "cannot import model module", "no_such_model")


def test_missing_factory(tmp_path):
    proc, _, _ = run_import(tmp_path, BAD, "no_such_factory")
    assert_clean_failure(proc, tmp_path, "bad", "has no factory 'no_such_factory'")


def test_a_name_with_escapes_is_printed_quoted(tmp_path):
    # issue 80: an ANSI escape in --name was printed raw (a red "ALL CHECKS PASSED" before the reason)
    name = "\x1b[31mALL CHECKS PASSED\x1b[0m"
    proc, _, _ = run_import(tmp_path, BAD, "no_such_factory", name=name)
    assert_clean_failure(proc, tmp_path, repr(name), "has no factory 'no_such_factory'")
    assert "\x1b" not in proc.stderr


def test_a_tmpdir_that_is_a_file_is_named(tmp_path, monkeypatch):
    # issue 80 probe: TMPDIR a regular file was silently replaced by /tmp
    (tmp_path / "tmpfile").write_text("")
    monkeypatch.setenv("TMPDIR", str(tmp_path / "tmpfile"))
    proc, _, _ = run_import(tmp_path, BAD, "no_such_factory")
    monkeypatch.undo()
    (tmp_path / "tmpfile").unlink()
    assert_clean_failure(proc, tmp_path, "bad", f"TMPDIR={tmp_path / 'tmpfile'}")


def test_factory_not_callable(tmp_path):
    proc, _, _ = run_import(tmp_path, BAD, "NOT_CALLABLE")
    assert_clean_failure(proc, tmp_path, "bad", "is not callable")


def test_factory_must_return_model_and_inputs(tmp_path):
    proc, _, _ = run_import(tmp_path, BAD, "not_a_pair")
    assert_clean_failure(proc, tmp_path, "bad", "must return (model, example_inputs)")


def test_data_dependent_control_flow_cannot_be_exported(tmp_path):
    proc, _, _ = run_import(tmp_path, BAD, "data_dependent", name="data_dependent")
    assert_clean_failure(proc, tmp_path, "data_dependent", "cannot be exported with torch.export")


@pytest.mark.parametrize("factory,dtype", [("float64_input", "float64"), ("complex_input", "complex64")])
def test_unsupported_dtype_names_the_supported_ones(tmp_path, factory, dtype):
    proc, _, _ = run_import(tmp_path, BAD, factory)
    assert_clean_failure(proc, tmp_path, "bad", f"unsupported dtype {dtype}", "supported dtypes: float32")


@pytest.mark.parametrize("value, what", [(1.5, "a Python float"), ("abc", "a Python str"), (None, "None"),
                                         ([1.0, 2.0], "a Python list"), ({"x": 1}, "a Python dict")])
def test_a_non_tensor_input_is_named_as_such(value, what):
    # issue 80: a Python float or list was "unsupported dtype float64", a dict or None "object"
    from frontend.errors import ImportFailure
    from frontend.import_model import _to_numpy

    with pytest.raises(ImportFailure) as err:
        _to_numpy(value, 2)
    assert str(err.value).startswith(f"example input 2 is {what}, not a tensor"), err.value
    assert _to_numpy(np.ones(2, np.float64).astype(np.float32), 0).dtype == np.float32  # arrays as before
    with pytest.raises(ImportFailure, match="unsupported dtype float64"):
        _to_numpy(np.ones(2), 0)


def test_keras_rnn_loop_is_named_with_the_way_out(tmp_path):
    proc, _, _ = run_import(tmp_path, BAD, "keras_lstm_loop", framework="tensorflow", name="keras_lstm")
    assert_clean_failure(proc, tmp_path, "keras_lstm", "has a graph loop (", "unroll=True")


def test_failed_import_leaves_earlier_outputs_as_they_were(tmp_path):
    """Nothing the command did not create is deleted: the earlier outputs stay, the exit code
    says this run produced none."""
    (tmp_path / "bad.mlirbc").write_bytes(b"earlier")
    (tmp_path / "bad.golden.npz").write_bytes(b"earlier")
    proc, _, _ = run_import(tmp_path, BAD, "no_such_factory")
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode != 0 and len(lines) == 1 and "no factory" in lines[0], proc.stderr
    assert (tmp_path / "bad.mlirbc").read_bytes() == b"earlier"
    assert (tmp_path / "bad.golden.npz").read_bytes() == b"earlier"
    assert sorted(p.name for p in tmp_path.iterdir() if p.name not in ("home", "keras")) == \
        ["bad.golden.npz", "bad.mlirbc"]


def test_framework_must_be_torch_or_tensorflow(tmp_path):
    proc, _, _ = run_import(tmp_path, BAD, "data_dependent", framework="jax")
    assert proc.returncode != 0 and "invalid choice" in proc.stderr


def test_npz_writer_is_deterministic_and_loadable(tmp_path):
    from frontend.npz import write_npz

    arrays = {"input_0": np.arange(6, dtype=np.float32).reshape(2, 3), "output_0": np.array([True, False])}
    write_npz(tmp_path / "a.npz", arrays)
    write_npz(tmp_path / "b.npz", arrays)
    assert (tmp_path / "a.npz").read_bytes() == (tmp_path / "b.npz").read_bytes()
    with zipfile.ZipFile(tmp_path / "a.npz") as zf:
        assert [i.date_time for i in zf.infolist()] == [(1980, 1, 1, 0, 0, 0)] * 2
    loaded = np.load(tmp_path / "a.npz")
    assert loaded.files == ["input_0", "output_0"]
    for key, value in arrays.items():
        np.testing.assert_array_equal(loaded[key], value)
        assert loaded[key].dtype == value.dtype


STRUCTURED = "frontend.testdata.structured_models"
HOST_FLAGS = ["--iree-hal-target-device=local", "--iree-hal-local-target-device-backends=llvm-cpu",
              "--iree-llvmcpu-target-cpu=generic"]


def _run_on_host(mlirbc, golden):
    """The imported module compiled for the host and called on the golden inputs: its results,
    in the order it returns them."""
    import iree.compiler.tools as ireec
    import iree.runtime as ireert

    vmfb = ireec.compile_file(str(mlirbc), extra_args=HOST_FLAGS)
    ctx = ireert.SystemContext(config=ireert.Config("local-task"))
    ctx.add_vm_module(ireert.VmModule.copy_buffer(ctx.instance, vmfb))
    inputs = [golden[f"input_{i}"] for i in range(sum(k.startswith("input_") for k in golden.files))]
    results = ctx.modules.module["main"](*inputs)
    return [np.asarray(r.to_host() if hasattr(r, "to_host") else r)
            for r in (results if isinstance(results, (list, tuple)) else [results])]


def _outputs(golden):
    return [golden[f"output_{i}"] for i in range(sum(k.startswith("output_") for k in golden.files))]


@pytest.mark.parametrize("factory,framework,names", [
    ("dict_outputs", "torch", ["['zeta']", "['alpha']"]),
    ("nested_outputs", "torch", ["[0]", "[1]['b']", "[1]['a'][0]", "[1]['a'][1]"]),
    ("keras_dict_outputs", "tensorflow", ["['alpha']", "['zeta']"]),  # tf.nest: its module sorts them
])
def test_golden_outputs_are_in_the_order_the_module_returns_them(tmp_path, factory, framework, names):
    """A dict's golden was written in sorted key order while the module keeps insertion order:
    `runtime.run --check` then reported a bogus max abs error (issue 62). The golden names each
    output by its place in the structure."""
    proc, mlirbc, golden_path = run_import(tmp_path, STRUCTURED, factory, framework=framework, name=factory)
    assert proc.returncode == 0, proc.stderr
    golden = np.load(golden_path, allow_pickle=False)
    got, want = _run_on_host(mlirbc, golden), _outputs(golden)
    assert [g.shape for g in got] == [w.shape for w in want]
    for i, (g, w) in enumerate(zip(got, want)):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5, err_msg=f"output_{i} {names[i]}")
    assert list(golden["names"]) == names


def test_a_0d_output_stays_0d(tmp_path):
    """Its golden had shape (1,) while the module returns shape ()."""
    proc, mlirbc, golden_path = run_import(tmp_path, STRUCTURED, "scalar_output", name="scalar")
    assert proc.returncode == 0, proc.stderr
    golden = np.load(golden_path, allow_pickle=False)
    assert golden["output_0"].shape == () and "names" not in golden.files
    (got,) = _run_on_host(mlirbc, golden)
    assert got.shape == ()
    np.testing.assert_allclose(got, golden["output_0"], rtol=1e-5)


def test_npz_writer_keeps_0d_arrays_0d(tmp_path):
    from frontend.npz import write_npz

    write_npz(tmp_path / "a.npz", {"output_0": np.float32(2.5), "input_0": np.array(3, np.int64)})
    loaded = np.load(tmp_path / "a.npz")
    assert loaded["output_0"].shape == () and loaded["input_0"].shape == ()


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q", "-p", "no:cacheprovider"]))
