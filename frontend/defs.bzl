"""`mlir_import`: a model (py_library + factory function) -> linalg-on-tensors MLIR bytecode.

In the style of tfcompile's `tf_library`: the public macro creates a per-model
importer binary (frontend's CLI plus the model's py_library) and a private rule
that runs it as a build action, declaring `<model_name>.mlirbc` and
`<model_name>.golden.npz` and returning `MlirModuleInfo`, so later stages take
the target and never a file name.
"""

load("@rules_python//python:defs.bzl", "py_binary")
load("//common:providers.bzl", "MlirModuleInfo")

FRAMEWORKS = ["torch", "tensorflow"]

def _mlir_import_impl(ctx):
    model_name = ctx.attr.model_name
    mlir = ctx.actions.declare_file(model_name + ".mlirbc")
    golden = ctx.actions.declare_file(model_name + ".golden.npz")

    # Scratch space for anything that would otherwise land in HOME (Keras,
    # matplotlib, torch caches); the sandbox drops it after the action.
    scratch = "%s/_%s.scratch" % (mlir.dirname, ctx.label.name)
    ctx.actions.run(
        executable = ctx.executable.importer,
        arguments = [
            "--model-module",
            ctx.attr.module,
            "--factory",
            ctx.attr.factory,
            "--framework",
            ctx.attr.framework,
            "--name",
            model_name,
            "--out-mlir",
            mlir.path,
            "--out-golden",
            golden.path,
        ],
        outputs = [mlir, golden],
        env = {
            "HOME": scratch + "/home",
            "KERAS_HOME": scratch + "/keras",
            "XDG_CACHE_HOME": scratch + "/cache",
            "TORCH_HOME": scratch + "/torch",
            "MPLCONFIGDIR": scratch + "/matplotlib",
            "TMPDIR": scratch + "/tmp",
            "TF_CPP_MIN_LOG_LEVEL": "2",
            "PYTHONHASHSEED": "0",
        },
        mnemonic = "MlirImport",
        progress_message = "Importing %s (%s) to linalg MLIR" % (model_name, ctx.attr.framework),
    )
    return [
        DefaultInfo(
            files = depset([mlir, golden]),
            runfiles = ctx.runfiles(files = [mlir, golden]),
        ),
        MlirModuleInfo(
            mlir = mlir,
            golden = golden,
            model_name = model_name,
            framework = ctx.attr.framework,
        ),
    ]

_mlir_import = rule(
    implementation = _mlir_import_impl,
    attrs = {
        "importer": attr.label(mandatory = True, executable = True, cfg = "exec"),
        "module": attr.string(mandatory = True),
        "factory": attr.string(mandatory = True),
        "framework": attr.string(mandatory = True, values = FRAMEWORKS),
        "model_name": attr.string(mandatory = True),
    },
    doc = "Runs a per-model importer; outputs <model_name>.mlirbc and <model_name>.golden.npz.",
)

def mlir_import(name, model, module, factory, framework, model_name = None, visibility = None, tags = None, **kwargs):
    """Imports a model to linalg-on-tensors MLIR bytecode plus a golden .npz.

    Args:
      name: target name; provides MlirModuleInfo.
      model: label of the model's py_library.
      module: the model's Python module, dotted from the workspace root (e.g. "models.resnet18").
      factory: name of a function in `module` returning (model, example_inputs).
      framework: "torch" or "tensorflow".
      model_name: name of the model and its output files; defaults to `name`
        without a trailing "_import".
      visibility, tags: as usual; other kwargs go to the import rule.
    """
    if framework not in FRAMEWORKS:
        fail("mlir_import(%s): framework must be one of %s, got %r" % (name, FRAMEWORKS, framework))
    if not model:
        fail("mlir_import(%s): `model` (the model's py_library label) is required" % name)
    if not module or type(module) != "string" or "/" in module or module.endswith(".py"):
        fail("mlir_import(%s): `module` must be a dotted Python module such as \"models.resnet18\", got %r" % (name, module))
    if not factory or type(factory) != "string" or not factory.replace("_", "a").isalnum():
        fail("mlir_import(%s): `factory` must be the name of a function in %s, got %r" % (name, module, factory))
    if model_name == None:
        model_name = name[:-len("_import")] if name.endswith("_import") and name != "_import" else name
    if not model_name or "/" in model_name:
        fail("mlir_import(%s): bad model_name %r" % (name, model_name))

    importer = name + "_importer"
    py_binary(
        name = importer,
        srcs = [str(Label("//frontend:importer_main.py"))],
        main = str(Label("//frontend:importer_main.py")),
        python_version = "PY3",
        deps = [
            str(Label("//frontend:import_model")),
            model,
        ],
        visibility = ["//visibility:private"],
        tags = tags,
    )
    _mlir_import(
        name = name,
        importer = ":" + importer,
        module = module,
        factory = factory,
        framework = framework,
        model_name = model_name,
        visibility = visibility,
        tags = tags,
        **kwargs
    )
