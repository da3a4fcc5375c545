"""Run optax's shipped test suite on fjax (``import jax`` -> fjax through ``fjax.compat``).

    python bench/optax_suite.py [--install] [--min-pass N] [--junitxml PATH] [--show-output]
                                [pytest args / test files ...]

``--install`` first installs optax, chex, absl-py and toolz with ``--no-deps`` (their declared
dependency on jax/jaxlib must not pull in the real JAX) plus scipy and scikit-learn (optax's test
dependencies) into the running environment. Without file arguments it runs every ``*_test.py``
in the installed optax package. Test files may be given relative to the optax package
(``_src/base_test.py``), with the package name (``optax/_src/base_test.py``), or as paths; a
``::node`` suffix is kept.

Prints the most common failure messages (from a JUnit XML report; ``--junitxml PATH`` keeps it;
``--show-output`` passes pytest's own output through), pytest's own summary line (which also
counts absltest ``subTest`` reports) and, last, one ``N passed, N failed, N skipped`` line of test
items (a module that fails to import counts as one failed). Exits non-zero when no test ran, when
pytest produced no report, or, with ``--min-pass N``, when fewer than N test items passed.

Two optax test modules (``_src/linear_algebra_test``, ``transforms/_accumulation_test``) import
flax, which is not installed (flax reaches into ``jax._src``); they count as two failures.
A local tool (the whole suite takes ~25 minutes on one core); CI runs
``tests/compat/test_optax_subset.py``.
"""

from __future__ import annotations

import collections
import os
import re
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from typing import Callable

NO_DEPS = ["optax==0.2.8", "chex==0.1.92", "absl-py", "toolz"]
WITH_DEPS = ["scipy", "scikit-learn"]


def install() -> None:
    """pip-install optax and its test dependencies without letting them pull in jax."""
    pip = [sys.executable, "-m", "pip", "install", "-q"]
    subprocess.run([*pip, "--no-deps", *NO_DEPS], check=True)
    subprocess.run([*pip, *WITH_DEPS], check=True)


def package_dir(package: str = "optax") -> str:
    """The installed package's directory (exits with a hint when it is not installed)."""
    import importlib.util

    spec = importlib.util.find_spec(package)
    if spec is None or spec.origin is None:
        raise SystemExit(f"{package} is not installed: run with --install")
    return os.path.dirname(spec.origin)


def optax_dir() -> str:
    return package_dir("optax")


def resolve(arg: str, root: str, package: str = "optax") -> str:
    """A test path as given (``optax/_src/x_test.py``, ``_src/x_test.py`` or a real path) -> a real path."""
    path, sep, node = arg.partition("::")
    if not os.path.exists(path):
        rel = path.replace("\\", "/")
        if rel.startswith(package + "/"):
            rel = rel[len(package) + 1 :]
        candidate = os.path.join(root, rel)
        if not os.path.exists(candidate):
            raise SystemExit(f"no such {package} test file: {arg} (looked for {candidate})")
        path = candidate
    return path + sep + node


def summarize(xml_path: str, top: int = 40) -> dict[str, int]:
    """Counts per outcome (passed/failed/errors/skipped) and the top failure messages from a JUnit XML file."""
    root = ET.parse(xml_path).getroot()
    counts: collections.Counter[str] = collections.Counter()
    messages: collections.Counter[str] = collections.Counter()
    for case in root.iter("testcase"):
        outcome = "passed"
        for child in case:
            if child.tag in ("failure", "error"):
                outcome = "failed" if child.tag == "failure" else "errors"
                msg = (child.get("message") or "").strip().splitlines()
                messages[(msg[0] if msg else child.tag)[:150]] += 1
                break
            if child.tag == "skipped":
                outcome = "skipped"
        counts[outcome] += 1
    for msg, n in messages.most_common(top):
        print(f"{n:5d}  {msg}")
    return {k: counts[k] for k in ("passed", "failed", "errors", "skipped")}


# pytest options whose value is the next argument (``-k expr``, ``-p no:cacheprovider``, ``-n 2``)
VALUE_OPTS = {"-k", "-m", "-p", "-n", "-o", "-c", "-W", "--tb", "--maxfail", "--deselect", "--ignore", "--durations"}


def split_args(argv: list[str]) -> tuple[list[str], list[str]]:
    """Test files and pytest options (an option's separate value stays with the option)."""
    files: list[str] = []
    opts: list[str] = []
    it = iter(argv)
    for a in it:
        if a.startswith("-"):
            opts.append(a)
            if a in VALUE_OPTS:
                opts.append(next(it))
        else:
            files.append(a)
    return files, opts


def run_pytest(cmd: list[str], cwd: str, verbose: bool) -> tuple[int, str]:
    """Run pytest; its output is shown with ``verbose``. Returns the exit code and pytest's last
    summary line (``== 2 failed, 10 passed in 3.1s ==``) without the ``=`` framing."""
    proc = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    last = ""
    assert proc.stdout is not None
    for line in proc.stdout:
        if verbose:
            sys.stdout.write(line)
            sys.stdout.flush()
        stripped = line.strip().strip("=").strip()
        if re.search(r"\b(passed|failed|skipped|deselected|error|errors|no tests ran)\b.* in [0-9.]+s", stripped):
            last = stripped
    return proc.wait(), last


def parse_args(argv: list[str]) -> tuple[bool, bool, int | None, str | None, list[str]]:
    do_install, verbose, min_pass, keep_xml, rest = False, False, None, None, []
    it = iter(argv)
    for a in it:
        if a == "--install":
            do_install = True
        elif a == "--show-output":
            verbose = True
        elif a == "--min-pass" or a.startswith("--min-pass="):
            min_pass = int(a.split("=", 1)[1] if "=" in a else next(it))
        elif a == "--junitxml" or a.startswith("--junitxml="):
            keep_xml = os.path.abspath(a.split("=", 1)[1] if "=" in a else next(it))
        else:
            rest.append(a)
    return do_install, verbose, min_pass, keep_xml, rest


def main(argv: list[str], package: str = "optax", install_fn: Callable[[], None] = install) -> int:
    """Run ``package``'s shipped tests (all, or the files in ``argv``) on fjax and print the counts."""
    do_install, verbose, min_pass, keep_xml, argv = parse_args(argv)
    if do_install:
        install_fn()
    root = package_dir(package)
    files, opts = split_args(argv)
    files = [resolve(f, root, package) for f in files] if files else [root]
    with tempfile.TemporaryDirectory() as tmp:
        xml_path = keep_xml or os.path.join(tmp, "report.xml")
        if os.path.exists(xml_path):
            os.remove(xml_path)
        cmd = [
            sys.executable, "-m", "pytest", "-p", "fjax.compat.pytest_plugin", "-p", "no:cacheprovider",
            "-q", "--continue-on-collection-errors", "--rootdir", os.path.dirname(root),
            "-o", "addopts=", "-o", "filterwarnings=",
            f"--junitxml={xml_path}", *opts, *files,
        ]  # fmt: skip
        t0 = time.perf_counter()
        returncode, pytest_summary = run_pytest(cmd, os.path.dirname(root), verbose)
        elapsed = time.perf_counter() - t0
        if not os.path.exists(xml_path):
            print(f"pytest produced no report; exit code {returncode}")
            return 1
        c = summarize(xml_path)
    total = sum(c.values())
    # pytest's own line also counts subtest reports (absltest ``subTest``); the line below counts
    # test items (from the JUnit report), collection errors as failed
    print(f"pytest: {pytest_summary or '(no summary line)'}")
    print(f"{package} suite on fjax ({elapsed:.0f} s, pytest exit code {returncode}, {c['errors']} errors):")
    print(f"{c['passed']} passed, {c['failed'] + c['errors']} failed, {c['skipped']} skipped")
    if total == 0:
        print("no test ran (pytest collected none, or every one was deselected)")
        return 1
    if min_pass is not None and c["passed"] < min_pass:
        print(f"fewer than --min-pass {min_pass} tests passed")
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
