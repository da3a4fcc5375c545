"""The fold of a select around an indexed update of a loop carry (``fjax/lax/_select_fold.py``).

``where(p, x.at[i].set(v), x)`` (either case order; ``.add``/``.mul``/``.min``/``.max``,
``dynamic_update_slice``) and ``x.at[i].set(where(q, v, x[i]))`` become one scatter of ``x`` that
drops the elements the select keeps: exact for duplicates, out-of-bounds indices under every mode,
``-0.0`` and NaN. The rewritten body is checked against the original one (both evaluated by the
primitives' own implementations) on random shapes, indices and predicates, with and without
``vmap``; compiled loops against the same loops with jit disabled; and the compiled loop updates
its carry in place (no whole-buffer select or copy per step).
"""

from __future__ import annotations

import re

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import fjax
import fjax.numpy as jnp
from fjax import core, lax
from fjax.interpreters import mlir
from fjax.lax import _select_fold

MODES = [None, "clip", "drop", "promise_in_bounds"]
OPS = ["set", "add", "mul", "min", "max"]


def _bits(a: np.ndarray) -> np.ndarray:
    a = np.asarray(a)
    return a.view(np.uint8) if a.dtype.itemsize == 1 else a.view(f"u{a.dtype.itemsize}")


def _fold_check(fn, *args, folds: bool = True) -> core.Jaxpr:
    """``fn``'s jaxpr folded: the same results bit for bit; ``x`` (the second argument) read by
    nothing but one scatter when ``folds``."""
    cj = fjax.make_jaxpr(fn)(*args)
    new = _select_fold.fold_body(cj.jaxpr)
    if not folds:
        assert new is None
        return cj.jaxpr
    assert new is not None, cj
    want = core.eval_jaxpr(cj.jaxpr, cj.consts, *args)
    got = core.eval_jaxpr(new, cj.consts, *args)
    for w, g in zip(want, got):
        np.testing.assert_array_equal(_bits(w), _bits(g))
    x = new.invars[1]
    readers = [e for e in new.eqns if x in e.invars]
    assert len(readers) == 1 and readers[0].primitive.name.startswith("scatter") and readers[0].invars[0] is x, new
    return new


def _update(op: str, x, idx, u, mode):
    return getattr(x.at[idx], {"set": "set", "add": "add", "mul": "multiply", "min": "min", "max": "max"}[op])(
        u, mode=mode
    )


def _values(rng: np.random.Generator, shape: tuple) -> np.ndarray:
    v = rng.standard_normal(shape).astype(np.float32)
    v.flat[::3] = -0.0  # (x + 0 is not x for -0.0: dropping must not add zeros)
    if v.size > 2:
        v.flat[1] = np.nan
    return v


@settings(max_examples=40)
@given(
    op=st.sampled_from(OPS),
    mode=st.sampled_from(MODES),
    order=st.booleans(),
    batch=st.integers(1, 3),
    n=st.integers(1, 5),
    m=st.sampled_from([0, 2]),
    k=st.integers(1, 3),
    pred=st.sampled_from(["member", "full", "int"]),
    batched_idx=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_select_around_scatter_folds_exactly(op, mode, order, batch, n, m, k, pred, batched_idx, seed):
    rng = np.random.default_rng(seed)
    xshape = (n,) if m == 0 else (n, m)
    ushape = (k,) + xshape[1:]

    def body(p, x, idx, u):
        new = _update(op, x, idx, u, mode)
        if pred == "int":
            return lax.select_n(p, x, new) if order else lax.select_n(p, new, x)
        return jnp.where(p, new, x) if order else jnp.where(p, x, new)

    idx = rng.integers(-n - 2, n + 3, size=(batch, k)).astype(np.int32)  # duplicates, out of bounds
    if pred == "member":
        p = rng.random(batch) < 0.5
    elif pred == "full":
        p = rng.random((batch,) + xshape) < 0.5
    else:
        p = rng.integers(0, 2, size=(batch,) + xshape).astype(np.int32)
    x = _values(rng, (batch,) + xshape)
    u = _values(rng, (batch,) + ushape)
    in_axes = (0, 0, 0 if batched_idx else None, 0)
    args = (jnp.asarray(p), jnp.asarray(x), jnp.asarray(idx if batched_idx else idx[0]), jnp.asarray(u))
    _fold_check(fjax.vmap(body, in_axes=in_axes), *args)
    # unbatched (a member's own loop body): a scalar or full predicate
    _fold_check(body, *(jnp.asarray(a[0]) for a in (p, x, idx, u)))


@settings(max_examples=25)
@given(
    order=st.booleans(),
    batch=st.integers(1, 3),
    n=st.integers(1, 6),
    w=st.integers(1, 3),
    pred=st.sampled_from(["member", "full"]),
    batched_start=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_select_around_dynamic_update_slice_folds_exactly(order, batch, n, w, pred, batched_start, seed):
    rng = np.random.default_rng(seed)
    w = min(w, n)

    def body(p, x, s, u):
        new = lax.dynamic_update_slice(x, u, (s, 0))
        return jnp.where(p, new, x) if order else jnp.where(p, x, new)

    p = rng.random(batch) < 0.5 if pred == "member" else rng.random((batch, n, 2)) < 0.5
    x = _values(rng, (batch, n, 2))
    u = _values(rng, (batch, w, 2))
    s = rng.integers(-3, n + 3, size=batch).astype(np.int32)  # clamped starts
    in_axes = (0, 0, 0 if batched_start else None, 0)
    args = (jnp.asarray(p), jnp.asarray(x), jnp.asarray(s if batched_start else s[0]), jnp.asarray(u))
    _fold_check(fjax.vmap(body, in_axes=in_axes), *args)
    _fold_check(body, *(jnp.asarray(a[0]) for a in (p, x, s, u)))


@settings(max_examples=25)
@given(
    order=st.booleans(),
    batch=st.integers(1, 3),
    n=st.integers(1, 6),
    mode=st.sampled_from([None, "clip", "drop"]),
    dus=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_read_back_select_folds_exactly(order, batch, n, mode, dus, seed):
    """``x.at[i].set(where(q, v, x[i]))`` (equinox's buffers): the read of ``x`` goes."""
    rng = np.random.default_rng(seed)

    def body(q, x, i, v):
        if dus:
            old = lax.dynamic_slice(x, (i,), (1,))
            return lax.dynamic_update_slice(x, jnp.where(q, v, old) if order else jnp.where(q, old, v), (i,))
        old = x.at[i].get(mode=mode)
        return x.at[i].set(jnp.where(q, v, old) if order else jnp.where(q, old, v), mode=mode)

    q = rng.random(batch) < 0.5
    x = _values(rng, (batch, n))
    i = rng.integers(-n - 2, n + 3, size=batch).astype(np.int32)
    v = _values(rng, (batch, 1) if dus else (batch,))
    args = tuple(jnp.asarray(a) for a in (q, x, i, v))
    _fold_check(fjax.vmap(body), *args)
    _fold_check(body, *(a[0] for a in args))


@settings(max_examples=25)
@given(
    op=st.sampled_from(["set", "add", "max"]),
    mode=st.sampled_from(["clip", "drop", "promise_in_bounds"]),
    order=st.booleans(),
    n=st.integers(2, 6),
    w=st.integers(1, 3),
    k=st.integers(1, 3),
    seed=st.integers(0, 2**16),
)
def test_windowed_scatter_partly_out_of_bounds_folds_exactly(op, mode, order, n, w, k, seed):
    """A window that starts in bounds but runs past the end: written clamped (``CLIP``) or
    dropped whole (the other modes), as the scatter itself does."""
    rng = np.random.default_rng(seed)
    w = min(w, n)
    dn = lax.ScatterDimensionNumbers((1,), (), (0,))  # a window of w along dim 0
    fn = {"set": lax.scatter, "add": lax.scatter_add, "max": lax.scatter_max}[op]

    def body(p, x, idx, u):
        new = fn(x, idx, u, dn, mode=mode)
        return jnp.where(p, new, x) if order else jnp.where(p, x, new)

    p = rng.random(2) < 0.5
    x = _values(rng, (2, n))
    idx = rng.integers(n - w - 1, n + 1, size=(2, k, 1)).astype(np.int32)
    u = _values(rng, (2, k, w))
    args = tuple(jnp.asarray(a) for a in (p, x, idx, u))
    _fold_check(fjax.vmap(body), *args)
    _fold_check(body, *(a[0] for a in args))


def test_read_back_with_possible_duplicates_is_left_alone():
    """Two writes of one member may meet: dropping the second would keep the first where the
    original wrote the old value back, so the form is not folded."""

    def body(q, x, i, v):
        return x.at[i].set(jnp.where(q, v, x[i]))

    args = (jnp.asarray([True, False]), jnp.zeros(4), jnp.asarray([1, 1]), jnp.asarray([1.0, 2.0]))
    _fold_check(body, *args, folds=False)


def test_select_of_other_value_is_left_alone():
    """``where(p, y.at[i].set(v), x)``: the update is not of the value selected against."""

    def body(p, x, y):
        return jnp.where(p, y.at[0].set(1.0), x)

    _fold_check(fjax.vmap(body), jnp.asarray([True, False]), jnp.zeros((2, 3)), jnp.ones((2, 3)), folds=False)


# ---- compiled loops -------------------------------------------------------------------------


def _loop():
    """A vmapped while loop updating four buffers, one per form (one compile for all)."""

    def f(p, xs, v):
        def body(c):
            i, (a, b, d, r) = c
            a = jnp.where(p, a.at[2 * i - 1].set(v * i), a)  # from -1: negative first, then past the end
            b = jnp.where(~p, b, b.at[jnp.stack([i, i])].add(v))  # duplicates; the other case order
            d = jnp.where(p, lax.dynamic_update_slice(d, jnp.full((2,), v), (i,)), d)
            r = r.at[i].set(jnp.where(p, r[i], v * i))  # the read-back form, one element per member
            return i + 1, (a, b, d, r)

        return lax.while_loop(lambda c: c[0] < 5, body, (jnp.int32(0), xs))

    return fjax.vmap(f, in_axes=(0, (0, 0, 0, 0), 0))


def _args(n: int):
    x = jnp.arange(3 * n, dtype=jnp.float32).reshape(3, n) - 5.0
    return jnp.asarray([True, False, True]), (x, x + 1, x + 2, x + 3), jnp.asarray([1.5, -2.0, 0.5])


def test_compiled_loop_matches_eager():
    g, args = _loop(), _args(8)
    got = fjax.jit(g)(*args)
    with fjax.disable_jit():
        want = g(*args)
    for w, o in zip(fjax.tree_util.tree_leaves(want), fjax.tree_util.tree_leaves(got)):
        np.testing.assert_array_equal(np.asarray(w), np.asarray(o))


def test_compiled_loop_updates_in_place():
    """The body keeps no whole-buffer select and reads no buffer but by its scatter, and each
    compiled scatter writes into the carry itself (``o = c``), not into a copy of it."""
    g, args = _loop(), _args(64)
    cj = mlir.expand(fjax.make_jaxpr(g)(*args))
    (w,) = [e for e in cj.jaxpr.eqns if e.primitive.name == "while"]
    body = w.params["body_jaxpr"].jaxpr
    for x in body.invars[-4:]:
        assert [e.primitive.name for e in body.eqns if x in e.invars] == [
            "scatter" if x is not body.invars[-3] else "scatter-add"
        ], body
    assert not any(e.primitive.name == "select_n" and e.outvars[0].aval.shape == (3, 64) for e in body.eqns), body
    lines = fjax.jit(g).lower(*args).as_text().splitlines()
    at = [k for k, ln in enumerate(lines) if re.match(r"# scatter(-add)?\[", ln.strip())]
    assert len(at) == 4, "\n".join(lines)
    for k in at:
        assert re.fullmatch(r"o\d+ = c\d+", lines[k + 1].strip()), "\n".join(lines[k - 2 : k + 6])
