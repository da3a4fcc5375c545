"""The corpus of ``tests/test_jaxpr_printing.py``: small functions over the common jnp / lax /
nn API, each printed with ``make_jaxpr``. Written against a namespace ``ns`` holding ``jax``,
``jnp``, ``lax`` and ``nn`` so the same definitions run under JAX (``make_jaxpr_printing.py``,
which records the expected text) and under fjax (the test)."""

import numpy as np


def cases(jax, jnp, lax, nn):
    """name -> (function, example arguments)."""
    f32 = np.float32
    x3 = np.arange(3, dtype=f32)
    x23 = np.arange(6, dtype=f32).reshape(2, 3)
    x34 = np.arange(12, dtype=f32).reshape(3, 4)
    i3 = np.array([2, 0, 1], dtype=np.int32)

    def tanh_sq_sum(x):
        return jnp.sum(jnp.tanh(x) ** 2)

    def mlp(w, x):
        return jnp.sum(jnp.tanh(x @ w))

    @jax.custom_jvp
    def cj(x):
        return jnp.sin(x)

    @cj.defjvp
    def cj_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        return cj(x), jnp.cos(x) * t

    c = {
        # DCE / structure
        "dead_code": (lambda x: (jnp.sin(x), x * 2)[1], (1.0,)),
        "grad_tanh_sq_sum": (jax.grad(tanh_sq_sum), (np.ones(2, f32),)),
        # elementwise
        "sin": (jnp.sin, (x3,)),
        "add_scalar": (lambda x: x + 1.0, (x3,)),
        "mul_int": (lambda x: x * 2, (x3,)),
        "pow2": (lambda x: x**2, (x3,)),
        "pow3": (lambda x: x**3, (x3,)),
        "pow_float": (lambda x: x**2.5, (x3,)),
        "power_arr": (lambda x, y: jnp.power(x, y), (x3, x3)),
        "power_int": (lambda x: jnp.power(x, 2), (x3,)),
        "square": (jnp.square, (x3,)),
        "sqrt": (jnp.sqrt, (x3,)),
        "exp2": (jnp.exp2, (x3,)),
        "maximum": (jnp.maximum, (x3, x3)),
        "maximum_scalar": (lambda x: jnp.maximum(x, 0.0), (x3,)),
        "relu": (nn.relu, (x3,)),
        "sigmoid": (nn.sigmoid, (x3,)),
        "gelu": (nn.gelu, (x3,)),
        "abs_sign": (lambda x: jnp.abs(x) * jnp.sign(x), (x3,)),
        "astype_int": (lambda x: x.astype(jnp.int32), (x3,)),
        "where": (lambda x: jnp.where(x > 1, x, 0.0), (x3,)),
        "clip": (lambda x: jnp.clip(x, 0.5, 1.5), (x3,)),
        "int_div": (lambda x: x // 2, (i3,)),
        "true_div_int": (lambda x: x / 2, (i3,)),
        # reductions
        "sum": (jnp.sum, (x23,)),
        "sum_axis": (lambda x: jnp.sum(x, axis=1), (x23,)),
        "sum_keepdims": (lambda x: jnp.sum(x, axis=0, keepdims=True), (x23,)),
        "max_axis": (lambda x: jnp.max(x, axis=1), (x23,)),
        "mean": (jnp.mean, (x23,)),
        "mean_axis": (lambda x: jnp.mean(x, axis=0), (x23,)),
        "var": (jnp.var, (x3,)),
        "std": (jnp.std, (x3,)),
        "argmax": (lambda x: jnp.argmax(x, axis=1), (x23,)),
        "norm": (jnp.linalg.norm, (x3,)),
        "prod": (jnp.prod, (x3,)),
        "any": (lambda x: jnp.any(x > 1), (x3,)),
        "cumsum": (jnp.cumsum, (x3,)),
        # shape
        "reshape": (lambda x: x.reshape(3, 2), (x23,)),
        "ravel": (jnp.ravel, (x23,)),
        "transpose": (lambda x: x.T, (x23,)),
        "expand_dims": (lambda x: x[None], (x3,)),
        "squeeze": (lambda x: jnp.squeeze(x, 0), (x3[None],)),
        "concatenate": (lambda x: jnp.concatenate([x, x]), (x3,)),
        "stack": (lambda x: jnp.stack([x, x]), (x3,)),
        "broadcast_add": (lambda x, y: x + y, (x23, x3)),
        "broadcast_to": (lambda x: jnp.broadcast_to(x, (2, 3)), (x3,)),
        "zeros_like": (jnp.zeros_like, (x3,)),
        "ones": (lambda x: x + jnp.ones(3), (x3,)),
        "arange": (lambda x: x + jnp.arange(3), (x3,)),
        "eye": (lambda x: x + jnp.eye(3), (x34[:, :3],)),
        "pad": (lambda x: jnp.pad(x, 1), (x3,)),
        "split": (lambda x: jnp.split(x, 2, axis=1)[0], (x34,)),
        # indexing
        "index_int": (lambda x: x[1], (x23,)),
        "index_slice": (lambda x: x[:, 1:], (x23,)),
        "index_array": (lambda x, i: x[i], (x3, i3)),
        "index_dynamic": (lambda x, i: x[i], (x3, np.int32(1))),
        "at_set": (lambda x: x.at[1].set(5.0), (x3,)),
        "at_add": (lambda x, i: x.at[i].add(1.0), (x3, i3)),
        "take": (lambda x, i: jnp.take(x, i), (x3, i3)),
        "dynamic_slice": (lambda x, i: lax.dynamic_slice(x, (i,), (2,)), (x3, np.int32(1))),
        # linear algebra
        "dot": (jnp.dot, (x23, x3)),
        "matmul": (lambda a, b: a @ b, (x23, x34)),
        "einsum": (lambda a, b: jnp.einsum("ij,jk->ik", a, b), (x23, x34)),
        "outer": (jnp.outer, (x3, x3)),
        # nn
        "softmax": (nn.softmax, (x3,)),
        "log_softmax": (nn.log_softmax, (x3,)),
        "logsumexp": (nn.logsumexp, (x3,)),
        "one_hot": (lambda i: nn.one_hot(i, 3), (i3,)),
        # sorting
        "sort": (jnp.sort, (x3,)),
        "argsort": (jnp.argsort, (x3,)),
        # control flow
        "jit_inner": (jax.jit(lambda x: jnp.sin(x) * 2), (x3,)),
        "scan": (lambda x: lax.scan(lambda c, a: (c + a, c * a), 0.0, x), (x3,)),
        "cond": (lambda x: lax.cond(x > 0, jnp.sin, jnp.cos, x), (1.0,)),
        "while": (lambda x: lax.while_loop(lambda c: c < 10, lambda c: c * 2, x), (1.0,)),
        "fori_loop": (lambda x: lax.fori_loop(0, 3, lambda i, c: c + i, x), (1.0,)),
        "custom_jvp": (cj, (1.0,)),
        "jit_dead_code": (jax.jit(lambda x: (jnp.sin(x), x * 2)[1]), (1.0,)),
        "cond_dead_code": (lambda x: lax.cond(x > 0, lambda x: (jnp.sin(x), x * 2)[1], lambda x: x, x), (1.0,)),
        # transforms
        "grad_sin": (jax.grad(jnp.sin), (1.0,)),
        "grad_tanh": (jax.grad(jnp.tanh), (1.0,)),
        "grad_logistic": (jax.grad(nn.sigmoid), (1.0,)),
        "grad_exp": (jax.grad(jnp.exp), (1.0,)),
        "grad_log": (jax.grad(jnp.log), (1.0,)),
        "grad_cos": (jax.grad(jnp.cos), (1.0,)),
        "grad_sqrt": (jax.grad(jnp.sqrt), (1.0,)),
        "grad_rsqrt": (jax.grad(lax.rsqrt), (1.0,)),
        "grad_pow": (jax.grad(lambda x, y: x**y), (2.0, 3.0)),
        "grad_mean": (jax.grad(jnp.mean), (x3,)),
        "grad_var": (jax.grad(jnp.var), (x3,)),
        "grad_norm": (jax.grad(jnp.linalg.norm), (x3,)),
        "grad_softmax": (jax.grad(lambda x: nn.softmax(x)[0]), (x3,)),
        "grad_logsumexp": (jax.grad(nn.logsumexp), (x3,)),
        "grad_mlp": (jax.grad(mlp), (x34, x23)),
        "vmap_dot": (jax.vmap(jnp.dot), (x23, x23)),
        "vmap_sum": (jax.vmap(jnp.sum), (x23,)),
        "jvp_sin": (lambda x, t: jax.jvp(jnp.sin, (x,), (t,)), (1.0, 1.0)),
        "grad_custom_jvp": (jax.grad(cj), (1.0,)),
    }
    return c
