"""make_jaxpr cases for ``tests/test_jaxpr_printing_s16.py``: jit under grad/vjp/jvp/linearize/vmap,
``jax.debug.print``, transposed scan bodies whose carry feeds itself (with linear consts), and a
``jnp.full`` whose fill value overflows its dtype. Written against a ``jax``/``jnp``/``lax``
namespace so the recorder can run them under JAX and the test under fjax."""


def cases(jax, jnp, lax):
    def f(x):
        return jnp.sin(x) * x

    def g(x, y):
        return jnp.sin(x) * y

    jf = jax.jit(f)
    jg = jax.jit(g)
    out = {}
    # 1. a jit inside a transformation keeps the function's name
    out["grad_jit"] = (jax.grad(lambda x: jf(x)), (1.0,))
    out["grad_jit_direct"] = (jax.grad(jf), (1.0,))
    out["vjp_jit"] = (lambda x: jax.vjp(jf, x)[1](1.0), (1.0,))
    out["vjp_jit_fwd"] = (lambda x: jax.vjp(jf, x)[0], (1.0,))
    out["jvp_jit"] = (lambda x: jax.jvp(jf, (x,), (1.0,)), (1.0,))
    out["linearize_jit"] = (lambda x: jax.linearize(jf, x)[1](2.0), (1.0,))
    out["linearize_jit_primal"] = (lambda x: jax.linearize(jf, x), (1.0,))
    out["vmap_jit"] = (jax.vmap(jf), (jnp.ones(3),))
    out["grad_jit2"] = (jax.grad(lambda x, y: jg(x, y)), (1.0, 2.0))
    out["grad_vmap_jit"] = (jax.grad(lambda x: jax.vmap(jf)(x).sum()), (jnp.ones(3),))
    # known inputs that are outputs or residuals are forwarded around the known jit
    jh = jax.jit(lambda x, y: (x, jnp.sin(x) * y, y))
    out["linearize_jit_forwards_inputs"] = (lambda x, y: jax.linearize(jh, x, y)[0], (1.0, 2.0))
    out["grad_jit_forwards_inputs"] = (jax.grad(lambda x, y: sum(jh(x, y)), argnums=(0, 1)), (1.0, 2.0))
    j3 = jax.jit(lambda x: jnp.sin(x) * 3.0)
    j4 = jax.jit(lambda w: jnp.cos(w) * w)
    out["grad_jit_chain"] = (jax.grad(lambda x: j4(j3(x))), (1.0,))
    out["grad_jit_in_jit"] = (jax.grad(jax.jit(lambda x: j4(j3(x)) * x)), (1.0,))
    out["grad_jit_in_scan"] = (
        jax.grad(lambda x: lax.scan(lambda c, _: (jf(c), None), x, None, length=2)[0]),
        (1.0,),
    )

    # 2. jax.debug.print is a debug_print equation
    def dbg(x):
        jax.debug.print("x = {}", x)
        return x * 2

    def dbg_kw(x, y):
        jax.debug.print("x={x} y={}", y, x=x)
        return x + y

    def dbg_noargs(x):
        jax.debug.print("hello")
        return x

    def dbg_ordered(x):
        jax.debug.print("x = {}", x, ordered=True)
        return x

    def dbg_static(x):
        jax.debug.print("{} {} {a} {b}", x, 3, a="s", b=x)
        return x

    def dbg_tree(x):
        jax.debug.print("v {}", {"p": x, "q": (x, None)})
        return x

    def dbg_skip(x):
        jax.debug.print("a", x, skip_format_check=True)

    def dbg_square(x):
        jax.debug.print("{}", x)
        return x * x

    out["debug_print_static"] = (dbg_static, (1.0,))
    out["debug_print_tree"] = (dbg_tree, (1.0,))
    out["debug_print_skip_check"] = (dbg_skip, (jnp.ones(2),))
    out["debug_print_two_call_form"] = (lambda x: jax.debug.print(ordered=True)("{}", x), (jnp.ones(2),))
    out["debug_print_grad"] = (jax.grad(dbg_square), (1.0,))
    out["debug_print_vmap"] = (jax.vmap(dbg_square), (jnp.ones(2),))
    out["debug_print"] = (dbg, (1.0,))
    out["debug_print_kw"] = (dbg_kw, (jnp.ones(()), jnp.ones(2)))
    out["debug_print_noargs"] = (dbg_noargs, (1.0,))
    out["debug_print_ordered"] = (dbg_ordered, (1.0,))

    # 3. transposed scan bodies: a const's cotangent accumulator is added to where it arrives
    def grad(fn, *args):
        return jax.grad(fn, argnums=tuple(range(len(args)))), args

    def carry(body, length=3):
        return lambda x: lax.scan(body, x, None, length=length)[0]

    out["scan_grad_carry"] = (jax.grad(carry(lambda c, _: (c * 2.0 + jnp.sin(c), None))), (1.0,))
    out["scan_grad_square"] = (jax.grad(carry(lambda c, _: (c * c, None))), (1.0,))
    out["scan_grad_swap"] = (
        jax.grad(lambda x: lax.scan(lambda c, _: ((c[1], c[0] * 2.0), None), (x, x), None, length=3)[0][0]),
        (1.0,),
    )
    out["scan_grad_const"] = grad(lambda x, w: lax.scan(lambda c, _: (c * w, None), x, None, length=3)[0], 1.0, 2.0)
    out["scan_grad_const_self"] = grad(
        lambda x, w: lax.scan(lambda c, _: (c * w + c, None), x, None, length=3)[0], 1.0, 2.0
    )
    out["scan_grad_const_sin"] = grad(
        lambda x, w: lax.scan(lambda c, _: (jnp.sin(c) * w, None), x, None, length=3)[0], 1.0, 2.0
    )
    out["scan_grad_const_pair"] = grad(
        lambda x, w: lax.scan(lambda c, _: ((c[0] * w, c[1] + c[0]), None), (x, x), None, length=3)[0][1], 1.0, 2.0
    )
    out["scan_grad_const_ys"] = grad(
        lambda x, w: lax.scan(lambda c, _: (c * w, c * w), x, None, length=3)[1].sum(), 1.0, 2.0
    )
    out["fori_grad_const"] = grad(lambda x, w: lax.fori_loop(0, 3, lambda i, c: c * w, x), 1.0, 2.0)
    out["fori_grad_self"] = (jax.grad(lambda x: lax.fori_loop(0, 3, lambda i, c: c * 2.0 + c, x)), (1.0,))

    # 4. a Python int fill value outside the dtype's range wraps (JAX casts it with numpy)
    out["full_int32_overflow"] = (lambda x: jnp.full((2,), 2**40, dtype=jnp.int32) + x, (jnp.ones((), jnp.int32),))
    return out
