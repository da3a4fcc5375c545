"""Smoke tests of the examples: each one's functions run a few steps on a small subset and the
loss falls. The full trainings are not run here (see examples/*.py for their runtimes).

The examples' jitted steps run under the "interpret" jit backend here (pinned by a fixture and
restored afterwards) so that this file stays fast whatever the configured default is.
"""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest

import fjax
import fjax.numpy as jnp
from fjax import random

EXAMPLES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples")
sys.path.insert(0, EXAMPLES)

import _common  # noqa: E402
import char_lstm  # noqa: E402
import digits_cnn  # noqa: E402
import digits_mlp  # noqa: E402
import gan_2d  # noqa: E402


@pytest.fixture(autouse=True)
def interpret_backend():
    old = fjax.config.fjax_jit_backend
    fjax.config.update("fjax_jit_backend", "interpret")
    yield
    fjax.config.update("fjax_jit_backend", old)


def _repeat_steps(step, model, opt_state, args, n):
    losses = []
    for _ in range(n):
        model, opt_state, loss = step(model, opt_state, *args)
        losses.append(float(loss))
    return model, losses


# ---- shared helpers --------------------------------------------------------------------------


def test_digits_data_and_split():
    x, y = _common.load_digits()
    assert x.shape == (1797, 64) and y.shape == (1797,)
    assert x.dtype == np.float32 and y.dtype == np.int32
    assert x.min() == 0 and x.max() == 16 and set(np.unique(y)) == set(range(10))
    x_tr, y_tr, x_te, y_te = _common.train_test_split(x, y, random.PRNGKey(0), 0.2)
    assert len(x_te) == 359 and len(x_tr) == 1438
    # a fixed key gives the same split
    assert np.array_equal(_common.train_test_split(x, y, random.PRNGKey(0), 0.2)[3], y_te)
    s_tr, s_te = _common.standardize(x_tr, x_te)
    assert np.allclose(s_tr.mean(0), 0, atol=1e-4) and np.all(np.isfinite(s_te))


def test_minibatches_cover_each_row_once():
    batches = _common.minibatches(random.PRNGKey(3), 10, 3)
    assert [len(b) for b in batches] == [3, 3, 3]
    assert len(set(np.concatenate(batches).tolist())) == 9
    batches = _common.minibatches(random.PRNGKey(3), 10, 3, drop_last=False)
    assert sorted(np.concatenate(batches).tolist()) == list(range(10))


def test_plain_progress_prints_newest_postfix(capsys):
    bar = _common._PlainProgress(4, "demo", every=2, postfix=True)
    for i in range(4):
        bar.update(1)
        bar.set_postfix(loss=i)
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 2 and out[0].endswith("loss=1") and out[1].endswith("loss=3")


# ---- digits_mlp --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def digits():
    return digits_mlp.prepare_data(random.PRNGKey(0))


def test_digits_mlp_loss_falls_and_grads_check(digits):
    x_tr, y_tr, _, _ = digits
    model = digits_mlp.init_model(random.PRNGKey(1), hidden=(32,))
    opt = digits_mlp.make_optimizer(1e-2, total_steps=20)
    step = digits_mlp.make_train_step(opt, weight_decay=1e-4)
    x, y = jnp.asarray(x_tr[:128]), jnp.asarray(y_tr[:128])
    model, losses = _repeat_steps(step, model, opt.init(model), (x, y), 15)
    assert losses[-1] < 0.5 * losses[0], losses
    loss, acc = digits_mlp.evaluate(model, x, y)
    assert float(acc) > 0.8
    digits_mlp.gradient_check(model, x_tr[:4], y_tr[:4])


def test_digits_mlp_main_runs(tmp_path, capsys):
    # one short epoch: below the accuracy target, so main reports failure with status 1
    status = digits_mlp.main(["--epochs", "1", "--hidden", "16", "--no-plot", "--out", str(tmp_path)])
    out = capsys.readouterr().out
    assert status == 1
    assert "fjax jit backend: interpret" in out and "check_grads" in out


# ---- digits_cnn --------------------------------------------------------------------------------


def test_digits_cnn_loss_falls():
    x, y = _common.load_digits()
    x_img = digits_cnn.to_images(x[:64])
    assert x_img.shape == (64, 8, 8, 1) and x_img.max() <= 1.0
    model = digits_cnn.init_model(random.PRNGKey(0))
    assert model(jnp.asarray(x_img)).shape == (64, 10)
    opt = digits_cnn.make_optimizer(1e-2, total_steps=20)
    step = digits_cnn.make_train_step(opt)
    xb, yb = jnp.asarray(x_img), jnp.asarray(y[:64])
    state = opt.init(model)
    losses = []
    for k in random.split(random.PRNGKey(1), 12):
        model, state, loss = step(model, state, xb, yb, k)
        losses.append(float(loss))
    assert np.mean(losses[-3:]) < 0.7 * np.mean(losses[:3]), losses


# ---- char_lstm ---------------------------------------------------------------------------------


def test_char_lstm_loss_falls_and_samples():
    text = char_lstm.load_text()
    assert 2000 < len(text) < 20000
    vocab = char_lstm.Vocab(text)
    assert vocab.decode(vocab.encode("The sea")) == "The sea"
    data = vocab.encode(text)
    model = char_lstm.init_model(len(vocab), random.PRNGKey(0), hidden=32)
    opt = char_lstm.make_optimizer(2e-2, total_steps=20)
    step = char_lstm.make_train_step(opt)
    inputs, targets = char_lstm.get_batch(data, random.PRNGKey(1), 8, 16)
    assert inputs.shape == targets.shape == (8, 16)
    assert np.array_equal(np.asarray(inputs)[:, 1:], np.asarray(targets)[:, :-1])
    logits, _ = model(inputs)
    assert logits.shape == (8, 16, len(vocab))
    model, losses = _repeat_steps(step, model, opt.init(model), (inputs, targets), 15)
    assert losses[-1] < 0.8 * losses[0], losses
    out = np.asarray(char_lstm.sample(model, jnp.asarray(vocab.encode("The ")), random.PRNGKey(2), 20))
    assert out.shape == (20,) and out.min() >= 0 and out.max() < len(vocab)
    assert len(vocab.decode(out)) == 20


def test_char_lstm_step_matches_scan():
    vocab_size = 11
    model = char_lstm.init_model(vocab_size, random.PRNGKey(0), hidden=8)
    ids = jnp.asarray(np.arange(10, dtype=np.int32).reshape(2, 5) % vocab_size)
    logits, _ = model(ids)
    carry = model.initial_carry(2)
    for t in range(5):
        carry, lt = model.step(carry, ids[:, t])
        np.testing.assert_allclose(np.asarray(lt), np.asarray(logits[:, t]), rtol=1e-5, atol=1e-5)


# ---- gan_2d ------------------------------------------------------------------------------------


def test_gan_data_and_coverage():
    real = np.asarray(gan_2d.sample_real(random.PRNGKey(0), 2000))
    assert real.shape == (2000, 2)
    modes, near = gan_2d.mode_coverage(real)
    assert modes == gan_2d.N_MODES and near > 0.99
    modes, near = gan_2d.mode_coverage(np.zeros((100, 2), np.float32))
    assert modes == 0 and near == 0.0


def test_gan_losses_fall():
    model = gan_2d.init_model(random.PRNGKey(0), hidden=32)
    opt_g, opt_d = gan_2d.make_optimizers(1e-2, 1e-2)
    real = gan_2d.sample_real(random.PRNGKey(1), 128)
    fake = gan_2d.generate(model.gen, random.PRNGKey(2), 128)

    # discriminator alone against a fixed generator
    @fjax.jit
    def d_step(disc, state):
        loss, g = fjax.value_and_grad(gan_2d.disc_loss)(disc, real, fake)
        u, state = opt_d.update(g, state, disc)
        return fjax.optim.apply_updates(disc, u), state, loss

    disc, d_losses = _repeat_steps(d_step, model.disc, opt_d.init(model.disc), (), 10)
    assert d_losses[-1] < d_losses[0], d_losses

    # generator alone against that (now fixed) discriminator
    z = random.normal(random.PRNGKey(3), (128, gan_2d.LATENT))

    @fjax.jit
    def g_step(gen, state):
        loss, g = fjax.value_and_grad(gan_2d.gen_loss)(gen, disc, z)
        u, state = opt_g.update(g, state, gen)
        return fjax.optim.apply_updates(gen, u), state, loss

    _, g_losses = _repeat_steps(g_step, model.gen, opt_g.init(model.gen), (), 10)
    assert g_losses[-1] < g_losses[0], g_losses

    # the joint step runs and gives finite losses
    step = gan_2d.make_train_step(opt_g, opt_d, batch_size=64)
    states = (opt_g.init(model.gen), opt_d.init(model.disc))
    model, states, dl, gl = step(model, states, random.PRNGKey(4))
    assert np.isfinite(float(dl)) and np.isfinite(float(gl))
