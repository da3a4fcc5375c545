"""chex's own test suite, most of it, run on fjax through ``fjax.compat``.

chex (it declares a dependency on jax and jaxlib) and absl-py, toolz, typing_extensions and
cloudpickle (dataclass_test imports it) are installed with ``pip install --no-deps`` when
missing, so the real JAX is never pulled in; without network access (or pip) the tests skip with
the reason. The whole suite is a local command:
``python bench/chex_suite.py --install``.
"""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from . import _subset

PACKAGES = ["chex==0.1.92", "absl-py", "toolz", "typing_extensions", "cloudpickle"]
MODULES = ["chex", "absl", "toolz", "typing_extensions", "cloudpickle"]
# chex's test modules but fake_set_n_cpu_devices_test (it must run alone), restrict_backends_test
# (it skips without a TPU) and warnings_test; ~45 s of CPU together
SUBSET = [
    "chex/_src/asserts_test.py",
    "chex/_src/asserts_chexify_test.py",
    "chex/_src/asserts_internal_test.py",
    "chex/_src/dataclass_test.py",
    "chex/_src/dimensions_test.py",
    "chex/_src/fake_test.py",
    "chex/_src/variants_test.py",
]

# failures with these causes are known (see README, "chex's own test suite"); any other fails this test
KNOWN_CAUSES = {
    r"test_hard_with_stop_gradient": (
        "fjax.test_util.check_grads steps eps=1e-3 for float32 (JAX: 1e-4); the finite difference of "
        "that test's discontinuous function crosses a branch"
    ),
}


def _site() -> str:
    return _subset.installed_site(PACKAGES, MODULES, "chex")


def test_chex_subset_passes_on_fjax(tmp_path):
    cases, failed, passed = _subset.run_subset(_site(), SUBSET, tmp_path, KNOWN_CAUSES)
    assert not failed, f"{len(failed)} of {len(cases)} chex tests failed on fjax:\n" + "\n".join(failed[:30])
    assert passed >= 560, f"only {passed} chex tests passed (562 did when this test was written)"


@pytest.mark.parametrize("module", ["variants_test", "fake_test", "asserts_chexify_test", "asserts_internal_test"])
def test_chex_pmap_variants_on_four_cpu_devices(module):
    # chex's way to test pmap on CPU: absltest main with --chex_n_cpu_devices (set_n_cpu_devices
    # before any device is used); under pytest every with_pmap test skips on one device. The
    # asserts mains also set jax_numpy_rank_promotion='raise'
    _site()
    cmd = [sys.executable, "-m", "fjax.compat", "-m", f"chex._src.{module}", "--chex_n_cpu_devices=4"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    tail = proc.stderr[-3000:]
    assert proc.returncode == 0 and re.search(r"^OK\b", proc.stderr, re.M), tail
    assert "skipped=" not in proc.stderr.splitlines()[-1] or module == "asserts_internal_test", tail
