"""A character-level LSTM language model on a short text shipped with the examples.

``Embedding -> LSTMCell`` unrolled over time with ``fjax.lax.scan`` ``-> Linear`` to the
next-character logits; trained with Adam (gradient clipping) on random windows of
examples/data/tiny_text.txt (original prose written for fjax). Every few hundred steps it
prints text sampled with ``fjax.random.categorical`` -- the sampler is itself a ``lax.scan``
inside ``fjax.jit``.

    python examples/char_lstm.py                      # fjax's default jit backend
    python examples/char_lstm.py --backend interpret  # or --backend numba

Training takes ~30-40 s with the interpret backend on 2 cores, ~25 s with numba.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from functools import partial
from typing import Any

import numpy as np
from _common import DATA_DIR, Timer, base_parser, count_params, fmt_seconds, parse, progress, set_backend

import fjax
import fjax.numpy as jnp
from fjax import lax, nn, optim, random

TEXT_PATH = os.path.join(DATA_DIR, "tiny_text.txt")


class Vocab:
    """Characters <-> integer ids."""

    def __init__(self, text: str) -> None:
        self.chars = sorted(set(text))
        self.index = {c: i for i, c in enumerate(self.chars)}

    def __len__(self) -> int:
        return len(self.chars)

    def encode(self, s: str) -> np.ndarray:
        return np.array([self.index[c] for c in s], dtype=np.int32)

    def decode(self, ids: Any) -> str:
        return "".join(self.chars[int(i)] for i in np.asarray(ids).ravel())


def load_text(path: str = TEXT_PATH) -> str:
    with open(path, encoding="utf-8") as f:
        return f.read()


class CharLSTM(nn.Module):
    """Embedding(vocab, embed) -> LSTMCell(embed, hidden) -> Linear(hidden, vocab)."""

    _fields = ("embed", "cell", "head")
    _static = ("vocab_size", "hidden_size")

    def __init__(self, vocab_size: int, key: Any, embed: int = 32, hidden: int = 128) -> None:
        k1, k2, k3 = random.split(key, 3)
        self._set("vocab_size", int(vocab_size))
        self._set("hidden_size", int(hidden))
        self._set("embed", nn.Embedding(vocab_size, embed, key=k1, weight_init=nn.initializers.normal(0.1)))
        self._set("cell", nn.LSTMCell(embed, hidden, key=k2))
        self._set("head", nn.Linear(hidden, vocab_size, key=k3))

    def initial_carry(self, batch: int) -> tuple[Any, Any]:
        return self.cell.initialize_carry((batch,))

    def step(self, carry: tuple[Any, Any], ids: Any) -> tuple[tuple[Any, Any], Any]:
        """One time step on a batch of ids ``(B,)``: new carry and logits ``(B, vocab)``."""
        carry, h = self.cell(carry, self.embed(ids))
        return carry, self.head(h)

    def __call__(self, ids: Any, carry: Any = None) -> tuple[Any, Any]:
        """Logits ``(B, T, vocab)`` for ids ``(B, T)``; scans the cell over time."""
        if carry is None:
            carry = self.initial_carry(ids.shape[0])
        xs = self.embed(jnp.swapaxes(ids, 0, 1))  # (T, B, embed)
        carry, hs = lax.scan(self.cell, carry, xs)  # hs: (T, B, hidden)
        logits = self.head(jnp.swapaxes(hs, 0, 1))
        return logits, carry


def init_model(vocab_size: int, key: Any, hidden: int = 128) -> CharLSTM:
    return CharLSTM(vocab_size, key, hidden=hidden)


def loss_fn(model: CharLSTM, inputs: Any, targets: Any) -> Any:
    """Mean next-character cross-entropy (nats per character)."""
    logits, _ = model(inputs)
    return jnp.mean(nn.softmax_cross_entropy_with_integer_labels(logits, targets))


def make_optimizer(learning_rate: float = 1e-2, total_steps: int = 1000) -> optim.GradientTransformation:
    schedule = optim.warmup_cosine_decay_schedule(0.0, learning_rate, min(50, total_steps // 10), total_steps, 1e-3)
    return optim.chain(optim.clip_by_global_norm(1.0), optim.adam(schedule))


def make_train_step(opt: optim.GradientTransformation) -> Any:
    @fjax.jit
    def train_step(model: CharLSTM, opt_state: Any, inputs: Any, targets: Any) -> tuple[CharLSTM, Any, Any]:
        loss, grads = fjax.value_and_grad(loss_fn)(model, inputs, targets)
        updates, opt_state = opt.update(grads, opt_state, model)
        return optim.apply_updates(model, updates), opt_state, loss

    return train_step


def get_batch(data: np.ndarray, key: Any, batch_size: int, seq_len: int) -> tuple[Any, Any]:
    """``batch_size`` random windows of ``seq_len + 1`` characters: inputs and shifted targets."""
    starts = np.asarray(random.randint(key, (batch_size,), 0, len(data) - seq_len - 1))
    idx = starts[:, None] + np.arange(seq_len + 1)[None, :]
    chunk = data[idx]
    return jnp.asarray(chunk[:, :-1]), jnp.asarray(chunk[:, 1:])


@partial(fjax.jit, static_argnames=("length",))
def sample(model: CharLSTM, prompt: Any, key: Any, length: int, temperature: Any = 0.8) -> Any:
    """Read ``prompt`` (int ids ``(P,)``), then draw ``length`` characters one at a time with
    ``fjax.random.categorical`` (a ``lax.scan`` over per-step keys)."""
    carry = model.initial_carry(1)
    if prompt.shape[0] > 1:
        carry = model(prompt[None, :-1], carry)[1]  # the state after all but the last prompt char
    last = prompt[-1:]

    def body(state: Any, k: Any) -> Any:
        carry, ids = state
        carry, logits = model.step(carry, ids)
        nxt = random.categorical(k, logits / temperature, axis=-1).astype(ids.dtype)
        return (carry, nxt), nxt[0]

    _, out = lax.scan(body, (carry, last), random.split(key, length))
    return out


def train(
    model: CharLSTM,
    data: np.ndarray,
    vocab: Vocab,
    key: Any,
    *,
    steps: int = 800,
    batch_size: int = 32,
    seq_len: int = 48,
    learning_rate: float = 1e-2,
    sample_every: int = 200,
    sample_len: int = 160,
    prompt: str = "The ",
    show_progress: bool = True,
) -> tuple[CharLSTM, list[float]]:
    opt = make_optimizer(learning_rate, steps)
    opt_state = opt.init(model)
    train_step = make_train_step(opt)
    prompt_ids = jnp.asarray(vocab.encode(prompt))
    losses: list[float] = []
    bar = progress(steps, "char_lstm", every=max(1, steps // 10), disable=not show_progress)
    for step in range(1, steps + 1):
        key, k_batch, k_sample = random.split(key, 3)
        inputs, targets = get_batch(data, k_batch, batch_size, seq_len)
        model, opt_state, loss = train_step(model, opt_state, inputs, targets)
        losses.append(float(loss))
        bar.set_postfix(loss=f"{np.mean(losses[-20:]):.3f}")
        bar.update(1)
        if sample_every and (step % sample_every == 0 or step == steps):
            text = prompt + vocab.decode(sample(model, prompt_ids, k_sample, sample_len))
            bar.write(f"--- step {step}, loss {np.mean(losses[-20:]):.3f} nats/char, sample:\n{text}\n---")
    bar.close()
    return model, losses


def main(argv: Sequence[str] | None = None) -> int:
    p = base_parser(__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=800)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--seq-len", type=int, default=48)
    p.add_argument("--hidden", type=int, default=128)
    p.add_argument("--lr", type=float, default=1e-2)
    p.add_argument("--sample-every", type=int, default=200)
    p.add_argument("--text", default=TEXT_PATH, help="a UTF-8 text file to learn")
    args = parse(p, argv)
    backend = set_backend(args.backend)

    text = load_text(args.text)
    vocab = Vocab(text)
    data = vocab.encode(text)
    k_init, k_train = random.split(random.PRNGKey(args.seed))
    model = init_model(len(vocab), k_init, args.hidden)
    print(f"fjax jit backend: {backend}")
    print(f"text: {len(text)} characters, vocabulary {len(vocab)}; CharLSTM with {count_params(model)} parameters")
    with Timer() as t:
        model, losses = train(
            model,
            data,
            vocab,
            k_train,
            steps=args.steps,
            batch_size=args.batch_size,
            seq_len=args.seq_len,
            learning_rate=args.lr,
            sample_every=args.sample_every,
        )
    first, last = np.mean(losses[:20]), np.mean(losses[-20:])
    print(f"trained {args.steps} steps in {fmt_seconds(t.seconds)} (backend {backend})")
    print(f"loss {first:.3f} -> {last:.3f} nats/char (uniform guess: {np.log(len(vocab)):.3f})")
    return 0 if last < first else 1


if __name__ == "__main__":
    sys.exit(main())
