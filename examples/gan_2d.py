"""A generative adversarial network on a 2-D mixture of 8 Gaussians arranged on a ring.

Generator and discriminator are ``fjax.nn.MLP``s, each with its own Adam optimizer; one jitted
step draws real points and latent noise with ``fjax.random`` and updates the discriminator, then
the generator (non-saturating loss, ``sigmoid_binary_cross_entropy``). Prints the losses and
how many of the 8 modes the generator covers; writes examples/out/gan_2d.png (real vs generated
points) when matplotlib is installed.

    python examples/gan_2d.py                      # fjax's default jit backend
    python examples/gan_2d.py --backend interpret  # or --backend numba

Training takes ~70 s on 2 cores with either backend.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np
from _common import Timer, base_parser, count_params, fmt_seconds, parse, progress, pyplot, save_figure, set_backend

import fjax
import fjax.numpy as jnp
from fjax import nn, optim, random

N_MODES = 8
RADIUS = 2.0
STD = 0.05
LATENT = 2


def mode_centers(n_modes: int = N_MODES, radius: float = RADIUS) -> np.ndarray:
    ang = 2 * np.pi * np.arange(n_modes) / n_modes
    return np.stack([radius * np.cos(ang), radius * np.sin(ang)], axis=1).astype(np.float32)


def sample_real(key: Any, n: int, std: float = STD) -> Any:
    """``n`` points of the ring mixture: a uniform mode plus N(0, std^2) noise."""
    k_mode, k_noise = random.split(key)
    centers = jnp.asarray(mode_centers())
    modes = random.randint(k_mode, (n,), 0, N_MODES)
    return centers[modes] + std * random.normal(k_noise, (n, 2))


class GAN(NamedTuple):
    """Both networks in one pytree."""

    gen: nn.MLP
    disc: nn.MLP


def leaky_relu_02(x: Any) -> Any:
    """``leaky_relu`` with slope 0.2 (a module-level function: an MLP's activation is static
    pytree aux data, so it should compare equal across calls for jit's cache)."""
    return nn.leaky_relu(x, 0.2)


def init_model(key: Any, hidden: int = 128) -> GAN:
    kg, kd = random.split(key)
    gen = nn.MLP(LATENT, (hidden, hidden), 2, activation=nn.relu, key=kg)
    disc = nn.MLP(2, (hidden, hidden), 1, activation=leaky_relu_02, key=kd)
    return GAN(gen, disc)


def generate(gen: nn.MLP, key: Any, n: int) -> Any:
    return gen(random.normal(key, (n, LATENT)))


def disc_loss(disc: nn.MLP, real: Any, fake: Any) -> Any:
    """Cross-entropy of the discriminator: real points are 1, generated points are 0."""
    lr = nn.sigmoid_binary_cross_entropy(disc(real)[:, 0], jnp.ones(real.shape[0]))
    lf = nn.sigmoid_binary_cross_entropy(disc(fake)[:, 0], jnp.zeros(fake.shape[0]))
    return jnp.mean(lr) + jnp.mean(lf)


def gen_loss(gen: nn.MLP, disc: nn.MLP, z: Any) -> Any:
    """Non-saturating generator loss: ``-log D(G(z))``."""
    logits = disc(gen(z))[:, 0]
    return jnp.mean(nn.sigmoid_binary_cross_entropy(logits, jnp.ones(z.shape[0])))


def make_optimizers(lr_g: float = 1e-3, lr_d: float = 1e-3) -> tuple[Any, Any]:
    return optim.adam(lr_g, b1=0.5, b2=0.99), optim.adam(lr_d, b1=0.5, b2=0.99)


def make_train_step(opt_g: Any, opt_d: Any, batch_size: int = 256) -> Any:
    """A jitted ``(model, (g_state, d_state), key) -> (model, states, d_loss, g_loss)``."""

    @fjax.jit
    def train_step(model: GAN, states: tuple[Any, Any], key: Any) -> tuple[GAN, tuple[Any, Any], Any, Any]:
        gen, disc = model
        g_state, d_state = states
        k_real, k_fake, k_gen = random.split(key, 3)
        real = sample_real(k_real, batch_size)
        fake = generate(gen, k_fake, batch_size)
        d_loss, d_grads = fjax.value_and_grad(disc_loss)(disc, real, fake)
        d_updates, d_state = opt_d.update(d_grads, d_state, disc)
        disc = optim.apply_updates(disc, d_updates)
        z = random.normal(k_gen, (batch_size, LATENT))
        g_loss, g_grads = fjax.value_and_grad(gen_loss)(gen, disc, z)
        g_updates, g_state = opt_g.update(g_grads, g_state, gen)
        gen = optim.apply_updates(gen, g_updates)
        return GAN(gen, disc), (g_state, d_state), d_loss, g_loss

    return train_step


def mode_coverage(points: np.ndarray, std: float = STD) -> tuple[int, float]:
    """(number of modes with at least 1% of the points within 4 std, fraction of points within
    4 std of some mode)."""
    d = np.linalg.norm(points[:, None, :] - mode_centers()[None], axis=-1)
    near = d.min(axis=1) < 4 * std
    nearest = d.argmin(axis=1)
    counts = np.bincount(nearest[near], minlength=N_MODES)
    return int((counts >= 0.01 * len(points)).sum()), float(near.mean())


def train(
    model: GAN, key: Any, *, steps: int = 3000, batch_size: int = 256, lr: float = 1e-3, show_progress: bool = True
) -> tuple[GAN, dict[str, list[float]]]:
    opt_g, opt_d = make_optimizers(lr, lr)
    states = (opt_g.init(model.gen), opt_d.init(model.disc))
    train_step = make_train_step(opt_g, opt_d, batch_size)
    hist: dict[str, list[float]] = {"d_loss": [], "g_loss": []}
    report = max(1, steps // 10)
    bar = progress(steps, "gan_2d", every=report, disable=not show_progress, postfix=True)
    keys = random.split(key, steps + 1)
    for step in range(1, steps + 1):
        model, states, d_loss, g_loss = train_step(model, states, keys[step])
        hist["d_loss"].append(float(d_loss))
        hist["g_loss"].append(float(g_loss))
        bar.update(1)
        if step % report == 0 or step == steps:
            pts = np.asarray(generate(model.gen, keys[0], 2000))
            modes, quality = mode_coverage(pts)
            bar.set_postfix(
                d_loss=f"{np.mean(hist['d_loss'][-report:]):.3f}",
                g_loss=f"{np.mean(hist['g_loss'][-report:]):.3f}",
                modes=f"{modes}/{N_MODES}",
                near=f"{quality:.2f}",
            )
    bar.close()
    return model, hist


def plot(model: GAN, key: Any, out_dir: str) -> None:
    plt = pyplot()
    if plt is None:
        return
    k1, k2 = random.split(key)
    real = np.asarray(sample_real(k1, 2000))
    fake = np.asarray(generate(model.gen, k2, 2000))
    fig, ax = plt.subplots(figsize=(5, 5))
    ax.scatter(real[:, 0], real[:, 1], s=3, alpha=0.4, label="real")
    ax.scatter(fake[:, 0], fake[:, 1], s=3, alpha=0.4, label="generated")
    ax.set_aspect("equal")
    ax.set_xlim(-3, 3)
    ax.set_ylim(-3, 3)
    ax.legend(loc="upper right", markerscale=4)
    ax.set_title("fjax GAN: 8 Gaussians on a ring")
    save_figure(fig, out_dir, "gan_2d.png")


def main(argv: Sequence[str] | None = None) -> int:
    p = base_parser(__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=3000)
    p.add_argument("--batch-size", type=int, default=256)
    p.add_argument("--lr", type=float, default=1e-3)
    args = parse(p, argv)
    backend = set_backend(args.backend)

    k_init, k_train, k_eval = random.split(random.PRNGKey(args.seed), 3)
    model = init_model(k_init)
    print(f"fjax jit backend: {backend}")
    print(f"generator {count_params(model.gen)} parameters, discriminator {count_params(model.disc)} parameters")
    with Timer() as t:
        model, hist = train(model, k_train, steps=args.steps, batch_size=args.batch_size, lr=args.lr)
    modes, quality = mode_coverage(np.asarray(generate(model.gen, k_eval, 5000)))
    print(f"trained {args.steps} steps in {fmt_seconds(t.seconds)} (backend {backend})")
    print(
        f"final d_loss {np.mean(hist['d_loss'][-100:]):.3f}, g_loss {np.mean(hist['g_loss'][-100:]):.3f}; "
        f"modes covered {modes}/{N_MODES}, {100 * quality:.0f}% of samples within 4 std of a mode"
    )
    if not args.no_plot:
        plot(model, k_eval, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
