"""Train an MLP on the 8x8 handwritten digits (examples/data/digits.csv.gz) with fjax.

The whole user story in one script: the model is a pytree of parameters (``fjax.nn.MLP``), the
loss is a plain function, the train step calls ``fjax.value_and_grad`` and an optax-style
optimizer (``fjax.optim``) and is compiled with ``fjax.jit``; minibatches are shuffled with
``fjax.random`` keys; a tqdm bar shows progress; the gradients are checked at the end with
``fjax.test_util.check_grads``.

    python examples/digits_mlp.py                      # fjax's default jit backend
    python examples/digits_mlp.py --backend interpret  # or --backend numba
    python examples/digits_mlp.py --device gpu         # parameters and batches on the GPU (cupy)

Training takes ~2-6 s with the interpret backend on 2 cores; ~13 s with numba the first time (compiling),
~3 s once its disk cache is warm.

Exits with status 1 if the test accuracy is below 0.97. Writes examples/out/digits_mlp.png
(loss and accuracy curves) when matplotlib is installed.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

import numpy as np
from _common import (
    Timer,
    base_parser,
    count_params,
    device_scope,
    fmt_seconds,
    load_digits,
    minibatches,
    parse,
    progress,
    pyplot,
    save_figure,
    set_backend,
    standardize,
    train_test_split,
)

import fjax
import fjax.numpy as jnp
from fjax import nn, optim, random
from fjax.test_util import check_grads

TARGET_ACCURACY = 0.97


def init_model(key: Any, hidden: Sequence[int] = (128, 64), n_in: int = 64, n_classes: int = 10) -> nn.MLP:
    """An MLP ``n_in -> hidden... -> n_classes`` with GELU activations (smooth, so the
    finite-difference gradient check at the end is not upset by ReLU kinks)."""
    return nn.MLP(n_in, tuple(hidden), n_classes, activation=nn.gelu, key=key)


def loss_fn(model: nn.MLP, x: Any, y: Any, weight_decay: float = 0.0) -> Any:
    """Mean softmax cross-entropy of the logits ``model(x)`` against integer labels ``y``, plus
    an optional L2 penalty on the weight matrices."""
    logits = model(x)
    loss = jnp.mean(nn.softmax_cross_entropy_with_integer_labels(logits, y))
    if weight_decay:
        loss = loss + weight_decay * sum(jnp.sum(layer.weight**2) for layer in model.layers)
    return loss


def make_optimizer(learning_rate: float = 2e-3, total_steps: int = 1000) -> optim.GradientTransformation:
    """Adam with a cosine-decayed learning rate, after clipping the global gradient norm."""
    schedule = optim.cosine_decay_schedule(learning_rate, total_steps, alpha=0.05)
    return optim.chain(optim.clip_by_global_norm(5.0), optim.adam(schedule))


def make_train_step(opt: optim.GradientTransformation, weight_decay: float = 0.0) -> Any:
    """A jitted ``(model, opt_state, x, y) -> (model, opt_state, loss)``."""

    @fjax.jit
    def train_step(model: nn.MLP, opt_state: Any, x: Any, y: Any) -> tuple[nn.MLP, Any, Any]:
        loss, grads = fjax.value_and_grad(loss_fn)(model, x, y, weight_decay)
        updates, opt_state = opt.update(grads, opt_state, model)
        return optim.apply_updates(model, updates), opt_state, loss

    return train_step


@fjax.jit
def evaluate(model: nn.MLP, x: Any, y: Any) -> tuple[Any, Any]:
    """``(mean loss, accuracy)`` on a labelled set."""
    logits = model(x)
    loss = jnp.mean(nn.softmax_cross_entropy_with_integer_labels(logits, y))
    acc = jnp.mean((jnp.argmax(logits, axis=-1) == y).astype(jnp.float32))
    return loss, acc


def prepare_data(key: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Load the digits, split 80/20 with ``key`` and standardize with the training statistics."""
    x, y = load_digits()
    x_tr, y_tr, x_te, y_te = train_test_split(x, y, key, test_fraction=0.2)
    x_tr, x_te = standardize(x_tr, x_te)
    return x_tr, y_tr, x_te, y_te


def train(
    model: nn.MLP,
    data: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray],
    key: Any,
    *,
    epochs: int = 30,
    batch_size: int = 64,
    learning_rate: float = 2e-3,
    weight_decay: float = 1e-4,
    show_progress: bool = True,
    device: Any = None,
) -> tuple[nn.MLP, dict[str, list[float]]]:
    """Minibatch Adam for ``epochs`` passes; returns the model and per-epoch curves. ``device``:
    where the model and the batches are put (``fjax.device_put``; None: fjax's default)."""
    x_tr, y_tr, x_te, y_te = data

    def put(a: Any) -> Any:
        return jnp.asarray(a) if device is None else fjax.device_put(a, device)

    if device is not None:
        model = fjax.device_put(model, device)
    steps_per_epoch = len(x_tr) // batch_size
    opt = make_optimizer(learning_rate, epochs * steps_per_epoch)
    opt_state = opt.init(model)
    train_step = make_train_step(opt, weight_decay)
    xte, yte = put(x_te), put(y_te)
    hist: dict[str, list[float]] = {"epoch": [], "train_loss": [], "test_loss": [], "test_acc": []}
    bar = progress(
        epochs * steps_per_epoch, "digits_mlp", every=steps_per_epoch, disable=not show_progress, postfix=True
    )
    for epoch in range(1, epochs + 1):
        key, sub = random.split(key)
        losses = []
        for idx in minibatches(sub, len(x_tr), batch_size):
            model, opt_state, loss = train_step(model, opt_state, put(x_tr[idx]), put(y_tr[idx]))
            losses.append(loss)
            bar.update(1)
        train_loss = float(np.mean([float(v) for v in losses]))
        test_loss, test_acc = (float(v) for v in evaluate(model, xte, yte))
        hist["epoch"].append(epoch)
        hist["train_loss"].append(train_loss)
        hist["test_loss"].append(test_loss)
        hist["test_acc"].append(test_acc)
        bar.set_postfix(loss=f"{train_loss:.4f}", test_acc=f"{test_acc:.4f}")
    bar.close()
    return model, hist


def gradient_check(model: nn.MLP, x: np.ndarray, y: np.ndarray) -> None:
    """``check_grads`` (order 1, forward and reverse mode) of the loss with respect to every
    parameter of the model on a small batch; raises AssertionError on a mismatch."""
    xb, yb = jnp.asarray(x), jnp.asarray(y)
    check_grads(lambda m: loss_fn(m, xb, yb), (model,), order=1)


def plot_history(hist: dict[str, list[float]], out_dir: str) -> None:
    plt = pyplot()
    if plt is None:
        return
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 4))
    ax1.plot(hist["epoch"], hist["train_loss"], label="train")
    ax1.plot(hist["epoch"], hist["test_loss"], label="test")
    ax1.set_yscale("log")
    ax1.set_xlabel("epoch")
    ax1.set_ylabel("cross-entropy")
    ax1.legend()
    ax2.plot(hist["epoch"], hist["test_acc"], color="C2")
    ax2.axhline(TARGET_ACCURACY, color="gray", ls="--", lw=1)
    ax2.set_xlabel("epoch")
    ax2.set_ylabel("test accuracy")
    fig.suptitle("fjax: MLP on the 8x8 digits")
    save_figure(fig, out_dir, "digits_mlp.png")


def main(argv: Sequence[str] | None = None) -> int:
    p = base_parser(__doc__.splitlines()[0])
    p.add_argument("--epochs", type=int, default=30)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--lr", type=float, default=2e-3)
    p.add_argument("--hidden", type=int, nargs="+", default=[128, 64])
    args = parse(p, argv)
    backend = set_backend(args.backend)
    with device_scope(args.device) as device:
        return run(args, backend, device if args.device == "gpu" else None)


def run(args: Any, backend: str, device: Any) -> int:
    """The training job of ``main`` (``device``: where to put the model and batches, None: fjax's default)."""

    key = random.PRNGKey(args.seed)
    k_split, k_init, k_train = random.split(key, 3)
    data = prepare_data(k_split)
    x_tr, y_tr, x_te, y_te = data
    model = init_model(k_init, args.hidden)
    print(f"fjax jit backend: {backend}; device: {device if device is not None else fjax.devices()[0]}")
    sizes = "-".join(str(n) for n in (model.in_features, *model.hidden_sizes, model.out_features))
    print(f"digits: {len(x_tr)} train / {len(x_te)} test; MLP {sizes} ({count_params(model)} parameters)")

    with Timer() as t:
        model, hist = train(
            model,
            data,
            k_train,
            epochs=args.epochs,
            batch_size=args.batch_size,
            learning_rate=args.lr,
            device=device,
        )
    acc = hist["test_acc"][-1]
    print(f"trained {args.epochs} epochs in {fmt_seconds(t.seconds)} (backend {backend})")
    print(
        f"final train loss {hist['train_loss'][-1]:.4f}, test loss {hist['test_loss'][-1]:.4f}, test accuracy {acc:.4f}"
    )

    if not args.no_plot:
        plot_history(hist, args.out)

    with Timer() as tg:
        gradient_check(model, x_te[:8], y_te[:8])
    print(f"check_grads(loss, order=1, modes=fwd+rev) on 8 test examples: ok ({tg.seconds:.1f} s)")

    if acc < TARGET_ACCURACY:
        print(f"FAILED: test accuracy {acc:.4f} < {TARGET_ACCURACY}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
