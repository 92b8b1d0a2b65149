"""runtime: hal_module manifest and the runner (host runs and matches; riscv fails with one line)."""

import hashlib
import io
import json
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

GOLDEN = ROOT / "codegen" / "testdata" / "small_golden.npz"


@pytest.fixture(scope="module")
def modules(tmp_path_factory):
    """The hal_module outputs from Bazel's runfiles, or built here when run outside Bazel."""
    names = ("small_host", "small_riscv64_rvv", "small_host_iree_default")
    here = ROOT / "runtime"
    if all((here / f"{n}.vmfb").is_file() for n in names):
        return {n: here / f"{n}.vmfb" for n in names}
    from codegen import compile as cg
    from runtime import manifest

    tmp = tmp_path_factory.mktemp("mods")
    out = {}
    for n, t, tuned in (("small_host", "host", True), ("small_riscv64_rvv", "riscv64_rvv", True),
                        ("small_host_iree_default", "host", False)):
        target = ROOT / "common" / "targets" / f"{t}.yaml"
        analysis = ROOT / "codegen" / "testdata" / f"analysis_{t}.json" if tuned else None
        module = ROOT / "codegen" / "testdata" / "small.mlirbc"
        options = cg.CompileOptions(target, analysis)
        cg.compile_module(module, options, cg.Build(options, tmp / f"{n}.c.vmfb", tmp / f"{n}.report.json",
                                                     tmp / f"{n}.configs.mlir"))
        manifest.build(tmp / f"{n}.c.vmfb", tmp / f"{n}.report.json", module, target, analysis, None,
                       tmp / f"{n}.vmfb", tmp / f"{n}.manifest.json")
        out[n] = tmp / f"{n}.vmfb"
    return out


def _compiled(modules, name):
    """codegen's (vmfb, report) behind hal_module `name`: Bazel's, or the fixture's."""
    codegen = ROOT / "codegen"
    if (codegen / f"{name}.report.json").is_file():
        return codegen / f"{name}.vmfb", codegen / f"{name}.report.json"
    d = modules[name].parent
    return d / f"{name}.c.vmfb", d / f"{name}.report.json"


def _manifest_cli(vmfb, report, module, out_dir):
    # small_host is tuned by codegen/testdata's analysis: the CLI needs it (issue 62); the
    # fixture's analysis names no hardware file (sha256 all zeros), so no --hardware.
    analysis = ROOT / "codegen" / "testdata" / "analysis_host.json"
    return subprocess.run(
        [sys.executable, "-m", "runtime.manifest", "--vmfb", vmfb, "--report", report,
         "--module", module, "--target", ROOT / "common" / "targets" / "host.yaml",
         *(("--analysis", analysis) if "analysis" in json.loads(Path(report).read_text())["inputs_sha256"] else ()),
         "--out-vmfb", out_dir / "m.vmfb", "--out-manifest", out_dir / "m.manifest.json"],
        capture_output=True, text=True, cwd=ROOT)


def test_manifest_packages_only_files_that_belong_together(modules, tmp_path):
    module = ROOT / "codegen" / "testdata" / "small.mlirbc"
    vmfb, report = _compiled(modules, "small_host")
    other_vmfb, _ = _compiled(modules, "small_host_iree_default")
    random_vmfb = tmp_path / "random.vmfb"
    random_vmfb.write_bytes(bytes(range(256)) * 64)
    other_module = tmp_path / "other.mlir"
    other_module.write_text("func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> { return %a : tensor<4xf32> }\n")
    out = tmp_path / "out"
    out.mkdir()
    assert _manifest_cli(vmfb, report, module, out).returncode == 0
    assert sorted(p.name for p in out.iterdir()) == ["m.manifest.json", "m.vmfb"]
    for bad_vmfb, bad_module, words in ((other_vmfb, module, "not the vmfb"),
                                        (random_vmfb, module, "not the vmfb"),
                                        (vmfb, other_module, "not the module")):
        empty = tmp_path / f"out_{bad_vmfb.stem}_{bad_module.stem}"
        empty.mkdir()
        p = _manifest_cli(bad_vmfb, report, bad_module, empty)
        lines = p.stderr.strip().splitlines()
        assert p.returncode != 0 and len(lines) == 1 and words in lines[0], p.stderr
        assert not list(empty.iterdir())


def _choice_cli(decision, vmfb, report, out_dir, *candidates):
    args = [sys.executable, "-m", "runtime.manifest", "--choice", decision, "--vmfb", vmfb, "--report", report,
            "--module", ROOT / "codegen" / "testdata" / "small.mlirbc"]
    for c in candidates:
        args += ["--candidate", *c]
    return subprocess.run(args + ["--out-vmfb", out_dir / "m.vmfb", "--out-manifest", out_dir / "m.manifest.json"],
                          capture_output=True, text=True, cwd=ROOT)


def test_a_strategy_choice_is_packaged_with_the_chosen_candidates_files(modules, tmp_path):
    """runtime.manifest --choice (choice.choose decides, runtime packages): the chosen
    candidate's target and analysis go with the build, the decision's record is the manifest's
    strategy_choice; a decision naming no candidate, or one whose record names another, is refused."""
    vmfb, report = _compiled(modules, "small_host")
    host = ROOT / "common" / "targets" / "host.yaml"
    analysis = ROOT / "codegen" / "testdata" / "analysis_host.json"
    record = {"by": "code-cycles", "candidates": {"tuned": 10, "codegen": 12}, "chosen": "tuned", "reason": "tuned: fewest"}
    decision = tmp_path / "d.choice.json"
    decision.write_text(json.dumps({"chosen": "tuned", "strategy_choice": record}))
    out = tmp_path / "out"
    out.mkdir()
    p = _choice_cli(decision, vmfb, report, out, ("tuned", host, analysis), ("codegen", host, "none"))
    assert p.returncode == 0, p.stderr
    manifest = json.loads((out / "m.manifest.json").read_text())
    assert manifest["strategy_choice"] == record and "analysis" in manifest["inputs_sha256"]
    assert (out / "m.vmfb").read_bytes() == Path(vmfb).read_bytes()
    for chosen, strategy_choice, words in (("ukernels", {**record, "chosen": "ukernels"}, "chose ukernels, which is not one of"),
                                           ("tuned", {**record, "chosen": "codegen"}, "is not chosen 'tuned'")):
        decision.write_text(json.dumps({"chosen": chosen, "strategy_choice": strategy_choice}))
        empty = tmp_path / f"out_{chosen}_{strategy_choice['chosen']}"
        empty.mkdir()
        p = _choice_cli(decision, vmfb, report, empty, ("tuned", host, analysis), ("codegen", host, "none"))
        lines = p.stderr.strip().splitlines()
        assert p.returncode != 0 and len(lines) == 1 and words in lines[0], p.stderr
        assert not list(empty.iterdir())


def test_manifest_refuses_a_vmfb_the_runtime_cannot_load(modules, tmp_path):
    """Even with a report that vouches for it (sha256 matches), random bytes are no module."""
    module = ROOT / "codegen" / "testdata" / "small.mlirbc"
    _, report = _compiled(modules, "small_host")
    random_vmfb = tmp_path / "random.vmfb"
    random_vmfb.write_bytes(bytes(range(256)) * 64)
    rep = json.loads(report.read_text())
    rep["vmfb_sha256"] = hashlib.sha256(random_vmfb.read_bytes()).hexdigest()
    forged = tmp_path / "forged.report.json"
    forged.write_text(json.dumps(rep))
    out = tmp_path / "out"
    out.mkdir()
    p = _manifest_cli(random_vmfb, forged, module, out)
    assert p.returncode != 0 and "cannot load" in p.stderr and len(p.stderr.strip().splitlines()) == 1
    assert not list(out.iterdir())


def test_manifest_refuses_a_build_iree_could_not_compile(tmp_path):
    """codegen.compile --record-failure's outputs are no module: the report says why."""
    module = ROOT / "codegen" / "testdata" / "small.mlirbc"
    vmfb, report = tmp_path / "c.vmfb", tmp_path / "c.report.json"
    vmfb.write_bytes(b"")
    report.write_text(json.dumps({"failed": "'func.func' op failed to build pass pipeline", "target": "host",
                                  "triple": "x86_64-unknown-linux-gnu", "strategy": "datatiling",
                                  "vmfb_sha256": hashlib.sha256(b"").hexdigest(),
                                  "inputs_sha256": {"module": "0", "target": "0"}}))
    out = tmp_path / "out"
    out.mkdir()
    p = _manifest_cli(vmfb, report, module, out)
    lines = p.stderr.strip().splitlines()
    assert p.returncode != 0 and len(lines) == 1 and "IREE could not compile this build" in lines[0], p.stderr
    assert "failed to build pass pipeline" in lines[0] and not list(out.iterdir())


def test_manifest_names_an_input_that_is_a_directory(modules, tmp_path):
    # issue 80: a directory was "file not found"
    vmfb, report = _compiled(modules, "small_host")
    out = tmp_path / "out"
    out.mkdir()
    (tmp_path / "module.mlirbc").mkdir()
    p = _manifest_cli(vmfb, report, tmp_path / "module.mlirbc", out)
    lines = p.stderr.strip().splitlines()
    assert p.returncode != 0 and len(lines) == 1, p.stderr
    assert lines[0].endswith(f"{tmp_path / 'module.mlirbc'}: is a directory, not a file"), lines[0]
    assert not list(out.iterdir())


def run(*args):
    return subprocess.run([sys.executable, "-m", "runtime.run", *map(str, args)], capture_output=True, text=True,
                          cwd=ROOT)


def test_manifest_contents(modules):
    m = json.loads(modules["small_riscv64_rvv"].with_name("small_riscv64_rvv.manifest.json").read_text())
    assert m["target"]["triple"] == "riscv64-unknown-linux-gnu" and "+v" in m["target"]["cpu_features"]
    ep = m["entry_points"][0]
    assert ep["name"] == "main" and ep["inputs"][0] == {"shape": [64, 128], "dtype": "float32"}
    assert ep["outputs"][4] == {"shape": [64], "dtype": "float32"}
    provs = {d["name"]: d["provenance"] for d in m["dispatches"]}
    assert provs["main_dispatch_0_matmul_64x96x128_f32"] == "zigzag"
    assert provs["main_dispatch_3_slow_memcpy"] == "iree-default"
    assert all(d["reason"] for d in m["dispatches"])
    assert set(m["inputs_sha256"]) >= {"module", "analysis", "target", "vmfb", "report"}
    text = json.dumps(m)
    assert "/tmp" not in text and "/work" not in text and "/home" not in text


@pytest.mark.parametrize("name", ["small_host", "small_host_iree_default"])
def test_runner_host_check(modules, name):
    p = run(modules[name], GOLDEN, "--check", "--runs", "3")
    assert p.returncode == 0, p.stderr
    assert "median" in p.stdout and "check: 5 outputs match" in p.stdout
    assert "output_0: shape=[64, 96]" in p.stdout


def test_runner_refuses_riscv(modules):
    p = run(modules["small_riscv64_rvv"], GOLDEN)
    assert p.returncode != 0
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and "riscv64-unknown-linux-gnu" in lines[0] and "runtime" in lines[0]


def test_runner_bad_inputs(modules, tmp_path):
    p = run(tmp_path / "nope.vmfb", GOLDEN)
    assert p.returncode != 0 and len(p.stderr.strip().splitlines()) == 1 and "not found" in p.stderr
    p = run(modules["small_host"], tmp_path / "nope.npz")
    assert p.returncode != 0 and len(p.stderr.strip().splitlines()) == 1 and "not found" in p.stderr



@pytest.mark.parametrize("dtype", ["complex64", "float64", "int32"])
def test_runner_refuses_inputs_of_another_dtype(modules, tmp_path, dtype):
    import numpy as np

    gold = dict(np.load(GOLDEN))
    gold["input_0"] = gold["input_0"].astype(dtype)
    bad = tmp_path / "bad.npz"
    np.savez(bad, **gold)
    p = run(modules["small_host"], bad, "--check", "--runs", "1")
    lines = p.stderr.strip().splitlines()
    assert p.returncode != 0 and len(lines) == 1, p.stderr
    assert f"input_0 is {dtype}" in lines[0] and "float32" in lines[0]


# Issue 80: runtime.run read more than a file said, and printed names from files raw. None of these
# compile anything: the archives are made here.
ANSI = "\x1b[2K\r\x1b[32mALL CHECKS PASSED\x1b[0m"


def _zip(path: Path, members: dict, how: int = zipfile.ZIP_STORED) -> Path:
    """A zip of `members` (name -> bytes, or an array written as .npy), each compressed `how`."""
    import numpy as np

    with zipfile.ZipFile(path, "w") as z:
        for name, data in members.items():
            if not isinstance(data, bytes):
                buf = io.BytesIO()
                np.lib.format.write_array(buf, np.asarray(data), allow_pickle=False)
                data = buf.getvalue()
            z.writestr(name, data, compress_type=how)
    return path


@pytest.fixture
def inflated(monkeypatch) -> list[int]:
    """Bytes handed out by every zip member read during the test."""
    seen = [0]
    read = zipfile.ZipExtFile.read

    def counting(self, n=-1):
        data = read(self, n)
        seen[0] += len(data)
        return data
    monkeypatch.setattr(zipfile.ZipExtFile, "read", counting)
    return seen


def _bomb_vmfb(tmp_path) -> tuple[Path, dict]:
    """A vmfb archive whose executable member deflates 64 MiB of zeros into 64 KB, and a manifest of
    it (another build's sha256, as the probe's was)."""
    vmfb = tmp_path / "bomb.vmfb"
    with zipfile.ZipFile(vmfb, "w") as z:
        z.writestr("module.fb", b"\0" * 64)
        z.writestr("bomb_linked_embedded_elf_x86_64.so", bytes(64 << 20), compress_type=zipfile.ZIP_DEFLATED)
    manifest = {"vmfb": vmfb.name, "target": {"name": "host", "triple": "x86_64-unknown-linux-gnu",
                                               "runnable_on_host": True},
                "tuned": False, "entry_points": [{"name": "main", "inputs": []}],
                "inputs_sha256": {"vmfb": "0" * 64}, "executables_sha256": {"a.so": "1" * 64}}
    return vmfb, manifest


def test_a_zip_bomb_vmfb_is_refused_before_it_is_inflated(tmp_path, inflated):
    """Issue 80: a 2 MB vmfb was inflated to 4.3 GB before its sha256 was refused."""
    from runtime import run as rr

    vmfb, manifest = _bomb_vmfb(tmp_path)
    with pytest.raises(rr.RunError) as err:
        rr.verify(vmfb, vmfb.read_bytes(), manifest, tmp_path / "bomb.manifest.json")
    msg = str(err.value)
    assert msg.startswith(f"{vmfb}: not the vmfb bomb.manifest.json describes") and "\n" not in msg, msg
    assert f"unreadable: member bomb_linked_embedded_elf_x86_64.so is {64 << 20} B uncompressed" in msg, msg
    assert inflated[0] == 0, inflated[0]


def test_the_cli_refuses_a_zip_bomb_vmfb_in_one_line(tmp_path):
    vmfb, manifest = _bomb_vmfb(tmp_path)
    (tmp_path / "bomb.manifest.json").write_text(json.dumps(manifest))
    p = run(vmfb, _zip(tmp_path / "g.npz", {}))
    lines = p.stderr.strip().splitlines()
    assert p.returncode == 1 and len(lines) == 1, p.stderr
    assert lines[0].startswith(f"runtime.run: error: {vmfb}: not the vmfb") and "member bomb_linked" in lines[0]


def test_golden_names_are_read_only_to_name_the_outputs(tmp_path, monkeypatch):
    """Issue 80: `names` was inflated whole on every --check (1.6 GB), whatever its shape; names
    that cannot name the outputs (here 5 for 1 output) were then ignored. Now they are never read."""
    import numpy as np

    from runtime import run as rr

    npz = _zip(tmp_path / "g.npz", {"output_0.npy": np.ones(3, np.float32), "names.npy": np.array(["a"] * 5)})
    read = []
    getitem = rr.Npz.__getitem__
    monkeypatch.setattr(rr.Npz, "__getitem__", lambda self, key: read.append(key) or getitem(self, key))
    assert rr.check_outputs_against(rr.load_npz(npz), npz, [np.ones(3, np.float32)], 1e-4, 1e-4) == 0.0
    assert read == ["output_0"]


def test_golden_names_past_their_cap_are_refused_unread(tmp_path, inflated):
    import numpy as np

    from runtime import run as rr

    names = np.array(["x" * ((1 << 20) // 4 + 1)])  # one name of 1 MiB and 4 B (4 B a character)
    npz = _zip(tmp_path / "g.npz", {"output_0.npy": np.ones(3, np.float32), "names.npy": names}, zipfile.ZIP_DEFLATED)
    with pytest.raises(rr.RunError) as err:
        rr.check_outputs_against(rr.load_npz(npz), npz, [np.ones(3, np.float32)], 1e-4, 1e-4)
    assert str(err.value).startswith(f"{npz}: names.npy is {names.nbytes + 128} B uncompressed, more than the "
                                     f"{rr.MAX_NAMES_BYTES} B the golden names here may be: refused unread"), err.value
    assert inflated[0] == 0, inflated[0]


def test_an_array_past_the_cap_is_refused_unread(tmp_path, monkeypatch, inflated):
    import numpy as np

    from runtime import run as rr

    monkeypatch.setattr(rr, "MAX_ARRAY_BYTES", 4096, raising=False)
    npz = _zip(tmp_path / "g.npz", {"input_0.npy": np.zeros(4096, np.float32)}, zipfile.ZIP_DEFLATED)
    data = rr.load_npz(npz)
    for read in (lambda: data["input_0"], lambda: data.header("input_0"),
                 lambda: rr.inputs_from(npz, {"name": "main", "inputs": None})):
        with pytest.raises(rr.RunError, match=r"input_0.npy is 16512 B uncompressed, more than the 4096 B an array "
                                              r"here may be: refused unread"):
            read()
    assert inflated[0] == 0, inflated[0]


@pytest.mark.parametrize("how", [zipfile.ZIP_BZIP2, zipfile.ZIP_LZMA])
def test_an_npz_member_numpy_does_not_write_is_refused_unread(tmp_path, inflated, how):
    """bzip2 and LZMA members are inflated a chunk at a time, however far the chunk goes."""
    import numpy as np

    from runtime import run as rr

    npz = _zip(tmp_path / "g.npz", {"input_0.npy": np.zeros(4, np.float32)}, how)
    with pytest.raises(rr.RunError, match=f"input_0.npy is compressed with zip method {how}, not stored or deflated"):
        rr.load_npz(npz)["input_0"]
    assert inflated[0] == 0, inflated[0]


def test_an_npy_header_larger_than_its_member_is_refused_before_allocating(tmp_path):
    import numpy as np

    from runtime import run as rr

    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(header, {"descr": "<f4", "fortran_order": False, "shape": (10**8,)})
    npz = _zip(tmp_path / "g.npz", {"input_0.npy": header.getvalue() + bytes(16)})
    with pytest.raises(rr.RunError, match=r"input_0's header says \[100000000\] float32 \(400000000 B\), more than "
                                          r"its member's \d+ B"):
        rr.load_npz(npz)["input_0"]


def test_names_from_the_files_are_quoted_in_messages(tmp_path):
    """Issue 80: a golden name holding escape sequences printed a green "ALL CHECKS PASSED" over the
    mismatch it reported; a key of the npz and an entry point's name are the files' to choose too."""
    import numpy as np

    from runtime import run as rr

    npz = _zip(tmp_path / "g.npz", {"output_0.npy": np.ones(3, np.float32), "names.npy": np.array([ANSI])})
    with pytest.raises(rr.RunError) as err:
        rr.check_outputs_against(rr.load_npz(npz), npz, [np.zeros(3, np.float32)], 1e-4, 1e-4)
    assert str(err.value).isprintable() and str(err.value).startswith(f"output_0 {ANSI!r}: mismatch"), err.value
    npz = _zip(tmp_path / "k.npz", {"input_0.npy": np.ones(3, np.float32), f"input_1{ANSI}.npy": np.ones(3)})
    with pytest.raises(rr.RunError) as err:
        rr.inputs_from(npz, {"name": f"main{ANSI}", "inputs": [{"shape": [3], "dtype": "float32"}]})
    assert str(err.value) == (f"{npz}: {'input_1' + ANSI!r} is never passed: {'main' + ANSI!r} takes 1 inputs "
                              f"(input_0)"), err.value


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q", "-p", "no:cacheprovider"]))
