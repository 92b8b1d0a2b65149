"""Hardware descriptions: the shipped ones validate; each malformed file gets one precise error."""

import subprocess
import sys
from pathlib import Path

import pytest

from analysis import hardware

HERE = Path(__file__).parent


@pytest.mark.parametrize("name,lanes,macs", [("riscv_rvv", 4, 8), ("riscv_rvv512", 16, 16), ("host", 8, 16)])
def test_shipped_descriptions(name, lanes, macs):
    hw = hardware.load_hardware(HERE / "hardware" / f"{name}.yaml")
    assert hw.lanes_f32 == lanes and hw.macs_per_cycle == macs
    assert hw.model_core == {"riscv_rvv": "sifive-p670", "riscv_rvv512": "sifive-x280", "host": None}[name]
    acc = hardware.zigzag_accelerator(hw)
    assert acc["operational_array"]["sizes"] == [macs]
    # ZigZag sizes are bits
    assert acc["memories"]["l1d"]["size"] == 32 * 1024 * 8
    assert {m for m in acc["memories"] if m.startswith("reg_")} == {"reg_I1", "reg_I2", "reg_O"}


@pytest.mark.parametrize("defect,field,words", [
    ("missing_level", "memory", "missing level with role 'l2'"),
    ("zero_size", "memory.1.size_bytes", "greater than 0"),
    ("unknown_operand", "memory.2", "unknown operand 'weights'"),
    ("not_growing", "memory.2.size_bytes", "must be larger than"),
    ("register_mismatch", "memory.0.size_bytes", "32 x 128 bits"),
    ("model_core_vlen", "model_core", "sifive-x280 models VLEN 512, but compute.vector_bits is 128"),
    ("model_core_unknown", "model_core", "unknown core model 'spacemit-x60'"),
])
def test_malformed_files_are_rejected(defect, field, words):
    path = HERE / "testdata" / f"bad_{defect}.yaml"
    with pytest.raises(hardware.HardwareError) as err:
        hardware.load_hardware(path)
    msg = str(err.value)
    assert "\n" not in msg
    assert msg.startswith(f"{path}: field '{field}'"), msg
    assert words in msg, msg


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
