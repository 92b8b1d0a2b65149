"""Imports a PyTorch or TensorFlow/Keras model to linalg-on-tensors MLIR bytecode.

    python -m frontend.import_model --model-module models.resnet18 --factory make_model \
        --framework torch --name resnet18 --out-mlir resnet18.mlirbc --out-golden resnet18.golden.npz

The factory is a function of the model module taking no arguments and returning
`(model, example_inputs)`: a torch.nn.Module or a Keras model, and a tuple of
fixed-seed example inputs (numpy arrays or framework tensors).

Outputs:
  --out-mlir    MLIR bytecode, linalg-on-tensors, locations stripped; one public
                entry function taking exactly the example inputs (torch: `main`
                as torch-mlir names it; TensorFlow: renamed to `main` too).
  --out-golden  an .npz with `input_0..` (the example inputs) and `output_0..`
                (the framework's own outputs for them, in the order the module returns
                them: a dict in its own key order, nested structures flattened as the
                exporter flattens them; a 0-d output stays 0-d), written deterministically.
                When the outputs are a structure (a dict, a nested or named tuple), `names`
                (strings) gives each output_<i>'s place in it (`['zeta']`, `[1]['b']`);
                a single tensor or a flat tuple/list has no `names` (the position is all).

Bad input gives one line `import_model: <name>: <reason>` on stderr, exit code 1,
and no output files (both are written to temporaries next to the outputs, then
renamed; outputs of an earlier run are left as they were). Goldens are finite: a NaN or
Inf the framework computes is refused. Goldens are reproducible: the model is run once more on
the same inputs (forward only) and refused when any output differs in any bit (a random op);
a model returning no outputs is refused. SIGINT/SIGTERM/SIGHUP: one line, exit 128 + the signal.
"""

import argparse
import contextlib
import importlib
import os
import sys
import tempfile
import warnings

from common.processes import fd2_into
from frontend.errors import ImportFailure, first_line

FRAMEWORKS = ("torch", "tensorflow")
# The golden's key for the outputs' places in the structure the model returns (a str array).
NAMES = "names"
SUPPORTED_DTYPES = ("float32", "float16", "int8", "int16", "int32", "int64", "uint8", "bool")


# The frameworks' CPU kernels pick their instruction set and thread split at run time, and the
# import runs the model (batch-norm calibration, the golden): with AVX-512 or AVX2 kernels
# se_net's calibrated weights, keras_mobilenet's too, came out different in the last bits, so
# the module (and every tuning record keyed by its sha256) depended on the machine that imported
# it. The import pins the portable kernels and one thread, whatever the caller's environment.
# torch's oneDNN (mkldnn) kernels are switched off in the process instead (_portable_torch): their
# int8 matmul is wrong below AVX-512 VNNI (torch._int_mm off by up to 104,069 with oneDNN capped
# at AVX2: a saturating 16-bit product), so an AVX2-only machine wrote a wrong int8 golden.
PORTABLE_KERNELS = {
    "ATEN_CPU_CAPABILITY": "default",  # torch's own kernels: the baseline build, no AVX dispatch
    "MKL_CBWR": "COMPATIBLE",  # MKL's conditional bitwise reproducibility across CPUs
    "TF_ENABLE_ONEDNN_OPTS": "0",  # TensorFlow's Eigen kernels, fixed at its build
    "OMP_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "TF_NUM_INTRAOP_THREADS": "1",
    "TF_NUM_INTEROP_THREADS": "1",
}


def _prepare_environment():
    """Quiet TensorFlow, pin the frameworks' kernels (PORTABLE_KERNELS), and create the scratch
    dirs the build points HOME-like variables at. Before any framework is imported."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    os.environ.update(PORTABLE_KERNELS)
    for var in ("HOME", "KERAS_HOME", "XDG_CACHE_HOME", "TORCH_HOME", "MPLCONFIGDIR", "TMPDIR"):
        path = os.environ.get(var)
        if path and not os.path.isdir(path):
            try:
                os.makedirs(path, exist_ok=True)
            except OSError:
                pass
    # A TMPDIR that is a file or read-only was silently replaced by /tmp (issue 80 probe): said in
    # one line instead, as every stage says it (common.scratch.check_base).
    from common.scratch import ScratchError, check_base

    try:
        check_base()
    except ScratchError as err:
        raise ImportFailure(first_line(err)) from None


@contextlib.contextmanager
def _quiet_stderr(enabled):
    """Sends file descriptor 2 (Python and C++ framework logging alike) to a scratch file.

    torch.export and TensorFlow log warnings and graph dumps on failure; the
    importer's own report is the single line printed after this block.
    """
    if not enabled:
        yield
        return
    with tempfile.TemporaryFile() as sink, fd2_into(sink):
        yield


def _module_file(module_name):
    """The model module's source file, found without running it (None when it cannot be)."""
    import importlib.util

    try:
        spec = importlib.util.find_spec(module_name)
    except (Exception, SystemExit):  # noqa: BLE001 - a parent package failing: the import says why
        return None
    return spec.origin if spec is not None and spec.has_location else None


@contextlib.contextmanager
def _scratch_caches():
    """torch.export creates an inductor cache in $TMPDIR (torchinductor_<user>), which would
    outlive the import: unless the caller chose one, it goes to a directory removed afterwards."""
    if os.environ.get("TORCHINDUCTOR_CACHE_DIR"):
        yield
        return
    with tempfile.TemporaryDirectory(prefix="import_model_") as tmp:
        os.environ["TORCHINDUCTOR_CACHE_DIR"] = os.path.join(tmp, "torchinductor")
        try:
            yield
        finally:
            del os.environ["TORCHINDUCTOR_CACHE_DIR"]


def _load_factory(module_name, factory_name):
    try:
        module = importlib.import_module(module_name)
    except ImportError as e:
        raise ImportFailure(f"cannot import model module '{module_name}': {first_line(e)}") from e
    except SystemExit as e:
        raise ImportFailure(f"model module '{module_name}' called sys.exit({e.code!r}) when imported") from None
    factory = getattr(module, factory_name, None)
    if factory is None:
        raise ImportFailure(f"model module '{module_name}' has no factory '{factory_name}'")
    if not callable(factory):
        raise ImportFailure(f"'{module_name}.{factory_name}' is not callable")
    return factory


def _to_numpy(value, index):
    import numpy as np

    given = value
    if hasattr(value, "detach") and hasattr(value, "cpu"):  # torch.Tensor
        # numpy has no bfloat16 (torch's .numpy() raised a bare TypeError): the dtype is checked
        # first, in torch's name for it, which is numpy's for every supported one.
        name = str(getattr(value, "dtype", "")).removeprefix("torch.")
        if name not in SUPPORTED_DTYPES:
            raise ImportFailure(f"example input {index} has unsupported dtype {name} "
                                f"(supported dtypes: {', '.join(SUPPORTED_DTYPES)})")
        value = value.detach().cpu().numpy()
    elif hasattr(value, "numpy") and not isinstance(value, np.ndarray):  # tf.Tensor
        value = value.numpy()
    try:
        array = np.asarray(value)
    except Exception as e:  # noqa: BLE001
        raise ImportFailure(f"example input {index} is not an array: {first_line(e)}") from e
    if array.dtype.name not in SUPPORTED_DTYPES and not isinstance(given, (np.ndarray, np.generic)) \
            and not hasattr(given, "numpy"):
        # A Python float, str, list or None is no tensor: numpy's dtype for it ("float64",
        # "object") named the wrong thing (issue 80).
        what = "None" if given is None else f"a Python {type(given).__name__}"
        raise ImportFailure(f"example input {index} is {what}, not a tensor: give a numpy array or a framework "
                            f"tensor (supported dtypes: {', '.join(SUPPORTED_DTYPES)})")
    if array.dtype.name not in SUPPORTED_DTYPES:
        raise ImportFailure(
            f"example input {index} has unsupported dtype {array.dtype.name} "
            f"(supported dtypes: {', '.join(SUPPORTED_DTYPES)})"
        )
    return array


def _call_factory(factory, module_name, factory_name):
    try:
        result = factory()
    except SystemExit as e:  # an exit, even 0, is no model: the import would end without output
        raise ImportFailure(f"'{module_name}.{factory_name}()' called sys.exit({e.code!r}) instead of "
                            "returning (model, example_inputs)") from None
    if not (isinstance(result, (tuple, list)) and len(result) == 2):
        raise ImportFailure(f"'{module_name}.{factory_name}()' must return (model, example_inputs)")
    model, inputs = result
    if not isinstance(inputs, (tuple, list)):
        inputs = (inputs,)
    if not inputs:
        raise ImportFailure(f"'{module_name}.{factory_name}()' returned no example inputs")
    return model, tuple(inputs)


def write_outputs(out_mlir, mlir_bytes, out_golden, golden):
    """Writes both outputs through temporaries, all or nothing (common/files.py); a failure
    leaves whatever was there before."""
    import io

    from common.files import write_together
    from frontend.npz import write_npz

    buf = io.BytesIO()
    write_npz(buf, golden)
    write_together({out_mlir: mlir_bytes, out_golden: buf.getvalue()})


def check_finite(golden):
    """Refuses a golden array holding NaN or Inf: a NaN golden matches nothing (and a NaN result
    is no reference), so a later check could only mislead."""
    import numpy as np

    for key, array in golden.items():
        if array.dtype.kind in "fc":
            bad = ~np.isfinite(array)
            if bad.any():
                nan = int(np.isnan(array).sum())
                raise ImportFailure(f"{key} holds {nan} NaN and {int(bad.sum()) - nan} Inf of {array.size} "
                                    "values: no golden (check the model's weights and example inputs)")


def forward_again(framework: str, model, np_inputs: list) -> list[tuple[str, "np.ndarray"]]:
    """[(name, numpy output)] of one more forward pass, run as the importer ran the one that gave
    the golden (torch: eval mode, no_grad, the golden inputs; TensorFlow: a tf.function of the same
    signature, as frontend/tf_importer.py's _to_stablehlo calls it). Forward only: an import pays
    one extra inference, not a second export."""
    import numpy as np

    if framework == "torch":
        import torch

        from frontend.torch_importer import forward

        return forward(model, tuple(torch.from_numpy(x.copy()) for x in np_inputs))
    from frontend.tf_importer import _flatten, traced_call

    return [(name, np.asarray(t).copy()) for name, t in _flatten(traced_call(model, np_inputs)(*np_inputs))]


def check_deterministic(first: list[tuple[str, "np.ndarray"]], second: list[tuple[str, "np.ndarray"]]) -> None:
    """Refuses a model whose two forward passes on the same inputs differ in any bit (a random
    op such as torch.rand_like, or state a call changes): its golden could not be reproduced, and
    `runtime.run --check` would report the difference as a miscompile (issue 62). Bit for bit: the
    frameworks' kernels are pinned (PORTABLE_KERNELS, one thread), so a deterministic model
    repeats itself exactly."""
    import numpy as np

    for i, ((name, a), (_, b)) in enumerate(zip(first, second)):
        if a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes():
            continue
        where = f"output_{i}" + (f" {name}" if name and name != f"[{i}]" else "")
        if a.shape != b.shape or a.dtype != b.dtype:
            detail = f"shape/dtype {list(a.shape)} {a.dtype} then {list(b.shape)} {b.dtype}"
        else:
            diff = np.abs(a.astype(np.float64) - b.astype(np.float64))
            worst = float(np.max(diff, initial=0.0, where=~np.isnan(diff)))  # a NaN in the second pass
            detail = f"max abs difference {worst:.3g}" + (", NaN in the second" if np.isnan(diff).any() else "")
        raise ImportFailure(f"{where} differs between two forward passes on the same inputs ({detail}): the "
                            "model is not deterministic (a random op, or state a call changes), so its golden "
                            "cannot check the module")
    if len(first) != len(second):
        raise ImportFailure(f"the model returned {len(first)} outputs, then {len(second)} on the same inputs: "
                            "it is not deterministic, so its golden cannot check the module")


def _portable_torch():
    """torch's own kernels, not oneDNN's: theirs pick an instruction set at run time (and their
    int8 matmul is wrong without VNNI), ATen's are pinned by PORTABLE_KERNELS."""
    import torch

    torch.backends.mkldnn.enabled = False


# TensorFlow calls oneDNN for some ops even with TF_ENABLE_ONEDNN_OPTS=0 (keras_mobilenet's
# weights still moved with oneDNN's instruction set): capped at SSE4.1 there, for float models.
TF_PORTABLE_KERNELS = {"ONEDNN_MAX_CPU_ISA": "SSE41", "DNNL_MAX_CPU_ISA": "SSE41"}


def import_model(model_module, factory_name, framework, name):
    """Returns (mlir bytecode, ordered dict of golden arrays)."""
    if framework == "torch":
        _portable_torch()
    else:
        os.environ.update(TF_PORTABLE_KERNELS)
    factory = _load_factory(model_module, factory_name)
    model, inputs = _call_factory(factory, model_module, factory_name)
    np_inputs = [_to_numpy(x, i) for i, x in enumerate(inputs)]
    if framework == "torch":
        from frontend import torch_importer

        mlir_bytes, outputs = torch_importer.import_torch(model, inputs, np_inputs)
    else:
        from frontend import tf_importer

        mlir_bytes, outputs = tf_importer.import_tf(model, np_inputs)
    if not outputs:
        # An empty tuple (or dict) exports to a function returning nothing: no golden, no
        # dispatch, and codegen failed later on an internal temporary path (issue 62).
        raise ImportFailure("the model returns no outputs (an empty tuple, list or dict): nothing to "
                            "compile or to check")
    golden = {}
    for i, x in enumerate(np_inputs):
        golden[f"input_{i}"] = x
    for i, (_, y) in enumerate(outputs):
        golden[f"output_{i}"] = y
    check_finite(golden)
    check_deterministic(outputs, forward_again(framework, model, np_inputs))
    names = [name for name, _ in outputs]
    if names not in ([""], [f"[{i}]" for i in range(len(names))]):
        import numpy as np

        golden[NAMES] = np.array(names, dtype=str)
    return mlir_bytes, golden


def parse_args(argv):
    parser = argparse.ArgumentParser(prog="import_model", description=__doc__.split("\n\n")[0])
    parser.add_argument("--model-module", required=True, help="Python module of the model, e.g. models.resnet18")
    parser.add_argument("--factory", required=True, help="factory function returning (model, example_inputs)")
    parser.add_argument("--framework", required=True, choices=FRAMEWORKS)
    parser.add_argument("--name", required=True, help="model name (used in messages)")
    parser.add_argument("--out-mlir", required=True, help="output MLIR bytecode (.mlirbc)")
    parser.add_argument("--out-golden", required=True, help="output golden inputs/outputs (.npz)")
    parser.add_argument(
        "--verbose", action="store_true", help="let the frameworks' own log output through to stderr"
    )
    return parser.parse_args(argv)


def main(argv=None):
    from common.errors import NamedError, OneLineErrors
    from common.files import check_outputs

    args = parse_args(sys.argv[1:] if argv is None else argv)
    outputs = {"--out-mlir": args.out_mlir, "--out-golden": args.out_golden}
    # A name with an escape sequence or a newline is quoted: printed raw it could recolour or
    # hide the line that says why (issue 80).
    name = args.name if args.name.isprintable() else repr(args.name)
    with OneLineErrors("import_model", name) as cli:
        try:
            # The model's own source is an input: an output never overwrites it (checked before
            # the import where the module can be found without running it, and after it anyway).
            check_outputs(outputs, {"--model-module": _module_file(args.model_module)})
            _prepare_environment()
            # Framework deprecation chatter is not ours to report: stderr is for the one error line.
            warnings.simplefilter("ignore")
            with _quiet_stderr(enabled=not args.verbose), _scratch_caches():
                mlir_bytes, golden = import_model(args.model_module, args.factory, args.framework, args.name)
            check_outputs(outputs, {"--model-module": getattr(sys.modules.get(args.model_module), "__file__", None)})
            write_outputs(args.out_mlir, mlir_bytes, args.out_golden, golden)
        except (ImportFailure, NamedError) as e:
            raise NamedError(f"{name}: {first_line(e)}") from None
        except SystemExit as e:  # the model's own code exiting: never a silent success
            raise NamedError(f"{name}: the model called sys.exit({e.code!r}) during the import") from None
        except Exception as e:  # noqa: BLE001 - anything from a user's model: one line, no traceback
            raise NamedError(f"{name}: {type(e).__name__}: {first_line(e)}") from None
    return cli.exit_code


if __name__ == "__main__":
    sys.exit(main())
