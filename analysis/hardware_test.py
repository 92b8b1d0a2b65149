"""Hardware descriptions: the shipped ones validate; each malformed file gets one precise error."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from common import hardware

HERE = Path(__file__).parent


@pytest.mark.parametrize("name,lanes,macs,l1_kib", [("riscv_rvv", 4, 8, 32), ("riscv_rvv512", 16, 16, 32),
                                                    ("host", 8, 16, 48)])
def test_shipped_descriptions(name, lanes, macs, l1_kib):
    hw = hardware.load_hardware(HERE / "hardware" / f"{name}.yaml")
    assert hw.lanes_f32 == lanes and hw.macs_per_cycle == macs
    assert hw.model_core == {"riscv_rvv": "sifive-p670", "riscv_rvv512": "sifive-x280", "host": "znver3"}[name]
    acc = hardware.zigzag_accelerator(hw)
    assert acc["operational_array"]["sizes"] == [macs]
    # ZigZag sizes are bits
    assert acc["memories"]["l1d"]["size"] == l1_kib * 1024 * 8
    assert {m for m in acc["memories"] if m.startswith("reg_")} == {"reg_I1", "reg_I2", "reg_O"}


@pytest.mark.parametrize("name", ["riscv_rvv", "riscv_rvv512", "host"])
def test_zigzag_energy_per_bit_is_the_descriptions(name):
    """ZigZag charges r_cost/w_cost per access of a port's bandwidth_max bits; the description's
    energies are per access of access_bits. A bit read or written must cost the same in both
    (issue 77: unscaled, a 4 B/cycle DRAM port of 64-bit accesses read at 2x, the L2's writes 2x)."""
    hw = hardware.load_hardware(HERE / "hardware" / f"{name}.yaml")
    memories = hardware.zigzag_accelerator(hw)["memories"]
    for m in hw.memory[1:]:
        zz = memories[m.name]
        ports = {p["type"]: p["bandwidth_max"] for p in zz["ports"]}
        assert zz["r_cost"] / ports["read"] == pytest.approx(m.read_energy_pj / m.access_bits), m.name
        assert zz["w_cost"] / ports["write"] == pytest.approx(m.write_energy_pj / m.access_bits), m.name
    reg = hw.level("register")
    for op in ("I1", "I2", "O"):
        zz = memories[f"reg_{op}"]
        assert zz["r_cost"] / zz["ports"][0]["bandwidth_max"] == pytest.approx(reg.read_energy_pj / reg.access_bits)


@pytest.mark.parametrize("name", ["riscv_rvv", "riscv_rvv512"])
def test_zigzag_energy_on_measured_terms_counts_what_the_measurement_counts(name):
    """Issue 77: ZigZag's prediction priced as perf/memory_model.py prices a measurement: MACs,
    instructions (one FMA per f32 lanes' MACs, one vector load/store per VLEN bits the L1 moves),
    cycles x static energy, and each cache and DRAM level's reads and writes per access of its
    access_bits; ZigZag's per-lane register traffic and its own energy_pj priced nothing."""
    from analysis.zigzag_cost import energy_on_measured_terms

    hw = hardware.load_hardware(HERE / "hardware" / f"{name}.yaml")
    l1, l2, dram = hw.level("l1"), hw.level("l2"), hw.level("dram")
    flows = {"reg_I1": [10**6, 0], "reg_O": [10**5, 10**5], l1.name: [40960, 10240], l2.name: [8192, 2048],
             dram.name: [4096, 1024]}
    result = {"latency_cycles": 5000.0, "energy_pj": 1e12, "traffic_served_taken_bytes": flows}
    macs = 65536
    c = hw.compute
    instructions = macs / (c.vector_bits // 32) + (40960 + 10240) / (c.vector_bits // 8)
    expected = macs * c.mac_energy_pj + instructions * c.instruction_energy_pj + 5000 * c.static_energy_pj_per_cycle
    for level, (read, written) in ((l1, flows[l1.name]), (l2, flows[l2.name]), (dram, flows[dram.name])):
        expected += read / (level.access_bits / 8) * level.read_energy_pj
        expected += written / (level.access_bits / 8) * level.write_energy_pj
    assert energy_on_measured_terms(result, hw, macs) == pytest.approx(expected, rel=1e-8)
    # The register levels' traffic is no term of it (the measurement has none).
    more_registers = dict(result, traffic_served_taken_bytes=dict(flows, reg_I1=[10**9, 10**9]))
    assert energy_on_measured_terms(more_registers, hw, macs) == energy_on_measured_terms(result, hw, macs)
    # A result recorded before reads and writes were kept apart cannot be priced so.
    assert energy_on_measured_terms({"latency_cycles": 1.0, "energy_pj": 1.0}, hw, macs) is None


@pytest.mark.parametrize("defect,field,words", [
    ("missing_level", "memory", "missing level with role 'l2'"),
    ("zero_size", "memory.1.size_bytes", "greater than 0"),
    ("unknown_operand", "memory.2", "unknown operand 'weights'"),
    ("not_growing", "memory.2.size_bytes", "must be larger than"),
    ("register_mismatch", "memory.0.size_bytes", "32 x 128 bits"),
    ("model_core_vlen", "model_core", "sifive-x280 models VLEN 512, but compute.vector_bits is 128"),
    ("model_core_unknown", "model_core", "unknown core model 'spacemit-x60'"),
    # Issue 80: each passed and failed deep in the build, blamed on a dispatch: an L2 the cache
    # simulation cannot allocate, a shared L2 smaller a core than the L1, a VLEN nothing can run.
    ("cache_too_large", "memory.2.size_bytes",
     "level 'l2': 8796093022208 B per core is 137438953472 lines of 64 B; perf/'s cache simulation"),
    ("l2_per_core", "memory.2.size_bytes",
     "level 'l2' is 16384 B per core (131072 B shared by 8 cores), smaller than 'l1d' (32768 B per core)"),
    ("vlen_no_core_model", "compute.vector_bits",
     "VLEN 2048: no core model has it, and qemu emulates VLEN 128 to 1024 only"),
])
def test_malformed_files_are_rejected(defect, field, words):
    path = HERE / "testdata" / f"bad_{defect}.yaml"
    with pytest.raises(hardware.HardwareError) as err:
        hardware.load_hardware(path)
    msg = str(err.value)
    assert "\n" not in msg
    assert msg.startswith(f"{path}: field '{field}'"), msg
    assert words in msg, msg


def _mutated(tmp_path, edit) -> Path:
    """The shipped riscv_rvv.yaml with `edit(dict)` applied, written to tmp_path."""
    data = yaml.safe_load((HERE / "hardware" / "riscv_rvv.yaml").read_text())
    edit(data)
    path = tmp_path / "hw.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def _set(*keys_and_value):
    *keys, value = keys_and_value

    def edit(d):
        for k in keys[:-1]:
            d = d[k]
        d[keys[-1]] = value
    return edit


# Values no accelerator has: each was accepted before (tiles unchanged, exit 0).
@pytest.mark.parametrize("edit,field,words", [
    (_set("clock_ghz", float("inf")), "clock_ghz", "finite number"),
    (_set("clock_ghz", float("nan")), "clock_ghz", "finite number"),
    (_set("memory", 3, "size_bytes", 10**30), "memory.3.size_bytes", "less than or equal"),
    (_set("memory", 1, "latency_cycles", 10**30), "memory.1.latency_cycles", "less than or equal"),
    (_set("memory", 3, "read_energy_pj", 1e30), "memory.3.read_energy_pj", "less than or equal"),
    (_set("compute", "vector_bits", 96), "compute.vector_bits", "not a power of two"),
    (_set("compute", "mac_energy_pj", float("inf")), "compute.mac_energy_pj", "finite number"),
    (_set("memory", 3, "read_bytes_per_cycle", 0.3), "memory.3.read_bytes_per_cycle", "multiple of 0.125"),
    (_set("memory", 3, "read_bytes_per_cycle", 0.0625), "memory.3.read_bytes_per_cycle", "multiple of 0.125"),
    (_set("cores", 10**9), "cores", "less than or equal"),
    (_set("name", "../x"), "name", "should match pattern"),
])
def test_impossible_values_are_rejected(tmp_path, edit, field, words):
    path = _mutated(tmp_path, edit)
    with pytest.raises(hardware.HardwareError) as err:
        hardware.load_hardware(path)
    msg = str(err.value)
    assert "\n" not in msg and msg.startswith(f"{path}: field '{field}'"), msg
    assert words in msg, msg


def _edited(tmp_path, old: str, new: str) -> Path:
    """The shipped riscv_rvv.yaml with the text `old` replaced by `new` (as a user would type it:
    YAML 1.1's `yes`, `1e30` and tabs survive), written to tmp_path."""
    text = (HERE / "hardware" / "riscv_rvv.yaml").read_text()
    assert old in text, old
    path = tmp_path / "hw.yaml"
    path.write_text(text.replace(old, new, 1))
    return path


# Issue 62: each was accepted with exit 0 (a boolean became 1: fma_pipes: true halved the peak;
# an L2 or DRAM faster than the level inside it made misses cheap), or named poorly.
@pytest.mark.parametrize("old,new,field,words", [
    ("fma_pipes: 2", "fma_pipes: true", "compute.fma_pipes", "true is a YAML boolean"),
    ("cores: 1", "cores: yes", "cores", "true is a YAML boolean"),
    ("clock_ghz: 1.0", "clock_ghz: on", "clock_ghz", "true is a YAML boolean"),
    ("latency_cycles: 12", "latency_cycles: 2", "memory.2.latency_cycles",
     "level 'l2' (2 cycles) is faster than 'l1d' (3 cycles)"),
    ("latency_cycles: 100", "latency_cycles: 2", "memory.3.latency_cycles",
     "level 'dram' (2 cycles) is faster than 'l2' (12 cycles)"),
    ("    latency_cycles: 12\n", "    latency_cycles: 12\n    shared_by_cores: 8\n", "memory.2.shared_by_cores",
     "level 'l2' is shared by 8 cores, but the hardware has cores: 1"),
    ("access_bits: 64", "access_bits: 12", "memory.3.access_bits", "12 is not a whole number of bytes"),
    ("size_bytes: 2147483648", "size_bytes: 1e30", "memory.3.size_bytes",
     "YAML 1.1 reads 1e30 as a string, not a number: write 1.0e+30"),
    ("size_bytes: 32768", "size_bytes: 3.2768e4", "memory.1.size_bytes",
     "YAML 1.1 reads 3.2768e4 as a string, not a number: write 32768"),
])
def test_issue62_values_are_refused_with_their_reason(tmp_path, old, new, field, words):
    path = _edited(tmp_path, old, new)
    with pytest.raises(hardware.HardwareError) as err:
        hardware.load_hardware(path)
    msg = str(err.value)
    assert "\n" not in msg and msg.startswith(f"{path}: field '{field}': "), msg
    assert words in msg, msg


def test_equal_latencies_and_numbers_as_written_still_load(tmp_path):
    """An idealised level as fast as the one inside it is allowed; an integral float is an int."""
    hw = hardware.load_hardware(_edited(tmp_path, "latency_cycles: 12", "latency_cycles: 3"))
    assert hw.level("l2").latency_cycles == 3
    hw = hardware.load_hardware(_edited(tmp_path, "size_bytes: 32768", "size_bytes: 32768.0"))
    assert hw.level("l1").size_bytes == 32768


def test_a_yaml_error_names_its_line(tmp_path):
    """Issue 62: a tab gave only PyYAML's first line, 'while scanning for the next token'."""
    path = _edited(tmp_path, "cores: 1", "\tcores: 1")
    line = (HERE / "hardware" / "riscv_rvv.yaml").read_text().splitlines().index("cores: 1") + 1
    with pytest.raises(hardware.HardwareError) as err:
        hardware.load_hardware(path)
    assert str(err.value).startswith(f"{path}: not valid YAML: line {line}, column 1: found character '\\t'"), \
        str(err.value)


@pytest.mark.parametrize("kind", ["fifo", "directory", "device", "missing"])
def test_a_hardware_file_that_is_not_a_regular_file_is_named(tmp_path, kind):
    """Issue 62: a FIFO was read and blocked forever (the FIFO case runs in a child with a
    timeout so the old behaviour fails instead of hanging the suite)."""
    path = {"fifo": tmp_path / "hw.fifo", "directory": tmp_path, "device": Path("/dev/null"),
            "missing": tmp_path / "none.yaml"}[kind]
    if kind == "fifo":
        os.mkfifo(path)
    want = {"fifo": "is a FIFO, not a regular file", "directory": "is a directory, not a hardware file",
            "device": "is a character device, not a regular file", "missing": "hardware file not found"}[kind]
    code = f"from common.hardware import load_hardware; load_hardware({str(path)!r})"
    try:
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                              cwd=HERE.parent, env=dict(os.environ, PYTHONPATH=str(HERE.parent)))
    except subprocess.TimeoutExpired:
        pytest.fail(f"load_hardware({path}) still reading after 60 s")
    assert proc.returncode != 0
    assert f"HardwareError: {path}: {want}" in proc.stderr.strip().splitlines()[-1], proc.stderr


def test_slow_dram_converts_to_whole_bits_zigzag_accepts(tmp_path):
    """0.5 B/cycle is 4 bits/cycle: the port's minimum access must not exceed it (ZigZag rejected
    every layer when the minimum was fixed at 8 bits)."""
    def slow(d):
        d["memory"][3]["read_bytes_per_cycle"] = d["memory"][3]["write_bytes_per_cycle"] = 0.5
    hw = hardware.load_hardware(_mutated(tmp_path, slow))
    ports = hardware.zigzag_accelerator(hw)["memories"]["dram"]["ports"]
    assert [(p["bandwidth_min"], p["bandwidth_max"]) for p in ports] == [(4, 4), (4, 4)]


@pytest.mark.parametrize("text,words", [
    # 1.4 KB that expands to about a million nodes through merge keys (took > 5 min, 3.2 GB).
    ("a0: &a0 {x: 1}\n" + "".join(f"a{i}: &a{i} {{<<: [*a{i-1}, *a{i-1}], y{i}: [*a{i-1}, *a{i-1}]}}\n"
                                  for i in range(1, 21)), "nodes once aliases are expanded"),
    ("a: &a [*a]\n", "recursive alias"),
])
def test_alias_bombs_are_refused_before_expansion(tmp_path, text, words):
    path = tmp_path / "bomb.yaml"
    path.write_text(text)
    with pytest.raises(hardware.HardwareError) as err:
        hardware.load_hardware(path)
    assert str(err.value) == f"{path}: not valid YAML: " + str(err.value).split("not valid YAML: ")[1]
    assert words in str(err.value)


def test_oversized_file_is_refused(tmp_path):
    path = tmp_path / "big.yaml"
    path.write_text("# pad\n" * 200_000)
    with pytest.raises(hardware.HardwareError, match="larger than"):
        hardware.load_hardware(path)


@pytest.mark.parametrize("vlen,core,register_bytes", [(256, None, 1024), (512, "sifive-x280", 2048),
                                                      (128, "sifive-p670", 512)])
def test_variant_derives_register_file_and_core_model_from_vlen(tmp_path, vlen, core, register_bytes):
    from analysis.hardware_variant import apply

    base = yaml.safe_load((HERE / "hardware" / "riscv_rvv.yaml").read_text())
    data = apply(base, f"v{vlen}", [f"compute.vector_bits={vlen}", "l1.size_bytes=16384"])
    path = tmp_path / "v.yaml"
    path.write_text(yaml.safe_dump(data))
    hw = hardware.load_hardware(path)  # the variant is a valid description
    assert hw.model_core == core and hw.level("register").size_bytes == register_bytes
    assert hw.level("l1").size_bytes == 16384 and hw.name == f"v{vlen}"


def test_cache_bound_is_per_core_and_in_lines(tmp_path):
    """The bound is the simulation's (lines of a core's share): the largest cache it models loads,
    one set more does not; a large shared level loads when each core's share is within it."""
    most = hardware.MAX_CACHE_LINES * 64

    def l2(size, cores=1):
        def edit(d):
            d["cores"] = cores
            d["memory"][2].update(size_bytes=size, shared_by_cores=cores)
            d["memory"][3]["size_bytes"] = 2 * size
        return edit
    assert hardware.load_hardware(_mutated(tmp_path, l2(most))).level("l2").size_bytes == most
    assert hardware.load_hardware(_mutated(tmp_path, l2(4 * most, cores=4))).level("l2").shared_by_cores == 4
    with pytest.raises(hardware.HardwareError, match=r"field 'memory.2.size_bytes': level 'l2': \d+ B per core "
                                                     r"is 16777224 lines"):
        hardware.load_hardware(_mutated(tmp_path, l2(most + 8 * 64)))  # one set of 8 ways more


@pytest.mark.parametrize("vlen,core", [(256, None), (1024, None), (512, "sifive-x280")])
def test_vlens_qemu_emulates_load_without_a_core_model(tmp_path, vlen, core):
    """Issue 80: only a VLEN nothing can run is refused; a sweep's VLEN 256 and 1024 variants have
    no core model on purpose (measured in instructions, --allow-no-core-model) and still load."""
    from analysis.hardware_variant import apply

    base = yaml.safe_load((HERE / "hardware" / "riscv_rvv.yaml").read_text())
    path = tmp_path / "v.yaml"
    path.write_text(yaml.safe_dump(apply(base, f"v{vlen}", [f"compute.vector_bits={vlen}"])))
    assert hardware.load_hardware(path).model_core == core
    path.write_text(yaml.safe_dump(apply(base, "v2048", ["compute.vector_bits=2048"])))
    with pytest.raises(hardware.HardwareError, match=r"field 'compute.vector_bits': VLEN 2048: no core model"):
        hardware.load_hardware(path)


@pytest.mark.parametrize("setting,words", [
    ("register.size_bytes=4096", "derived from compute.vector_bits"),
    ("model_core=sifive-x280", "derived from compute.vector_bits"),
    ("l3.size_bytes=1", "has no l3 level"),
    ("compute.vector_bits", "expected KEY=VALUE"),
    ("cores=true", "--set cores=true: 'true' is a YAML boolean, not a number"),
    ("compute.fma_pipes=yes", "'yes' is a YAML boolean"),
])
def test_variant_refuses_settings_that_could_contradict(setting, words):
    from analysis.hardware_variant import VariantError, apply

    base = yaml.safe_load((HERE / "hardware" / "riscv_rvv.yaml").read_text())
    with pytest.raises(VariantError, match=words):
        apply(base, "v", [setting])


def test_variant_refuses_a_key_set_twice():
    """Issue 62: the last --set won silently, where a YAML key given twice is refused."""
    from analysis.hardware_variant import VariantError, apply

    base = yaml.safe_load((HERE / "hardware" / "riscv_rvv.yaml").read_text())
    with pytest.raises(VariantError, match=r"^--set l1.size_bytes given twice \(l1.size_bytes=16384 and "
                                           r"l1.size_bytes=65536\): which one is meant\?$"):
        apply(base, "v", ["l1.size_bytes=16384", "compute.vector_bits=256", "l1.size_bytes=65536"])


def test_cli_reports_one_line_and_fails(tmp_path):
    root = HERE.parent
    out = tmp_path / "a.json"
    proc = subprocess.run(
        [sys.executable, "-m", "analysis.analyze", "--module", str(HERE / "testdata" / "matmul.mlir"),
         "--target", str(root / "common" / "targets" / "riscv64_rvv.yaml"),
         "--hardware", str(HERE / "testdata" / "bad_zero_size.yaml"),
         "--model-name", "m", "--out", str(out)],
        capture_output=True, text=True, cwd=root)
    assert proc.returncode != 0
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert "bad_zero_size.yaml" in proc.stderr and "size_bytes" in proc.stderr
    assert not out.exists()


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q", "-p", "no:cacheprovider"]))
