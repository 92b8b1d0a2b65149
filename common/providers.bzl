"""Providers passed between pipeline stages (frontend -> analysis -> codegen -> runtime).

Later stages take earlier stages' targets through these, never by file name.
"""

MlirModuleInfo = provider(
    doc = "A model imported to linalg-on-tensors MLIR (frontend/mlir_import).",
    fields = {
        "mlir": "File: MLIR bytecode, linalg-on-tensors",
        "golden": "File: .npz with the fixed-seed inputs (input_0..) and the framework's outputs (output_0..)",
        "model_name": "string: the model's name",
        "framework": "string: 'torch' or 'tensorflow'",
    },
)

IreeTargetInfo = provider(
    doc = "An IREE compile target (common/targets/*.yaml, or derived from an accelerator description).",
    fields = {
        "name": "string",
        "file": "File: the target's YAML description",
        "hardware": "File or None: the accelerator description a riscv target was derived from (its VLEN)",
    },
)

AnalysisInfo = provider(
    doc = "Per-dispatch tiling decisions (analysis/zigzag_analysis).",
    fields = {
        "analysis_json": "File: analysis.json",
        "module": "MlirModuleInfo the analysis was made for",
        "target": "IreeTargetInfo the dispatches were formed for",
        "hardware": "File: the hardware description analysed against",
    },
)

CompiledModuleInfo = provider(
    doc = "An IREE-compiled module with the analysis' configs applied (codegen/iree_compile).",
    fields = {
        "vmfb": "File: the IREE VM flatbuffer",
        "configs": "File: executable configurations codegen actually used (MLIR text)",
        "report": "File: JSON, per dispatch: applied tiles or default + reason",
        "analysis": "AnalysisInfo",
        "target": "IreeTargetInfo",
        "code": "File (directory) or None: the executable-targets IR and IREE's LLVM IR and assembly per executable (`code = True`), what the code model costs",
        "layout": "File or None: the dispatch layout this compile wrote (accelerator targets; common/dispatch_layout.py), what perf runs the vmfb's dispatches with",
    },
)

PerfInfo = provider(
    doc = "RISC-V performance of a compiled module (perf/defs.bzl riscv_perf, perf/measure.py): rules and indexes read its files from here, never by name.",
    fields = {
        "perf_json": "File: <name>.perf.json, per dispatch instruction counts, model and memory-aware cycles (common/perf_schema.py)",
        "perf_md": "File: <name>.perf.md, the same as tables",
        "compiled": "CompiledModuleInfo: the build measured",
        "hardware": "list of File: the accelerator descriptions measured on, the module's own first",
    },
)
