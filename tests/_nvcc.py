"""The nvcc check shared by the CUDA test files: a generated translation unit compiles for an
architecture with no register spills reported by ``-Xptxas -v`` (skip where nvcc is missing)."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")


def compile_without_spills(text: str, arch: str, tmp_path: Path) -> str:
    """Compile ``text`` with ``nvcc -arch=<arch> -c``; assert success and no spills; ptxas's report."""
    cu = tmp_path / "kernels.cu"
    cu.write_text(text)
    cmd = ["nvcc", f"-arch={arch}", "-c", str(cu), "-o", str(tmp_path / "kernels.o"), "-Xptxas", "-v"]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-4000:]
    info = r.stderr + r.stdout
    assert "ptxas" in info and not re.search(r"[1-9]\d* bytes spill", info), info[-3000:]
    return info
