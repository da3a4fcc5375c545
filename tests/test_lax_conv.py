"""Tests for fjax.lax.convolution: conv_general_dilated (values against a direct-loop reference,
derivatives, vmap, jit), dimension numbers, padding strings and the conv / conv_transpose wrappers.

The conv_transpose fixed examples were recorded with jax 0.10.2 (``lax.conv_transpose``).
"""

import itertools

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import fjax
from fjax.lax import convolution as conv_mod
from fjax.lax.convolution import ConvDimensionNumbers, conv_general_dilated
from fjax.test_util import check_grads

SPATIAL = "HWD"


def _dilate(n, d):
    return 0 if n == 0 else (n - 1) * d + 1


def reference_conv(lhs, rhs, strides, padding, lhs_dil, rhs_dil, G, B):
    """Direct loops on NC... / OI... / NC... layouts with explicit (lo, hi) padding."""
    N, C = lhs.shape[:2]
    O, Cg = rhs.shape[:2]
    sp = lhs.shape[2:]
    ks = rhs.shape[2:]
    # dilate and pad the input explicitly
    dil_shape = tuple(_dilate(n, d) for n, d in zip(sp, lhs_dil))
    x = np.zeros((N, C) + dil_shape, lhs.dtype)
    x[(slice(None), slice(None)) + tuple(slice(None, None, d) for d in lhs_dil)] = lhs
    padded_shape = tuple(n + lo + hi for n, (lo, hi) in zip(dil_shape, padding))
    xp = np.zeros((N, C) + padded_shape, lhs.dtype)
    for pos in itertools.product(*[range(n) for n in padded_shape]):
        src = tuple(p - lo for p, (lo, _) in zip(pos, padding))
        if all(0 <= s < n for s, n in zip(src, dil_shape)):
            xp[(slice(None), slice(None)) + pos] = x[(slice(None), slice(None)) + src]
    eff_k = tuple(_dilate(k, d) for k, d in zip(ks, rhs_dil))
    out_sp = tuple(max(0, (n - k) // s + 1) if n >= k else 0 for n, k, s in zip(padded_shape, eff_k, strides))
    out = np.zeros((N // B, O) + out_sp, np.float64)
    Og = O // (G * B)
    for n, o in itertools.product(range(N // B), range(O)):
        grp = o // Og
        g, b = (grp, 0) if G > 1 else (0, grp)
        for opos in itertools.product(*[range(m) for m in out_sp]):
            acc = 0.0
            for c in range(Cg):
                for kpos in itertools.product(*[range(k) for k in ks]):
                    ipos = tuple(op * s + kp * rd for op, s, kp, rd in zip(opos, strides, kpos, rhs_dil))
                    acc += xp[(b * (N // B) + n, g * Cg + c) + ipos] * rhs[(o, c) + kpos]
            out[(n, o) + opos] = acc
    return out


@st.composite
def conv_configs(draw, max_spatial=2):
    nsp = draw(st.integers(1, max_spatial))
    G, B = draw(st.sampled_from([(1, 1), (1, 1), (2, 1), (1, 2)]))
    N = B * draw(st.integers(1, 2))
    Cg = draw(st.integers(1, 2))
    O = G * B * draw(st.integers(1, 2))
    sp = tuple(draw(st.lists(st.integers(1, 4), min_size=nsp, max_size=nsp)))
    ks = tuple(draw(st.lists(st.integers(1, 3), min_size=nsp, max_size=nsp)))
    strides = tuple(draw(st.lists(st.integers(1, 2), min_size=nsp, max_size=nsp)))
    lhs_dil = tuple(draw(st.lists(st.integers(1, 2), min_size=nsp, max_size=nsp)))
    rhs_dil = tuple(draw(st.lists(st.integers(1, 2), min_size=nsp, max_size=nsp)))
    if all(d == 1 for d in lhs_dil) and draw(st.booleans()):
        padding = draw(st.sampled_from(["SAME", "VALID", "SAME_LOWER"]))
    else:
        padding = tuple(draw(st.tuples(st.integers(-1, 2), st.integers(-1, 2))) for _ in range(nsp))
        padding = tuple(
            (lo, hi) if lo + hi > -_dilate(n, d) else (0, 0) for (lo, hi), n, d in zip(padding, sp, lhs_dil)
        )
    layout = draw(st.sampled_from(["default", "strings", "permuted"]))
    letters = SPATIAL[:nsp]
    if layout == "default":
        dn = None
    else:
        if layout == "strings":
            specs = ["N" + letters + "C", letters + "IO", "N" + letters + "C"]
        else:
            specs = ["".join(draw(st.permutations(list(base + letters)))) for base in ("NC", "OI", "NC")]
        dn = tuple(specs)
    return dict(
        nsp=nsp,
        G=G,
        B=B,
        N=N,
        C=G * Cg,
        Cg=Cg,
        O=O,
        sp=sp,
        ks=ks,
        strides=strides,
        lhs_dil=lhs_dil,
        rhs_dil=rhs_dil,
        padding=padding,
        dn=dn,
    )


def _layout(cfg, rng):
    """Random operands in the config's layout, plus the canonical (NC..., OI...) copies."""
    lhs_c = rng.standard_normal((cfg["N"], cfg["C"]) + cfg["sp"]).astype(np.float32)
    rhs_c = rng.standard_normal((cfg["O"], cfg["Cg"]) + cfg["ks"]).astype(np.float32)
    dn = cfg["dn"]
    if dn is None:
        return lhs_c, rhs_c, lhs_c, rhs_c
    letters = SPATIAL[: cfg["nsp"]]
    lhs = np.transpose(lhs_c, ["NC".__add__(letters).index(ch) for ch in dn[0]])
    rhs = np.transpose(rhs_c, ["OI".__add__(letters).index(ch) for ch in dn[1]])
    return lhs, rhs, lhs_c, rhs_c


def _to_out_layout(cfg, out_c):
    dn = cfg["dn"]
    if dn is None:
        return out_c
    letters = SPATIAL[: cfg["nsp"]]
    return np.transpose(out_c, ["NC".__add__(letters).index(ch) for ch in dn[2]])


def _kwargs(cfg):
    # per-spatial-dim parameters are ordered like the kernel spec's spatial letters
    letters = SPATIAL[: cfg["nsp"]]
    order = range(cfg["nsp"]) if cfg["dn"] is None else [letters.index(c) for c in cfg["dn"][1] if c not in "OI"]

    def perm(v):
        return v if isinstance(v, str) else tuple(v[i] for i in order)

    return dict(
        window_strides=perm(cfg["strides"]),
        padding=perm(cfg["padding"]),
        lhs_dilation=perm(cfg["lhs_dil"]),
        rhs_dilation=perm(cfg["rhs_dil"]),
        dimension_numbers=cfg["dn"],
        feature_group_count=cfg["G"],
        batch_group_count=cfg["B"],
    )


def _explicit_padding(cfg):
    pad = cfg["padding"]
    if isinstance(pad, str):
        eff_k = [_dilate(k, d) for k, d in zip(cfg["ks"], cfg["rhs_dil"])]
        return conv_mod.padtype_to_pads(cfg["sp"], eff_k, cfg["strides"], pad)
    return pad


@given(cfg=conv_configs(max_spatial=3), seed=st.integers(0, 2**16))
def test_conv_values_against_loops(cfg, seed):
    rng = np.random.default_rng(seed)
    lhs, rhs, lhs_c, rhs_c = _layout(cfg, rng)
    got = conv_general_dilated(lhs, rhs, **_kwargs(cfg))
    ref = reference_conv(
        lhs_c, rhs_c, cfg["strides"], _explicit_padding(cfg), cfg["lhs_dil"], cfg["rhs_dil"], cfg["G"], cfg["B"]
    )
    ref = _to_out_layout(cfg, ref)
    assert got.dtype == np.float32
    assert got.shape == ref.shape
    np.testing.assert_allclose(np.asarray(got), ref, rtol=1e-4, atol=1e-4)


@given(cfg=conv_configs(), seed=st.integers(0, 2**16))
def test_conv_grads(cfg, seed):
    rng = np.random.default_rng(seed)
    lhs, rhs, _, _ = _layout(cfg, rng)
    kw = _kwargs(cfg)
    out = conv_general_dilated(lhs, rhs, **kw)
    if out.size == 0:
        return
    check_grads(lambda a, b: conv_general_dilated(a, b, **kw), (lhs, rhs), order=2, modes=("fwd", "rev"))


@given(cfg=conv_configs(), which=st.sampled_from(["lhs", "rhs", "both"]), seed=st.integers(0, 2**16), data=st.data())
def test_conv_vmap(cfg, which, seed, data):
    rng = np.random.default_rng(seed)
    lhs, rhs, _, _ = _layout(cfg, rng)
    kw = _kwargs(cfg)
    n = 2
    la = data.draw(st.integers(0, lhs.ndim)) if which in ("lhs", "both") else None
    ra = data.draw(st.integers(0, rhs.ndim)) if which in ("rhs", "both") else None
    lhs_b = np.stack([lhs, 2 * lhs + 1], axis=la) if la is not None else lhs
    rhs_b = np.stack([rhs, -rhs], axis=ra) if ra is not None else rhs
    f = lambda a, b: conv_general_dilated(a, b, **kw)  # noqa: E731
    got = fjax.vmap(f, in_axes=(la, ra))(lhs_b, rhs_b)
    ref = np.stack(
        [
            np.asarray(
                f(np.take(lhs_b, i, la) if la is not None else lhs, np.take(rhs_b, i, ra) if ra is not None else rhs)
            )
            for i in range(n)
        ]
    )
    np.testing.assert_allclose(np.asarray(got), ref, rtol=1e-5, atol=1e-5)


@given(cfg=conv_configs(), seed=st.integers(0, 2**16))
def test_conv_vmap_of_grad(cfg, seed):
    rng = np.random.default_rng(seed)
    lhs, rhs, _, _ = _layout(cfg, rng)
    kw = _kwargs(cfg)
    loss = lambda a, b: (conv_general_dilated(a, b, **kw) ** 2).sum()  # noqa: E731
    rhs_b = np.stack([rhs, 0.5 * rhs])
    got = fjax.vmap(fjax.grad(loss, argnums=(0, 1)), in_axes=(None, 0))(lhs, rhs_b)
    for i in range(2):
        ga, gb = fjax.grad(loss, argnums=(0, 1))(lhs, rhs_b[i])
        np.testing.assert_allclose(np.asarray(got[0][i]), np.asarray(ga), rtol=1e-4, atol=1e-4)
        np.testing.assert_allclose(np.asarray(got[1][i]), np.asarray(gb), rtol=1e-4, atol=1e-4)


def test_conv_jit_matches_eager():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 5, 6, 4)).astype(np.float32)
    w = rng.standard_normal((3, 3, 2, 6)).astype(np.float32)
    f = lambda a, b: conv_general_dilated(
        a,
        b,
        (2, 1),
        "SAME",
        rhs_dilation=(1, 2),  # noqa: E731
        dimension_numbers=("NHWC", "HWIO", "NHWC"),
        feature_group_count=2,
    )
    np.testing.assert_allclose(np.asarray(fjax.jit(f)(x, w)), np.asarray(f(x, w)), rtol=1e-5, atol=1e-5)
    g = fjax.jit(fjax.grad(lambda a, b: f(a, b).sum(), argnums=1))
    np.testing.assert_allclose(
        np.asarray(g(x, w)), np.asarray(fjax.grad(lambda a, b: f(a, b).sum(), argnums=1)(x, w)), rtol=1e-5, atol=1e-5
    )
    assert "conv_general_dilated" in str(fjax.make_jaxpr(f)(x, w))


def test_integer_conv_and_preferred_element_type():
    x = np.arange(12, dtype=np.int32).reshape(1, 1, 12)
    w = np.array([[[1, -1]]], np.int32)
    out = conv_general_dilated(x, w, (1,), "VALID")
    assert out.dtype == np.int32
    np.testing.assert_array_equal(np.asarray(out), -np.ones((1, 1, 11), np.int32))
    out = conv_general_dilated(x.astype(np.int8), w.astype(np.int8), (1,), "VALID", preferred_element_type=np.int32)
    assert out.dtype == np.int32


# ---------------------------------------------------------------------------------------------
# dimension numbers and padding


def test_conv_dimension_numbers():
    assert conv_mod.conv_dimension_numbers(
        (1, 2, 3, 4), (1, 2, 3, 4), ("NHWC", "HWIO", "NHWC")
    ) == ConvDimensionNumbers((0, 3, 1, 2), (3, 2, 0, 1), (0, 3, 1, 2))
    # spatial dims are matched by letter, in the kernel spec's order (as jax 0.10.2)
    assert conv_mod.conv_dimension_numbers(
        (1, 2, 3, 4), (1, 2, 3, 4), ("NWHC", "HWIO", "NHWC")
    ) == ConvDimensionNumbers((0, 3, 2, 1), (3, 2, 0, 1), (0, 3, 1, 2))
    assert conv_mod.conv_dimension_numbers((1, 2, 3), (1, 2, 3), None) == ConvDimensionNumbers(*((0, 1, 2),) * 3)
    dn = ConvDimensionNumbers((0, 2, 1), (2, 1, 0), (0, 2, 1))
    assert conv_mod.conv_dimension_numbers((1, 2, 3), (1, 2, 3), dn) == dn
    with pytest.raises(TypeError):
        conv_mod.conv_dimension_numbers((1, 2, 3), (1, 2, 3), ("NCH", "OIW", "NCH"))


def test_padtype_to_pads():
    assert conv_mod.padtype_to_pads((5,), (3,), (2,), "SAME") == [(1, 1)]
    assert conv_mod.padtype_to_pads((6,), (4,), (1,), "SAME") == [(1, 2)]
    assert conv_mod.padtype_to_pads((6,), (4,), (1,), "SAME_LOWER") == [(2, 1)]
    assert conv_mod.padtype_to_pads((6,), (4,), (1,), "VALID") == [(0, 0)]
    with pytest.raises(RuntimeError, match="Unrecognized padding type"):  # JAX raises RuntimeError
        conv_mod.padtype_to_pads((6,), (4,), (1,), "FULL")


def test_conv_errors():
    x = np.ones((1, 4, 5), np.float32)
    with pytest.raises(ValueError, match="feature_group_count"):
        conv_general_dilated(x, np.ones((3, 2, 2), np.float32), (1,), "VALID", feature_group_count=2)
    with pytest.raises(ValueError):
        conv_general_dilated(x, np.ones((2, 3, 2), np.float32), (1,), "VALID")
    with pytest.raises(TypeError, match="same dtypes"):
        conv_general_dilated(x, np.ones((2, 4, 2), np.int32), (1,), "VALID")
    with pytest.raises(ValueError, match="String padding"):
        conv_general_dilated(x, np.ones((2, 4, 2), np.float32), (1,), "SAME", lhs_dilation=(2,))
    with pytest.raises(ValueError, match="Negative padding"):
        conv_general_dilated(x, np.ones((2, 4, 1), np.float32), (1,), [(-3, -3)])


# ---------------------------------------------------------------------------------------------
# wrappers


def test_conv_and_conv_with_general_padding():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 3, 5, 6)).astype(np.float32)
    w = rng.standard_normal((4, 3, 2, 3)).astype(np.float32)
    for pad in ("SAME", "VALID"):
        np.testing.assert_allclose(
            np.asarray(conv_mod.conv(x, w, (1, 2), pad)), np.asarray(conv_general_dilated(x, w, (1, 2), pad))
        )
    got = conv_mod.conv_with_general_padding(x, w, (1, 2), [(1, 0), (2, 1)], (2, 1), (1, 2))
    ref = reference_conv(x, w, (1, 2), [(1, 0), (2, 1)], (2, 1), (1, 2), 1, 1)
    np.testing.assert_allclose(np.asarray(got), ref, rtol=1e-4, atol=1e-4)


def test_conv_transpose_recorded():
    x = np.array([1.0, 2.0, 3.0], np.float32).reshape(1, 3, 1)  # NWC
    w = np.array([1.0, 10.0], np.float32).reshape(2, 1, 1)  # WIO
    ct = conv_mod.conv_transpose
    np.testing.assert_array_equal(np.asarray(ct(x, w, (2,), "SAME")).ravel(), [10, 1, 20, 2, 30, 3])
    np.testing.assert_array_equal(np.asarray(ct(x, w, (2,), "VALID")).ravel(), [10, 1, 20, 2, 30, 3])
    np.testing.assert_array_equal(
        np.asarray(ct(x, w, (2,), [(1, 0)], use_consistent_padding=True)).ravel(), [1, 20, 2, 30, 3]
    )
    np.testing.assert_array_equal(np.asarray(ct(x, w, (2,), [(1, 0)])).ravel(), [10, 1, 20, 2, 30])
    x2 = (np.arange(24).reshape(1, 4, 3, 2) % 5 - 2).astype(np.float32)  # NHWC
    w2 = (np.arange(36).reshape(3, 2, 2, 3) % 7 - 3).astype(np.float32)  # HWIO
    assert ct(x2, w2, (2, 1), "SAME").shape == (1, 8, 3, 3)
    assert ct(x2, w2, (2, 1), "VALID").shape == (1, 9, 4, 3)
    out = ct(x2, w2, (2, 1), ((1, 0), (0, 2)))
    assert out.shape == (1, 6, 4, 3)
    np.testing.assert_array_equal(np.asarray(out)[0, 0], [[-5, -7, 5], [6, 7, 8], [8, 8, -6], [0, 0, 0]])
    w2t = np.ascontiguousarray(w2.transpose(0, 1, 3, 2))
    out = ct(x2, w2t, (2, 1), "SAME", transpose_kernel=True)
    np.testing.assert_array_equal(np.asarray(out)[0, 0], [[6, 3, 0], [-5, 7, 5], [-7, -6, -5]])


def test_conv_transpose_kernel_is_gradient_of_conv():
    # with transpose_kernel, conv_transpose is the VJP of the forward convolution (SAME, divisible sizes)
    rng = np.random.default_rng(2)
    x = rng.standard_normal((1, 6, 4, 2)).astype(np.float32)
    w = rng.standard_normal((3, 3, 2, 5)).astype(np.float32)
    dn = ("NHWC", "HWIO", "NHWC")
    fwd = lambda a: conv_general_dilated(a, w, (2, 2), "SAME", dimension_numbers=dn)  # noqa: E731
    y, vjp = fjax.vjp(fwd, x)
    ct = rng.standard_normal(y.shape).astype(np.float32)
    got = conv_mod.conv_transpose(ct, w, (2, 2), "SAME", dimension_numbers=dn, transpose_kernel=True)
    np.testing.assert_allclose(np.asarray(got), np.asarray(vjp(ct)[0]), rtol=1e-4, atol=1e-4)


# ---------------------------------------------------------------------------------------------
# the numba backend's compiled conv (fjax/backends/numba/conv.py): each patch-matrix form, the
# blocks shared between threads, against the primitive's impl on the same equation


def _conv_steps(f, *args):
    """(step, operands) of every conv_general_dilated equation of ``make_jaxpr(f)(*args)``."""
    from fjax import core
    from fjax.backends.kernel_ir import Step

    closed = fjax.make_jaxpr(f)(*args)
    env = dict(zip(closed.jaxpr.constvars, closed.consts))
    env.update(zip(closed.jaxpr.invars, args))
    found = []
    for e in closed.jaxpr.eqns:
        ins = [v.val if isinstance(v, core.Literal) else env[v] for v in e.invars]
        if e.primitive.name == "conv_general_dilated":
            found.append((Step(e.primitive, e.params, [v.aval for v in e.invars], [v.aval for v in e.outvars]), ins))
        outs = e.primitive.bind(*ins, **e.params)
        outs = outs if e.primitive.multiple_results else [outs]
        env.update(zip(e.outvars, (np.asarray(o) for o in outs)))
    return found


def _check_compiled(f, *args, forms=None):
    """Every conv of ``f`` (and of its gradient) compiled against the impl; returns the forms used."""
    from fjax.backends.numba import conv as numba_conv

    used = []
    for step, ins in _conv_steps(f, *args):
        k = numba_conv.build_conv(step)
        if k is None:
            continue
        used.append(k.form)
        ref = np.asarray(step.prim.impl(*ins, **step.params))
        for _ in range(2):  # the second call reuses the pooled patch buffers
            got = k(*ins)
            assert got.shape == ref.shape
            np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-4 * max(1.0, float(np.abs(ref).max())))
    if forms is not None:
        assert set(forms) <= set(used), used
    return used


def _nhwc_loss(kw, dn=("NHWC", "HWIO", "NHWC")):
    def loss(x, w, g):
        return jnp_sum(conv_general_dilated(x, w, dimension_numbers=dn, **kw) * g)

    return loss


def jnp_sum(a):
    import fjax.numpy as jnp

    return jnp.sum(a)


@pytest.mark.parametrize(
    "kw",
    [
        dict(window_strides=(1, 1), padding="SAME"),
        dict(window_strides=(2, 1), padding=((1, 0), (2, 1)), rhs_dilation=(1, 2)),
        dict(window_strides=(1, 2), padding=((0, 1), (1, 0)), lhs_dilation=(2, 1)),
        dict(window_strides=(1, 1), padding="SAME", feature_group_count=2),
    ],
)
def test_compiled_conv_forms_nhwc_and_gradients(kw):
    """NHWC forward and input gradient: the rows form (channel runs, adjacent taps merged); the
    kernel gradient (its batch dim is the input's last axis): the transposed form, batch-grouped
    for a feature-grouped conv."""
    rng = np.random.default_rng(0)
    G = kw.get("feature_group_count", 1)
    x = rng.standard_normal((3, 9, 8, 4 * G)).astype(np.float32)
    w = rng.standard_normal((3, 3, 4, 6 * G)).astype(np.float32)
    dn = ("NHWC", "HWIO", "NHWC")
    y = conv_general_dilated(x, w, dimension_numbers=dn, **kw)
    g = rng.standard_normal(y.shape).astype(np.float32)
    loss = _nhwc_loss(kw, dn)
    _check_compiled(fjax.grad(loss, argnums=(0, 1)), x, w, g, forms=("rows", "transposed"))


def test_compiled_conv_other_layouts():
    """NCHW (channel-major columns) and a 3-d conv."""
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 4, 7, 6)).astype(np.float32)
    w = rng.standard_normal((5, 4, 3, 3)).astype(np.float32)
    g = rng.standard_normal((2, 5, 7, 6)).astype(np.float32)
    dn = ("NCHW", "OIHW", "NCHW")
    forms = _check_compiled(fjax.grad(_nhwc_loss(dict(window_strides=(1, 1), padding="SAME"), dn), (0, 1)), x, w, g)
    assert "cm" in forms
    x3 = rng.standard_normal((2, 4, 5, 3, 4)).astype(np.float32)
    w3 = rng.standard_normal((2, 3, 2, 4, 3)).astype(np.float32)
    dn3 = ("NDHWC", "DHWIO", "NDHWC")
    y3 = conv_general_dilated(x3, w3, (1, 1, 1), "SAME", dimension_numbers=dn3)
    g3 = rng.standard_normal(y3.shape).astype(np.float32)
    loss3 = _nhwc_loss(dict(window_strides=(1, 1, 1), padding="SAME"), dn3)
    _check_compiled(fjax.grad(loss3, argnums=(0, 1)), x3, w3, g3, forms=("rows", "transposed"))


def test_compiled_conv_float64_1d(x64):
    rng = np.random.default_rng(4)
    x1 = rng.standard_normal((3, 11, 8))
    w1 = rng.standard_normal((3, 8, 5))
    f1 = lambda a, b: conv_general_dilated(a, b, (2,), "SAME", dimension_numbers=("NWC", "WIO", "NWC"))  # noqa: E731
    assert _check_compiled(f1, x1, w1) == ["rows"]


@pytest.mark.parametrize("busy", [False, True])
def test_compiled_conv_blocks_on_numba_pool(monkeypatch, busy):
    """Many small blocks shared out on numba's thread pool (forced on whatever the size), or done
    by the calling thread while the machine is busy: the same results, summed over the blocks in
    the transposed form; the later calls reuse the pooled buffers."""
    from fjax.backends.numba import conv as numba_conv

    monkeypatch.setattr(numba_conv, "_PARALLEL_MACS", 0)
    monkeypatch.setattr(numba_conv, "_MIN_PAR_ROWS", 3)
    monkeypatch.setattr(numba_conv._blas, "machine_busy", lambda now=None: busy)
    rng = np.random.default_rng(2)
    x = rng.standard_normal((4, 10, 9, 6)).astype(np.float32)
    w = rng.standard_normal((3, 3, 3, 8)).astype(np.float32)
    kw = dict(window_strides=(1, 1), padding="SAME", feature_group_count=2)
    g = rng.standard_normal(conv_general_dilated(x, w, dimension_numbers=("NHWC", "HWIO", "NHWC"), **kw).shape)
    args = (x, w, g.astype(np.float32))
    for step, _ in _conv_steps(fjax.grad(_nhwc_loss(kw), argnums=(0, 1)), *args):
        k = numba_conv.build_conv(step)
        assert k.blocks >= 4 and k.workers == numba_conv._threads()
    _check_compiled(fjax.grad(_nhwc_loss(kw), argnums=(0, 1)), *args, forms=("rows", "transposed"))
    xc = rng.standard_normal((3, 6, 7, 5)).astype(np.float32)  # NCHW: the channel-major form on the pool
    wc = rng.standard_normal((4, 6, 3, 2)).astype(np.float32)
    fc = lambda a, b: conv_general_dilated(a, b, (1, 1), "SAME", dimension_numbers=("NCHW", "OIHW", "NCHW"))  # noqa: E731
    assert _check_compiled(fc, xc, wc) == ["cm"]
