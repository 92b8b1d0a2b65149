"""Bad input to runtime's CLIs (runtime.manifest, runtime.run): each refused with one line naming
the culprit and the reason, a non-zero exit, and the directory as it was (common/probe.py).
Issue 51's cases: outputs aliasing inputs, a target file or hardware description that is not the
one the compile report recorded (a manifest once said x86_64 for RVV code), golden outputs the
module never returns or that hold NaN, and a bad npz blamed on the vmfb. Issue 62's: a NaN or Inf
input blamed on the outputs, a text file called "pickled data", `--atol inf` passing anything; a
vmfb that is not the one its manifest describes (bytes flipped in its weights or in an executable,
another build's under its name, a manifest naming another vmfb or forged to another's sha256) is
refused before it runs, and so is a vmfb without a manifest unless --no-manifest says to run it
unchecked."""

import hashlib
import io
import json
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest

from common.probe import MATMUL_MLIR, Probe

ROOT = Path(__file__).parent.parent
TARGETS = ROOT / "common" / "targets"
HW = ROOT / "analysis" / "hardware"


def _npz(arrays: dict) -> bytes:
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    return buf.getvalue()


@pytest.fixture(scope="module")
def builds(tmp_path_factory):
    """A host build of the matmul untuned and one tuned by its analysis, each packaged, with a
    golden npz, and another module's build: made once, copied into each probe's directory."""
    d = tmp_path_factory.mktemp("builds")
    p = Probe(d)
    p.write("m.mlir", MATMUL_MLIR)
    p.put(TARGETS / "host.yaml")
    p.put(HW / "host.yaml", "host_hw.yaml")
    p.put(HW / "riscv_rvv.yaml")
    steps = [("analysis.analyze", "--module", "m.mlir", "--target", "host.yaml", "--hardware", "host_hw.yaml",
              "--model-name", "m", "--out", "a.json")]
    for name, extra in (("u", ()), ("t", ("--analysis", "a.json"))):
        steps += [("codegen.compile", "--module", "m.mlir", "--target", "host.yaml", *extra, "--out-vmfb",
                   f"{name}.c.vmfb", "--out-configs", f"{name}.configs.mlir", "--out-report", f"{name}.report.json"),
                  ("runtime.manifest", "--vmfb", f"{name}.c.vmfb", "--report", f"{name}.report.json", "--module",
                   "m.mlir", "--target", "host.yaml", *extra, *(("--hardware", "host_hw.yaml") if extra else ()),
                   "--out-vmfb", f"{name}.vmfb", "--out-manifest", f"{name}.manifest.json")]
    # Another build (its matmul accumulates onto ones): other executables, for a vmfb not its manifest's.
    p.write("n.mlir", MATMUL_MLIR.replace("arith.constant 0.0", "arith.constant 1.0"))
    steps += [("codegen.compile", "--module", "n.mlir", "--target", "host.yaml", "--out-vmfb", "n.c.vmfb",
               "--out-configs", "n.configs.mlir", "--out-report", "n.report.json"),
              ("runtime.manifest", "--vmfb", "n.c.vmfb", "--report", "n.report.json", "--module", "n.mlir",
               "--target", "host.yaml", "--out-vmfb", "n.vmfb", "--out-manifest", "n.manifest.json")]
    for step in steps:
        r = p.run(*step)
        assert r.returncode == 0, r.stderr
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((64, 96), np.float32), rng.standard_normal((96, 128), np.float32)
    p.write("golden.npz", _npz({"input_0": a, "input_1": b, "output_0": a @ b}))
    r = p.run("runtime.run", "u.vmfb", "golden.npz", "--runs", "1", "--warmup", "0", "--check")
    assert r.returncode == 0, r.stderr
    shutil.rmtree(d / "tmp")
    return d


@pytest.fixture
def p(tmp_path, builds):
    probe = Probe(tmp_path)
    for f in builds.iterdir():
        probe.put(f)
    return probe


def manifest(*extra, vmfb="u.c.vmfb", report="u.report.json", target="host.yaml", out_vmfb="o.vmfb",
             out_manifest="o.manifest.json"):
    return ("runtime.manifest", "--vmfb", vmfb, "--report", report, "--module", "m.mlir", "--target", target,
            *extra, "--out-vmfb", out_vmfb, "--out-manifest", out_manifest)


def _manifest_is_report(p):
    return manifest(out_manifest="u.report.json"), "--out-manifest u.report.json", "the same file as --report"


def _out_vmfb_is_vmfb(p):
    return manifest(out_vmfb="u.c.vmfb"), "--out-vmfb u.c.vmfb", "the same file as --vmfb u.c.vmfb"


def _out_vmfb_is_out_manifest(p):
    return manifest(out_vmfb="o.json", out_manifest="o.json"), "--out-manifest o.json", "the same file as --out-vmfb"


def _target_of_another_triple(p):
    text = (p.root / "host.yaml").read_text().replace("x86_64-unknown-linux-gnu", "riscv64-unknown-linux-gnu")
    p.write("t.yaml", text)  # still named `host`: only the sha256 tells
    return manifest(target="t.yaml"), "t.yaml", ("not the target file u.report.json was compiled for",
                                                 "x86_64-unknown-linux-gnu")


def _target_runnable_flag_flipped(p):
    p.write("t.yaml", (p.root / "host.yaml").read_text().replace("runnable_on_host: true", "runnable_on_host: false"))
    return manifest(target="t.yaml"), "t.yaml", "not the target file"


def _hardware_for_an_untuned_build(p):
    return manifest("--hardware", "host_hw.yaml"), "host_hw.yaml", "an untuned build has none"


def _hardware_of_another_accelerator(p):
    return manifest("--analysis", "a.json", "--hardware", "riscv_rvv.yaml", vmfb="t.c.vmfb", report="t.report.json"), \
        "riscv_rvv.yaml", "not the hardware t.report.json's analysis was made for"


def _analysis_for_an_untuned_build(p):
    return manifest("--analysis", "a.json"), "a.json", "not the analysis u.report.json was compiled with"


def _analysis_missing(p):
    return manifest("--analysis", "gone.json"), "gone.json", "file not found"


def _manifest_under_a_file(p):
    return manifest(out_manifest="m.mlir/o.json"), "m.mlir/o.json", "m.mlir is not a directory"


def _tuned_build_without_its_analysis(p):
    """Issue 62 (B10): a tuned build packaged without --analysis/--hardware was accepted; its manifest
    recorded neither."""
    return manifest(vmfb="t.c.vmfb", report="t.report.json"), "t.report.json", \
        ("a tuned build", "give --analysis, the analysis it was compiled with")


def _tuned_build_without_its_hardware(p):
    return manifest("--analysis", "a.json", vmfb="t.c.vmfb", report="t.report.json"), "t.report.json", \
        ("a tuned build", "give --hardware, the hardware description its analysis was made for")


def _report_of_another_vmfb(p):
    p.write("other.vmfb", (p.root / "u.c.vmfb").read_bytes() + b"\0")
    return manifest(vmfb="other.vmfb"), "other.vmfb", "not the vmfb u.report.json describes"


def run(npz="golden.npz", *extra, vmfb="u.vmfb"):
    return ("runtime.run", vmfb, npz, "--runs", "1", "--warmup", "0", *extra)


def _golden(p, name="g.npz", **change):
    with np.load(p.root / "golden.npz") as data:
        arrays = {k: data[k] for k in data.files}
    arrays.update(change)
    arrays = {k: v for k, v in arrays.items() if v is not None}
    p.write(name, _npz(arrays))


def _golden_output_never_returned(p):
    _golden(p, output_1=np.zeros(3, np.float32))
    return run("g.npz", "--check"), "g.npz", ("2 golden outputs, the module returns 1", "output_1 is never compared")


def _golden_nan(p):
    with np.load(p.root / "golden.npz") as data:
        out = data["output_0"].copy()
    out[0, 0] = np.nan
    _golden(p, output_0=out)
    return run("g.npz", "--check"), "g.npz", "output_0 holds NaN or Inf"


def _golden_without_outputs(p):
    _golden(p, output_0=None)
    return run("g.npz", "--check"), "g.npz", "has none"


def _golden_wrong_values(p):
    with np.load(p.root / "golden.npz") as data:
        _golden(p, output_0=data["output_0"] + 1)
    return run("g.npz", "--check"), "output_0", "mismatch, max abs error 1"


def _golden_named_output_wrong_values(p):
    """A structured model's golden names each output by its place in what the model returns."""
    with np.load(p.root / "golden.npz") as data:
        _golden(p, output_0=data["output_0"] + 1, names=np.array(["['zeta']"]))
    return run("g.npz", "--check"), "output_0 ['zeta']", "mismatch, max abs error 1"


def _input_nan(p):
    """Was blamed on the module: "output_0: mismatch, max abs error nan" (issue 62)."""
    with np.load(p.root / "golden.npz") as data:
        x = data["input_1"].copy()
    x[3, 4], x[5, 6] = np.nan, -np.inf
    _golden(p, input_1=x)
    return run("g.npz", "--check"), "g.npz", "input_1 holds 1 NaN and 1 Inf of 12288 values"


def _atol_inf(p):
    """`--atol inf` passed any output (issue 62)."""
    with np.load(p.root / "golden.npz") as data:
        _golden(p, output_0=data["output_0"] + 1)
    return run("g.npz", "--check", "--atol", "inf"), "--atol inf", "a tolerance must be a finite number >= 0"


def _rtol_negative(p):
    return run("golden.npz", "--check", "--rtol=-1e-4"), "--rtol -0.0001", "a tolerance must be a finite number"


def _rtol_nan(p):
    return run("golden.npz", "--check", "--rtol", "nan"), "--rtol nan", "a tolerance must be a finite number"


def _npz_text_file(p):
    """Was "Cannot load file containing pickled data when allow_pickle=False" (issue 62)."""
    p.write("g.npz", "input_0,input_1\n1.0,2.0\n")
    return run("g.npz"), "g.npz", ("not a zip archive", "b'input_0,'")


def _npz_is_an_npy(p):
    buf = io.BytesIO()
    np.save(buf, np.zeros(3, np.float32))
    p.write("g.npz", buf.getvalue())
    return run("g.npz"), "g.npz", ("not a zip archive", "NUMPY")


def _npz_garbage(p):
    p.write("g.npz", bytes(range(256)) * 8)
    return run("g.npz"), "g.npz", "not a readable .npz"


def _npz_pickled_object_array(p):
    p.write("g.npz", _npz({"input_0": np.array([{"a": 1}], dtype=object)}))
    return run("g.npz"), "g.npz", "not a readable .npz"


def _manifest_corrupted(p):
    p.write("u.manifest.json", "{not json")
    return run(), "u.manifest.json", "not a manifest"


def _manifest_without_target(p):
    p.write("u.manifest.json", json.dumps({"entry_points": []}))
    return run(), "u.manifest.json", "not a manifest"


def _input_of_another_dtype(p):
    with np.load(p.root / "golden.npz") as data:
        _golden(p, input_0=data["input_0"].astype(np.float64))
    return run("g.npz"), "g.npz", "input_0 is float64"


def _npz_extra_input(p):
    """Issue 62 (B4): an input the entry point does not take was accepted (exit 0), never passed."""
    _golden(p, input_2=np.zeros((4, 4), np.float32))
    return run("g.npz", "--check"), "g.npz", "input_2 is never passed: main takes 2 inputs (input_0..input_1)"


def _npz_unused_huge_array(p):
    """Issue 62 (B4): a 0.5 MB npz carrying an unused 512 MB compressed array was decompressed whole
    (RSS 555 MB), then accepted. Here 64 MB: refused by its name, before anything is read."""
    with np.load(p.root / "golden.npz") as data:
        arrays = {k: data[k] for k in data.files}
    buf = io.BytesIO()
    np.savez_compressed(buf, **arrays, junk=np.zeros(2**24, np.float32))
    p.write("g.npz", buf.getvalue())
    return run("g.npz", "--check"), "g.npz", "junk is neither an input_<i> nor a golden output_<i>"


def _npz_input_of_another_shape_is_refused_unread(p):
    """The shape is read from the .npy header: a wrong-shaped input is refused before its bytes are
    (here they are corrupt; reading them gave "Bad CRC-32")."""
    _golden(p, input_1=np.ones((96, 64), np.float32))
    _flip(p, "g.npz", _archive_offset(p, "g.npz", "input_1.npy") + 1000)
    return run("g.npz"), "g.npz", "input_1 has shape [96, 64], main expects [96, 128]"


def _atol_huge_finite(p):
    """Issue 62 (B5): `--atol 1e300` passed any output (`--atol inf` was refused)."""
    with np.load(p.root / "golden.npz") as data:
        _golden(p, output_0=data["output_0"] + 100)
    return run("g.npz", "--check", "--atol", "1e300"), "--atol 1e+300", ("passes any output", "at most 1")


def _rtol_huge_finite(p):
    """Issue 62 (B5): `--rtol 1e10` passed an output of the wrong sign."""
    with np.load(p.root / "golden.npz") as data:
        _golden(p, output_0=data["output_0"] * -3)
    return run("g.npz", "--check", "--rtol", "1e10"), "--rtol 1e+10", ("passes any output", "below 1")


def _atol_an_all_zero_output_would_pass(p):
    """An --atol within the bound, but not below the golden's largest value: checks nothing."""
    with np.load(p.root / "golden.npz") as data:
        a, b = data["input_0"] * 1e-3, data["input_1"]
    _golden(p, input_0=a, output_0=a @ b)
    return run("g.npz", "--check", "--atol", "0.5"), "--atol 0.5", "an all-zero output_0 would pass"


def _golden_of_another_dtype(p):
    """Issue 62: an int32 golden against a float32 output was a bare "mismatch"."""
    with np.load(p.root / "golden.npz") as data:
        _golden(p, output_0=np.rint(data["output_0"]).astype(np.int32))
    return run("g.npz", "--check"), "output_0", ("mismatch", "the golden is int32, the module returns float32")


def _runs_zero(p):
    """Issue 62: --runs 0 (or -3) ran once without a word."""
    return run("golden.npz", "--runs", "0"), "--runs 0", "at least 1 run"


def _runs_negative(p):
    return run("golden.npz", "--runs", "-3", "--check"), "--runs -3", "at least 1 run"


def _vmfb_is_a_directory(p):
    """Issue 62: a directory, /dev/null or a FIFO given as a file was "not found"."""
    (p.root / "d.vmfb").mkdir()
    return run("golden.npz", vmfb="d.vmfb"), "d.vmfb", "is a directory, not a vmfb"


def _vmfb_is_dev_null(p):
    return run("golden.npz", vmfb="/dev/null"), "/dev/null", "is a device, not a vmfb"


def _npz_is_a_directory(p):
    (p.root / "g.npz").mkdir()
    return run("g.npz"), "g.npz", "is a directory, not an .npz"


def _npz_is_dev_null(p):
    return run("/dev/null"), "/dev/null", "is a device, not an .npz"


def _manifest_is_a_directory(p):
    (p.root / "u.manifest.json").unlink()
    (p.root / "u.manifest.json").mkdir()
    return run("golden.npz"), "u.manifest.json", "is a directory, not a manifest"


def _edit_manifest(p, edit) -> None:
    m = json.loads((p.root / "u.manifest.json").read_text())
    edit(m)
    p.write("u.manifest.json", json.dumps(m))


def _manifest_without_entry_points(p):
    """Issue 62: hand-edited manifests were blamed on the vmfb ("no entry point (have [])",
    KeyError, TypeError) or on the npz ("main expects 4x64")."""
    _edit_manifest(p, lambda m: m.update(entry_points=[]))
    return run("golden.npz"), "u.manifest.json", ("not a manifest", "field 'entry_points'", "at least 1 item")


def _manifest_input_shape_a_string(p):
    _edit_manifest(p, lambda m: m["entry_points"][0]["inputs"][0].update(shape="64x96"))
    return run("golden.npz"), "u.manifest.json", ("not a manifest", "field 'entry_points.0.inputs.0.shape'")


def _manifest_input_without_dtype(p):
    _edit_manifest(p, lambda m: m["entry_points"][0]["inputs"][0].pop("dtype"))
    return run("golden.npz"), "u.manifest.json", ("field 'entry_points.0.inputs.0.dtype'", "Field required")


def _manifest_dtype_bogus(p):
    _edit_manifest(p, lambda m: m["entry_points"][0]["inputs"][0].update(dtype="float17"))
    return run("golden.npz"), "u.manifest.json", ("field 'entry_points.0.inputs.0.dtype'", "'float17' is not a dtype")


def _manifest_entry_renamed(p):
    _edit_manifest(p, lambda m: m["entry_points"][0].update(name="forward"))
    return run("golden.npz"), "u.manifest.json", ("entry point 'forward' is not a function of u.vmfb",
                                                  "the manifest was edited")


# Issue 62, own probe: a manifest's entry point edited against the vmfb it describes. An output's
# shape or dtype edited ran with exit 0; an input's shape edited was blamed on the npz ("golden.npz:
# input_0 has shape [64, 96], main expects [64, 97]"); an entry point listed twice, or `entry_points`
# given twice (the last one read), ran. The vmfb's own declaration of its function says otherwise.
def _manifest_output_shape_edited(p):
    _edit_manifest(p, lambda m: m["entry_points"][0]["outputs"][0].update(shape=[64, 129]))
    return run("golden.npz", "--check"), "u.manifest.json", \
        ("entry point 'main' outputs (float32[64, 129]) are not u.vmfb's (float32[64, 128])", "the manifest was edited")


def _manifest_output_dtype_edited(p):
    _edit_manifest(p, lambda m: m["entry_points"][0]["outputs"][0].update(dtype="int32"))
    return run("golden.npz"), "u.manifest.json", "outputs (int32[64, 128]) are not u.vmfb's (float32[64, 128])"


def _manifest_input_shape_edited(p):
    _edit_manifest(p, lambda m: m["entry_points"][0]["inputs"][1].update(shape=[96, 129]))
    return run("golden.npz"), "u.manifest.json", \
        "inputs (float32[64, 96], float32[96, 129]) are not u.vmfb's (float32[64, 96], float32[96, 128])"


def _manifest_entry_point_listed_twice(p):
    _edit_manifest(p, lambda m: m["entry_points"].append(dict(m["entry_points"][0])))
    return run("golden.npz"), "u.manifest.json", ("not a manifest", "entry point 'main' is listed twice")


def _manifest_key_given_twice(p):
    text = (p.root / "u.manifest.json").read_text()
    p.write("u.manifest.json", '{"entry_points": [{"name": "other", "inputs": []}], ' + text.lstrip()[1:])
    return run("golden.npz"), "u.manifest.json", ("not a manifest", "key 'entry_points' given twice")


def _flip(p, name: str, offset: int, n: int = 16):
    data = bytearray((p.root / name).read_bytes())
    data[offset:offset + n] = bytes(b ^ 0x5A for b in data[offset:offset + n])
    p.write(name, bytes(data))


def _archive_offset(p, name: str, entry: str) -> int:
    """Where `entry`'s bytes start in the vmfb archive `name` (stored, not compressed)."""
    import zipfile

    with zipfile.ZipFile(p.root / name) as z:
        info = z.getinfo(entry)
    header = (p.root / name).read_bytes()[info.header_offset:info.header_offset + 30]
    name_len, extra_len = int.from_bytes(header[26:28], "little"), int.from_bytes(header[28:30], "little")
    return info.header_offset + 30 + name_len + extra_len


def _vmfb_bytes_flipped_in_its_module_fb(p):
    # The case: 16 bytes flipped in module.fb (where a model's weights are) ran with wrong outputs.
    _flip(p, "u.vmfb", _archive_offset(p, "u.vmfb", "module.fb") + 2600)
    return run("golden.npz"), "u.vmfb", ("not the vmfb u.manifest.json describes", "other bytes differ", "rebuild it")


def _vmfb_bytes_flipped_in_an_executable(p):
    # The other case: bytes inside the embedded ELF crashed the run (rc -11, no message).
    import zipfile

    elf = next(i.filename for i in zipfile.ZipFile(p.root / "u.vmfb").infolist() if i.filename.endswith(".so"))
    _flip(p, "u.vmfb", _archive_offset(p, "u.vmfb", elf) + 1024)
    return run("golden.npz"), "u.vmfb", ("not the vmfb u.manifest.json describes", "Bad CRC-32")


def _vmfb_of_another_build_under_its_name(p):
    p.write("u.vmfb", (p.root / "n.vmfb").read_bytes())
    return run("golden.npz"), "u.vmfb", "the executables it embeds are not the ones u.manifest.json records"


def _manifest_forged_to_another_vmfbs_sha256(p):
    # The file's sha256 matches, but its executables are not the ones recorded: both are checked.
    m = json.loads((p.root / "u.manifest.json").read_text())
    p.write("u.vmfb", (p.root / "n.vmfb").read_bytes())
    m["inputs_sha256"]["vmfb"] = hashlib.sha256((p.root / "u.vmfb").read_bytes()).hexdigest()
    p.write("u.manifest.json", json.dumps(m))
    return run("golden.npz"), "u.vmfb", "the executables it embeds are not the ones u.manifest.json records"


def _manifest_naming_another_vmfb(p):
    m = json.loads((p.root / "u.manifest.json").read_text())
    p.write("u.manifest.json", json.dumps({**m, "vmfb": "n.vmfb"}))
    return run("golden.npz"), "u.vmfb", "u.manifest.json is the manifest of n.vmfb, not of u.vmfb"


def _manifest_given_is_another_vmfbs(p):
    return run("golden.npz", "--manifest", "n.manifest.json"), "u.vmfb", "the manifest of n.vmfb, not of u.vmfb"


def _manifest_given_missing(p):
    return run("golden.npz", "--manifest", "gone.manifest.json"), "gone.manifest.json", "manifest not found"


def _vmfb_without_a_manifest(p):
    p.write("x.vmfb", (p.root / "u.vmfb").read_bytes())
    return run("golden.npz", vmfb="x.vmfb"), "x.vmfb", ("no manifest next to it", "--no-manifest")


def _no_manifest_with_a_manifest_beside_it(p):
    return run("golden.npz", "--no-manifest"), "u.vmfb", "drop --no-manifest"


def _no_manifest_on_garbage(p):
    p.write("x.vmfb", bytes(range(256)) * 8)
    return run("golden.npz", "--no-manifest", vmfb="x.vmfb"), "x.vmfb", "IREE's runtime cannot load it"


CASES = [_manifest_is_report, _out_vmfb_is_vmfb, _out_vmfb_is_out_manifest, _target_of_another_triple,
         _target_runnable_flag_flipped, _hardware_for_an_untuned_build, _hardware_of_another_accelerator,
         _analysis_for_an_untuned_build, _analysis_missing, _manifest_under_a_file, _report_of_another_vmfb,
         _tuned_build_without_its_analysis, _tuned_build_without_its_hardware,
         _golden_output_never_returned, _golden_nan, _golden_without_outputs, _golden_wrong_values, _npz_garbage,
         _npz_pickled_object_array, _manifest_corrupted, _manifest_without_target, _input_of_another_dtype,
         _golden_named_output_wrong_values, _input_nan, _atol_inf, _rtol_negative, _rtol_nan, _npz_text_file,
         _npz_is_an_npy, _vmfb_bytes_flipped_in_its_module_fb, _vmfb_bytes_flipped_in_an_executable,
         _vmfb_of_another_build_under_its_name, _manifest_forged_to_another_vmfbs_sha256,
         _manifest_naming_another_vmfb, _manifest_given_is_another_vmfbs, _manifest_given_missing,
         _vmfb_without_a_manifest, _no_manifest_with_a_manifest_beside_it, _no_manifest_on_garbage,
         _npz_extra_input, _npz_unused_huge_array, _npz_input_of_another_shape_is_refused_unread,
         _atol_huge_finite, _rtol_huge_finite, _atol_an_all_zero_output_would_pass, _golden_of_another_dtype,
         _runs_zero, _runs_negative, _vmfb_is_a_directory, _vmfb_is_dev_null, _npz_is_a_directory,
         _npz_is_dev_null, _manifest_is_a_directory, _manifest_without_entry_points,
         _manifest_input_shape_a_string, _manifest_input_without_dtype, _manifest_dtype_bogus,
         _manifest_entry_renamed, _manifest_output_shape_edited, _manifest_output_dtype_edited,
         _manifest_input_shape_edited, _manifest_entry_point_listed_twice, _manifest_key_given_twice]
PROGS = {"runtime.manifest": "runtime.manifest: error", "runtime.run": "runtime.run: error"}


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.__name__.strip("_"))
def test_refused(p, case):
    argv, culprit, reason = case(p)
    p.refused(*argv, prog=PROGS[argv[0]], culprit=culprit, reason=reason)


@pytest.fixture
def elsewhere(tmp_path_factory):
    """A directory beside the probe's: a FIFO cannot be inside it (its snapshot reads every file)."""
    return tmp_path_factory.mktemp("fifo")


def test_a_fifo_as_the_npz_or_manifest_is_named(p, elsewhere):
    """Issue 62: a FIFO given as the npz was "input file not found", as the manifest "not found"
    (and reading one would block)."""
    import os

    fifo = elsewhere / "g.npz"
    os.mkfifo(fifo)
    p.refused(*run(fifo), prog="runtime.run: error", culprit=fifo, reason="is a FIFO, not an .npz",
              timeout=60)
    p.refused(*run("golden.npz", "--manifest", fifo), prog="runtime.run: error", culprit=fifo,
              reason="is a FIFO, not a manifest", timeout=60)


def test_an_unread_golden_output_is_never_decompressed(p):
    """Issue 62 (B4): every array of the npz was read before anything ran; now only those used are
    (output_0 here is corrupt: reading it gave "Bad CRC-32"; without --check nothing reads it)."""
    _flip(p, "golden.npz", _archive_offset(p, "golden.npz", "output_0.npy") + 1000)
    r = p.run(*run("golden.npz"))
    assert r.returncode == 0, r.stderr
    r = p.run(*run("golden.npz", "--check"))
    assert r.returncode == 1 and "Bad CRC-32" in r.stderr, r.stderr


def test_tolerances_at_their_bounds_are_taken(p):
    r = p.run(*run("golden.npz", "--check", "--rtol", "0.5", "--atol", "1"))
    assert r.returncode == 0, r.stderr


def test_the_tuned_build_packages_with_its_own_hardware(p):
    r = p.run(*manifest("--analysis", "a.json", "--hardware", "host_hw.yaml", vmfb="t.c.vmfb",
                        report="t.report.json"))
    assert r.returncode == 0, r.stderr


def test_a_vmfb_without_a_manifest_runs_unchecked_only_when_asked(p):
    p.write("x.vmfb", (p.root / "u.vmfb").read_bytes())
    r = p.run(*run("golden.npz", "--no-manifest", "--check", vmfb="x.vmfb"))
    assert r.returncode == 0, r.stderr
    assert "unchecked module (--no-manifest)" in r.stdout and "1 outputs match" in r.stdout


def test_a_manifest_given_elsewhere_checks_its_vmfb(p):
    (p.root / "m").mkdir()
    (p.root / "u.manifest.json").rename(p.root / "m" / "u.manifest.json")
    r = p.run(*run("golden.npz", "--manifest", "m/u.manifest.json", "--check"))
    assert r.returncode == 0, r.stderr


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q", "-p", "no:cacheprovider"]))
