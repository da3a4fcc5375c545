"""Run optax's shipped test suite on fjax (``import jax`` -> fjax through ``fjax.compat``).

    python bench/optax_suite.py [--install] [pytest args / test files ...]

``--install`` first installs optax, chex, absl-py and toolz with ``--no-deps`` (their declared
dependency on jax/jaxlib must not pull in the real JAX) plus scipy and scikit-learn (optax's test
dependencies) into the running environment. Without file arguments it runs every ``*_test.py``
in the installed optax package. Prints pass/fail/skip counts and the most common failure
messages (from a JUnit XML report).
"""

from __future__ import annotations

import collections
import os
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

NO_DEPS = ["optax==0.2.8", "chex==0.1.92", "absl-py", "toolz"]
WITH_DEPS = ["scipy", "scikit-learn"]


def install() -> None:
    """pip-install optax and its test dependencies without letting them pull in jax."""
    pip = [sys.executable, "-m", "pip", "install", "-q"]
    subprocess.run([*pip, "--no-deps", *NO_DEPS], check=True)
    subprocess.run([*pip, *WITH_DEPS], check=True)


def optax_dir() -> str:
    import importlib.util

    spec = importlib.util.find_spec("optax")
    if spec is None or spec.origin is None:
        raise SystemExit("optax is not installed: run with --install")
    return os.path.dirname(spec.origin)


def summarize(xml_path: str) -> dict[str, int]:
    """Counts per outcome and the top failure messages from a JUnit XML file."""
    root = ET.parse(xml_path).getroot()
    counts: collections.Counter[str] = collections.Counter()
    messages: collections.Counter[str] = collections.Counter()
    for case in root.iter("testcase"):
        outcome = "passed"
        for child in case:
            if child.tag in ("failure", "error"):
                outcome = "failed"
                msg = (child.get("message") or "").strip().splitlines()
                messages[(msg[0] if msg else child.tag)[:150]] += 1
            elif child.tag == "skipped":
                outcome = "skipped"
        counts[outcome] += 1
    print(f"optax suite on fjax: {counts['passed']} passed, {counts['failed']} failed, {counts['skipped']} skipped")
    for msg, n in messages.most_common(40):
        print(f"{n:5d}  {msg}")
    return dict(counts)


def main(argv: list[str]) -> int:
    if "--install" in argv:
        argv = [a for a in argv if a != "--install"]
        install()
    root = optax_dir()
    files = [a for a in argv if not a.startswith("-")]
    opts = [a for a in argv if a.startswith("-")]
    if not files:
        files = [root]
    else:
        files = [f if os.path.exists(f) else os.path.join(root, f) for f in files]
    with tempfile.TemporaryDirectory() as tmp:
        xml_path = os.path.join(tmp, "report.xml")
        cmd = [
            sys.executable, "-m", "pytest", "-p", "fjax.compat.pytest_plugin", "-p", "no:cacheprovider",
            "-q", "--continue-on-collection-errors", "--rootdir", os.path.dirname(root),
            "-o", "addopts=", "-o", "filterwarnings=",
            f"--junitxml={xml_path}", *opts, *files,
        ]  # fmt: skip
        proc = subprocess.run(cmd, cwd=os.path.dirname(root), stdout=subprocess.DEVNULL)
        if not os.path.exists(xml_path):
            print("pytest produced no report; exit code", proc.returncode)
            return 1
        summarize(xml_path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
