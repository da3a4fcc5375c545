"""fjax.export (jax.export): export, call under transforms, serialize, and deserialize in a fresh
process with the same numbers; the errors JAX gives (structure, shape, dtype, platform) and
fjax's own (callables that cannot be serialized, unknown formats and versions)."""

import collections
import contextlib
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import fjax
import fjax.numpy as jnp
from fjax import _tree_lifted as tu
from fjax import export, lax

F32 = np.float32


# ---- the corpus: name -> (jitted function, args, kwargs) ---------------------------------------


Batch = collections.namedtuple("Batch", ["x", "y"])
export.register_namedtuple_serialization(Batch, serialized_name="tests.test_export.Batch")


class Scaled:
    """A custom pytree node with aux data (the scale is static)."""

    def __init__(self, value, scale):
        self.value, self.scale = value, scale


fjax.tree_util.register_pytree_node(Scaled, lambda s: ((s.value,), s.scale), lambda aux, ch: Scaled(ch[0], aux))
export.register_pytree_node_serialization(
    Scaled,
    serialized_name="tests.test_export.Scaled",
    serialize_auxdata=lambda aux: json.dumps(aux).encode(),
    deserialize_auxdata=lambda b: json.loads(b.decode()),
)


def _mlp_loss(params, batch):
    h = batch.x
    for layer in params[:-1]:
        h = fjax.nn.relu(h @ layer["w"] + layer["b"])
    logits = h @ params[-1]["w"] + params[-1]["b"]
    logp = logits - jnp.log(jnp.sum(jnp.exp(logits - logits.max(-1, keepdims=True)), -1, keepdims=True))
    return -jnp.mean(jnp.sum((logp - logits.max(-1, keepdims=True)) * batch.y, -1))


def _train_step(params, batch, lr=0.1):
    loss, g = fjax.value_and_grad(_mlp_loss)(params, batch)
    return fjax.tree_util.tree_map(lambda p, d: p - lr * d, params, g), loss


def _rnn(w, h0, xs):
    def run(w):
        def step(h, x):
            h = jnp.tanh(h @ w + x)
            return h, h.sum()

        return lax.scan(step, h0, xs)

    h, ys = run(w)
    return h, ys, fjax.grad(lambda w: run(w)[1].sum())(w)


def _control(x, n):
    y = lax.cond(x.sum() > 0, lambda v: jnp.sin(v) * 2, lambda v: jnp.cos(v) - 1, x)
    i, z = lax.while_loop(lambda c: c[0] < n, lambda c: (c[0] + 1, c[1] * 1.5 + 1), (0, y))
    return lax.fori_loop(0, 3, lambda j, c: c + j, z), i, lax.switch(n % 2, [jnp.sin, jnp.exp], x)


def _gather_scatter(x, idx, upd):
    return x[idx], x.at[idx].add(upd), jnp.take_along_axis(x, idx[:, None] % 3, axis=1), x[1:, ::2]


def _random(key, x):
    k1, k2 = fjax.random.split(key)
    return fjax.random.normal(k1, (4,)) + x, fjax.random.uniform(k2, (2, 3)), fjax.random.fold_in(k1, 3)


_CONST = np.linspace(-1, 1, 6, dtype=F32).reshape(2, 3)


def _misc(x, s):
    conv = lax.conv_general_dilated(x[None, None], x[None, None, :2, :2], (1, 1), "SAME")
    return {
        "conv": conv,
        "fft": jnp.fft.fft(x[0]),
        "sort": jnp.sort(x, axis=1),
        "argmax": jnp.argmax(x, axis=0),
        "cumsum": jnp.cumsum(x, axis=1),
        "const": x[:2, :3] * _CONST,
        "cast": (x * 3).astype(jnp.int32),
        "scaled": Scaled(s.value * s.scale, s.scale + 1),
    }


def _per_example(w, xs):
    return fjax.vmap(fjax.grad(lambda w, x: jnp.tanh(x @ w).sum()), in_axes=(None, 0))(w, xs)


def _corpus():
    rng = np.random.default_rng(0)
    params = [
        {"w": rng.normal(size=(4, 8)).astype(F32), "b": np.zeros(8, F32)},
        {"w": rng.normal(size=(8, 3)).astype(F32), "b": np.zeros(3, F32)},
    ]
    batch = Batch(rng.normal(size=(5, 4)).astype(F32), np.eye(3, dtype=F32)[[0, 1, 2, 0, 1]])
    x43 = rng.normal(size=(4, 3)).astype(F32)
    return {
        "mlp_train_step": (fjax.jit(_train_step), (params, batch), {"lr": F32(0.05)}),
        "scan_rnn": (
            fjax.jit(_rnn),
            (rng.normal(size=(3, 3)).astype(F32) * 0.5, np.zeros(3, F32), rng.normal(size=(6, 3)).astype(F32)),
            {},
        ),
        "cond_while": (fjax.jit(_control, static_argnums=1), (x43, 5), {}),
        "gather_scatter": (
            fjax.jit(_gather_scatter),
            (x43, np.array([3, 0, 2, 1], np.int32), np.ones((4, 3), F32)),
            {},
        ),
        "random_typed_key": (fjax.jit(_random), (fjax.random.key(7), np.arange(4, dtype=F32)), {}),
        "misc_params": (fjax.jit(_misc), (x43, Scaled(np.ones(2, F32), 2.5)), {}),
        "vmap_grad": (fjax.jit(_per_example), (rng.normal(size=(3, 2)).astype(F32), x43), {}),
    }


def _flat(tree):
    return [np.asarray(v) for v in tu.tree_leaves(tree)]


@contextlib.contextmanager
def _interpreted():
    """jit evaluates jaxprs with the primitives' numpy rules (no numba compile): the corpus checks
    compare whole programs exactly and quickly; the numba path is checked on small programs."""
    old = fjax.config.fjax_jit_backend
    fjax.config.update("fjax_jit_backend", "interpret")
    try:
        yield
    finally:
        fjax.config.update("fjax_jit_backend", old)


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """Each program exported, serialized to disk with its inputs and the original's outputs."""
    d = tmp_path_factory.mktemp("export")
    out = {}
    for name, (jf, args, kwargs) in _corpus().items():
        exp = export.export(jf)(*args, **kwargs)
        with _interpreted():
            want = jf(*args, **kwargs)
        dyn_args = tuple(a for i, a in enumerate(args) if i not in jf.static_argnums)
        (d / f"{name}.fjx").write_bytes(exp.serialize())
        np.savez(d / f"{name}.npz", *_flat((dyn_args, kwargs)))
        np.savez(d / f"{name}.want.npz", *_flat(want))
        out[name] = (exp, jf, args, kwargs, dyn_args, want)
    return d, out


def test_call_matches_the_jitted_function(exported):
    _, out = exported
    with _interpreted():
        for name, (exp, _, _, kwargs, dyn_args, want) in out.items():
            got = exp.call(*dyn_args, **kwargs)
            assert tu.tree_structure(got) == tu.tree_structure(want), name
            for g, w in zip(_flat(got), _flat(want)):
                np.testing.assert_array_equal(g, w, err_msg=name)


def test_attributes_as_in_jax(exported):
    exp = exported[1]["cond_while"][0]
    assert exp.fun_name == "_control"
    assert exp.in_tree == fjax.tree_util.tree_structure(((np.ones(1),), {}))  # the static n is baked in
    assert exp.in_avals == (fjax.core.ShapedArray((4, 3), F32),)
    assert exp.platforms == ("cpu",) and exp.nr_devices == 1
    assert exp.in_shardings_hlo == (None,) and exp.out_shardings_hlo == (None,) * 3
    assert export.minimum_supported_calling_convention_version <= exp.calling_convention_version
    assert exp.calling_convention_version <= export.maximum_supported_calling_convention_version
    assert str(exp) == "Exported(fun_name=_control, ...)"
    assert exp.has_vjp()
    with pytest.raises(NotImplementedError, match="StableHLO"):
        exp.mlir_module()
    mlp = exported[1]["mlp_train_step"][0]
    assert "kwargs" not in str(mlp.in_tree) and "'lr': *" in str(mlp.in_tree)


_CHILD = textwrap.dedent(
    """
    import sys, numpy as np
    import fjax, fjax.numpy as jnp
    from fjax import export, _tree_lifted as tu
    sys.path.insert(0, {tests!r})
    import test_export  # registers the pytree serializations, as an importing program would
    d = {d!r}
    checked = []
    for name in {names!r}:
        exp = export.deserialize(open(f"{{d}}/{{name}}.fjx", "rb").read())
        ins = np.load(f"{{d}}/{{name}}.npz")
        leaves = [jnp.asarray(ins[f"arr_{{i}}"]) for i in range(len(ins.files))]
        args, kwargs = exp.in_tree.unflatten(leaves)
        want = np.load(f"{{d}}/{{name}}.want.npz")
        for via, f in [("call", exp.call)] + ([("jit", fjax.jit(exp.call))] if name == "cond_while" else []):
            got = [np.asarray(v) for v in tu.tree_leaves(f(*args, **kwargs))]
            assert len(got) == len(want.files), name
            for i, g in enumerate(got):
                np.testing.assert_array_equal(g, want[f"arr_{{i}}"], err_msg=f"{{name}} ({{via}})")
        checked.append(name)
    # transforms of a deserialized program: grad through the MLP loss, vmap of the RNN
    exp = export.deserialize(open(f"{{d}}/scan_rnn.fjx", "rb").read())
    ins = np.load(f"{{d}}/scan_rnn.npz")
    w, h0, xs = (ins[f"arr_{{i}}"] for i in range(3))
    g = fjax.grad(lambda w: exp.call(w, h0, xs)[1].sum())(w)
    np.testing.assert_allclose(g, exp.call(w, h0, xs)[2], rtol=1e-5, atol=1e-6)
    batched = fjax.vmap(lambda h: exp.call(w, h, xs)[0])(np.stack([h0, h0 + 0.5]))
    np.testing.assert_array_equal(batched[0], exp.call(w, h0, xs)[0])
    print("OK", " ".join(checked))
    """
)


def test_deserialize_in_a_fresh_process(exported):
    d, out = exported
    code = _CHILD.format(tests=os.path.dirname(__file__), d=str(d), names=sorted(out))
    env = dict(os.environ, FJAX_JIT_BACKEND="interpret")  # as the expected values were computed
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env=env)
    assert p.returncode == 0, p.stderr[-4000:]
    assert p.stdout.split()[1:] == sorted(out)


def test_round_trip_compiled_with_numba(exported):
    # the deserialized program compiles (numba) to the same numbers as the original jitted function
    for name in ("gather_scatter", "cond_while"):
        exp, jf, args, kwargs, dyn_args, _ = exported[1][name]
        exp2 = export.deserialize(exp.serialize())
        assert exp2 == exp  # the calling convention (the programs are compared by running them)
        assert exp2.serialize() == exp.serialize()
        for g, w in zip(_flat(exp2.call(*dyn_args, **kwargs)), _flat(jf(*args, **kwargs))):
            np.testing.assert_array_equal(g, w, err_msg=name)


def test_call_under_transforms():
    exp = export.export(fjax.jit(lambda x, y: {"a": jnp.sin(x) * y}))(fjax.ShapeDtypeStruct((3,), F32), F32(2))
    x = np.arange(3, dtype=F32)
    np.testing.assert_allclose(fjax.grad(lambda x: exp.call(x, F32(2))["a"].sum())(x), 2 * np.cos(x), rtol=1e-6)
    np.testing.assert_allclose(fjax.jit(lambda x: exp.call(x, F32(2))["a"])(x), 2 * np.sin(x), rtol=1e-6)
    np.testing.assert_allclose(
        fjax.vmap(lambda x: exp.call(x, F32(3))["a"])(np.stack([x, x]))[1], 3 * np.sin(x), rtol=1e-6
    )
    vjp = exp.vjp()
    np.testing.assert_allclose(vjp.call(x, F32(2), np.ones(3, F32))[0], 2 * np.cos(x), rtol=1e-6)


def test_call_errors_as_in_jax():
    exp = export.export(fjax.jit(lambda x: x * 2))(fjax.ShapeDtypeStruct((3,), F32))
    with pytest.raises(ValueError, match=r"Shape mismatch for args\[0\]\.shape\[0\]"):
        exp.call(np.ones(4, F32))
    with pytest.raises(ValueError, match=r"Rank mismatch for args\[0\]"):
        exp.call(np.ones((3, 1), F32))
    with pytest.raises(ValueError, match=r"Dtype mismatch for args\[0\]: expected float32 and called with int32"):
        exp.call(np.ones(3, np.int32))
    with pytest.raises(ValueError, match="same pytree structure"):
        exp.call(np.ones(3, F32), np.ones(3, F32))
    with pytest.raises(ValueError, match="must be the result of `jit`"):
        export.export(lambda x: x)
    tpu = export.export(fjax.jit(lambda x: x * 2), platforms=["tpu"])(np.ones(3, F32))
    with pytest.raises(ValueError, match="was exported for platforms"):
        tpu.call(np.ones(3, F32))
    ok = export.export(
        fjax.jit(lambda x: x * 2), platforms=["tpu"], disabled_checks=[export.DisabledSafetyCheck.platform()]
    )(np.ones(3, F32))
    np.testing.assert_array_equal(export.deserialize(ok.serialize()).call(np.ones(3, F32)), 2 * np.ones(3, F32))
    assert export.export(fjax.jit(lambda x: x), platforms=["cpu", "cuda"])(1.0).platforms == ("cpu", "cuda")


def test_custom_jvp_rule_is_traced_and_kept():
    @fjax.custom_jvp
    def f(x):
        return jnp.sin(x)

    f.defjvp(lambda p, t: (f(p[0]), t[0] * 2))  # not sin's derivative: the rule must survive
    exp = export.deserialize(export.export(fjax.jit(lambda x: f(x) + 1))(F32(1)).serialize())
    np.testing.assert_allclose(exp.call(F32(1)), np.sin(1) + 1, rtol=1e-6)
    assert float(fjax.grad(exp.call)(F32(1))) == 2.0
    assert float(fjax.jit(fjax.grad(exp.call))(F32(0.5))) == 2.0
    np.testing.assert_array_equal(fjax.vmap(fjax.grad(exp.call))(np.ones(3, F32)), 2 * np.ones(3, F32))


@fjax.custom_vjp
def _clipped_sin(x, scale):
    return jnp.sin(x) * scale


def _clipped_sin_fwd(x, scale):
    return _clipped_sin(x, scale), {"cos": jnp.cos(x), "scale": [scale]}


def _clipped_sin_bwd(res, g):  # gradient clipping: not sin's derivative, and no cotangent for scale
    return jnp.clip(g * res["cos"] * res["scale"][0], -0.5, 0.5), None


_clipped_sin.defvjp(_clipped_sin_fwd, _clipped_sin_bwd)

_VJP_CHILD = textwrap.dedent(
    """
    import sys
    import numpy as np
    import fjax
    from fjax import export
    exp = export.deserialize(open(sys.argv[1], "rb").read())
    x, scale = np.array([0.1, 1.0, 2.0, -3.0], np.float32), np.float32(3)
    print(repr(np.asarray(exp.call(x, scale)).tolist()))
    for g in (fjax.grad(exp.call, argnums=(0, 1)), fjax.jit(fjax.grad(exp.call, argnums=(0, 1)))):
        gx, gs = g(x, scale)
        print(repr(np.asarray(gx).tolist()), float(gs))
    print(repr(np.asarray(fjax.vmap(fjax.grad(exp.call), (0, None))(np.stack([x, 2 * x]), scale)).tolist()))
    """
)


def test_custom_vjp_rules_are_traced_and_kept(tmp_path):
    fun = lambda x, scale: _clipped_sin(x, scale).sum() + 1  # noqa: E731 - the references run eagerly
    x, scale = np.array([0.1, 1.0, 2.0, -3.0], F32), F32(3)
    blob = export.export(fjax.jit(fun))(x, scale).serialize()
    (tmp_path / "vjp.fjx").write_bytes(bytes(blob))
    env = dict(os.environ, FJAX_JIT_BACKEND="interpret")
    p = subprocess.run(
        [sys.executable, "-c", _VJP_CHILD, str(tmp_path / "vjp.fjx")],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert p.returncode == 0, p.stderr[-4000:]
    lines = p.stdout.split("\n")
    np.testing.assert_allclose(eval(lines[0]), np.sin(x).sum() * 3 + 1, rtol=1e-6)
    want = np.clip(3 * np.cos(x), -0.5, 0.5)  # the custom rule's gradient, not 3 * cos(x)
    assert not np.allclose(want, 3 * np.cos(x))
    np.testing.assert_allclose(np.asarray(fjax.grad(fun)(x, scale)), want, rtol=1e-6)
    for line in lines[1:3]:  # grad and jit(grad) in the fresh process
        gx, gs = line.rsplit(" ", 1)
        np.testing.assert_allclose(eval(gx), want, rtol=1e-6)
        assert float(gs) == 0.0  # bwd returned None for scale
    np.testing.assert_allclose(eval(lines[3]), [want, np.clip(3 * np.cos(2 * x), -0.5, 0.5)], rtol=1e-6)
    # second order: the rules nested in fwd (which calls the custom_vjp function) are kept too;
    # the derivative of grad = 2 * sin_clipped(x) * rule goes through the nested rule
    sq = lambda x, scale: (_clipped_sin(x, scale) ** 2).sum()  # noqa: E731
    small = np.array([0.01, -0.02], F32)  # where that gradient is not clipped
    exp = export.deserialize(export.export(fjax.jit(sq))(small, scale).serialize())
    d2 = lambda h: fjax.grad(lambda x: fjax.grad(h)(x, scale).sum())(small)  # noqa: E731
    with fjax.disable_jit():  # eager: no kernel to compile
        want2 = d2(sq)
        np.testing.assert_allclose(want2, 0.5 - 18 * np.sin(small) ** 2, rtol=1e-5)  # the nested rule's 0.5
        np.testing.assert_allclose(d2(exp.call), want2, rtol=1e-6)


def test_custom_vjp_past_the_rule_depth_differentiates_the_primal(monkeypatch):
    from fjax.export import _serialization

    monkeypatch.setattr(_serialization, "_MAX_RULE_DEPTH", 0)  # no rule traced: the primal's VJP stands in
    x, scale = np.array([0.1, 1.0, -3.0], F32), F32(3)
    exp = export.deserialize(export.export(fjax.jit(lambda x, s: _clipped_sin(x, s).sum()))(x, scale).serialize())
    with fjax.disable_jit():  # eager: no kernel to compile
        gx, gs = fjax.grad(exp.call, argnums=(0, 1))(x, scale)
    np.testing.assert_allclose(gx, 3 * np.cos(x), rtol=1e-6)
    np.testing.assert_allclose(gs, np.sin(x).sum(), rtol=1e-6)


def test_custom_vjp_with_symbolic_zeros_is_refused():
    @fjax.custom_vjp
    def g(x):
        return jnp.sin(x)

    g.defvjp(lambda x: (g(x.value), x.value), lambda r, c: (c * r,), symbolic_zeros=True)
    exp = export.export(fjax.jit(lambda x: g(x) + 1))(F32(1))
    np.testing.assert_allclose(exp.call(F32(1)), np.sin(1) + 1, rtol=1e-6)  # runs in this process
    with pytest.raises(NotImplementedError, match="custom_vjp function 'g'.*symbolic_zeros=True"):
        exp.serialize()


def test_callables_cannot_be_serialized():
    cb = export.export(fjax.jit(lambda x: fjax.pure_callback(np.sin, fjax.ShapeDtypeStruct((), F32), x)))(F32(1))
    with pytest.raises(NotImplementedError, match="parameter 'callback' of primitive 'pure_callback'"):
        cb.serialize()


def test_format_and_version_rejected():
    blob = export.export(fjax.jit(lambda x: x + 1))(F32(1)).serialize()
    assert bytes(blob).startswith(b"fjax.export\x00")
    newer = bytearray(blob)
    newer[12:16] = (2).to_bytes(4, "little")
    with pytest.raises(ValueError, match="format version 2 is not supported"):
        export.deserialize(newer)
    with pytest.raises(ValueError, match="not an fjax.export serialization"):
        export.deserialize(bytearray(b"ML\xefR\rStableHLO_v1.15.0\x00\x01"))
    with pytest.raises(ValueError, match="truncated"):
        export.deserialize(blob[:20])
    header_end = 24 + int.from_bytes(blob[16:24], "little")
    evil = bytes(blob[:header_end]).replace(b'"fjax.lax', b'"os.path')
    if evil != bytes(blob[:header_end]):  # a class outside fjax is refused, never imported
        with pytest.raises(ValueError):
            export.deserialize(evil + bytes(blob[header_end:]))


def test_pytree_registration_errors():
    Point = collections.namedtuple("Point", ["a", "b"])
    exp = export.export(fjax.jit(lambda p: p.a + p.b))(Point(F32(1), F32(2)))
    with pytest.raises(ValueError, match="unregistered type"):
        exp.serialize()
    export.register_namedtuple_serialization(Point, serialized_name="tests.test_export.Point")
    with pytest.raises(ValueError, match="Duplicate serialization registration"):
        export.register_namedtuple_serialization(Point, serialized_name="other")
    assert float(export.deserialize(exp.serialize()).call(Point(F32(1), F32(2)))) == 3.0
    with pytest.raises(ValueError, match="register_pytree_node_serialization"):
        export.register_namedtuple_serialization(dict, serialized_name="d")


def test_symbolic_shapes_spelled_not_implemented():
    a, four = export.symbolic_shape("a, 4")
    assert export.is_symbolic_dim(a) and not export.is_symbolic_dim(four) and four == 4
    assert str(a) == "a"
    (spec,) = export.symbolic_args_specs((np.ones((3, 4), F32),), "b, _")
    assert export.is_symbolic_dim(spec.shape[0]) and spec.shape[1] == 4
    with pytest.raises(NotImplementedError, match="shape polymorphism"):
        export.export(fjax.jit(jnp.sin))(spec)
    assert export.default_export_platform() in ("cpu", "cuda")
    assert set(export.__all__) >= {"export", "Exported", "deserialize", "DisabledSafetyCheck", "SymbolicScope"}
