"""TensorFlow/Keras -> StableHLO (TF's own MLIR bridge) -> linalg (IREE's input conversion).

Routes measured offline with the locked packages (tensorflow-cpu 2.21, keras 3.15,
iree-base-compiler 3.13; no jax):

1. `tf.function(...).experimental_get_compiler_ir(...)`: only for jit_compile=True
   functions and its stages are XLA HLO (text/proto), not StableHLO; IREE 3.13 no
   longer reads XLA HLO. Rejected.
2. `tf.mlir.experimental.convert_function` on the traced function, then
   `run_pass_pipeline("xla-legalize-tf")`: variables stay `tf_type.resource` arguments
   with unranked `tensor<*xf32>` reads, and legalisation fails (`mhlo.dot` operand
   must be ranked). Rejected as is.
3. (chosen) freeze the variables into constants
   (`convert_variables_to_constants_v2`), `convert_function(...,
   "tf-standard-pipeline")` to the tf dialect, then TF's own
   `tf-lower-to-mlprogram-and-hlo` pipeline: it legalises tf -> StableHLO and
   canonicalises, giving a clean one-function StableHLO module with the weights as
   `stablehlo.constant` (`xla-legalize-tf,hlo-legalize-to-stablehlo` also works but
   leaves `shape.shape_of` / `dynamic_broadcast_in_dim` around). Measured on the
   Keras CNN: well under a second.
4. StableHLO -> linalg: `iree-compile --iree-input-type=stablehlo --compile-to=input`
   (IREE's input conversion, run in a subprocess because TF's and IREE's LLVM
   libraries must not share a process). It wraps the entry in `util.func`/
   `util.return`; those are turned back into `func.func`/`return` so the artifact is
   the same kind as the PyTorch route's (see frontend/stablehlo_to_linalg.py).
   The TF entry (`__inference_pruned_NNN`) is renamed `main`, as torch-mlir names it.
"""

import os
import re
import subprocess
import sys
import tempfile

import numpy as np

from frontend.errors import ImportFailure, first_line

_LOWER_PIPELINE = "tf-lower-to-mlprogram-and-hlo"

# What a symbolic loop (a Keras RNN layer's tf.while_loop over TensorLists) becomes once frozen.
# TF's bridge lifts none of it: v1 control flow (NextIteration) is refused outright, and with
# lower_control_flow=False the While reaches mhlo.while still carrying TensorList variants
# (tensor-list-ops-decomposition does not remove them), measured with tensorflow-cpu 2.21.
_GRAPH_LOOP_OPS = frozenset({"NextIteration", "LoopCond", "While", "StatelessWhile"})


def _flatten(value):
    """[(name, tensor)] of the function's output in the order its concrete function returns it
    (tf.nest: dict keys sorted), each named by its place in the structure (`['zeta']`, `[1]`;
    a bare tensor: "")."""
    from tensorflow.python.util import nest

    return [("".join(f"[{k!r}]" for k in path), v) for path, v in nest.flatten_with_tuple_paths(value)]


def traced_call(model, np_inputs):
    """`model` as a tf.function of the inputs' signature: a Keras model called in inference mode
    with one argument (a list for several), any other callable with its arguments."""
    import keras
    import tensorflow as tf

    specs = [tf.TensorSpec(x.shape, tf.as_dtype(x.dtype), name=f"input_{i}") for i, x in enumerate(np_inputs)]
    is_keras = isinstance(model, keras.Model)

    def call(*args):
        arg = args[0] if len(args) == 1 else list(args)
        return model(arg, training=False) if is_keras else model(*args)

    return tf.function(call, input_signature=specs, autograph=False)


def _to_stablehlo(model, np_inputs):
    import tensorflow as tf
    from tensorflow.python.framework.convert_to_constants import convert_variables_to_constants_v2

    fn = traced_call(model, np_inputs)
    try:
        concrete = fn.get_concrete_function()
    except Exception as e:  # noqa: BLE001
        raise ImportFailure(f"cannot be traced by tf.function: {type(e).__name__}: {first_line(e)}") from e
    outputs = [(name, np.asarray(t).copy()) for name, t in _flatten(fn(*np_inputs))]
    frozen = convert_variables_to_constants_v2(concrete)
    tf_text = tf.mlir.experimental.convert_function(frozen, pass_pipeline="tf-standard-pipeline")
    try:
        hlo = tf.mlir.experimental.run_pass_pipeline(tf_text, _LOWER_PIPELINE, show_debug_info=False)
    except Exception as e:  # noqa: BLE001
        loops = sorted({node.op for node in frozen.graph.as_graph_def().node} & _GRAPH_LOOP_OPS)
        if loops:
            raise ImportFailure(
                f"has a graph loop ({', '.join(loops)}), which TF's bridge cannot legalise to StableHLO; "
                "a Keras RNN layer (LSTM, GRU, SimpleRNN) imports when built with unroll=True"
            ) from e
        raise ImportFailure(f"cannot be legalised to StableHLO: {first_line(e)}") from e
    left = sorted(set(re.findall(r'"?(tf\.[A-Za-z0-9_]+)', hlo)) - {"tf.versions", "tf.entry_function"})
    left = [op for op in left if op[3:4].isupper()]
    if left:
        raise ImportFailure(f"TensorFlow ops without a StableHLO lowering: {', '.join(left[:5])}")
    return hlo, outputs


def import_tf(model, np_inputs):
    """Returns (bytecode, [(name, numpy output)]) for a Keras model / tf.Module and its example
    inputs, the outputs in the order the module returns them."""
    torch = sys.modules.get("torch")  # a torch model's module has imported it; never imported here
    if torch is not None and isinstance(model, torch.nn.Module):
        # It was called on TF tensors and failed with a bare TypeError deep in torch (issue 62).
        raise ImportFailure(f"framework tensorflow needs a Keras model or callable, got the torch.nn.Module "
                            f"{type(model).__name__}: declare framework torch")
    if not callable(model):
        raise ImportFailure(f"framework tensorflow needs a Keras model or callable, got {type(model).__name__}")
    hlo, outputs = _to_stablehlo(model, np_inputs)
    entries = re.findall(r"func\.func (?:public )?@([\w.$]+)\(", hlo)
    if len(entries) != 1:
        raise ImportFailure(f"expected one function after StableHLO legalisation, got {len(entries)}")
    hlo = re.sub(r"@" + re.escape(entries[0]) + r"\b", "@main", hlo)
    with tempfile.TemporaryDirectory(prefix="import_model_") as tmp:
        src = os.path.join(tmp, "model.stablehlo.mlir")
        dst = os.path.join(tmp, "model.mlirbc")
        with open(src, "w") as f:
            f.write(hlo)
        proc = subprocess.run(
            [sys.executable, "-m", "frontend.stablehlo_to_linalg", src, dst],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        if proc.returncode != 0:
            raise ImportFailure(f"StableHLO -> linalg failed: {first_line(proc.stderr)}")
        with open(dst, "rb") as f:
            return f.read(), outputs
