"""Bad input to the frontend's CLIs (import_model, stablehlo_to_linalg): each refused with one line
naming the culprit and the reason, a non-zero exit, and the directory as it was (common/probe.py).
Issue 51's cases: an output that is the model's own source or the other output, earlier outputs
deleted by a failed import, NaN/Inf goldens, a factory that exits, torch-mlir's reason lost,
unwritable outputs, SIGTERM. Issue 62's: a torch model declared as TensorFlow (a bare TypeError), and
a Keras model declared as torch. Issue 64's: PyTorch's own quantization flow (PT2E) where torch-mlir
cannot take it, dynamic quantization and the integer reference representation, each named; the
static PT2E model imports (models/pt2e_cnn.py)."""

import signal
import sys
import time
from pathlib import Path

import pytest

from common.probe import Probe, snapshot

MODELS = '''
import sys

import numpy as np
import torch
from torch import nn


def _linear():
    torch.manual_seed(0)
    return nn.Linear(3, 2)


def good():
    return _linear(), (np.ones((2, 3), np.float32),)


def nan_weights():
    model = _linear()
    with torch.no_grad():
        model.weight[0, 0] = float("nan")
    return model, (np.ones((2, 3), np.float32),)


def inf_input():
    x = np.ones((2, 3), np.float32)
    x[1, 2] = np.inf
    return _linear(), (x,)


def exits():
    sys.exit(0)


def complex_abs():
    """torch.export takes it; torch-mlir cannot lower |rfft(x)| to linalg (math.absf of complex)."""
    class Spectrum(nn.Module):
        def forward(self, x):
            return torch.fft.rfft(x).abs()
    return Spectrum(), (np.ones((4, 8), np.float32),)


def keras_model():
    import keras

    x = keras.Input((3,), batch_size=2)
    return keras.Model(x, keras.layers.Dense(2)(x)), (np.ones((2, 3), np.float32),)


def _pt2e(dynamic, reference):
    from torchao.quantization.pt2e import allow_exported_model_train_eval
    from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e
    from torchao.testing.pt2e._xnnpack_quantizer import XNNPACKQuantizer, get_symmetric_quantization_config

    x = torch.ones((2, 3))
    quantizer = XNNPACKQuantizer().set_global(get_symmetric_quantization_config(is_dynamic=dynamic))
    prepared = prepare_pt2e(torch.export.export(_linear(), (x,)).module(), quantizer)
    prepared(x)
    model = convert_pt2e(prepared, use_reference_representation=reference)
    allow_exported_model_train_eval(model)
    return model, (np.ones((2, 3), np.float32),)


def pt2e_dynamic():
    return _pt2e(dynamic=True, reference=False)


def pt2e_reference():
    return _pt2e(dynamic=False, reference=True)


def returns_nothing():
    class Nothing(nn.Module):
        def forward(self, x):
            return ()
    return Nothing(), (np.ones((2, 3), np.float32),)


def nondeterministic():
    class Noisy(nn.Module):
        def forward(self, x):
            return x + torch.rand_like(x)
    return Noisy(), (np.ones((2, 3), np.float32),)


def counts_its_calls():
    """Deterministic code, but state a call changes: the second pass differs from the golden's."""
    class Counter(nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("calls", torch.zeros(()))

        def forward(self, x):
            self.calls.add_(1)
            return {"scaled": x * self.calls}
    return Counter(), (np.ones((2, 3), np.float32),)


def keras_nondeterministic():
    import tensorflow as tf

    return (lambda x: x + tf.random.uniform(tf.shape(x))), (np.ones((2, 3), np.float32),)


def bf16_input():
    return _linear().to(torch.bfloat16), (torch.ones((2, 3), dtype=torch.bfloat16),)


def exits_in_forward():
    class Quits(nn.Module):
        def forward(self, x):
            sys.exit(3)
    return Quits(), (np.ones((2, 3), np.float32),)
'''


@pytest.fixture
def p(tmp_path):
    probe = Probe(tmp_path)
    probe.write("mymodels.py", MODELS)
    probe.write("quits_on_import.py", "import sys\nsys.exit(0)\n")
    return probe


def import_(factory, *, module="mymodels", mlir="o.mlirbc", golden="o.golden.npz", name="tiny", framework="torch"):
    return ("frontend.import_model", "--model-module", module, "--factory", factory, "--framework", framework,
            "--name", name, "--out-mlir", mlir, "--out-golden", golden)


def _mlir_is_the_model_source(p):
    return import_("good", mlir="mymodels.py"), "--out-mlir mymodels.py", "the same file as --model-module"


def _golden_is_the_model_source(p):
    return import_("good", golden="./mymodels.py"), "--out-golden ./mymodels.py", "the same file as --model-module"


def _mlir_is_the_golden(p):
    return import_("good", mlir="o.out", golden="o.out"), "--out-golden o.out", "the same file as --out-mlir o.out"


def _failed_import_keeps_earlier_outputs(p):
    p.write("o.mlirbc", b"an earlier good module")
    p.write("o.golden.npz", b"its golden")
    return import_("no_such_factory"), "tiny", "has no factory 'no_such_factory'"


def _nan_weights(p):
    return import_("nan_weights"), "tiny", ("output_0 holds 2 NaN", "no golden")


def _inf_input(p):
    return import_("inf_input"), "tiny", "input_0 holds 0 NaN and 1 Inf"


def _factory_exits(p):
    return import_("exits"), "tiny", "'mymodels.exits()' called sys.exit(0)"


def _module_exits_on_import(p):
    return import_("good", module="quits_on_import"), "tiny", "'quits_on_import' called sys.exit(0) when imported"


def _model_exits_in_forward(p):
    return import_("exits_in_forward"), "tiny", "sys.exit(3)"


def _returns_no_outputs(p):
    """Issue 62 (B7): a model returning () imported with exit 0 (a golden without outputs; codegen
    then failed on an internal temporary path)."""
    return import_("returns_nothing"), "tiny", "the model returns no outputs"


def _nondeterministic(p):
    """Issue 62 (B8): x + torch.rand_like(x) imported with exit 0; `runtime.run --check` then said
    "mismatch, max abs error 0.615", which reads as a miscompile."""
    return import_("nondeterministic"), "tiny", ("output_0 differs between two forward passes on the same inputs",
                                                "max abs difference", "not deterministic")


def _stateful_forward(p):
    return import_("counts_its_calls"), "tiny", ("output_0 ['scaled'] differs between two forward passes",
                                                "max abs difference 1")


def _keras_nondeterministic(p):
    return import_("keras_nondeterministic", framework="tensorflow"), "tiny", ("output_0 differs between two",
                                                                             "not deterministic")


def _bf16_input(p):
    """Issue 62: a bfloat16 example input was a bare "TypeError: Got unsupported ScalarType BFloat16"."""
    return import_("bf16_input"), "tiny", "example input 0 has unsupported dtype bfloat16 (supported dtypes:"


def _torch_mlir_cannot_lower(p):
    """The reason was cut at "failed with the following diagnostics:" (MLIR's diagnostic went to the
    silenced stderr), and torch-mlir's reproducer was left in TMPDIR."""
    return import_("complex_abs"), "tiny", ("cannot be lowered to linalg by torch-mlir",
                                            "'math.absf' op operand #0 must be floating-point-like")


def _mlir_under_a_file(p):
    return import_("good", mlir="mymodels.py/o.mlirbc"), "mymodels.py/o.mlirbc", "mymodels.py is not a directory"


def _golden_is_a_directory(p):
    (p.root / "g").mkdir()
    return import_("good", golden="g"), "g: cannot write the output", "is a directory"


def _torch_model_declared_tensorflow(p):
    """Was "import_model: tiny: TypeError: linear(): argument 'input' (position 1) must be Tensor,
    not EagerTensor" (issue 62)."""
    return import_("good", framework="tensorflow"), "tiny", ("framework tensorflow needs a Keras model",
                                                            "torch.nn.Module Linear", "declare framework torch")


def _keras_model_declared_torch(p):
    return import_("keras_model"), "tiny", ("framework torch needs a torch.nn.Module, got Functional",
                                           "declare framework tensorflow")


def _pt2e_dynamic(p):
    """Issue 64: PT2E's dynamic quantization computes its scale in the graph (choose_qparams)."""
    return import_("pt2e_dynamic"), "tiny", ("cannot be lowered to linalg by torch-mlir",
                                            "torch.quantized_decomposed.choose_qparams.tensor")


def _pt2e_reference(p):
    """Issue 64: the integer reference representation exports; torch-mlir's FX importer has no
    out_dtype (it was reported as a torch.export failure)."""
    return import_("pt2e_reference"), "tiny", ("cannot be imported by torch-mlir's FX importer",
                                              "'out_dtype' not implemented")


def convert(src, dst):
    return ("frontend.stablehlo_to_linalg", src, dst)


def _stablehlo_out_is_in(p):
    p.write("s.mlir", "func.func @main() { return }\n")
    return convert("s.mlir", "s.mlir"), "OUT s.mlir", "the same file as IN s.mlir"


def _stablehlo_in_missing(p):
    return convert("gone.mlir", "o.mlirbc"), "gone.mlir", "cannot open input file"


def _stablehlo_in_junk(p):
    p.write("s.mlir", "func.func @f( {\n")
    return convert("s.mlir", "o.mlirbc"), "s.mlir", "iree-compile failed"


def _stablehlo_out_under_a_file(p):
    p.write("s.mlir", "func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {\n"
                      "  %0 = stablehlo.add %a, %a : tensor<4xf32>\n  return %0 : tensor<4xf32>\n}\n")
    return convert("s.mlir", "s.mlir/o.mlirbc"), "s.mlir/o.mlirbc", "s.mlir is not a directory"


CASES = [_mlir_is_the_model_source, _golden_is_the_model_source, _mlir_is_the_golden,
         _failed_import_keeps_earlier_outputs, _nan_weights, _inf_input, _factory_exits, _module_exits_on_import,
         _model_exits_in_forward, _torch_mlir_cannot_lower, _torch_model_declared_tensorflow,
         _keras_model_declared_torch, _pt2e_dynamic, _pt2e_reference, _mlir_under_a_file, _golden_is_a_directory, _stablehlo_out_is_in,
         _stablehlo_in_missing, _stablehlo_in_junk, _stablehlo_out_under_a_file, _returns_no_outputs,
         _nondeterministic, _stateful_forward, _keras_nondeterministic, _bf16_input]
PROGS = {"frontend.import_model": "import_model: tiny", "frontend.stablehlo_to_linalg": "stablehlo_to_linalg"}


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.__name__.strip("_"))
def test_refused(p, case):
    argv, culprit, reason = case(p)
    p.refused(*argv, prog=PROGS[argv[0]], culprit=culprit, reason=reason)


def test_sigterm_during_the_import_is_one_line_and_leaves_nothing(p):
    """SIGTERM while torch loads and the model is exported: one line, nothing written."""
    before = snapshot(p.root)
    started = time.monotonic()
    result, _ = p.interrupt(*import_("good"), when=lambda pid, kids: time.monotonic() - started > 1.5)
    p.check_refused(result, before, "import_model: tiny", "tiny", "interrupted by SIGTERM")
    assert result.returncode == 128 + signal.SIGTERM


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q", "-p", "no:cacheprovider"]))
