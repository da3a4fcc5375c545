"""Shared by the tests that run a JAX library's own test files on fjax (optax, chex): install the
library with ``pip install --no-deps`` when missing (its declared jax dependency must not be pulled
in), then run a subset of its test files under ``fjax.compat``'s pytest plugin and read the JUnit
report."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest


def installed_site(packages: list[str], modules: list[str], main: str) -> str:
    """The site-packages directory holding ``main`` after installing the missing ``packages``
    (importable as ``modules``); skips the test without network access or pip."""
    missing = [p for p, mod in zip(packages, modules) if importlib.util.find_spec(mod) is None]
    if missing:
        cmd = [sys.executable, "-m", "pip", "install", "-q", "--no-deps", *missing]
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        except (OSError, subprocess.TimeoutExpired) as e:
            pytest.skip(f"cannot install {main} for the compatibility test ({e})")
        if proc.returncode != 0:
            pytest.skip(f"cannot install {missing} with pip --no-deps (no network?): {proc.stderr.strip()[-300:]}")
        importlib.invalidate_caches()
    spec = importlib.util.find_spec(main)
    if spec is None or spec.origin is None:
        pytest.skip(f"{main} is not importable after installing it")
    return os.path.dirname(os.path.dirname(spec.origin))


def run_check_script(name: str, passed: int) -> None:
    """Run ``_<name>_checks.py`` under ``python -m fjax.compat`` and require ``passed`` checks and
    its final ``ALL OK``."""
    script = os.path.join(os.path.dirname(__file__), f"_{name}_checks.py")
    proc = subprocess.run([sys.executable, "-m", "fjax.compat", script], capture_output=True, text=True, timeout=900)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0 and "ALL OK" in proc.stdout, out[-4000:]
    assert f"{name} checks passed: {passed}" in proc.stdout, out[-2000:]


def run_timed_checks(name: str, quick: list[str], n_checks: int) -> None:
    """Run ``_<name>_checks.py`` under ``python -m fjax.compat``: the checks named by ``quick``
    (substrings of their names), or all ``n_checks`` under ``FJAX_HYPOTHESIS_PROFILE=thorough``;
    each must pass and the script end with ``ALL OK``."""
    script = os.path.join(os.path.dirname(__file__), f"_{name}_checks.py")
    full = os.environ.get("FJAX_HYPOTHESIS_PROFILE", "ci") == "thorough"
    cmd = [sys.executable, "-m", "fjax.compat", script, *([] if full else quick)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=3600)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0 and "ALL OK" in proc.stdout, out[-6000:]
    assert f"{name} checks passed: {n_checks if full else len(quick)}" in proc.stdout, out[-2000:]


def run_subset(site: str, files: list[str], tmp_path, known_causes: dict) -> tuple[list, list, int]:  # noqa: ANN001
    """Run ``files`` (relative to ``site``) on fjax; (test cases, failures not explained by a
    ``known_causes`` pattern, number passed)."""
    ini = tmp_path / "pytest.ini"
    ini.write_text("[pytest]\n")
    xml_path = tmp_path / "report.xml"
    cmd = [
        sys.executable, "-m", "pytest", "-c", str(ini), "--rootdir", site, "-p", "fjax.compat.pytest_plugin",
        "-p", "no:cacheprovider", "-q", f"--junitxml={xml_path}", *[os.path.join(site, f) for f in files],
    ]  # fmt: skip
    env = dict(os.environ, FJAX_CACHE_DIR=str(tmp_path / "cache"))
    proc = subprocess.run(cmd, cwd=site, capture_output=True, text=True, timeout=900, env=env)
    assert xml_path.exists(), proc.stdout[-3000:] + proc.stderr[-3000:]
    cases = list(ET.parse(xml_path).getroot().iter("testcase"))
    failed = [
        f"{c.get('classname')}.{c.get('name')}: {(ch.get('message') or '')[:200]}"
        for c in cases
        for ch in c
        if ch.tag in ("failure", "error")
    ]
    passed = sum(1 for c in cases if not any(ch.tag in ("failure", "error", "skipped") for ch in c))
    failed = [f for f in failed if not any(re.search(k, f) for k in known_causes)]
    return cases, failed, passed
