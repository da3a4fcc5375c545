"""Every benchmark figure side by side with JAX, as fjax/JAX time ratios (below 1: fjax faster).

Discovers the ``bench/bench_*.py`` modules that define ``run(quick: bool = False)`` (returning
``_pairs.Row``s) and runs each in its own process (so one's compiled state, BLAS threads or JAX
runtime do not bleed into the next), then prints one table. Modules with only a ``main()`` are
listed as skipped (run them directly). JAX columns are empty when jax is not installed.

Run: ``python bench/run_all.py [--quick] [--only NAME ...] [--markdown]`` (or ``python -m bench``).
``--quick`` takes fewer, shorter rounds. ``--markdown`` also prints the table as Markdown (the
README's "Performance" section). Timings are medians of round-robin rounds, steady state (after
the first call); first-call (compile) times are bench_compile's, when that module is present.
"""

from __future__ import annotations

import argparse
import ast
import glob
import json
import os
import platform
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def discover() -> tuple[list[str], list[str]]:
    """(modules with ``run``, modules with only ``main``), by name, from bench/bench_*.py."""
    with_run, main_only = [], []
    for path in sorted(glob.glob(os.path.join(HERE, "bench_*.py"))):
        name = os.path.splitext(os.path.basename(path))[0]
        with open(path) as f:
            tree = ast.parse(f.read())
        funcs = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
        if "run" in funcs:
            with_run.append(name)
        elif "main" in funcs:
            main_only.append(name)
    return with_run, main_only


def _child(name: str, quick: bool) -> None:
    """In a fresh process: import the module, call ``run(quick)``, print its rows as JSON."""
    sys.path.insert(0, HERE)
    sys.path.insert(0, os.path.dirname(HERE))
    mod = __import__(name)
    rows = mod.run(quick=quick)
    print("@@ROWS@@" + json.dumps([r.__dict__ for r in rows]))


def run_module(name: str, quick: bool, timeout: float) -> tuple[list[dict], str]:
    cmd = [sys.executable, os.path.abspath(__file__), "--child", name] + (["--quick"] if quick else [])
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return [], f"timed out after {timeout:.0f} s"
    for ln in p.stdout.splitlines():
        if ln.startswith("@@ROWS@@"):
            return json.loads(ln[len("@@ROWS@@") :]), ""
    err = (p.stderr.strip().splitlines() or ["no output"])[-1]
    return [], f"failed: {err}"


def _fmt_t(t: float | None) -> str:
    if t is None:
        return "-"
    if t >= 1:
        return f"{t:.2f} s"
    if t >= 1e-3:
        return f"{t * 1e3:.2f} ms"
    return f"{t * 1e6:.1f} us"


def table(rows: list[dict]) -> list[tuple]:
    out = []
    for r in rows:
        if r.get("value") is not None:
            out.append((r["name"], f"{r['value']:.2f}{r.get('unit', '')}", "", ""))
            continue
        ratio = r["fjax"] / r["jax"] if r.get("fjax") and r.get("jax") else None
        fj = _fmt_t(r.get("fjax")) if r.get("fjax") is not None else (r.get("note") or "-")[:30]
        out.append((r["name"], fj, _fmt_t(r.get("jax")), f"{ratio:.2f}" if ratio else "-"))
    return out


def machine() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            model = next((ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")), "")
    except OSError:
        model = platform.processor()
    return f"{model}, {os.cpu_count()} cores, {platform.system()} {platform.release()}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer, shorter rounds")
    ap.add_argument("--only", nargs="*", default=None, help="module names (e.g. bench_mlp)")
    ap.add_argument("--markdown", action="store_true", help="also print the table as Markdown")
    ap.add_argument("--timeout", type=float, default=900.0, help="seconds per module")
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.child:
        _child(a.child, a.quick)
        return 0
    with_run, main_only = discover()
    if a.only:
        with_run = [m for m in with_run if m in a.only or m.removeprefix("bench_") in a.only]
    try:
        import jax  # noqa: PLC0415

        jax_version = jax.__version__
    except ImportError:
        jax_version = None
    print(f"fjax benchmarks vs JAX {jax_version or '(not installed)'}; {machine()}")
    print(f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; {'quick' if a.quick else 'full'} rounds")
    rows: list[tuple] = []
    for name in with_run:
        t0 = time.perf_counter()
        got, err = run_module(name, a.quick, a.timeout)
        print(f"  {name}: {len(got)} figures in {time.perf_counter() - t0:.0f} s {err}", flush=True)
        rows += table(got)
    if main_only:
        print(f"  (modules without run(), run them directly: {', '.join(main_only)})")
    head = ("workload", "fjax", "JAX", "fjax/JAX")
    w = [max(len(str(r[i])) for r in [head, *rows]) for i in range(4)]
    print()
    for r in [head, *rows]:
        print("  ".join(str(c).ljust(w[i]) if i == 0 else str(c).rjust(w[i]) for i, c in enumerate(r)))
    if a.markdown:
        print()
        print("| " + " | ".join(head) + " |")
        print("|" + "|".join(["---"] + ["---:"] * 3) + "|")
        for r in rows:
            print("| " + " | ".join(str(c) for c in r) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
