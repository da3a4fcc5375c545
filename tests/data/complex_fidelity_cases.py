"""The calls of the complex-number fidelity sweep, shared by ``make_complex_fidelity.py`` (run
under JAX) and ``tests/test_complex_fidelity.py`` (run under fjax); neither jax nor fjax is
imported here.

``all_cases(jax)`` returns ``{key: thunk}``: jnp/lax functions on complex64/complex128 arrays and
on mixed real/complex operands (ordering: argmax/sort/max/clip/comparisons; rounding and sign;
reductions; products and their conjugation rules; linalg and fft result dtypes; casts, weak types
and Python complex scalars; grad/jvp/vjp rules). Each thunk runs once with x64 off and once with
it on (keys ``x64_off:...`` / ``x64_on:...``). ``run`` records the result (dtype, shape, weak type,
values as [re, im] pairs), or the exception type and message, and the warning categories raised.
"""

from __future__ import annotations

import warnings
from typing import Any, Callable

import numpy as np

# distinct values with ties in the real part, so lexicographic (real, imag) order is visible
_C = [1 + 2j, 3 - 1j, 1 + 3j, 3 + 0.5j, -2 + 0j, 0.5 - 4j]
_R = [0.5, -1.0, 2.0, 3.0, 1.0, -2.5]
_M = [[2 + 1j, 1 - 1j, 0.5j], [0.5 + 0.5j, 3 + 0j, -1 + 2j], [1j, 2 - 1j, 4 + 1j]]
_RM = [[4.0, -2.0, 1.0], [3.0, 6.0, -4.0], [2.0, 1.0, 8.0]]


def _cases(jax: Any) -> dict[str, Callable]:
    jnp, lax = jax.numpy, jax.lax
    c64 = np.array(_C, np.complex64)
    c128 = np.array(_C, np.complex128)
    r32 = np.array(_R, np.float32)
    i32 = np.array([1, -2, 3, 0, 5, 7], np.int32)
    m64 = np.array(_M, np.complex64)
    rm32 = np.array(_RM, np.float32)
    herm = (m64 @ m64.conj().T + 3 * np.eye(3)).astype(np.complex64)
    nanc = np.array([np.nan + 1j, 1 + np.nan * 1j, np.inf - 2j, -np.inf + 1j, 2 + 3j], np.complex64)
    near = np.array([1 + 1e-10j, 2 - 1e-12j], np.complex64)
    angles = np.array([0.0, 2.5, 5.5, 9.0, 1.0], np.float32)

    def jc(x):
        return jnp.asarray(x)

    cases: dict[str, Callable] = {
        # ---- ordering
        "argmax": lambda: jnp.argmax(c64),
        "argmin": lambda: jnp.argmin(c64),
        "argmax_axis": lambda: jnp.argmax(m64, axis=1),
        "nanargmax": lambda: jnp.nanargmax(c64),
        "max": lambda: jnp.max(c64),
        "min": lambda: jnp.min(c64),
        "max_c128": lambda: jnp.max(c128),
        "max_axis": lambda: jnp.max(m64, axis=0),
        "amax": lambda: jnp.amax(c64),
        "ptp": lambda: jnp.ptp(c64),
        "nanmax": lambda: jnp.nanmax(c64),
        "sort": lambda: jnp.sort(c64),
        "sort_desc": lambda: jnp.sort(c64, descending=True),
        "sort_c128": lambda: jnp.sort(c128),
        "sort_2d": lambda: jnp.sort(m64, axis=0),
        "argsort": lambda: jnp.argsort(c64),
        "argsort_desc": lambda: jnp.argsort(c64, descending=True),
        "sort_complex_real": lambda: jnp.sort_complex(r32),
        "sort_complex": lambda: jnp.sort_complex(c64),
        "sort_nan": lambda: jnp.sort(nanc),
        "lax_sort": lambda: lax.sort(jc(c64)),
        "msort_like": lambda: jnp.sort(c64, axis=None),
        "partition": lambda: jnp.partition(c64, 2),
        "argpartition": lambda: jnp.argpartition(c64, 2),
        "unique": lambda: jnp.unique(np.array([1 + 1j, 1 + 1j, 0.5 - 2j, 1 + 0.5j], np.complex64)),
        "searchsorted": lambda: jnp.searchsorted(jnp.sort(c64), np.array([1 + 2.5j, 3 + 0j], np.complex64)),
        "median": lambda: jnp.median(c64),
        "lexsort_real": lambda: jnp.lexsort((r32, r32[::-1])),
        "maximum": lambda: jnp.maximum(c64, c64[::-1]),
        "minimum": lambda: jnp.minimum(c64, c64[::-1]),
        "maximum_real": lambda: jnp.maximum(c64, 1.0),
        "fmax": lambda: jnp.fmax(c64, c64[::-1]),
        "lax_max": lambda: lax.max(jc(c64), jc(c64[::-1])),
        "lax_min": lambda: lax.min(jc(c64), jc(c64[::-1])),
        "cummax": lambda: lax.cummax(jc(c64)),
        "cummin": lambda: lax.cummin(jc(c64)),
        "cummax_rev": lambda: lax.cummax(jc(c64), reverse=True),
        "clip": lambda: jnp.clip(c64, 1 + 1j, 2),
        "clip_real_bounds": lambda: jnp.clip(c64, 0.0, 2.0),
        "clip_real_x_complex_bound": lambda: jnp.clip(r32, 1j, 2.0),
        "less": lambda: jnp.less(c64, c64[::-1]),
        "greater_equal": lambda: jnp.greater_equal(c64, c64[::-1]),
        "op_lt": lambda: jc(c64) < 1,
        "op_gt_complex_scalar": lambda: jc(c64) > 1 + 2j,
        "op_le_real_array": lambda: jc(c64) <= jc(r32),
        "lax_lt": lambda: lax.lt(jc(c64), jc(c64[::-1])),
        "equal": lambda: jnp.equal(c64, np.array(_C[::-1], np.complex64)),
        "eq_real": lambda: jc(c64) == -2,
        "ne_nan": lambda: jc(nanc) != jc(nanc),
        "top_k": lambda: lax.top_k(jc(c64), 2),
        "histogram": lambda: jnp.histogram(c64),
        # ---- rounding, sign, angle
        "round": lambda: jnp.round(c64 * 1.37),
        "round_dec": lambda: jnp.round(c64 * 1.37, 1),
        "around": lambda: jnp.around(c64 * 1.37),
        "rint": lambda: jnp.rint(c64 * 1.37),
        "floor": lambda: jnp.floor(c64),
        "ceil": lambda: jnp.ceil(c64),
        "trunc": lambda: jnp.trunc(c64),
        "fix": lambda: jnp.fix(c64),
        "lax_round": lambda: lax.round(jc(c64)),
        "sign": lambda: jnp.sign(c64),
        "sign_zero": lambda: jnp.sign(np.array([0j, -0.0 + 0j], np.complex64)),
        "lax_sign": lambda: lax.sign(jc(c64)),
        "signbit": lambda: jnp.signbit(c64),
        "copysign": lambda: jnp.copysign(c64, -1.0),
        "angle": lambda: jnp.angle(c64),
        "angle_deg": lambda: jnp.angle(c64, deg=True),
        "angle_real": lambda: jnp.angle(r32),
        "angle_int": lambda: jnp.angle(i32),
        "angle_scalar": lambda: jnp.angle(1j),
        "unwrap": lambda: jnp.unwrap(c64),
        "unwrap_real": lambda: jnp.unwrap(angles),
        "abs": lambda: jnp.abs(c64),
        "abs_c128": lambda: jnp.abs(c128),
        "lax_abs": lambda: lax.abs(jc(c64)),
        "absolute_scalar": lambda: jnp.absolute(3 + 4j),
        "fabs": lambda: jnp.fabs(c64),
        "real": lambda: jnp.real(c64),
        "imag": lambda: jnp.imag(c64),
        "real_of_real": lambda: jnp.real(r32),
        "imag_of_int": lambda: jnp.imag(i32),
        "conj": lambda: jnp.conj(c64),
        "conj_real": lambda: jnp.conj(r32),
        "lax_conj_real": lambda: lax.conj(jc(r32)),
        "lax_real_of_real": lambda: lax.real(jc(r32)),
        "lax_complex": lambda: lax.complex(jc(r32), jc(r32[::-1])),
        "lax_complex_weak": lambda: lax.complex(1.0, 2.0),
        "lax_complex_int": lambda: lax.complex(jc(i32), jc(i32)),
        # ---- predicates, cleanup
        "isclose": lambda: jnp.isclose(c64, c64 + 1e-7j),
        "isclose_far": lambda: jnp.isclose(c64, c64 + 0.1j),
        "isclose_nan": lambda: jnp.isclose(nanc, nanc),
        "isclose_nan_eq": lambda: jnp.isclose(nanc, nanc, equal_nan=True),
        "isclose_real_complex": lambda: jnp.isclose(r32, r32 + 0j),
        "allclose": lambda: jnp.allclose(c64, c64 + 1e-7j),
        "allclose_false": lambda: jnp.allclose(c64, c64 + 1e-3j),
        "array_equal": lambda: jnp.array_equal(c64, c64),
        "nan_to_num": lambda: jnp.nan_to_num(nanc),
        "nan_to_num_kw": lambda: jnp.nan_to_num(nanc, nan=7.0, posinf=8.0, neginf=-9.0),
        "isnan": lambda: jnp.isnan(nanc),
        "isinf": lambda: jnp.isinf(nanc),
        "isfinite": lambda: jnp.isfinite(nanc),
        "isposinf": lambda: jnp.isposinf(nanc),
        "real_if_close": lambda: jnp.real_if_close(near),
        "real_if_close_not": lambda: jnp.real_if_close(c64),
        "real_if_close_real": lambda: jnp.real_if_close(r32),
        "iscomplexobj": lambda: jnp.iscomplexobj(c64),
        "iscomplexobj_real": lambda: jnp.iscomplexobj(r32),
        "iscomplexobj_scalar": lambda: jnp.iscomplexobj(1j),
        "iscomplex": lambda: jnp.iscomplex(np.array([1 + 0j, 1 + 1j], np.complex64)),
        "isreal": lambda: jnp.isreal(np.array([1 + 0j, 1 + 1j], np.complex64)),
        "isrealobj": lambda: jnp.isrealobj(c64),
        "isdtype": lambda: jnp.isdtype(np.complex64, "complex floating"),
        "issubdtype": lambda: jnp.issubdtype(np.complex64, jnp.inexact),
        "finfo": lambda: np.array(jnp.finfo(np.complex64).eps),
        "finfo_dtype": lambda: np.array(0, jnp.finfo(np.complex64).dtype),
        # ---- polynomials
        "roots": lambda: jnp.sort_complex(jnp.roots(np.array([1.0, 0.0, 1.0], np.float32))),
        "roots_cubic": lambda: jnp.sort_complex(jnp.roots(np.array([1.0, -6.0, 11.0, -6.0], np.float32))),
        "roots_complex": lambda: jnp.sort_complex(jnp.roots(np.array([1.0, -1j], np.complex64))),
        "polyval": lambda: jnp.polyval(np.array([1 + 1j, 2.0, -1j], np.complex64), c64),
        "polyval_real_p": lambda: jnp.polyval(np.array([1.0, 2.0, 3.0], np.float32), c64),
        "polyval_complex_scalar_x": lambda: jnp.polyval(np.array([1.0, 2.0, 3.0], np.float32), 1j),
        "poly": lambda: jnp.poly(np.array([1j, -1j], np.complex64)),
        "poly_real": lambda: jnp.poly(np.array([1.0, 2.0], np.float32)),
        "polyfit_complex": lambda: jnp.polyfit(r32, c64, 1),
        "polyder": lambda: jnp.polyder(np.array([1 + 1j, 2.0, -1j], np.complex64)),
        "polyint": lambda: jnp.polyint(np.array([1 + 1j, 2.0, -1j], np.complex64)),
        # ---- linalg
        "eigvals_real": lambda: jnp.sort_complex(jnp.linalg.eigvals(np.array([[0.0, -1.0], [1.0, 0.0]], np.float32))),
        "eigvals_complex": lambda: jnp.sort_complex(jnp.linalg.eigvals(m64)),
        "eig_real_dtypes": lambda: tuple(a.dtype.name for a in jnp.linalg.eig(rm32)),
        "eigh": lambda: jnp.linalg.eigh(herm)[0],
        "eigvalsh": lambda: jnp.linalg.eigvalsh(herm),
        "svd_s": lambda: jnp.linalg.svd(m64, compute_uv=False),
        "svd_dtypes": lambda: tuple(a.dtype.name for a in jnp.linalg.svd(m64)),
        "inv": lambda: jnp.linalg.inv(m64),
        "det": lambda: jnp.linalg.det(m64),
        "slogdet": lambda: tuple(jnp.linalg.slogdet(m64)),
        "solve": lambda: jnp.linalg.solve(m64, c64[:3]),
        "solve_mixed": lambda: jnp.linalg.solve(rm32, c64[:3]),
        "norm": lambda: jnp.linalg.norm(c64),
        "norm_fro": lambda: jnp.linalg.norm(m64),
        "norm_1": lambda: jnp.linalg.norm(m64, 1),
        "norm_2": lambda: jnp.linalg.norm(m64, 2),
        "norm_nuc": lambda: jnp.linalg.norm(m64, "nuc"),
        "norm_inf_vec": lambda: jnp.linalg.norm(c64, np.inf),
        "vector_norm": lambda: jnp.linalg.vector_norm(c64),
        "matrix_norm": lambda: jnp.linalg.matrix_norm(m64),
        "cholesky": lambda: jnp.linalg.cholesky(herm),
        "qr_r": lambda: jnp.abs(jnp.linalg.qr(m64)[1]),
        "pinv": lambda: jnp.linalg.pinv(m64),
        "matrix_rank": lambda: jnp.linalg.matrix_rank(m64),
        "matrix_power": lambda: jnp.linalg.matrix_power(m64, 3),
        "lstsq": lambda: jnp.linalg.lstsq(m64, c64[:3])[0],
        "cond": lambda: jnp.linalg.cond(m64),
        "trace": lambda: jnp.trace(m64),
        "vecdot": lambda: jnp.linalg.vecdot(c64, c64[::-1]),
        "linalg_outer": lambda: jnp.linalg.outer(c64[:2], c64[2:4]),
        "tensorsolve_like": lambda: jnp.linalg.tensorinv(m64, ind=1),
        # ---- fft dtypes
        "fft_f32": lambda: jnp.fft.fft(r32),
        "fft_i32": lambda: jnp.fft.fft(i32),
        "fft_c64": lambda: jnp.fft.fft(c64),
        "fft_c128": lambda: jnp.fft.fft(c128),
        "fft_f64": lambda: jnp.fft.fft(r32.astype(np.float64)),
        "ifft": lambda: jnp.fft.ifft(c64),
        "rfft": lambda: jnp.fft.rfft(r32),
        "rfft_int": lambda: jnp.fft.rfft(i32),
        "rfft_complex": lambda: jnp.fft.rfft(c64),
        "irfft": lambda: jnp.fft.irfft(c64),
        "irfft_real": lambda: jnp.fft.irfft(r32),
        "hfft": lambda: jnp.fft.hfft(c64),
        "ihfft": lambda: jnp.fft.ihfft(r32),
        "fft2": lambda: jnp.fft.fft2(m64),
        "fftn_real": lambda: jnp.fft.fftn(rm32),
        "rfft2": lambda: jnp.fft.rfft2(rm32),
        "irfftn": lambda: jnp.fft.irfftn(m64),
        "fftfreq": lambda: jnp.fft.fftfreq(6),
        "fftshift": lambda: jnp.fft.fftshift(c64),
        "fft_norm_ortho": lambda: jnp.fft.fft(c64, norm="ortho"),
        "lax_fft_real": lambda: lax.fft(jc(r32), "FFT", (6,)),
        # ---- reductions
        "sum": lambda: jnp.sum(c64),
        "sum_c128": lambda: jnp.sum(c128),
        "sum_dtype_real": lambda: jnp.sum(c64, dtype=np.float32),
        "prod": lambda: jnp.prod(c64),
        "mean": lambda: jnp.mean(c64),
        "mean_axis": lambda: jnp.mean(m64, axis=0),
        "var": lambda: jnp.var(c64),
        "var_c128": lambda: jnp.var(c128),
        "var_ddof": lambda: jnp.var(m64, axis=1, ddof=1),
        "var_dtype_c": lambda: jnp.var(c64, dtype=np.complex64),
        "std": lambda: jnp.std(c64),
        "nanvar": lambda: jnp.nanvar(nanc),
        "nanstd": lambda: jnp.nanstd(c64),
        "nansum": lambda: jnp.nansum(nanc),
        "nanmean": lambda: jnp.nanmean(nanc),
        "nanprod": lambda: jnp.nanprod(nanc),
        "average": lambda: jnp.average(c64, weights=r32),
        "average_cw": lambda: jnp.average(r32, weights=c64),
        "cumsum": lambda: jnp.cumsum(c64),
        "cumprod": lambda: jnp.cumprod(c64),
        "cumsum_real_to_c": lambda: jnp.cumsum(r32, dtype=np.complex64),
        "nancumsum": lambda: jnp.nancumsum(nanc),
        "lax_cumsum": lambda: lax.cumsum(jc(c64)),
        "lax_cumprod": lambda: lax.cumprod(jc(c64)),
        "lax_cumlogsumexp": lambda: lax.cumlogsumexp(jc(c64)),
        "logsumexp": lambda: jax.scipy.special.logsumexp(c64),
        "any": lambda: jnp.any(c64),
        "all": lambda: jnp.all(np.array([1j, 0j], np.complex64)),
        "count_nonzero": lambda: jnp.count_nonzero(np.array([1j, 0j, 1], np.complex64)),
        "corrcoef": lambda: jnp.corrcoef(m64),
        "cov": lambda: jnp.cov(m64),
        "diff": lambda: jnp.diff(c64),
        "gradient": lambda: jnp.gradient(c64),
        "trapezoid": lambda: jnp.trapezoid(c64),
        "convolve": lambda: jnp.convolve(c64, c64[:3]),
        "correlate": lambda: jnp.correlate(c64, c64[:3]),
        "correlate_full": lambda: jnp.correlate(c64, c64[:3], mode="full"),
        "interp": lambda: jnp.interp(np.array([0.5, 1.5], np.float32), np.array([0.0, 1.0, 2.0], np.float32), c64[:3]),
        # ---- products and conjugation rules
        "dot": lambda: jnp.dot(c64, c64[::-1]),
        "dot_mixed": lambda: jnp.dot(r32, c64),
        "vdot": lambda: jnp.vdot(c64, c64[::-1]),
        "vdot_2d": lambda: jnp.vdot(m64, m64.T),
        "inner": lambda: jnp.inner(c64, c64[::-1]),
        "outer": lambda: jnp.outer(c64[:2], c64[2:4]),
        "matmul": lambda: jnp.matmul(m64, m64),
        "matmul_mixed": lambda: jnp.matmul(rm32, m64),
        "op_matmul": lambda: jc(m64) @ jc(rm32),
        "tensordot": lambda: jnp.tensordot(m64, m64, axes=1),
        "einsum": lambda: jnp.einsum("ij,jk->ik", m64, rm32),
        "kron": lambda: jnp.kron(c64[:2], c64[2:4]),
        "cross": lambda: jnp.cross(c64[:3], c64[3:]),
        "vecdot_jnp": lambda: jnp.vecdot(c64, c64[::-1]),
        "matvec": lambda: jnp.matvec(m64, c64[:3]),
        "vecmat": lambda: jnp.vecmat(c64[:3], m64),
        "lax_dot": lambda: lax.dot(jc(m64), jc(m64)),
        "lax_dot_pref": lambda: lax.dot(jc(rm32), jc(rm32), preferred_element_type=np.complex64),
        # ---- where, casting, weak types, Python complex scalars
        "where": lambda: jnp.where(r32 > 0, c64, r32),
        "where_scalar": lambda: jnp.where(r32 > 0, 1j, r32),
        "where_scalar_i": lambda: jnp.where(r32 > 0, 1j, 0),
        "select": lambda: jnp.select([r32 > 0], [c64], default=0),
        "astype_f32": lambda: jc(c64).astype(np.float32),
        "astype_i32": lambda: jc(c64 * 1.7).astype(np.int32),
        "astype_bool": lambda: jc(np.array([1j, 0j, 1], np.complex64)).astype(bool),
        "astype_c128": lambda: jc(c64).astype(np.complex128),
        "astype_f64": lambda: jc(c128).astype(np.float64),
        "lax_convert_f32": lambda: lax.convert_element_type(jc(c64), np.float32),
        "jnp_astype_fn": lambda: jnp.astype(c64, np.float32),
        "float32_ctor": lambda: jnp.float32(c64),
        "complex64_ctor": lambda: jnp.complex64(r32),
        "complex128_ctor": lambda: jnp.complex128(1.5),
        "array_scalar": lambda: jnp.array(1 + 2j),
        "asarray_scalar": lambda: jnp.asarray(1j),
        "array_list": lambda: jnp.array([1, 2j]),
        "array_list_f32": lambda: jnp.array([np.float32(1), 2j]),
        "array_np_c128": lambda: jnp.array(c128),
        "array_dtype": lambda: jnp.array(1.5, dtype=complex),
        "zeros_complex": lambda: jnp.zeros(2, complex),
        "full_complex": lambda: jnp.full(2, 1j),
        "full_like_c": lambda: jnp.full_like(r32[:2], 1j),
        "ones_like_c": lambda: jnp.ones_like(c64[:2]),
        "arange_c": lambda: jnp.arange(3, dtype=np.complex64),
        "linspace_c": lambda: jnp.linspace(0, 1 + 1j, 3),
        "f32_times_1j": lambda: jc(r32) * 1j,
        "f32_plus_c": lambda: jc(r32) + (2 - 1j),
        "i32_plus_1j": lambda: jc(i32) + 1j,
        "c64_plus_float": lambda: jc(c64) + 2.5,
        "c64_times_f64np": lambda: jc(c64) * r32.astype(np.float64),
        "c64_plus_c128": lambda: jc(c64) + jc(c128),
        "c64_times_i32": lambda: jc(c64) * jc(i32),
        "c64_div_int": lambda: jc(c64) / 2,
        "c64_floordiv": lambda: jc(c64) // 2,
        "c64_mod": lambda: jc(c64) % 2,
        "c64_pow_2": lambda: jc(c64) ** 2,
        "c64_pow_half": lambda: jc(c64) ** 0.5,
        "c64_pow_c": lambda: jc(c64) ** (1 + 1j),
        "f32_pow_c": lambda: jc(r32) ** 1j,
        "int_pow_c": lambda: jnp.power(i32, 1j),
        "scalar_mul": lambda: jnp.multiply(1j, 2.0),
        "scalar_add_c_c": lambda: jnp.add(1j, 1j),
        "weak_c_times_f16": lambda: jnp.ones(2, np.float16) * 1j,
        "weak_c_times_bf16": lambda: jnp.ones(2, jnp.bfloat16) * 1j,
        "result_type": lambda: np.array(0, jnp.result_type(np.float32, 1j)),
        "result_type_c_i": lambda: np.array(0, jnp.result_type(np.complex64, np.int64)),
        "promote_types": lambda: np.array(0, jnp.promote_types(np.complex64, np.float64)),
        "canonicalize_c128": lambda: jnp.zeros(1, np.complex128),
        "true_divide_ints_c": lambda: jnp.true_divide(i32, 1j),
        "reciprocal": lambda: jnp.reciprocal(c64),
        "square": lambda: jnp.square(c64),
        "sqrt": lambda: jnp.sqrt(c64),
        "sqrt_neg_real": lambda: jnp.sqrt(np.array([-4.0], np.float32)),
        "emath_sqrt": lambda: jnp.emath.sqrt(np.array([-4.0, 4.0], np.float32)) if hasattr(jnp, "emath") else 0,
        "exp": lambda: jnp.exp(c64),
        "log": lambda: jnp.log(c64),
        "log10": lambda: jnp.log10(c64),
        "log2": lambda: jnp.log2(c64),
        "log1p": lambda: jnp.log1p(c64 * 0.1),
        "expm1": lambda: jnp.expm1(c64 * 0.1),
        "exp2": lambda: jnp.exp2(c64),
        "sinh": lambda: jnp.sinh(c64),
        "arcsin": lambda: jnp.arcsin(c64),
        "arccosh": lambda: jnp.arccosh(c64),
        "tanh": lambda: jnp.tanh(c64),
        "sinc": lambda: jnp.sinc(c64),
        "logaddexp": lambda: jnp.logaddexp(c64, c64),
        "hypot": lambda: jnp.hypot(c64, c64),
        "arctan2": lambda: jnp.arctan2(c64, c64),
        "lax_rsqrt": lambda: lax.rsqrt(jc(c64)),
        "lax_exp2": lambda: lax.exp2(jc(c64)),
        "lax_pow": lambda: lax.pow(jc(c64), jc(c64[::-1])),
        "lax_pow_int": lambda: lax.integer_pow(jc(c64), 3),
        "lax_atan2": lambda: lax.atan2(jc(c64), jc(c64)),
        "lax_rem": lambda: lax.rem(jc(c64), jc(c64)),
        "lax_div": lambda: lax.div(jc(c64), jc(c64[::-1])),
        "lax_add_scalar": lambda: lax.add(jc(c64), 1j),
        "lax_add_mixed": lambda: lax.add(jc(c64), jc(r32)),
        "lax_square": lambda: lax.square(jc(c64)),
        "lax_logistic": lambda: lax.logistic(jc(c64)),
        "lax_expm1": lambda: lax.expm1(jc(c64 * 0.1)),
        "lax_is_finite": lambda: lax.is_finite(jc(c64)),
        "lax_reduce_max": lambda: lax.reduce_max(jc(c64), (0,)),
        "lax_argmax": lambda: lax.argmax(jc(c64), 0, np.int32),
        "logical_not": lambda: jnp.logical_not(np.array([0j, 1j], np.complex64)),
        "logical_and": lambda: jnp.logical_and(c64, 0j),
        "heaviside": lambda: jnp.heaviside(c64, 0.5),
        "i0": lambda: jnp.i0(c64),
        "deg2rad": lambda: jnp.deg2rad(c64),
        "sign_of_inf": lambda: jnp.sign(nanc),
        "frexp": lambda: jnp.frexp(c64),
        "ldexp": lambda: jnp.ldexp(c64, 2),
        "nextafter": lambda: jnp.nextafter(c64, c64),
        "float_power": lambda: jnp.float_power(c64, 2),
        "divmod": lambda: jnp.divmod(c64, 2),
        "bitwise_not": lambda: jnp.bitwise_not(c64),
        "left_shift": lambda: jnp.left_shift(c64, 1),
        # ---- autodiff
        "grad_real_through_complex": lambda: jax.grad(lambda x: jnp.abs(jnp.exp(1j * x) * (x + 2j)) ** 2)(
            np.float32(0.7)
        ),
        "grad_real_of_c_real_part": lambda: jax.grad(lambda x: jnp.real(jnp.exp((1 + 2j) * x)))(np.float32(0.3)),
        "grad_complex_output": lambda: jax.grad(lambda x: x * 1j)(np.float32(1.0)),
        "grad_complex_out_c_in": lambda: jax.grad(lambda z: z * z)(np.complex64(1 + 1j)),
        "grad_holomorphic": lambda: jax.grad(lambda z: z * z, holomorphic=True)(np.complex64(1 + 1j)),
        "grad_holomorphic_sin": lambda: jax.grad(jnp.sin, holomorphic=True)(np.complex64(1 + 1j)),
        "grad_holomorphic_real_in": lambda: jax.grad(lambda z: z * z, holomorphic=True)(np.float32(1.0)),
        "grad_c_in_real_out": lambda: jax.grad(lambda z: jnp.abs(z) ** 2)(np.complex64(1 + 1j)),
        "grad_c_in_real_part": lambda: jax.grad(lambda z: jnp.real(z * (2 + 3j)))(np.complex64(1 + 1j)),
        "grad_c_in_imag_part": lambda: jax.grad(lambda z: jnp.imag(z * z))(np.complex64(1 + 2j)),
        "grad_c_in_abs": lambda: jax.grad(lambda z: jnp.abs(z))(np.complex64(3 + 4j)),
        "grad_c_in_angle": lambda: jax.grad(lambda z: jnp.angle(z))(np.complex64(3 + 4j)),
        "grad_c_in_sum_abs2": lambda: jax.grad(lambda z: jnp.sum(jnp.abs(z) ** 2))(c64),
        "grad_c_in_conj": lambda: jax.grad(lambda z: jnp.real(z * jnp.conj(z)))(np.complex64(1 + 2j)),
        "grad_vdot": lambda: jax.grad(lambda z: jnp.real(jnp.vdot(z, z)))(c64),
        "grad_complex_ctor": lambda: jax.grad(lambda x, y: jnp.abs(lax.complex(x, y)), argnums=(0, 1))(
            np.float32(3.0), np.float32(4.0)
        ),
        "grad_real_cast": lambda: jax.grad(lambda x: jnp.real(x.astype(np.complex64) * (1 + 1j)))(np.float32(2.0)),
        "grad_int_out": lambda: jax.grad(lambda x: x.astype(np.int32))(np.float32(1.0)),
        "grad_matmul_c": lambda: jax.grad(lambda m: jnp.sum(jnp.abs(m @ m)))(m64),
        "grad_linalg_det": lambda: jax.grad(lambda m: jnp.abs(jnp.linalg.det(m)))(m64),
        "grad_fft": lambda: jax.grad(lambda x: jnp.sum(jnp.abs(jnp.fft.fft(x)) ** 2))(r32),
        "grad_sort": lambda: jax.grad(lambda z: jnp.real(jnp.sort(z)[0] * (1 + 1j)))(c64),
        "grad_max": lambda: jax.grad(lambda z: jnp.real(jnp.max(z)))(c64),
        "grad_prod": lambda: jax.grad(lambda z: jnp.abs(jnp.prod(z)))(c64),
        "grad_cumsum": lambda: jax.grad(lambda z: jnp.sum(jnp.real(jnp.cumsum(z) * 1j)))(c64),
        "grad_sqrt": lambda: jax.grad(lambda z: jnp.real(jnp.sqrt(z)))(np.complex64(1 + 2j)),
        "grad_log": lambda: jax.grad(lambda z: jnp.imag(jnp.log(z)))(np.complex64(1 + 2j)),
        "grad_pow": lambda: jax.grad(lambda z: jnp.abs(z**1.5))(np.complex64(1 + 2j)),
        "grad_div": lambda: jax.grad(lambda z: jnp.real(1 / z))(np.complex64(1 + 2j)),
        "jacfwd_c": lambda: jax.jacfwd(lambda z: z * z, holomorphic=True)(c64[:2]),
        "jacrev_c": lambda: jax.jacrev(lambda z: z * z, holomorphic=True)(c64[:2]),
        "jacrev_c_noholo": lambda: jax.jacrev(lambda z: z * z)(c64[:2]),
        "jacfwd_real_in_c_out": lambda: jax.jacfwd(lambda x: x * (1 + 2j))(r32[:2]),
        "jacrev_real_in_c_out": lambda: jax.jacrev(lambda x: x * (1 + 2j))(r32[:2]),
        "jacfwd_c_in_real_out": lambda: jax.jacfwd(lambda z: jnp.abs(z))(c64[:2]),
        "hessian_c": lambda: jax.hessian(lambda z: z * z * z, holomorphic=True)(np.complex64(1 + 1j)),
        "value_and_grad_c": lambda: jax.value_and_grad(lambda z: jnp.abs(z) ** 2)(np.complex64(1 + 2j)),
        "jvp_complex_tangent": lambda: jax.jvp(lambda z: z * z, (np.complex64(1 + 1j),), (np.complex64(2 - 1j),)),
        "jvp_abs": lambda: jax.jvp(jnp.abs, (np.complex64(3 + 4j),), (np.complex64(1 + 1j),)),
        "jvp_real_tangent_mismatch": lambda: jax.jvp(lambda z: z * z, (np.complex64(1 + 1j),), (np.float32(1.0),)),
        "jvp_real_to_c": lambda: jax.jvp(lambda x: x * (1 + 2j), (np.float32(1.0),), (np.float32(1.0),)),
        "vjp_complex": lambda: jax.vjp(lambda z: z * z, np.complex64(1 + 1j))[1](np.complex64(1 + 0j)),
        "vjp_complex_ct": lambda: jax.vjp(lambda z: z * (2 + 1j), np.complex64(1 + 1j))[1](np.complex64(0 + 1j)),
        "vjp_real_in_c_out": lambda: jax.vjp(lambda x: x * (2 + 1j), np.float32(1.5))[1](np.complex64(1 - 1j)),
        "vjp_c_in_real_out": lambda: jax.vjp(jnp.abs, np.complex64(3 + 4j))[1](np.float32(1.0)),
        "vjp_ct_dtype_mismatch": lambda: jax.vjp(lambda z: z * z, np.complex64(1 + 1j))[1](np.float32(1.0)),
        "linear_transpose_c": lambda: jax.linear_transpose(lambda z: z * (2 + 1j), np.complex64(0))(
            np.complex64(1 + 1j)
        ),
        "vmap_c": lambda: jax.vmap(lambda z: jnp.vdot(z, z))(m64),
        "jit_c": lambda: jax.jit(lambda z: jnp.sort(z) * 1j)(c64),
        "jit_argsort": lambda: jax.jit(jnp.argsort)(c64),
        "jit_max": lambda: jax.jit(jnp.max)(c64),
        "jit_weak": lambda: jax.jit(lambda x: x * 1j)(r32),
        "eval_shape": lambda: jax.eval_shape(lambda x: x * 1j, r32).dtype.name,
        "checkpoint_c": lambda: jax.grad(jax.checkpoint(lambda z: jnp.abs(jnp.sin(z)) ** 2))(np.complex64(1 + 1j)),
        # ---- second round: around the fixes
        "astype_bool_fn": lambda: jnp.astype(np.array([1j, 0j, 1], np.complex64), bool),
        "astype_bool_jit": lambda: jax.jit(lambda x: x.astype(bool))(np.array([1j, 0j, 1], np.complex64)),
        "lax_convert_bool": lambda: lax.convert_element_type(jc(np.array([1j, 0j, 1], np.complex64)), bool),
        "cummax_2d": lambda: lax.cummax(jc(m64), axis=1),
        "cummin_jit": lambda: jax.jit(lax.cummin)(jc(c64)),
        "grad_cummax": lambda: jax.grad(lambda z: jnp.sum(jnp.abs(lax.cummax(z)) ** 2))(jc(c64)),
        "vmap_cummax": lambda: jax.vmap(lax.cummax)(jc(m64)),
        "fft_bool": lambda: jnp.fft.fft(np.array([True, False, True])),
        "fft_i8": lambda: jnp.fft.fft(np.array([1, 2, 3], np.int8)),
        "fft_i64": lambda: jnp.fft.fft(np.arange(4, dtype=np.int64)),
        "rfft_bool": lambda: jnp.fft.rfft(np.array([True, False, True])),
        "rfft_i64": lambda: jnp.fft.rfft(np.arange(4, dtype=np.int64)),
        "ihfft_int": lambda: jnp.fft.ihfft(i32),
        "irfft_int": lambda: jnp.fft.irfft(i32),
        "fftn_int": lambda: jnp.fft.fftn(i32.reshape(2, 3)),
        "lax_fft_int": lambda: lax.fft(jc(i32), "fft", (6,)),
        "lax_rfft_complex": lambda: lax.fft(jc(c64), "rfft", (6,)),
        "unique_all": lambda: jnp.unique(
            np.array([1 + 1j, 1 + 1j, 0.5 - 2j, 1 + 0.5j], np.complex64),
            return_index=True,
            return_inverse=True,
            return_counts=True,
        ),
        "argsort_real": lambda: jnp.argsort(r32),
        "jit_logistic": lambda: jax.jit(lax.logistic)(jc(c64)),
        "nn_sigmoid": lambda: jax.nn.sigmoid(jc(c64)),
        "angle_f32_scalar": lambda: jnp.angle(np.float32(1.0)),
        "angle_weak_float": lambda: jnp.angle(2.0),
        "angle_weak_c_array": lambda: jnp.angle(jnp.asarray(1j)),
        "angle_f32_array": lambda: jnp.angle(r32),
        "lax_complex_weak_strong": lambda: lax.complex(jnp.asarray(1.0), jnp.float32(2.0)),
        "sign_jit": lambda: jax.jit(jnp.sign)(nanc),
        "grad_sign": lambda: jax.grad(lambda z: jnp.real(jnp.sign(z)))(np.complex64(3 + 4j)),
        "lax_atan2_jit": lambda: jax.jit(lax.atan2)(jc(c64), jc(c64[::-1])),
        "lax_atan2_special": lambda: lax.atan2(
            jc(np.array([0j, 1 + 0j], np.complex64)), jc(np.array([1 + 0j, 0j], np.complex64))
        ),
        "jacfwd_holo_real_out": lambda: jax.jacfwd(jnp.abs, holomorphic=True)(c64[:2]),
        "jacfwd_holo_real_in": lambda: jax.jacfwd(lambda z: z * z, holomorphic=True)(r32[:2]),
        "jacfwd_int_in": lambda: jax.jacfwd(lambda z: z * 2.0)(i32[:2]),
        "sum_inf_cancel": lambda: jnp.sum(np.array([np.inf, -np.inf], np.float32)),
        "sum_inf_cancel_c": lambda: jnp.sum(np.array([np.inf + 1j, -np.inf], np.complex64)),
        "clip_method": lambda: jc(c64).clip(0, 1),
        "less_nan": lambda: jnp.less(nanc, nanc[::-1]),
        "sort_complex_int": lambda: jnp.sort_complex(i32),
        "argmax_after_abs": lambda: jnp.argmax(jnp.abs(c64)),
        # ---- third round: autodiff through complex linalg/fft, under jit and vmap
        "grad_eigh": lambda: jax.grad(lambda m: jnp.sum(jnp.linalg.eigh(m)[0] ** 2))(herm),
        "grad_svd": lambda: jax.grad(lambda m: jnp.sum(jnp.linalg.svd(m, compute_uv=False)))(m64),
        "grad_norm": lambda: jax.grad(lambda z: jnp.linalg.norm(z))(c64),
        "grad_inv": lambda: jax.grad(lambda m: jnp.abs(jnp.linalg.inv(m)).sum())(m64),
        "grad_solve": lambda: jax.grad(lambda b: jnp.real(jnp.linalg.solve(m64, b)).sum())(c64[:3]),
        "grad_ifft": lambda: jax.grad(lambda z: jnp.sum(jnp.real(jnp.fft.ifft(z) * (1 + 2j))))(c64),
        "grad_irfft": lambda: jax.grad(lambda z: jnp.sum(jnp.fft.irfft(z) ** 2))(c64[:4]),
        "jit_grad_holo": lambda: jax.jit(jax.grad(lambda z: jnp.exp(z) * z, holomorphic=True))(np.complex64(0.5 + 1j)),
        "vmap_grad_c": lambda: jax.vmap(jax.grad(lambda z: jnp.abs(jnp.sin(z)) ** 2))(c64),
        "jvp_inv": lambda: jax.jvp(jnp.linalg.inv, (m64,), (m64 * 1j,)),
        "jvp_det": lambda: jax.jvp(jnp.linalg.det, (m64,), (jnp.ones((3, 3), jnp.complex64),)),
        "vjp_matmul": lambda: jax.vjp(lambda a, b: a @ b, m64, m64)[1](jnp.ones((3, 3), jnp.complex64) * 1j),
        "grad_where_c": lambda: jax.grad(lambda z: jnp.sum(jnp.abs(jnp.where(jnp.real(z) > 1, z, 2 * z))))(c64),
        "grad_complex_mul_real": lambda: jax.grad(lambda x: jnp.abs(x * (1 + 1j) + 1j) ** 2)(r32[:1].sum()),
        "grad_logsumexp": lambda: jax.grad(lambda x: jax.scipy.special.logsumexp(x * (1 + 0j)).real)(r32),
        "grad_cumprod_c": lambda: jax.grad(lambda z: jnp.abs(jnp.cumprod(z)).sum())(c64[:4]),
        "hessian_real_via_c": lambda: jax.hessian(lambda x: jnp.abs(jnp.exp(1j * x * x)) + jnp.real(jnp.exp(1j * x)))(
            np.float32(0.4)
        ),
        "grad_angle_real_in": lambda: jax.grad(lambda x: jnp.angle(x + 1j))(np.float32(0.5)),
        "grad_sort_complex": lambda: jax.grad(lambda z: jnp.real(jnp.sort_complex(z) * jnp.arange(6)).sum())(c64),
    }
    return cases


def all_cases(jax: Any) -> dict[str, Callable]:
    """Every call of the sweep, keyed ``x64_off:name`` / ``x64_on:name``; each thunk sets x64 itself."""
    out: dict[str, Callable] = {}
    for mode, flag in (("x64_off", False), ("x64_on", True)):
        for name, fn in _cases(jax).items():

            def thunk(fn=fn, flag=flag):
                jax.config.update("jax_enable_x64", flag)
                try:
                    return fn()
                finally:
                    jax.config.update("jax_enable_x64", False)

            out[f"{mode}:{name}"] = thunk
    return out


def _num(v: float) -> float | str:
    if np.isnan(v):
        return "nan"
    if np.isinf(v):
        return "inf" if v > 0 else "-inf"
    return float(f"{v:.9g}")


def encode(r: Any) -> Any:
    """A JSON-able record: a list for tuples, a string for strings, else {dtype, shape, weak, values}."""
    if isinstance(r, (tuple, list)):
        return [encode(x) for x in r]
    if isinstance(r, str):
        return r
    a = np.asarray(r)
    rec = {"dtype": str(a.dtype), "shape": list(a.shape), "weak": bool(getattr(r, "weak_type", False))}
    kind = a.dtype.kind
    if kind == "V":  # float0
        rec["values"] = None
    elif kind == "c":
        rec["values"] = [[_num(v.real), _num(v.imag)] for v in a.ravel().tolist()]
    elif kind == "f" or a.dtype.name == "bfloat16":
        rec["values"] = [_num(v) for v in a.astype(np.float64).ravel().tolist()]
    else:
        rec["values"] = [int(v) for v in a.ravel().tolist()]
    return rec


def run(fn: Callable) -> dict:
    """``{"ok": encoded result}`` or ``{"err": type name, "msg": message}``, plus ``warn``: the
    sorted names of the warning categories raised."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            out: dict = {"ok": encode(fn())}
        except Exception as e:  # noqa: BLE001 - the error type is what is recorded
            out = {"err": type(e).__name__, "msg": str(e).split("\n")[0][:300]}
    out["warn"] = sorted({w.category.__name__ for w in caught if not _silenced(w)})
    return out


def _silenced(w: Any) -> bool:
    """A warning that the library's own filters hide from users: fjax ignores numpy's floating-point
    RuntimeWarnings raised inside its modules (a filter that ``simplefilter("always")`` overrides;
    numpy's ComplexWarning, a subclass, is not one of them)."""
    return w.category is RuntimeWarning and "/fjax/" in w.filename.replace("\\", "/")
