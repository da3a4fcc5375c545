"""Helpers shared by the examples: command-line backend choice, the digits data, a progress bar
that falls back to plain prints without tqdm, and PNG output that is skipped without matplotlib.

Not an example itself; the scripts beside it import it (they put their own folder on sys.path
when run as ``python examples/NAME.py``, which Python does by itself).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import time
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

import fjax
import fjax.numpy as jnp
from fjax import random

HERE = os.path.dirname(os.path.abspath(__file__))
DATA_DIR = os.path.join(HERE, "data")
OUT_DIR = os.path.join(HERE, "out")
DIGITS_PATH = os.path.join(DATA_DIR, "digits.csv.gz")


# --------------------------------------------------------------------------------------------
# command line and backend
# --------------------------------------------------------------------------------------------


def base_parser(description: str) -> argparse.ArgumentParser:
    """A parser with the options every example shares: ``--backend``, ``--seed``, ``--no-plot``."""
    p = argparse.ArgumentParser(description=description)
    p.add_argument(
        "--backend",
        choices=("interpret", "numba"),
        default=None,
        help="fjax.jit backend (default: fjax.config's, i.e. 'interpret' unless FJAX_JIT_BACKEND is set)",
    )
    p.add_argument(
        "--device",
        choices=("cpu", "gpu"),
        default="cpu",
        help="where to train: 'gpu' puts the parameters and batches on the first GPU (needs cupy and a CUDA "
        "GPU: pip install -e '.[gpu]'); 'cpu' (default) keeps fjax on the CPU",
    )
    p.add_argument("--seed", type=int, default=0, help="seed of the fjax.random key (default 0)")
    p.add_argument("--no-plot", action="store_true", help="do not write a PNG")
    p.add_argument("--out", default=OUT_DIR, help=f"folder for PNGs (default {OUT_DIR})")
    return p


def set_backend(name: str | None) -> str:
    """Select the jit backend (``None`` keeps the configured one) and return its name."""
    if name is not None:
        fjax.config.update("fjax_jit_backend", name)
    return str(fjax.config.fjax_jit_backend)


@contextlib.contextmanager
def device_scope(name: str) -> Iterator[Any]:
    """Run the block on ``name`` ("cpu" or "gpu"), yielding the device to ``device_put`` onto.

    "cpu" sets ``jax_platforms="cpu"`` for the block (fjax then never asks for a GPU); "gpu"
    yields the first GPU (the default backend then, so uncommitted arrays go there too) and exits
    with a clear message when there is none."""
    old = fjax.config.jax_platforms
    if name == "cpu":
        fjax.config.update("jax_platforms", "cpu")
        try:
            yield fjax.devices("cpu")[0]
        finally:
            fjax.config.update("jax_platforms", old)
        return
    try:
        dev = fjax.devices("gpu")[0]
    except RuntimeError as e:
        from fjax.backends.cuda import runtime

        raise SystemExit(
            f"--device gpu: no GPU is available ({runtime.unavailable_reason() or e}). Install cupy for your "
            "CUDA (pip install -e '.[gpu]' for CUDA 12, '.[cuda13]' for CUDA 13) on a machine with an NVIDIA GPU, "
            "or use --device cpu."
        ) from None
    yield dev


class Timer:
    """``with Timer() as t: ...``; then ``t.seconds``."""

    def __enter__(self) -> Timer:
        self.t0 = time.perf_counter()
        self.seconds = 0.0
        return self

    def __exit__(self, *exc: Any) -> None:
        self.seconds = time.perf_counter() - self.t0


# --------------------------------------------------------------------------------------------
# progress bar
# --------------------------------------------------------------------------------------------


class _PlainProgress:
    """The part of tqdm's interface the examples use, printing a line every ``every`` updates."""

    def __init__(self, total: int, desc: str, every: int, postfix: bool) -> None:
        self.total, self.desc, self.every = total, desc, max(1, every)
        self.n = 0
        self.postfix = ""
        self.due = False
        self.uses_postfix = postfix
        self.t0 = time.perf_counter()

    def update(self, n: int = 1) -> None:
        before, self.n = self.n, self.n + n
        if self.n // self.every > before // self.every or self.n == self.total:
            self.due = True
            if not self.uses_postfix:
                self._print()

    def set_postfix(self, **kw: Any) -> None:
        # tqdm shows the newest postfix; a plain line that reports on ``update`` would be one
        # interval late, so once postfixes are used the due line is printed here
        self.uses_postfix = True
        self.postfix = ", ".join(f"{k}={v}" for k, v in kw.items())
        if self.due:
            self._print()

    def _print(self) -> None:
        self.due = False
        dt = time.perf_counter() - self.t0
        print(f"{self.desc}: {self.n}/{self.total} [{dt:.1f}s] {self.postfix}", flush=True)

    def write(self, msg: str) -> None:
        print(msg, flush=True)

    def close(self) -> None:
        pass


def progress(total: int, desc: str, every: int | None = None, disable: bool = False, postfix: bool = False) -> Any:
    """A tqdm bar over ``total`` steps, or (without tqdm) a plain printer that reports every
    ``every`` steps (a tenth of the run by default); with ``postfix=True`` the plain line is
    printed by the ``set_postfix`` call that follows, so it shows the newest numbers.
    ``.write(msg)`` prints without breaking the bar."""
    try:
        from tqdm.auto import tqdm
    except ImportError:
        tqdm = None
    if tqdm is not None:
        return tqdm(total=total, desc=desc, disable=disable, dynamic_ncols=True)
    if disable:
        every = total + 1
    return _PlainProgress(total, desc, every or max(1, total // 10), postfix)


def have_tqdm() -> bool:
    try:
        import tqdm  # noqa: F401
    except ImportError:
        return False
    return True


# --------------------------------------------------------------------------------------------
# plotting
# --------------------------------------------------------------------------------------------


def pyplot() -> Any:
    """matplotlib.pyplot with the Agg backend, or None (with a message) if matplotlib is missing."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: skipping the plot (pip install -e '.[examples]')")
        return None
    return plt


def save_figure(fig: Any, out_dir: str, name: str) -> str:
    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, name)
    fig.savefig(path, dpi=100, bbox_inches="tight")
    import matplotlib.pyplot as plt

    plt.close(fig)
    print(f"wrote {path}")
    return path


# --------------------------------------------------------------------------------------------
# data
# --------------------------------------------------------------------------------------------


def load_digits(path: str = DIGITS_PATH) -> tuple[np.ndarray, np.ndarray]:
    """The 1797 8x8 digits: pixels as float32 ``(N, 64)`` in 0..16 and int32 labels ``(N,)``."""
    data = np.loadtxt(path, delimiter=",", dtype=np.float64)
    if data.ndim != 2 or data.shape[1] != 65:
        raise ValueError(f"{path}: expected rows of 64 pixels and a label, got shape {data.shape}")
    return data[:, :64].astype(np.float32), data[:, 64].astype(np.int32)


def train_test_split(
    x: np.ndarray, y: np.ndarray, key: Any, test_fraction: float = 0.2
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Shuffle with ``fjax.random.permutation(key, n)`` and hold out ``test_fraction`` of the rows."""
    n = len(x)
    perm = np.asarray(random.permutation(key, n))
    n_test = int(round(test_fraction * n))
    te, tr = perm[:n_test], perm[n_test:]
    return x[tr], y[tr], x[te], y[te]


def standardize(x_train: np.ndarray, *others: np.ndarray) -> list[np.ndarray]:
    """Scale each feature to zero mean and unit variance with the training set's statistics
    (features that are constant in the training set are only centered)."""
    mean = x_train.mean(axis=0)
    std = x_train.std(axis=0)
    std = np.where(std > 1e-6, std, 1.0)
    return [((a - mean) / std).astype(np.float32) for a in (x_train, *others)]


def minibatches(key: Any, n: int, batch_size: int, drop_last: bool = True) -> list[np.ndarray]:
    """Index arrays of one shuffled pass over ``n`` rows (a fresh ``fjax.random`` permutation).

    With ``drop_last`` every batch has ``batch_size`` rows, so a jitted step traces once."""
    perm = np.asarray(random.permutation(key, n))
    stop = (n // batch_size) * batch_size if drop_last else n
    return [perm[i : i + batch_size] for i in range(0, stop, batch_size)]


def batched_apply(fn: Any, x: np.ndarray, batch_size: int = 512) -> np.ndarray:
    """``fn`` over ``x`` in chunks, concatenated (keeps eval memory small)."""
    return np.concatenate([np.asarray(fn(jnp.asarray(x[i : i + batch_size]))) for i in range(0, len(x), batch_size)])


def count_params(tree: Any) -> int:
    return int(sum(np.size(leaf) for leaf in fjax.tree_util.tree_leaves(tree)))


def fmt_seconds(s: float) -> str:
    return f"{s:.1f} s" if s < 120 else f"{s / 60:.1f} min"


def parse(parser: argparse.ArgumentParser, argv: Sequence[str] | None) -> argparse.Namespace:
    return parser.parse_args(None if argv is None else list(argv))
