"""complex64 / complex128 in the numba loop nests: the elementwise ops of complex values and how the
loop-nest renderer spells them (``render_op``), as calls to the ``cm.<name>`` functions below.

Each function computes what the eager impl computes (``fjax/lax/lax_elementwise.py``,
``fjax/lax/_complex_ref.py``), by the formulas the CUDA backend's prelude uses
(``fjax/backends/cuda/complex_ops.py``), on the parts of the value in its own precision (complex64
in float32, as numpy and the CUDA kernels):

- ``+ -``, ``neg``, ``conj``, ``real``, ``imag``, ``eq``/``ne``: numba's own complex arithmetic;
- ``*``, ``square``: as numpy's multiply on this machine (``NUMPY_FMA``: its SIMD loops compute
  ``fma(a, c, -bd) + fma(a, d, bc) i`` where the CPU has FMA; else the textbook product), so
  products agree bit for bit and overflow alike (``(1e30 + 2e30j) ** 2`` is ``-inf + infj``);
- ``div``: Smith's algorithm, then XLA's corner cases where both parts came out NaN
  (``_complex_ref.complex_div``, the same operations in the same order: bit-exact); ``pow``: XLA's
  polar form; ``exp``/``exp2``/``expm1``: exact real results for a zero imaginary part;
- ``integer_pow``: numpy's ``power`` (``x * x``, ``x * (x * x)``, then binary exponentiation from 1;
  a negative exponent: 1 / that, with the division above); ``max``/``min``: lexicographic, as JAX;
- ``log``, ``log1p`` (numpy's ``log(hypot(1 + a, b))``), ``sqrt``/``rsqrt`` (scaled against
  overflow), ``sin``/``cos``/``sinh``/``cosh``, ``tanh``/``tan`` (Kahan's algorithm), ``abs``
  (``hypot``, as numpy): C99's formulas and special values, as numpy's
  (glibc's), to a few ulps where numpy calls glibc's complex functions; ``sign``: ``z / |z|``
  part by part, as XLA;
- ``convert_element_type``: a real value is the real part; complex -> real keeps the real part (to
  bool too, as JAX's).

Real functions: ``exp``/``sin``/``cos`` are ``vmath``'s polynomials (no libm call: complex ``exp``
ran 5x faster than with libm's), float32 ``hypot`` is glibc's ``hypotf`` formula inline (float64
sum of squares, rounded once), and complex64 ``tanh`` runs Kahan's formula in float64 on those
functions, rounded once (``tanf``/``sinhf`` calls were most of its time); the rest call libm as
numpy does. So results agree with the impl's to a few ulps, bit for bit where the impl's own
arithmetic is followed (``+ - * /``, powers).

One Python function serves both dtypes: ``_k(x, v)`` is ``v`` in ``x``'s float type and ``_mk(re,
im)`` builds the complex value of two parts of one type (an intrinsic: no rounding, no ``inf * 1j``).
The functions are ``forceinline`` (LLVM inlines them into the kernel; numba compiles each once per
dtype and caches it on disk); the cold paths (division's NaN recovery) stay out of line.

Ops with no complex form here (``atan2``, the inverse trigonometric functions, ``logistic``, ...)
are not fused: ``op_reason`` tells the lowering (``Capabilities.op_reason``), which keeps them host
steps evaluated by their impl.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic, overload

from fjax.backends import kernel_ir as ir
from fjax.backends.numba import vmath as vm
from fjax.backends.numba.runtime import fma as _fma

_opts = dict(nogil=True, cache=True, error_model="numpy", forceinline=True)
_cold = dict(nogil=True, cache=True, error_model="numpy")
# the overloads below (helpers by float type) compile as functions LLVM inlines (inlined at numba IR
# level instead, a conditional expression in them trips numba's IR scope check)
_OVL = dict(forceinline=True, error_model="numpy")


# ---------------------------------------------------------------------------------------------
# building blocks


@intrinsic
def _mk(typingctx, re, im):  # noqa: ARG001
    """The complex value with parts ``re`` and ``im`` (both float32: complex64; float64: complex128)."""
    if not (isinstance(re, types.Float) and re == im):
        return None
    ct = types.complex64 if re.bitwidth == 32 else types.complex128

    def codegen(context, builder, signature, args):  # noqa: ARG001
        z = cgutils.create_struct_proxy(ct)(context, builder)
        z.real = args[0]
        z.imag = args[1]
        return z._getvalue()

    return ct(re, im), codegen


def _k(x, v):  # noqa: ANN001, ARG001
    """``v`` in the float type of ``x`` (numba only)."""


@overload(_k, jit_options=_OVL)
def _k_impl(x, v):  # noqa: ANN001, ARG001
    if x == types.float32:
        return lambda x, v: np.float32(v)
    return lambda x, v: np.float64(v)


def _pick(x, v32, v64):  # noqa: ANN001, ARG001
    """``v32`` as float32 when ``x`` is float32, else ``v64`` as float64 (numba only)."""


@overload(_pick, jit_options=_OVL)
def _pick_impl(x, v32, v64):  # noqa: ANN001, ARG001
    if x == types.float32:
        return lambda x, v32, v64: np.float32(v32)
    return lambda x, v32, v64: np.float64(v64)


def _hypot(a, b):  # noqa: ANN001, ARG001
    """``hypot`` as numpy's (libm's): float32 as glibc's ``hypotf`` computes it, the sum of the
    squares in float64 rounded once (inline, ~4x faster than the call); float64 libm's."""


@overload(_hypot, jit_options=_OVL)
def _hypot_impl(a, b):  # noqa: ANN001
    if a == types.float32 and b == types.float32:

        def h32(a, b):  # noqa: ANN001, ANN202
            r = np.float32(math.sqrt(np.float64(a) * np.float64(a) + np.float64(b) * np.float64(b)))
            return np.float32(np.inf) if (_isinf(a) or _isinf(b)) else r

        return h32
    return lambda a, b: math.hypot(a, b)


def _fn(name: str):  # noqa: ANN202
    """An inline function of one float calling ``vm.<name>_f32`` or ``vm.<name>_f64`` by its type
    (the vectorizable polynomials: no libm call; within 1-2 ulps of numpy's, as numpy's of libm's)."""

    def stub(x):  # noqa: ANN001, ARG001
        pass

    f32, f64 = getattr(vm, f"{name}_f32"), getattr(vm, f"{name}_f64")

    @overload(stub, jit_options=_OVL)
    def impl(x):  # noqa: ANN001
        if x == types.float32:
            return lambda x: f32(x)
        return lambda x: f64(x)

    return stub


_exp, _sin, _cos = _fn("exp"), _fn("sin"), _fn("cos")


@njit(**_opts)
def _isinf(x):
    return x - x != x - x and x == x


@njit(**_opts)
def _isfinite(x):
    return x - x == x - x


# ---------------------------------------------------------------------------------------------
# arithmetic


def _numpy_fuses_products(dt: type) -> bool:
    """Whether numpy's complex multiply of ``dt`` computes ``fma(a, c, -(b d)) + fma(a, d, b c) i``
    (its SIMD loops where the CPU has FMA) rather than the textbook ``(ac - bd) + (ad + bc) i``.
    Probed where the two differ most: ``(1e30 + 2e30j) ** 2`` overflows to ``-inf`` in the real part
    with FMA (the exact ``a a`` minus the overflowed ``b b``) and to ``inf - inf = nan`` without."""
    big = 1e30 if dt == np.complex64 else 1e200
    z = np.full(64, complex(big, 2 * big), dt)
    with np.errstate(all="ignore"):
        re = np.multiply(z, z).real
    return bool(np.all(re == -np.inf))


# per complex dtype: products as numpy's multiply computes them (``cmul(a, b, fused)``)
NUMPY_FMA = {np.dtype(t): _numpy_fuses_products(t) for t in (np.complex64, np.complex128)}


@njit(**_opts)
def cmul(a, b, fused):
    """``a * b`` as numpy's multiply: with ``fused`` (a constant of the rendered source,
    ``NUMPY_FMA``) the FMA form, else numba's textbook product."""
    if fused:
        ar, ai, br, bi = a.real, a.imag, b.real, b.imag
        return _mk(_fma(ar, br, -(ai * bi)), _fma(ar, bi, ai * br))
    return a * b


@njit(**_opts)
def cabs(z):
    return _hypot(z.real, z.imag)


@njit(**_opts)
def conj(z):
    return _mk(z.real, -z.imag)


@njit(**_opts)
def cmax(x, y):
    """Lexicographic, ``y`` unless ``x`` compares greater: JAX's max of complex values."""
    if x.real == y.real:
        return x if x.imag > y.imag else y
    return x if x.real > y.real else y


@njit(**_opts)
def cmin(x, y):
    if x.real == y.real:
        return x if x.imag < y.imag else y
    return x if x.real < y.real else y


@njit(**_cold)
def _cdiv_corner(ar, ai, br, bi, cr, ci):
    # XLA's corner cases where Smith's algorithm gave NaN in both parts (``complex_div``)
    zero, one = _k(ar, 0.0), _k(ar, 1.0)
    inf = _k(ar, np.inf)
    if br == zero and bi == zero and not (ar != ar and ai != ai):
        s = math.copysign(inf, br)
        return _mk(s * ar, s * ai)
    ar_inf, ai_inf, br_inf, bi_inf = _isinf(ar), _isinf(ai), _isinf(br), _isinf(bi)
    if (ar_inf or ai_inf) and _isfinite(br) and _isfinite(bi):
        ur = math.copysign(one if ar_inf else zero, ar)
        ui = math.copysign(one if ai_inf else zero, ai)
        return _mk(inf * (ur * br + ui * bi), inf * (ui * br - ur * bi))
    if (br_inf or bi_inf) and _isfinite(ar) and _isfinite(ai):
        vr = math.copysign(one if br_inf else zero, br)
        vi = math.copysign(one if bi_inf else zero, bi)
        return _mk(zero * (ar * vr + ai * vi), zero * (ai * vr - ar * vi))
    return _mk(cr, ci)


@njit(**_opts)
def cdiv(a, b):
    """``a / b`` as XLA (and ``_complex_ref.complex_div``): Smith's algorithm, then its corner cases."""
    ar, ai, br, bi = a.real, a.imag, b.real, b.imag
    if abs(br) < abs(bi):
        r = br / bi
        d = bi + br * r
        cr = (ar * r + ai) / d
        ci = (ai * r - ar) / d
    else:
        r = bi / br
        d = br + bi * r
        cr = (ar + ai * r) / d
        ci = (ai - ar * r) / d
    if cr == cr or ci == ci:
        return _mk(cr, ci)
    return _cdiv_corner(ar, ai, br, bi, cr, ci)


@njit(**_opts)
def cipow(x, n, fused):
    """``x ** n`` as the impl: numpy's ``power`` for ``n > 0`` (``x * x``, ``x * (x * x)``, then
    binary exponentiation from 1, with the textbook products of its scalar ``nc_pow``); ``n < 0``:
    ``1 / x ** -n`` by ``_mul_pow``'s products (numpy's multiply: ``fused``) and ``cdiv``."""
    one = _mk(_k(x.real, 1.0), _k(x.real, 0.0))
    if n == 0:
        return one
    if n < 0:
        acc = x
        p = x
        first = True
        m = -n
        while m > 0:
            if m & 1:
                acc = p if first else cmul(acc, p, fused)
                first = False
            m >>= 1
            if m > 0:
                p = cmul(p, p, fused)
        return cdiv(one, acc)
    if n == 1:
        return x
    if n == 2:
        return x * x
    if n == 3:
        return x * (x * x)
    # the textbook products written out part by part. With numba's complex ``*`` here, some
    # compiles (not reproducible at will; cause not found) gave complex128 ``x ** 7`` an ulp off
    # numpy's power for 1535 of 2048 values; this form matched it in every run
    ar, ai = one.real, one.imag
    pr, pi = x.real, x.imag
    m = n
    while m > 0:
        if m & 1:
            tr = ar * pr
            tr -= ai * pi
            ti = ar * pi
            ti += ai * pr
            ar, ai = tr, ti
        m >>= 1
        if m > 0:
            tr = pr * pr
            tr -= pi * pi
            ti = pr * pi
            ti += pi * pr
            pr, pi = tr, ti
    return _mk(ar, ai)


@njit(**_opts)
def cpow(x, y):
    """``x ** y`` in XLA's polar form (``_complex_ref.complex_pow``)."""
    a, b, c, d = x.real, x.imag, y.real, y.imag
    zero, one = _k(a, 0.0), _k(a, 1.0)
    if (c == zero and d == zero) or (a == one and b == zero):
        return _mk(one, zero)
    r = _hypot(a, b)
    arg = math.atan2(b, a)
    if r == zero:
        if d == zero and c >= zero:
            return _mk(one if c == zero else zero, zero)
        nan = _k(a, np.nan)
        return _mk(nan, nan)
    coeff = r**c * math.exp(-d * arg)
    q = c * arg if d == zero else c * arg + d * math.log(r)
    return _mk(coeff * math.cos(q), q if q == zero else coeff * math.sin(q))


# ---------------------------------------------------------------------------------------------
# exponentials and logarithms


@njit(**_opts)
def cexp(z):
    """``exp(re) (cos im + i sin im)``, exact for a zero imaginary part (``complex_exp``)."""
    e = _exp(z.real)
    b = z.imag
    if b == 0:
        return _mk(e, b)
    return _mk(e * _cos(b), e * _sin(b))


@njit(**_opts)
def cexp2(z, fused):
    """``exp(z log 2)`` with numpy's complex product (``complex_exp2``)."""
    x = z.real
    return cexp(cmul(z, _mk(_k(x, 0.6931471805599453), _k(x, 0.0)), fused))


@njit(**_opts)
def cexpm1(z):
    """numpy's ``expm1``: ``expm1(a) cos b - 2 sin^2(b / 2) + i exp(a) sin b`` (real for b == 0)."""
    a, b = z.real, z.imag
    if b == 0:
        return _mk(math.expm1(a), b)
    s = math.sin(b / _k(a, 2.0))
    return _mk(math.expm1(a) * math.cos(b) - _k(a, 2.0) * s * s, math.exp(a) * math.sin(b))


@njit(**_opts)
def clog(z):
    """``log|z| + i arg z``; near the unit circle ``log|z| = log1p((x - 1)(x + 1) + y^2) / 2``."""
    x, y = abs(z.real), abs(z.imag)
    if x < y:
        x, y = y, x
    h = _hypot(z.real, z.imag)
    # 2^64 and its log (float32), 2^600 (float64): |z| scaled into range where it is subnormal or
    # overflows although z does not
    s = _pick(x, 1.8446744073709552e19, 4.149515568880993e180)
    lns = _pick(x, 44.3614195558365, 415.88830833596717)
    one = _k(x, 1.0)
    if h >= _k(x, 0.5) and h <= _k(x, 2.0) and _isfinite(h):
        re = math.log1p((x - one) * (x + one) + y * y) / _k(x, 2.0)
    elif x > 0 and x < one / s:
        re = math.log(_hypot(x * s, y * s)) - lns
    elif _isinf(h) and _isfinite(x) and _isfinite(y):
        re = math.log(_hypot(x / s, y / s)) + lns
    else:
        re = math.log(h)
    return _mk(re, math.atan2(z.imag, z.real))


@njit(**_opts)
def clog1p(z):
    """numpy's ``log1p`` of a complex value: ``log(hypot(1 + a, b)) + i atan2(b, 1 + a)``."""
    a = z.real + _k(z.real, 1.0)
    return _mk(math.log(_hypot(a, z.imag)), math.atan2(z.imag, a))


@njit(**_opts)
def csqrt(z):
    """The principal square root (C99 ``csqrt``), scaled where ``|z|`` could overflow or is tiny."""
    a, b = z.real, z.imag
    zero, one = _k(a, 0.0), _k(a, 1.0)
    inf = _k(a, np.inf)
    if a == zero and b == zero:
        return _mk(zero, b)
    if _isinf(b):
        return _mk(inf, b)
    if a != a:
        return _mk(a, b - b + a)
    if _isinf(a):
        if a > zero:
            return _mk(a, math.copysign(zero, b) if b == b else b)
        return _mk(zero if b == b else b, math.copysign(inf, b))
    x, y, s = a, b, one
    big = _pick(x, 8.5e37, 4.4e307)
    tiny = _pick(x, 8.6736174e-19, 3.0549363634996047e-151)  # 2^-60, 2^-500
    if abs(x) >= big or abs(y) >= big:
        x = x * _k(x, 0.25)
        y = y * _k(x, 0.25)
        s = _k(x, 2.0)
    elif abs(x) < tiny and abs(y) < tiny:  # (subnormal halves would round to 0)
        up = _pick(x, 1.8446744073709552e19, 1.0715086071862673e301)  # 2^64, 2^1000
        x = x * up
        y = y * up
        s = _pick(x, 2.3283064365386963e-10, 3.054936363499605e-151)  # 2^-32, 2^-500
    t = math.sqrt((abs(x) + _hypot(x, y)) * _k(x, 0.5))
    if x >= zero:
        return _mk(s * t, s * (y / (t + t)))
    return _mk(s * (abs(y) / (t + t)), math.copysign(s * t, y))


@njit(**_opts)
def crsqrt(z):
    """``1 / sqrt(z)`` with numpy's division (the impl's): Smith's algorithm, no corner cases."""
    b = csqrt(z)
    br, bi, one = abs(b.real), abs(b.imag), _k(b.real, 1.0)
    if br >= bi:
        if br == 0:
            return _mk(one / br, _k(br, 0.0) / br)
        r = b.imag / b.real
        s = one / (b.real + b.imag * r)
        return _mk(s, -r * s)
    r = b.real / b.imag
    s = one / (b.imag + b.real * r)
    return _mk(r * s, -s)


# ---------------------------------------------------------------------------------------------
# trigonometric and hyperbolic functions


@njit(**_cold)
def _big_exp(x, c, s):
    """``e^|x| / 2 * (c + i s)`` where ``e^|x|`` overflows though the products may not (glibc's
    csinh: the exponential taken in steps of ``e^t``)."""
    t = _pick(x, 88.0, 709.0)
    et = math.exp(t)
    two = _k(x, 2.0)
    r = abs(x) - t
    c = c * (et / two)
    s = s * (et / two)
    if r > t:
        r = r - t
        c = c * et
        s = s * et
    e = math.exp(r if abs(r) < t else t)
    return _mk(c * e, s * e)


@njit(**_opts)
def csinh(z):
    """C99's ``csinh`` with its special values (Annex G; glibc's signs, so numpy's)."""
    x, y = z.real, z.imag
    if _isfinite(x) and _isfinite(y):
        if y == 0:
            return _mk(math.sinh(x), y)
        if abs(x) > _pick(x, 88.0, 709.0):
            w = _big_exp(x, math.cos(y), math.sin(y))
            return _mk(math.copysign(_k(x, 1.0), x) * w.real, w.imag)
        return _mk(math.sinh(x) * math.cos(y), math.cosh(x) * math.sin(y))
    if x == 0:
        return _mk(x, y - y)
    if y == 0:
        return _mk(x, y)
    inf = _k(x, np.inf)
    if _isinf(x):
        if _isfinite(y):
            return _mk(x * math.cos(y), inf * math.sin(y))
        return _mk(inf, y - y)
    nan = _k(x, np.nan)
    return _mk(nan, nan)


@njit(**_opts)
def ccosh(z):
    """C99's ``ccosh`` with its special values."""
    x, y = z.real, z.imag
    zero = _k(x, 0.0)
    if _isfinite(x) and _isfinite(y):
        if y == zero:
            return _mk(math.cosh(x), math.copysign(zero, x) * y)
        if abs(x) > _pick(x, 88.0, 709.0):
            w = _big_exp(x, math.cos(y), math.sin(y))
            return _mk(w.real, math.copysign(_k(x, 1.0), x) * w.imag)
        return _mk(math.cosh(x) * math.cos(y), math.sinh(x) * math.sin(y))
    if x == zero:
        return _mk(y - y, zero)
    if y == zero:
        return _mk(x * x, math.copysign(zero, x) * y)
    inf = _k(x, np.inf)
    if _isinf(x):
        if _isfinite(y):
            return _mk(inf * math.cos(y), x * math.sin(y))
        return _mk(inf, y - y)
    nan = _k(x, np.nan)
    return _mk(nan, nan)


@njit(**_opts)
def csin(z):
    """``sin z = -i sinh(iz)``."""
    if not _isfinite(z.real) and _isinf(z.imag):
        return _mk(_k(z.real, np.nan), _k(z.real, np.inf))
    w = csinh(_mk(-z.imag, z.real))
    return _mk(w.imag, -w.real)


@njit(**_opts)
def ccos(z):
    """``cos z = cosh(iz)``."""
    return ccosh(_mk(-z.imag, z.real))


def _tanh_kahan(x, y):  # noqa: ANN001, ARG001
    """Kahan's formula for ``tanh(x + iy)`` at finite ``x``, ``y`` (``|x|`` below the cut-off)."""


@overload(_tanh_kahan, jit_options=_OVL)
def _tanh_kahan_impl(x, y):  # noqa: ANN001
    if x == types.float32:

        def k32(x, y):  # noqa: ANN001, ANN202
            # in float64 with the vectorizable functions, rounded once: no libm call (tanf and
            # sinhf were most of the time); sinh from expm1, exact near 0
            xd = np.float64(x)
            t = np.float64(_sin(y)) / np.float64(_cos(y))
            e = vm.expm1_f64(abs(xd))
            s = math.copysign(0.5 * (e + e / (e + 1.0)), xd)
            beta = 1.0 + t * t
            den = 1.0 + beta * s * s
            return _mk(np.float32(beta * math.sqrt(1.0 + s * s) * s / den), np.float32(t / den))

        return k32

    def k64(x, y):  # noqa: ANN001, ANN202
        t = math.tan(y)
        beta = 1.0 + t * t
        s = math.sinh(x)
        rho = math.sqrt(1.0 + s * s)
        den = 1.0 + beta * s * s
        return _mk(beta * rho * s / den, t / den)

    return k64


@njit(**_opts)
def ctanh(z):
    """Kahan's algorithm ("Branch cuts for complex elementary functions", 1987)."""
    x, y = z.real, z.imag
    one, zero = _k(x, 1.0), _k(x, 0.0)
    if not _isfinite(x):
        if x != x:
            return _mk(x, y if y == zero else x * y)
        return _mk(math.copysign(one, x), math.copysign(zero, y if _isinf(y) else math.sin(y) * math.cos(y)))
    if not _isfinite(y):
        return _mk(x if x == zero else y - y, y - y)
    if abs(x) >= _pick(x, 9.0, 22.0):
        e = _exp(-abs(x))
        return _mk(math.copysign(one, x), _k(x, 4.0) * _sin(y) * _cos(y) * e * e)
    return _tanh_kahan(x, y)


@njit(**_opts)
def ctan(z):
    """``tan z = -i tanh(iz)``."""
    w = ctanh(_mk(-z.imag, z.real))
    return _mk(w.imag, -w.real)


@njit(**_opts)
def csign(z):
    """``z / |z|`` part by part, as XLA (and the impl): 0 at 0, NaN parts where ``|z|`` is infinite."""
    h = _hypot(z.real, z.imag)
    if h == 0:
        return z
    return _mk(z.real / h, z.imag / h)


# ---------------------------------------------------------------------------------------------
# conversions


@njit(**_opts)
def to_c64(x):
    """A real or complex value as complex64 (a real value is the real part)."""
    return _mk(np.float32(x.real), np.float32(x.imag))


@njit(**_opts)
def to_c128(x):
    return _mk(np.float64(x.real), np.float64(x.imag))


@njit(**_opts)
def real_c64(x):
    """A real value (bool, integer, float) as complex64: its value in the real part."""
    return _mk(np.float32(x), np.float32(0.0))


@njit(**_opts)
def real_c128(x):
    return _mk(np.float64(x), np.float64(0.0))


# ---------------------------------------------------------------------------------------------
# rendering


_UNARY = {
    "exp": "cexp",
    "expm1": "cexpm1",
    "log": "clog",
    "log1p": "clog1p",
    "sqrt": "csqrt",
    "rsqrt": "crsqrt",
    "sin": "csin",
    "cos": "ccos",
    "tan": "ctan",
    "sinh": "csinh",
    "cosh": "ccosh",
    "tanh": "ctanh",
    "sign": "csign",
}
_BINARY = {"div": "cdiv", "pow": "cpow", "max": "cmax", "min": "cmin"}
_INFIX = {"add": "+", "sub": "-"}
# every op ``render_op`` spells when a complex value is among its operands or its result
_OTHER = ("mul", "exp2", "neg", "real", "imag", "conj", "abs", "square", "integer_pow", "eq", "ne", "select_n")
OPS = frozenset({*_UNARY, *_BINARY, *_INFIX, *_OTHER, "convert_element_type"})
# (ops ``render.compile_weight`` and the parallel policy count as transcendental ones)
HEAVY = frozenset({*_UNARY, *_BINARY, "exp2", "integer_pow"}) - {"max", "min", "sign"}
_C = {np.dtype(np.complex64): "c64", np.dtype(np.complex128): "c128"}


def involves_complex(op: ir.Op) -> bool:
    return np.dtype(op.dtype).kind == "c" or any(np.dtype(d).kind == "c" for d in op.in_dtypes)


def op_reason(name: str, out_dtype: object, in_dtypes: tuple) -> str | None:
    """``Capabilities.op_reason`` of the numba backend: None when the loop nests compute elementwise
    op or reduction ``name`` on these dtypes, else why not (only ops with a complex value among
    their operands or result are ever refused)."""
    dts = [np.dtype(out_dtype), *(np.dtype(d) for d in in_dtypes)]
    if not any(d.kind == "c" for d in dts):
        return None
    if name in ("reduce_sum", "reduce_prod"):
        return None
    if name not in OPS:  # (reduce_max/min too: the impl's np.max propagates NaNs, JAX's max does not)
        return f"the numba backend has no complex rendering of {name}"
    if name == "select_n" or name == "convert_element_type":
        return None
    if any(d.kind == "f" and d.itemsize < 4 for d in dts):
        return f"{name} mixing complex and 16-bit float dtypes"
    return None


def render_op(a: list, op: ir.Op, f2i) -> str:  # noqa: ANN001
    """The expression of ``op`` (``involves_complex(op)``), with ``f2i(expr, dtype)`` spelling a
    saturating float -> integer conversion as the real renderer does."""
    name = op.op
    out = np.dtype(op.dtype)
    src = np.dtype(op.in_dtypes[0]) if op.in_dtypes else out
    if name == "convert_element_type":
        return _convert(a[0], src, out, f2i)
    if name in ("eq", "ne"):
        return f"({a[0]} {'==' if name == 'eq' else '!='} {a[1]})"
    if name == "real":
        return f"{a[0]}.real"
    if name == "imag":
        return f"{a[0]}.imag"
    if name == "abs":
        return f"cm.cabs({a[0]})"
    if name == "conj":
        if src.kind != "c":  # conj of a real array: that array as complex (JAX)
            return f"cm.real_{_C[out]}({a[0]})"
        return f"cm.conj({a[0]})"
    if out.kind != "c" or any(np.dtype(d) != out for d in op.in_dtypes[1 if name == "select_n" else 0 :]):
        raise NotImplementedError(f"numba backend: op {name} on dtypes {[np.dtype(d).name for d in op.in_dtypes]}")
    if name in _INFIX:
        return f"({a[0]} {_INFIX[name]} {a[1]})"
    if name == "neg":
        return f"(-{a[0]})"
    fused = NUMPY_FMA[out]
    if name == "mul":
        return f"cm.cmul({a[0]}, {a[1]}, {fused})"
    if name == "square":
        return f"cm.cmul({a[0]}, {a[0]}, {fused})"
    if name == "exp2":
        return f"cm.cexp2({a[0]}, {fused})"
    if name in _UNARY:
        return f"cm.{_UNARY[name]}({a[0]})"
    if name in _BINARY:
        return f"cm.{_BINARY[name]}({a[0]}, {a[1]})"
    if name == "integer_pow":
        return f"cm.cipow({a[0]}, {int(op.params['y'])}, {fused})"
    raise NotImplementedError(f"numba backend: op {name} on dtype {out.name}")


def _convert(x: str, src: np.dtype, dst: np.dtype, f2i) -> str:  # noqa: ANN001
    if src.kind == "c" and dst.kind == "c":
        return f"cm.to_{_C[dst]}({x})" if src != dst else x
    if dst.kind == "c":
        return f"cm.real_{_C[dst]}({x})"
    # complex -> real: the real part, as JAX's convert_element_type (bool too: 1j -> False)
    if dst == np.bool_:
        return f"({x}.real != 0)"
    if dst.kind in "iu":
        return f2i(f"{x}.real", dst)
    return f"np.{dst.name}({x}.real)"


def const(value: object, dt: np.dtype) -> str:
    """A complex constant, as a module-level Python expression (exact: each part from its hex)."""
    d = np.dtype(dt)
    v = complex(d.type(value))
    return f"np.{d.name}(complex(float.fromhex({v.real.hex()!r}), float.fromhex({v.imag.hex()!r})))"
