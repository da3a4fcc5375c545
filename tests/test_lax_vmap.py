"""vmap of every primitive in ``fjax/lax/lax.py``: ``vmap(f, in_axes, out_axes)(xs)`` equals the
stack of ``f`` over the examples, for the op table of ``tests/test_lax.py`` (elementwise ops with
rank-0 operands, structural ops, reductions, argmax/argmin, dot_general with drawn dimension
numbers, select_n with batched/unbatched predicates, clamp with scalar bounds,
convert_element_type, iota inside the mapped function, integer_pow), with ``in_axes`` drawn from
0, 1, -1 and None per argument. Also vmap of grad for a few ops.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from test_lax import BOOL, C64, DIFF, F32, I32, OPS, OPS_BY_NAME, Spec, _float_closure, _params, arr, draw_array

import fjax
from fjax import lax

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")


def _assert_close(got, expected, name: str) -> None:
    got = np.asarray(got)
    assert got.dtype == expected.dtype, f"{name}: dtype {got.dtype}, expected {expected.dtype}"
    assert got.shape == expected.shape, f"{name}: shape {got.shape}, expected {expected.shape}"
    if got.dtype.kind in "fc":
        # batched and per-example evaluation may sum in a different order (matmul, reductions)
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5, err_msg=name)
    else:
        np.testing.assert_array_equal(got, expected, err_msg=name)


def _in_axis(draw, ndim: int):
    return draw(st.sampled_from([None, 0, -1] + ([1] if ndim >= 1 else [])))


@pytest.mark.parametrize("op,dt", _params(OPS, (F32, I32, BOOL, C64)))
@given(data=st.data())
def test_vmap(op, dt, data):
    draw = data.draw
    case = op.case(draw, dt)
    size = draw(st.integers(1, 3))
    axes = [_in_axis(draw, len(s.shape)) for s in case.specs]
    if all(a is None for a in axes):
        axes[draw(st.integers(0, len(axes) - 1))] = 0
    batched = []
    for s, ax in zip(case.specs, axes):
        if ax is None:
            batched.append(draw_array(draw, s))
        else:
            batched.append(np.moveaxis(draw_array(draw, Spec((size,) + s.shape, s.dtype, s.dom)), 0, ax))
    outs = [
        np.asarray(
            case.fn(*[arr(np.take(a, b, axis=ax)) if ax is not None else arr(a) for a, ax in zip(batched, axes)])
        )
        for b in range(size)
    ]
    out_axis = draw(st.sampled_from([0, -1] + ([1] if outs[0].ndim >= 1 else [])))
    expected = np.stack(outs, axis=out_axis)
    got = fjax.vmap(case.fn, in_axes=tuple(axes), out_axes=out_axis)(*[arr(a) for a in batched])
    _assert_close(got, expected, f"{op.name} in_axes={axes} out_axes={out_axis}")


def test_vmap_size_zero_batch():
    x = arr(np.zeros((0, 3), np.float32))
    assert fjax.vmap(lax.sin)(x).shape == (0, 3)
    assert fjax.vmap(lambda v: lax.reduce_sum(v, (0,)))(x).shape == (0,)
    assert fjax.vmap(lambda v: lax.argmax(v, 0, np.int32))(x).shape == (0,)


def test_vmap_select_n_batched_scalar_predicate_with_unbatched_cases():
    which = arr(np.array([True, False, True]))
    a, b = arr(np.zeros((2, 2), np.float32)), arr(np.ones((2, 2), np.float32))
    out = fjax.vmap(lambda w: lax.select_n(w, a, b))(which)
    np.testing.assert_array_equal(out, np.stack([np.ones((2, 2)), np.zeros((2, 2)), np.ones((2, 2))]))


VMAP_GRAD = [
    "sin",
    "logistic",
    "pow",
    "div",
    "max",
    "clamp",
    "reduce_max",
    "dot_general",
    "integer_pow_3",
    "broadcast_in_dim",
]


@pytest.mark.parametrize("op", [OPS_BY_NAME[n] for n in VMAP_GRAD], ids=VMAP_GRAD)
@given(data=st.data())
def test_vmap_of_grad(op, data):
    assert op in DIFF
    draw = data.draw
    case = op.case(draw, F32, for_grad=True)
    size = draw(st.integers(1, 3))
    examples = []
    for _ in range(size):
        args = [draw_array(draw, s) for s in case.specs]
        examples.append(op.fix(args) if op.fix is not None else args)
    is_f = [s.dtype.kind == "f" for s in case.specs]
    # non-float args (select_n's predicate) are shared; float args are mapped at axis 0
    shared = examples[0]
    nf = sum(is_f)

    def loss(*fargs):
        fn, _ = _float_closure(case.fn, [arr(a) for a in shared])
        out = fn(*fargs)
        return lax.reduce_sum(out, tuple(range(out.ndim)))

    g = fjax.grad(loss, argnums=tuple(range(nf)))
    per = [g(*[arr(a) for a, f in zip(ex, is_f) if f]) for ex in examples]
    stacked = [arr(np.stack([ex[i] for ex in examples])) for i, f in enumerate(is_f) if f]
    got = fjax.vmap(g)(*stacked)
    for k in range(nf):
        _assert_close(got[k], np.stack([np.asarray(p[k]) for p in per]), f"grad {op.name} arg {k}")
