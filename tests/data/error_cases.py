"""The invalid calls of the error differential sweep, shared by ``make_error_cases.py`` (run under
JAX) and ``tests/test_error_differential.py`` (run under fjax); neither jax nor fjax is imported here.

``all_cases(jax)`` returns ``{key: thunk}``; each thunk makes one call that JAX documents (or
implements) as an error on bad input: shape and dtype mismatches in lax ops, malformed dimension
numbers, control-flow carries whose type changes, transforms given the wrong tree or axis sizes,
concrete-value errors under tracing, ragged arrays, bad indices, bad PRNG keys. A few calls that JAX
accepts are kept too (recorded as raising nothing), so that fjax is checked not to raise on them.
``run(thunk)`` calls it and describes what it raised: the class name, the names along its MRO and
the message (or ``None`` when it raised nothing).
"""

from __future__ import annotations

import importlib
from typing import Any, Callable

import numpy as np


def f32(*shape: int) -> np.ndarray:
    return np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)


def i32(*shape: int) -> np.ndarray:
    return np.arange(int(np.prod(shape)), dtype=np.int32).reshape(shape)


def run(thunk: Callable[[], Any], block: Callable[[Any], Any] = lambda x: x) -> dict | None:
    """Call ``thunk`` (then ``block`` on its result); describe the exception it raised, if any."""
    try:
        block(thunk())
    except Exception as e:  # noqa: BLE001 - the point is to record whatever is raised
        return {
            "type": type(e).__name__,
            "mro": [c.__name__ for c in type(e).__mro__],
            "message": str(e)[:2000],
        }
    return None


def _lax_elementwise(jax, c):
    lax = jax.lax
    c["lax.add f32+i32"] = lambda: lax.add(f32(3), i32(3))
    c["lax.add [3]+[4]"] = lambda: lax.add(f32(3), f32(4))
    c["lax.add (2,3)+(3,)"] = lambda: lax.add(f32(2, 3), f32(3))
    c["lax.sub f32+f16"] = lambda: lax.sub(f32(3), np.ones(3, np.float16))
    c["lax.mul (2,3)+(3,2)"] = lambda: lax.mul(f32(2, 3), f32(3, 2))
    c["lax.div i32/f32"] = lambda: lax.div(i32(2), f32(2))
    c["lax.max bool+i32"] = lambda: lax.max(np.array([True]), i32(1))
    c["lax.pow i32 base"] = lambda: lax.pow(i32(3), i32(3))
    c["lax.atan2 int"] = lambda: lax.atan2(i32(3), i32(3))
    c["lax.sin int"] = lambda: lax.sin(i32(3))
    c["lax.exp bool"] = lambda: lax.exp(np.array([True, False]))
    c["lax.sqrt int"] = lambda: lax.sqrt(i32(2))
    c["lax.bitwise_and float"] = lambda: lax.bitwise_and(f32(2), f32(2))
    c["lax.shift_left float"] = lambda: lax.shift_left(f32(2), f32(2))
    c["lax.not float"] = lambda: lax.bitwise_not(f32(2))
    c["lax.neg bool"] = lambda: lax.neg(np.array([True]))
    c["lax.eq shape"] = lambda: lax.eq(f32(2), f32(3))
    c["lax.lt dtype"] = lambda: lax.lt(f32(2), i32(2))
    c["lax.rem shape"] = lambda: lax.rem(i32(2, 2), i32(4))
    c["lax.nextafter int"] = lambda: lax.nextafter(i32(2), i32(2))
    c["lax.clamp shapes"] = lambda: lax.clamp(f32(2), f32(3), f32(3))
    c["lax.clamp dtypes"] = lambda: lax.clamp(np.float32(0), i32(3), np.float32(1))
    c["lax.complex int"] = lambda: lax.complex(i32(2), i32(2))
    c["lax.real of float"] = lambda: lax.real(f32(2))
    c["lax.integer_pow float exponent"] = lambda: lax.integer_pow(f32(2), 1.5)
    c["lax.population_count float"] = lambda: lax.population_count(f32(2))
    c["lax.round int"] = lambda: lax.round(i32(2))
    c["lax.is_finite int"] = lambda: lax.is_finite(i32(2))
    c["lax.select pred float"] = lambda: lax.select(f32(2), f32(2), f32(2))
    c["lax.select shape"] = lambda: lax.select(np.array([True, False]), f32(2), f32(3))
    c["lax.select dtype"] = lambda: lax.select(np.array([True, False]), f32(2), i32(2))
    c["lax.select pred shape"] = lambda: lax.select(np.array([True, False, True]), f32(2), f32(2))
    c["lax.select_n bad case dtype"] = lambda: lax.select_n(f32(2), f32(2), f32(2))
    c["lax.select_n no cases"] = lambda: lax.select_n(np.array([True]))
    c["lax.convert_element_type str dtype"] = lambda: lax.convert_element_type(f32(2), "notadtype")
    c["lax.convert_element_type object"] = lambda: lax.convert_element_type(f32(2), object)
    c["lax.bitcast size mismatch"] = lambda: lax.bitcast_convert_type(f32(3), np.int64)
    c["lax.bitcast ok"] = lambda: lax.bitcast_convert_type(f32(3), np.int32)
    c["lax.reduce_precision int"] = lambda: lax.reduce_precision(i32(2), exponent_bits=5, mantissa_bits=10)


def _lax_structural(jax, c):
    lax = jax.lax
    dn = (((1,), (0,)), ((), ()))
    c["dot_general contracting size"] = lambda: lax.dot_general(f32(2, 3), f32(4, 5), dn)
    c["dot_general contracting out of range"] = lambda: lax.dot_general(f32(2, 3), f32(3, 5), (((2,), (0,)), ((), ())))
    c["dot_general contracting arity"] = lambda: lax.dot_general(f32(2, 3), f32(3, 5), (((1,), (0, 1)), ((), ())))
    c["dot_general batch size"] = lambda: lax.dot_general(f32(2, 3, 4), f32(5, 4, 6), (((2,), (1,)), ((0,), (0,))))
    c["dot_general batch repeats contracting"] = lambda: lax.dot_general(
        f32(2, 3), f32(2, 3), (((0,), (0,)), ((0,), (0,)))
    )
    c["dot_general dtype mix ok"] = lambda: lax.dot_general(f32(2, 3), i32(3, 2), dn)
    c["dot_general malformed dn"] = lambda: lax.dot_general(f32(2, 3), f32(3, 2), ((1,), (0,)))
    c["lax.dot rank3"] = lambda: lax.dot(f32(2, 3, 4), f32(3, 4))
    c["lax.dot mismatch"] = lambda: lax.dot(f32(2, 3), f32(4, 2))
    c["lax.batch_matmul mismatch"] = lambda: lax.batch_matmul(f32(2, 3, 4), f32(3, 4, 5))
    c["reshape size mismatch"] = lambda: lax.reshape(f32(2, 3), (4, 2))
    c["reshape negative"] = lambda: lax.reshape(f32(2, 3), (-1, 3))
    c["reshape dimensions perm bad"] = lambda: lax.reshape(f32(2, 3), (3, 2), dimensions=(0, 0))
    c["broadcast_in_dim bad dims length"] = lambda: lax.broadcast_in_dim(f32(3), (2, 3), (0, 1))
    c["broadcast_in_dim incompatible"] = lambda: lax.broadcast_in_dim(f32(3), (2, 4), (1,))
    c["broadcast_in_dim non-increasing"] = lambda: lax.broadcast_in_dim(f32(2, 2), (2, 2), (1, 0))
    c["broadcast_in_dim out of range"] = lambda: lax.broadcast_in_dim(f32(3), (3,), (1,))
    c["broadcast_in_dim shrink"] = lambda: lax.broadcast_in_dim(f32(3, 1), (3,), (0, 1))
    c["lax.broadcast negative"] = lambda: lax.broadcast(f32(3), (-1,))
    c["concatenate rank mismatch"] = lambda: lax.concatenate([f32(2, 3), f32(3)], 0)
    c["concatenate dim mismatch"] = lambda: lax.concatenate([f32(2, 3), f32(2, 4)], 0)
    c["concatenate dtype mismatch"] = lambda: lax.concatenate([f32(2), i32(2)], 0)
    c["concatenate axis out of range"] = lambda: lax.concatenate([f32(2), f32(2)], 1)
    c["concatenate empty"] = lambda: lax.concatenate([], 0)
    c["slice out of range"] = lambda: lax.slice(f32(5), (0,), (7,))
    c["slice arity"] = lambda: lax.slice(f32(5, 5), (0,), (2,))
    c["slice start > limit"] = lambda: lax.slice(f32(5), (3,), (2,))
    c["slice zero stride"] = lambda: lax.slice(f32(5), (0,), (5,), (0,))
    c["slice negative start"] = lambda: lax.slice(f32(5), (-1,), (2,))
    c["dynamic_slice arity"] = lambda: lax.dynamic_slice(f32(5, 5), (0,), (2, 2))
    c["dynamic_slice size too big"] = lambda: lax.dynamic_slice(f32(5), (0,), (7,))
    c["dynamic_slice sizes arity"] = lambda: lax.dynamic_slice(f32(5, 5), (0, 0), (2,))
    c["dynamic_slice float index"] = lambda: lax.dynamic_slice(f32(5), (np.float32(1.0),), (2,))
    c["dynamic_slice oob clamps"] = lambda: lax.dynamic_slice(f32(5), (4,), (2,))
    c["dynamic_update_slice too big"] = lambda: lax.dynamic_update_slice(f32(3), f32(4), (0,))
    c["dynamic_update_slice dtype"] = lambda: lax.dynamic_update_slice(f32(3), i32(2), (0,))
    c["dynamic_update_slice rank"] = lambda: lax.dynamic_update_slice(f32(3, 3), f32(2), (0, 0))
    c["dynamic_update_slice arity"] = lambda: lax.dynamic_update_slice(f32(3, 3), f32(2, 2), (0,))
    c["dynamic_index_in_dim oob axis"] = lambda: lax.dynamic_index_in_dim(f32(3), 0, axis=2)
    c["pad config arity"] = lambda: lax.pad(f32(3, 3), np.float32(0), [(1, 1, 0)])
    c["pad value dtype"] = lambda: lax.pad(f32(3), np.int32(0), [(1, 1, 0)])
    c["pad value not scalar"] = lambda: lax.pad(f32(3), f32(1), [(1, 1, 0)])
    c["pad negative interior"] = lambda: lax.pad(f32(3), np.float32(0), [(1, 1, -1)])
    c["pad negative result"] = lambda: lax.pad(f32(3), np.float32(0), [(-2, -2, 0)])
    c["transpose bad perm"] = lambda: lax.transpose(f32(2, 3), (0, 0))
    c["transpose perm length"] = lambda: lax.transpose(f32(2, 3), (0,))
    c["transpose perm out of range"] = lambda: lax.transpose(f32(2, 3), (0, 2))
    c["squeeze non-1 dim"] = lambda: lax.squeeze(f32(2, 3), (0,))
    c["squeeze out of range"] = lambda: lax.squeeze(f32(1, 3), (2,))
    c["expand_dims out of range"] = lambda: lax.expand_dims(f32(3), (3,))
    c["rev out of range"] = lambda: lax.rev(f32(3), (1,))
    c["rev duplicate"] = lambda: lax.rev(f32(3, 3), (0, 0))
    c["iota bad shape"] = lambda: lax.iota(np.int32, -1)
    c["broadcasted_iota dim out of range"] = lambda: lax.broadcasted_iota(np.int32, (2, 3), 2)
    c["reduce_sum bad axis"] = lambda: lax.reduce_sum(f32(2, 3), (2,))
    c["reduce_max duplicate axes"] = lambda: lax.reduce_max(f32(2, 3), (0, 0))
    c["reduce init dtype"] = lambda: lax.reduce(f32(2, 3), np.int32(0), lax.add, (0,))
    c["reduce bad axes"] = lambda: lax.reduce(f32(2, 3), np.float32(0), lax.add, (3,))
    c["reduce operands/inits count"] = lambda: lax.reduce((f32(2), f32(2)), (np.float32(0),), lambda a, b: a, (0,))
    c["argmax axis out of range"] = lambda: lax.argmax(f32(2, 3), 2, np.int32)
    c["argmax float index dtype"] = lambda: lax.argmax(f32(2, 3), 0, np.float32)
    c["cumsum axis out of range"] = lambda: lax.cumsum(f32(3), axis=1)
    c["sort dimension out of range"] = lambda: lax.sort(f32(3), dimension=1)
    c["sort operands shape"] = lambda: lax.sort((f32(3), f32(4)), num_keys=1)
    c["sort num_keys too many"] = lambda: lax.sort((f32(3), f32(3)), num_keys=3)
    c["top_k k too large"] = lambda: lax.top_k(f32(3), 5)
    c["top_k negative k"] = lambda: lax.top_k(f32(3), -1)
    c["reduce_window dims arity"] = lambda: lax.reduce_window(f32(4, 4), np.float32(0), lax.add, (2,), (1, 1), "VALID")
    c["reduce_window bad padding str"] = lambda: lax.reduce_window(f32(4), np.float32(0), lax.add, (2,), (1,), "BOGUS")
    c["conv rank mismatch"] = lambda: lax.conv_general_dilated(f32(1, 2, 5, 5), f32(3, 2, 3), (1, 1), "SAME")
    c["conv feature mismatch"] = lambda: lax.conv_general_dilated(f32(1, 2, 5, 5), f32(3, 4, 3, 3), (1, 1), "SAME")
    c["conv strides arity"] = lambda: lax.conv_general_dilated(f32(1, 2, 5, 5), f32(3, 2, 3, 3), (1,), "SAME")
    c["conv bad padding str"] = lambda: lax.conv_general_dilated(f32(1, 2, 5, 5), f32(3, 2, 3, 3), (1, 1), "HALF")
    c["conv dtype mismatch"] = lambda: lax.conv_general_dilated(f32(1, 2, 5, 5), i32(3, 2, 3, 3), (1, 1), "SAME")
    c["conv bad dimension_numbers"] = lambda: lax.conv_general_dilated(
        f32(1, 2, 5, 5), f32(3, 2, 3, 3), (1, 1), "SAME", dimension_numbers=("NCHW", "OIHW", "NCXW")
    )
    c["conv kernel too big VALID"] = lambda: lax.conv_general_dilated(f32(1, 2, 2, 2), f32(3, 2, 3, 3), (1, 1), "VALID")
    c["conv feature_group_count bad"] = lambda: lax.conv_general_dilated(
        f32(1, 3, 5, 5), f32(3, 1, 3, 3), (1, 1), "SAME", feature_group_count=2
    )
    c["conv ok"] = lambda: lax.conv_general_dilated(f32(1, 2, 5, 5), f32(3, 2, 3, 3), (1, 1), "SAME")
    gdn = lax.GatherDimensionNumbers(offset_dims=(), collapsed_slice_dims=(0,), start_index_map=(0,))
    c["gather slice_sizes arity"] = lambda: lax.gather(f32(5), i32(2, 1), gdn, (1, 1))
    c["gather slice_sizes too big"] = lambda: lax.gather(f32(5), i32(2, 1), gdn, (6,))
    c["gather float indices"] = lambda: lax.gather(f32(5), f32(2, 1), gdn, (1,))
    c["gather collapsed non-1"] = lambda: lax.gather(f32(5), i32(2, 1), gdn, (2,))
    c["gather start_index_map out of range"] = lambda: lax.gather(
        f32(5),
        i32(2, 1),
        lax.GatherDimensionNumbers(offset_dims=(), collapsed_slice_dims=(0,), start_index_map=(3,)),
        (1,),
    )
    sdn = lax.ScatterDimensionNumbers(
        update_window_dims=(), inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,)
    )
    c["scatter updates shape"] = lambda: lax.scatter(f32(5), i32(2, 1), f32(3), sdn)
    c["scatter updates dtype"] = lambda: lax.scatter_add(f32(5), i32(2, 1), i32(2), sdn)
    c["scatter float indices"] = lambda: lax.scatter(f32(5), f32(2, 1), f32(2), sdn)
    c["scatter ok"] = lambda: lax.scatter_add(f32(5), i32(2, 1), f32(2), sdn)
    c["lax.index_in_dim oob"] = lambda: lax.index_in_dim(f32(3), 5)
    c["lax.slice_in_dim axis oob"] = lambda: lax.slice_in_dim(f32(3), 0, 2, axis=1)
    c["lax.full bad shape"] = lambda: lax.full((2, -1), 0.0)
    c["lax.full non-scalar fill"] = lambda: lax.full((2,), f32(2))


def _control_flow(jax, c):
    lax, jnp = jax.lax, jax.numpy
    c["scan carry dtype change"] = lambda: lax.scan(lambda c_, x: (c_.astype(np.int32), x), np.float32(0), f32(3))
    c["scan carry shape change"] = lambda: lax.scan(lambda c_, x: (jnp.stack([c_, c_]), x), np.float32(0), f32(3))
    c["scan carry structure change"] = lambda: lax.scan(lambda c_, x: ((c_, c_), x), np.float32(0), f32(3))
    c["scan body returns non-pair"] = lambda: lax.scan(lambda c_, x: c_, np.float32(0), f32(3))
    c["scan xs length mismatch"] = lambda: lax.scan(lambda c_, x: (c_, x), np.float32(0), (f32(3), f32(4)))
    c["scan length mismatch"] = lambda: lax.scan(lambda c_, x: (c_, x), np.float32(0), f32(3), length=4)
    c["scan no xs no length"] = lambda: lax.scan(lambda c_, x: (c_, x), np.float32(0), None)
    c["scan scalar xs"] = lambda: lax.scan(lambda c_, x: (c_, x), np.float32(0), np.float32(1))
    c["scan weak carry ok"] = lambda: lax.scan(lambda c_, x: (c_ + x, x), 0.0, f32(3))
    c["while_loop carry dtype change"] = lambda: lax.while_loop(lambda v: v < 3, lambda v: v + 1.0, np.int32(0))
    c["while_loop carry shape change"] = lambda: lax.while_loop(
        lambda v: v.sum() < 3, lambda v: jnp.concatenate([v, v]), f32(2)
    )
    c["while_loop cond non-scalar"] = lambda: lax.while_loop(lambda v: v < 3, lambda v: v + 1, f32(2))
    c["while_loop cond non-bool"] = lambda: lax.while_loop(lambda v: v, lambda v: v - 1, np.int32(3))
    c["while_loop structure change"] = lambda: lax.while_loop(lambda v: v[0] < 3, lambda v: (v[0] + 1,), (0, 1))
    c["fori_loop carry dtype change"] = lambda: lax.fori_loop(0, 3, lambda i, v: v * 1.5, np.int32(1))
    c["fori_loop carry shape change"] = lambda: lax.fori_loop(0, 3, lambda i, v: v[None], f32(2))
    c["fori_loop float bounds"] = lambda: lax.fori_loop(0.0, 3.0, lambda i, v: v, np.float32(1))
    c["cond branch dtype mismatch"] = lambda: lax.cond(True, lambda: np.float32(1), lambda: np.int32(1))
    c["cond branch shape mismatch"] = lambda: lax.cond(True, lambda: f32(2), lambda: f32(3))
    c["cond branch structure mismatch"] = lambda: lax.cond(True, lambda: (f32(2), f32(2)), lambda: f32(2))
    c["cond pred non-scalar"] = lambda: lax.cond(np.array([True, False]), lambda: 1.0, lambda: 2.0)
    c["cond pred float ok"] = lambda: lax.cond(np.float32(1.0), lambda: 1.0, lambda: 2.0)
    c["cond pred string"] = lambda: lax.cond("yes", lambda: 1.0, lambda: 2.0)
    c["cond wrong operand count"] = lambda: lax.cond(True, lambda x: x, lambda x: x, 1.0, 2.0)
    c["cond non-callable branch"] = lambda: lax.cond(True, 1.0, lambda: 2.0)
    c["switch branch mismatch"] = lambda: lax.switch(0, [lambda: np.float32(1), lambda: f32(2)])
    c["switch no branches"] = lambda: lax.switch(0, [])
    c["switch float index"] = lambda: lax.switch(np.float32(0.5), [lambda: 1.0, lambda: 2.0])
    c["switch index non-scalar"] = lambda: lax.switch(i32(2), [lambda: 1.0, lambda: 2.0])
    c["map length mismatch"] = lambda: lax.map(lambda xy: xy[0] + xy[1], (f32(3), f32(4)))
    c["associative_scan length mismatch"] = lambda: lax.associative_scan(lambda a, b: a, (f32(3), f32(4)))


def _jnp(jax, c):
    jnp = jax.numpy
    c["jnp.sum axis oob"] = lambda: jnp.sum(f32(2, 3), axis=2)
    c["jnp.sum axis float"] = lambda: jnp.sum(f32(2, 3), axis=1.0)
    c["jnp.sum axis duplicate"] = lambda: jnp.sum(f32(2, 3), axis=(0, 0))
    c["jnp.mean axis oob"] = lambda: jnp.mean(f32(2, 3), axis=-3)
    c["jnp.max empty"] = lambda: jnp.max(f32(0))
    c["jnp.argmax axis oob"] = lambda: jnp.argmax(f32(2, 3), axis=4)
    c["jnp.argmax empty"] = lambda: jnp.argmax(f32(0))
    c["jnp.cumsum axis oob"] = lambda: jnp.cumsum(f32(3), axis=1)
    c["jnp.sort axis oob"] = lambda: jnp.sort(f32(3), axis=2)
    c["jnp.flip axis oob"] = lambda: jnp.flip(f32(3), axis=1)
    c["jnp.squeeze non-1"] = lambda: jnp.squeeze(f32(2, 3), axis=0)
    c["jnp.expand_dims oob"] = lambda: jnp.expand_dims(f32(3), 3)
    c["jnp.moveaxis oob"] = lambda: jnp.moveaxis(f32(2, 3), 2, 0)
    c["jnp.swapaxes oob"] = lambda: jnp.swapaxes(f32(2, 3), 0, 5)
    c["jnp.transpose bad axes"] = lambda: jnp.transpose(f32(2, 3), (1, 1))
    c["jnp.reshape bad size"] = lambda: jnp.reshape(f32(2, 3), (4, 2))
    c["jnp.reshape two -1"] = lambda: jnp.reshape(f32(2, 3), (-1, -1))
    c["jnp.reshape -1 indivisible"] = lambda: jnp.reshape(f32(2, 3), (-1, 4))
    c["array.reshape bad size"] = lambda: jnp.asarray(f32(2, 3)).reshape(5)
    c["jnp.concatenate dim mismatch"] = lambda: jnp.concatenate([f32(2, 3), f32(2, 4)])
    c["jnp.concatenate rank mismatch"] = lambda: jnp.concatenate([f32(2, 3), f32(3)])
    c["jnp.concatenate axis oob"] = lambda: jnp.concatenate([f32(2), f32(2)], axis=1)
    c["jnp.concatenate empty"] = lambda: jnp.concatenate([])
    c["jnp.concatenate mixed dtypes ok"] = lambda: jnp.concatenate([f32(2), i32(2)])
    c["jnp.stack shape mismatch"] = lambda: jnp.stack([f32(2), f32(3)])
    c["jnp.stack empty"] = lambda: jnp.stack([])
    c["jnp.hstack mismatch"] = lambda: jnp.hstack([f32(2, 2), f32(3, 2)])
    c["jnp.vstack mismatch"] = lambda: jnp.vstack([f32(2), f32(3)])
    c["jnp.split uneven"] = lambda: jnp.split(f32(5), 2)
    c["jnp.split axis oob"] = lambda: jnp.split(f32(4), 2, axis=1)
    c["jnp.tile negative"] = lambda: jnp.tile(f32(2), -1)
    c["jnp.repeat bad repeats length"] = lambda: jnp.repeat(f32(3), np.array([1, 2]))
    c["jnp.broadcast_to incompatible"] = lambda: jnp.broadcast_to(f32(3), (4,))
    c["jnp.broadcast_to fewer dims"] = lambda: jnp.broadcast_to(f32(2, 3), (3,))
    c["jnp.broadcast_arrays incompatible"] = lambda: jnp.broadcast_arrays(f32(2), f32(3))
    c["jnp.add broadcast mismatch"] = lambda: jnp.add(f32(2, 3), f32(2))
    c["jnp + operator mismatch"] = lambda: jnp.asarray(f32(3)) + f32(4)
    c["jnp.where shape mismatch"] = lambda: jnp.where(np.array([True, False]), f32(3), f32(3))
    c["jnp.where one arg under size"] = lambda: jnp.where(np.array([True, False]), f32(2))
    c["jnp.matmul shape mismatch"] = lambda: jnp.matmul(f32(2, 3), f32(4, 2))
    c["jnp.matmul scalar"] = lambda: jnp.matmul(np.float32(2), f32(2))
    c["jnp @ operator mismatch"] = lambda: jnp.asarray(f32(2, 3)) @ f32(2, 3)
    c["jnp.matmul batch mismatch"] = lambda: jnp.matmul(f32(2, 3, 4), f32(3, 4, 5))
    c["jnp.dot mismatch"] = lambda: jnp.dot(f32(3), f32(4))
    c["jnp.inner mismatch"] = lambda: jnp.inner(f32(3), f32(4))
    c["jnp.vdot mismatch"] = lambda: jnp.vdot(f32(3), f32(4))
    c["jnp.tensordot mismatch"] = lambda: jnp.tensordot(f32(2, 3), f32(4, 2), axes=1)
    c["jnp.tensordot axes oob"] = lambda: jnp.tensordot(f32(2, 3), f32(3, 2), axes=([2], [0]))
    c["jnp.einsum bad subscripts"] = lambda: jnp.einsum("ij,jk->il", f32(2, 3), f32(3, 2))
    c["jnp.einsum size mismatch"] = lambda: jnp.einsum("ij,jk->ik", f32(2, 3), f32(4, 2))
    c["jnp.einsum operand count"] = lambda: jnp.einsum("ij,jk->ik", f32(2, 3))
    c["jnp.einsum rank mismatch"] = lambda: jnp.einsum("ijk->i", f32(2, 3))
    c["jnp.einsum bad char"] = lambda: jnp.einsum("i$->i", f32(2, 3))
    c["jnp.take axis oob"] = lambda: jnp.take(f32(3), np.array([0]), axis=1)
    c["jnp.take float indices"] = lambda: jnp.take(f32(3), np.array([0.5]))
    c["jnp.take bad mode"] = lambda: jnp.take(f32(3), np.array([0]), mode="bogus")
    c["jnp.take_along_axis rank"] = lambda: jnp.take_along_axis(f32(2, 3), i32(2), axis=1)
    c["jnp.take_along_axis float"] = lambda: jnp.take_along_axis(f32(2, 3), f32(2, 1), axis=1)
    c["jnp.array ragged"] = lambda: jnp.array([[1, 2], [3]])
    c["jnp.array ragged nested"] = lambda: jnp.array([[1.0, 2.0], [3.0, 4.0, 5.0]])
    c["jnp.array of string"] = lambda: jnp.array(["a", "b"])
    c["jnp.array object"] = lambda: jnp.array(object())
    c["jnp.array of dict"] = lambda: jnp.array({"a": 1})
    c["jnp.asarray of None"] = lambda: jnp.asarray(None)
    c["jnp.array int overflow"] = lambda: jnp.array(2**70)
    c["jnp.int32 overflow"] = lambda: jnp.array(2**40, dtype=jnp.int32)
    c["jnp.zeros negative"] = lambda: jnp.zeros((-1,))
    c["jnp.zeros float shape"] = lambda: jnp.zeros((2.5,))
    c["jnp.ones bad dtype"] = lambda: jnp.ones(3, dtype="nope")
    c["jnp.arange zero step"] = lambda: jnp.arange(0, 5, 0)
    c["jnp.linspace negative num"] = lambda: jnp.linspace(0, 1, -1)
    c["jnp.eye negative"] = lambda: jnp.eye(-1)
    c["jnp.full shape mismatch"] = lambda: jnp.full((2,), f32(3))
    c["jnp.pad bad width"] = lambda: jnp.pad(f32(3), ((1, 1), (1, 1)))
    c["jnp.pad negative"] = lambda: jnp.pad(f32(3), -1)
    c["jnp.pad bad mode"] = lambda: jnp.pad(f32(3), 1, mode="bogus")
    c["jnp.clip ok"] = lambda: jnp.clip(f32(3), 0, 1)
    c["jnp.diag 3d"] = lambda: jnp.diag(f32(2, 2, 2))
    c["jnp.trace 1d"] = lambda: jnp.trace(f32(3))
    c["jnp.linalg.inv non-square"] = lambda: jnp.linalg.inv(f32(2, 3))
    c["jnp.linalg.inv 1d"] = lambda: jnp.linalg.inv(f32(3))
    c["jnp.linalg.solve mismatch"] = lambda: jnp.linalg.solve(f32(3, 3), f32(4))
    c["jnp.linalg.det non-square"] = lambda: jnp.linalg.det(f32(2, 3))
    c["jnp.linalg.cholesky 1d"] = lambda: jnp.linalg.cholesky(f32(3))
    c["jnp.linalg.norm bad ord"] = lambda: jnp.linalg.norm(f32(3), ord="fro")
    c["jnp.linalg.eigh non-square"] = lambda: jnp.linalg.eigh(f32(2, 3))
    c["jnp.astype bad dtype"] = lambda: jnp.asarray(f32(2)).astype("nope")
    c["jnp.cross bad dims"] = lambda: jnp.cross(f32(4), f32(4))
    c["jnp.outer ok"] = lambda: jnp.outer(f32(2), f32(3))
    c["jnp.searchsorted 2d"] = lambda: jnp.searchsorted(f32(2, 2), f32(2))
    c["jnp.bincount float"] = lambda: jnp.bincount(f32(3))
    c["jnp.interp mismatch"] = lambda: jnp.interp(f32(2), f32(3), f32(4))
    c["jnp.convolve 2d"] = lambda: jnp.convolve(f32(2, 2), f32(2))
    c["jnp.convolve empty"] = lambda: jnp.convolve(f32(0), f32(2))
    c["jnp.bitwise_and float"] = lambda: jnp.bitwise_and(f32(2), f32(2))
    c["jnp.left_shift float"] = lambda: jnp.left_shift(f32(2), 1)
    c["jnp.unique non-static"] = lambda: jax.jit(jnp.unique)(f32(3))
    c["jnp.nonzero under jit"] = lambda: jax.jit(jnp.nonzero)(f32(3))
    c["jnp.argwhere under jit"] = lambda: jax.jit(jnp.argwhere)(f32(3))
    c["jnp.arange traced"] = lambda: jax.jit(lambda n: jnp.arange(n))(3)
    c["jnp.zeros traced shape"] = lambda: jax.jit(lambda n: jnp.zeros(n))(3)
    c["jnp.reshape traced shape"] = lambda: jax.jit(lambda x, n: jnp.reshape(x, (n, -1)))(f32(6), 2)
    c["jnp.array setitem"] = lambda: jnp.asarray(f32(3)).__setitem__(0, 1.0)
    c["jnp.array len of scalar"] = lambda: len(jnp.asarray(1.0))
    c["jnp.array iter scalar"] = lambda: iter(jnp.asarray(1.0))
    c["jnp.array float() of vector"] = lambda: float(jnp.asarray(f32(2)))
    c["jnp.array bool() of vector"] = lambda: bool(jnp.asarray(f32(2)))
    c["jnp.array int() of vector"] = lambda: int(jnp.asarray(f32(2)))
    c["jnp.array hash"] = lambda: hash(jnp.asarray(f32(2)))


def _indexing(jax, c):
    jnp = jax.numpy

    def a():
        return jnp.asarray(f32(3, 4))

    c["index float scalar"] = lambda: a()[1.0]
    c["index float array"] = lambda: a()[np.array([0.0, 1.0])]
    c["index too many"] = lambda: a()[0, 0, 0]
    c["index out of bounds static"] = lambda: a()[5]
    c["index out of bounds negative"] = lambda: a()[-5]
    c["index two ellipsis"] = lambda: a()[..., ...]
    c["index string"] = lambda: a()["a"]
    c["index list of floats"] = lambda: a()[[0.5, 1.5]]
    c["index bool mask shape"] = lambda: a()[np.array([True, False])]
    c["index None ok"] = lambda: a()[None, 0]
    c["index slice float step"] = lambda: a()[0:2:0.5]
    c["index slice zero step"] = lambda: a()[::0]
    c["index tuple of lists ok"] = lambda: a()[[0, 1], [1, 2]]
    c["index broadcast mismatch"] = lambda: a()[[0, 1], [1, 2, 3]]
    c["index dict"] = lambda: a()[{0: 1}]
    c["at set shape mismatch"] = lambda: jnp.asarray(f32(3)).at[:2].set(f32(3))
    c["at add shape mismatch"] = lambda: jnp.asarray(f32(3, 4)).at[0].add(f32(3))
    c["at set too many indices"] = lambda: jnp.asarray(f32(3)).at[0, 0].set(1.0)
    c["at set float index"] = lambda: jnp.asarray(f32(3)).at[1.0].set(1.0)
    c["at bad mode"] = lambda: jnp.asarray(f32(3)).at[0].set(1.0, mode="bogus")
    c["at get oob clamps ok"] = lambda: jnp.asarray(f32(3)).at[5].get()
    c["at set broadcast ok"] = lambda: jnp.asarray(f32(3, 4)).at[0].set(f32(4))
    c["at unknown method"] = lambda: jnp.asarray(f32(3)).at[0].frobnicate(1.0)
    c["at without index"] = lambda: jnp.asarray(f32(3)).at.set(1.0)


def _random(jax, c):
    random, jnp = jax.random, jax.numpy
    c["random.normal raw key wrong shape"] = lambda: random.normal(np.zeros(3, np.uint32), (2,))
    c["random.normal raw key wrong dtype"] = lambda: random.normal(np.zeros(2, np.int32), (2,))
    c["random.normal float key"] = lambda: random.normal(np.zeros(2, np.float32), (2,))
    c["random.normal batch of keys"] = lambda: random.normal(random.split(random.PRNGKey(0), 3), (2,))
    c["random.normal bad shape"] = lambda: random.normal(random.PRNGKey(0), (-1,))
    c["random.normal int dtype"] = lambda: random.normal(random.PRNGKey(0), (2,), dtype=np.int32)
    c["random.uniform int dtype"] = lambda: random.uniform(random.PRNGKey(0), (2,), dtype=np.int32)
    c["random.uniform minval shape"] = lambda: random.uniform(random.PRNGKey(0), (2,), minval=f32(3))
    c["random.randint float dtype"] = lambda: random.randint(random.PRNGKey(0), (2,), 0, 5, dtype=np.float32)
    c["random.randint shape mismatch"] = lambda: random.randint(random.PRNGKey(0), (2,), np.zeros(3, np.int32), 5)
    c["random.split raw key wrong shape"] = lambda: random.split(np.zeros(5, np.uint32))
    c["random.split negative num"] = lambda: random.split(random.PRNGKey(0), -1)
    c["random.fold_in float data"] = lambda: random.fold_in(random.PRNGKey(0), 1.5)
    c["random.PRNGKey float seed"] = lambda: random.PRNGKey(1.5)
    c["random.PRNGKey array seed"] = lambda: random.PRNGKey(np.array([1, 2]))
    c["random.key float seed"] = lambda: random.key(1.5)
    c["random.key bad impl"] = lambda: random.key(0, impl="nope")
    c["typed key arithmetic"] = lambda: random.key(0) + 1
    c["typed key to float"] = lambda: jnp.asarray(random.key(0), dtype=np.float32)
    c["typed key astype float"] = lambda: random.key(0).astype(np.float32)
    c["convert_element_type of typed key"] = lambda: jax.lax.convert_element_type(random.key(0), np.uint32)
    c["typed key key_data ok"] = lambda: random.key_data(random.key(0))
    c["key_data of raw ok"] = lambda: random.key_data(random.PRNGKey(0))
    c["wrap_key_data wrong shape"] = lambda: random.wrap_key_data(np.zeros(3, np.uint32))
    c["random.choice replace=False too many"] = lambda: random.choice(random.PRNGKey(0), 3, (5,), replace=False)
    c["random.choice p mismatch"] = lambda: random.choice(random.PRNGKey(0), 3, (2,), p=f32(4))
    c["random.permutation axis oob"] = lambda: random.permutation(random.PRNGKey(0), f32(3), axis=2)
    c["random.categorical axis oob"] = lambda: random.categorical(random.PRNGKey(0), f32(3), axis=3)
    c["random.bernoulli p shape"] = lambda: random.bernoulli(random.PRNGKey(0), f32(3), (2,))
    c["random.normal shape not tuple of int"] = lambda: random.normal(random.PRNGKey(0), (2.5,))


def _transforms(jax, c):
    jnp = jax.numpy

    def f1(x):
        return x

    c["jit static_argnums oob"] = lambda: jax.jit(f1, static_argnums=3)(1.0)
    c["jit static unhashable"] = lambda: jax.jit(lambda x, s: x, static_argnums=1)(1.0, [1, 2])
    c["jit static_argnames unknown"] = lambda: jax.jit(f1, static_argnames="z")(1.0)
    c["jit non-callable"] = lambda: jax.jit(3)
    c["jit string argument"] = lambda: jax.jit(f1)("abc")
    c["jit object argument"] = lambda: jax.jit(f1)(object())
    c["jit returns string"] = lambda: jax.jit(lambda x: "abc")(1.0)
    c["jit too many args"] = lambda: jax.jit(f1)(1.0, 2.0)
    c["jit donate oob ok"] = lambda: jax.jit(f1, donate_argnums=0)(jnp.asarray(f32(2)))
    c["vmap inconsistent sizes"] = lambda: jax.vmap(lambda a, b: a + b)(f32(3), f32(4))
    c["vmap in_axes oob"] = lambda: jax.vmap(f1, in_axes=1)(f32(3))
    c["vmap in_axes tree mismatch"] = lambda: jax.vmap(lambda a, b: a + b, in_axes=(0, 0, 0))(f32(3), f32(3))
    c["vmap in_axes list not tuple"] = lambda: jax.vmap(lambda a, b: a + b, in_axes=[0, 0])(f32(3), f32(3))
    c["vmap in_axes float"] = lambda: jax.vmap(f1, in_axes=0.5)(f32(3))
    c["vmap scalar with axis 0"] = lambda: jax.vmap(f1)(np.float32(1))
    c["vmap all None"] = lambda: jax.vmap(f1, in_axes=None)(f32(3))
    c["vmap out_axes on unbatched"] = lambda: jax.vmap(lambda x: np.float32(1), out_axes=None)(f32(3))
    c["vmap out_axes None batched"] = lambda: jax.vmap(f1, out_axes=None)(f32(3))
    c["vmap out_axes oob"] = lambda: jax.vmap(f1, out_axes=2)(f32(3))
    c["vmap out_axes tree mismatch"] = lambda: jax.vmap(lambda x: (x, x), out_axes=(0, 0, 0))(f32(3))
    c["vmap axis_size mismatch"] = lambda: jax.vmap(f1, axis_size=4)(f32(3))
    c["vmap no args"] = lambda: jax.vmap(lambda: 1.0)()
    c["vmap dict in_axes mismatch"] = lambda: jax.vmap(lambda d: d["a"], in_axes=({"b": 0},))({"a": f32(3)})
    c["grad non-scalar output"] = lambda: jax.grad(lambda x: x * 2)(f32(3))
    c["grad integer input"] = lambda: jax.grad(lambda x: x * 2)(3)
    c["grad complex output"] = lambda: jax.grad(lambda x: x * (1 + 1j))(1.0)
    c["grad complex input"] = lambda: jax.grad(lambda x: jnp.real(x))(1.0 + 1j)
    c["grad bool input"] = lambda: jax.grad(lambda x: 1.0)(True)
    c["grad argnums oob"] = lambda: jax.grad(lambda x: x, argnums=2)(1.0)
    c["grad returns tuple no aux"] = lambda: jax.grad(lambda x: (x, x))(1.0)
    c["grad has_aux not pair"] = lambda: jax.grad(lambda x: x, has_aux=True)(1.0)
    c["grad string input"] = lambda: jax.grad(lambda x: 1.0)("a")
    c["value_and_grad non-scalar"] = lambda: jax.value_and_grad(lambda x: x)(f32(2))
    c["grad holomorphic real input"] = lambda: jax.grad(lambda x: x, holomorphic=True)(1.0)
    c["jvp dtype mismatch"] = lambda: jax.jvp(lambda x: x, (np.float32(1),), (np.float64(1),))
    c["jvp shape mismatch"] = lambda: jax.jvp(lambda x: x, (f32(2),), (f32(3),))
    c["jvp tree mismatch"] = lambda: jax.jvp(lambda x, y: x, (1.0, 2.0), (1.0,))
    c["jvp primals not tuple"] = lambda: jax.jvp(lambda x: x, 1.0, 1.0)
    c["jvp int primal float tangent"] = lambda: jax.jvp(lambda x: x, (np.int32(1),), (np.float32(1),))
    c["jvp int primal int tangent"] = lambda: jax.jvp(lambda x: x, (np.int32(1),), (np.int32(1),))
    c["jvp int primal float0 tangent ok"] = lambda: jax.jvp(
        lambda x: x * 2, (np.int32(1),), (np.zeros((), jax.dtypes.float0),)
    )
    c["vjp cotangent shape"] = lambda: jax.vjp(lambda x: x * 2, f32(2))[1](f32(3))
    c["vjp cotangent dtype"] = lambda: jax.vjp(lambda x: x * 2, f32(2))[1](i32(2))
    c["vjp cotangent tree"] = lambda: jax.vjp(lambda x: (x, x), f32(2))[1](f32(2))
    c["jacfwd integer input"] = lambda: jax.jacfwd(lambda x: x)(i32(2))
    c["jacrev integer input"] = lambda: jax.jacrev(lambda x: x)(i32(2))
    c["linearize int input"] = lambda: jax.linearize(lambda x: x, np.int32(1))
    c["make_jaxpr bad arg"] = lambda: jax.make_jaxpr(f1)("x")
    c["eval_shape shape mismatch"] = lambda: jax.eval_shape(lambda a, b: a + b, f32(2), f32(3))
    c["custom_jvp wrong jvp output"] = lambda: _bad_custom_jvp(jax)(np.float32(1))
    c["grad of while_loop"] = lambda: jax.grad(lambda x: jax.lax.while_loop(lambda v: v < 10, lambda v: v * 2, x))(1.0)
    c["grad of fori_loop traced bound"] = lambda: jax.jit(
        lambda x, n: jax.grad(lambda y: jax.lax.fori_loop(0, n, lambda i, v: v * 2, y))(x)
    )(1.0, 3)
    c["jvp of while_loop ok"] = lambda: jax.jvp(
        lambda x: jax.lax.while_loop(lambda v: v < 10, lambda v: v * 2, x), (1.0,), (1.0,)
    )
    c["custom_vjp bwd not tuple"] = lambda: jax.grad(_custom_vjp(jax, lambda res, g: g))(1.0)
    c["custom_vjp bwd wrong length"] = lambda: jax.grad(_custom_vjp(jax, lambda res, g: (g, g)))(1.0)
    c["custom_vjp bwd wrong shape"] = lambda: jax.grad(_custom_vjp(jax, lambda res, g: (jnp.stack([g, g]),)))(1.0)
    c["checkpoint non-callable"] = lambda: jax.checkpoint(3)(1.0)
    c["device_put bad"] = lambda: jax.device_put(object())


def _bad_custom_jvp(jax):
    @jax.custom_jvp
    def f(x):
        return x

    @f.defjvp
    def f_jvp(primals, tangents):
        return primals[0], tangents[0][None]

    return jax.grad(f)


def _custom_vjp(jax, bwd):
    @jax.custom_vjp
    def f(x):
        return x * 2.0

    f.defvjp(lambda x: (x * 2.0, None), bwd)
    return f


def _tree(jax, c):
    tu = jax.tree_util
    c["tree_map structure mismatch"] = lambda: tu.tree_map(lambda a, b: a, (1, 2), (1, 2, 3))
    c["tree_map dict keys mismatch"] = lambda: tu.tree_map(lambda a, b: a, {"a": 1}, {"b": 1})
    c["tree_map list vs tuple"] = lambda: tu.tree_map(lambda a, b: a, [1, 2], (1, 2))
    c["tree_map None prefix ok"] = lambda: tu.tree_map(lambda a, b: a, (1, None), (1, None))
    c["tree_unflatten count"] = lambda: tu.tree_unflatten(tu.tree_structure((1, 2)), [1])
    c["tree_transpose mismatch"] = lambda: tu.tree_transpose(
        tu.tree_structure([0, 0]), tu.tree_structure((0, 0)), [(1, 2), (3,)]
    )
    c["jax.tree.map mismatch"] = lambda: jax.tree.map(lambda a, b: a, [1], [1, 2])
    c["tree_map non-callable"] = lambda: tu.tree_map(3, [1])


def _nn(jax, c):
    nn = jax.nn
    c["one_hot floats"] = lambda: nn.one_hot(f32(3), 4)
    c["one_hot num_classes float"] = lambda: nn.one_hot(i32(3), 4.5)
    c["one_hot axis oob"] = lambda: nn.one_hot(i32(3), 4, axis=3)
    c["softmax axis oob"] = lambda: nn.softmax(f32(2, 3), axis=2)
    c["log_softmax axis oob"] = lambda: nn.log_softmax(f32(3), axis=-2)
    c["logsumexp axis oob"] = lambda: nn.logsumexp(f32(3), axis=1)
    c["relu int ok"] = lambda: nn.relu(i32(3))
    c["gelu int"] = lambda: nn.gelu(i32(3))
    c["standardize axis oob"] = lambda: nn.standardize(f32(3), axis=2)
    c["dot_product_attention rank"] = lambda: nn.dot_product_attention(f32(2, 3), f32(2, 3), f32(2, 3))
    c["nn.glu odd size"] = lambda: nn.glu(f32(3))


def _concrete(jax, c):
    jnp, lax = jax.numpy, jax.lax
    c["if on traced"] = lambda: jax.jit(lambda x: 1.0 if x > 0 else 2.0)(1.0)
    c["bool() of traced"] = lambda: jax.jit(lambda x: bool(x))(1.0)
    c["int() of traced"] = lambda: jax.jit(lambda x: int(x))(1.0)
    c["float() of traced"] = lambda: jax.jit(lambda x: float(x))(1.0)
    c["complex() of traced"] = lambda: jax.jit(lambda x: complex(x))(1.0)
    c["index() of traced"] = lambda: jax.jit(lambda x, i: x[[0, 1][i]])(f32(3), 1)
    c["range of traced"] = lambda: jax.jit(lambda n: sum(range(n)))(3)
    c["np.asarray of traced"] = lambda: jax.jit(lambda x: np.asarray(x))(f32(2))
    c["np.sin of traced"] = lambda: jax.jit(lambda x: np.sin(x))(f32(2))
    c["traced bool mask index"] = lambda: jax.jit(lambda x: x[x > 1])(f32(3))
    c["traced bool mask at set"] = lambda: jax.jit(lambda x: x.at[x > 1].set(0.0))(f32(3))
    c["traced bool mask where ok"] = lambda: jax.jit(lambda x: jnp.where(x > 1, x, 0.0))(f32(3))
    c["traced mask sum ok"] = lambda: jax.jit(lambda x: jnp.sum(x, where=x > 1))(f32(3))
    c["vmap if on batched"] = lambda: jax.vmap(lambda x: x if x > 0 else -x)(f32(3))
    c["grad if on tracer ok"] = lambda: jax.grad(lambda x: x if x > 0 else -x)(1.0)
    c["grad int() of tracer"] = lambda: jax.grad(lambda x: x * int(x))(1.0)
    c["while under jit traced dynamic_slice size"] = lambda: jax.jit(lambda x, n: lax.dynamic_slice(x, (0,), (n,)))(
        f32(3), 2
    )
    c["jit slice traced bound"] = lambda: jax.jit(lambda x, n: x[:n])(f32(3), 2)
    c["jnp.split traced sections"] = lambda: jax.jit(lambda x, n: jnp.split(x, n))(f32(4), 2)
    c["scan traced length"] = lambda: jax.jit(lambda n: lax.scan(lambda c_, _: (c_, None), 0.0, None, length=n))(3)
    c["fori_loop traced bounds ok"] = lambda: jax.jit(lambda n: lax.fori_loop(0, n, lambda i, v: v + 1, 0))(3)
    c["python while on traced"] = lambda: jax.jit(_while_traced)(1.0)
    c["leaked tracer"] = lambda: _leak(jax)
    c["pure_callback shape mismatch"] = lambda: jax.jit(
        lambda x: jax.pure_callback(lambda v: np.zeros(3, np.float32), jax.ShapeDtypeStruct((2,), np.float32), x)
    )(f32(2))


def _while_traced(x):
    while x < 5:
        x = x + 1
    return x


def _leak(jax):
    box = []
    jax.jit(lambda x: box.append(x) or x)(1.0)
    return box[0] + 1


def _under_jit(jax, c):
    """The common shape/dtype mistakes again, made while tracing under jit (JAX's shape rules)."""
    lax, jnp = jax.lax, jax.numpy
    j = jax.jit
    c["jit lax.add shape"] = lambda: j(lax.add)(f32(3), f32(4))
    c["jit lax.add dtype"] = lambda: j(lax.add)(f32(3), i32(3))
    c["jit lax.add rank"] = lambda: j(lax.add)(f32(2, 3), f32(3))
    c["jit dot_general contracting"] = lambda: j(lambda a, b: lax.dot_general(a, b, (((1,), (0,)), ((), ()))))(
        f32(2, 3), f32(4, 5)
    )
    c["jit reshape size"] = lambda: j(lambda a: lax.reshape(a, (4, 2)))(f32(2, 3))
    c["jit broadcast_in_dim"] = lambda: j(lambda a: lax.broadcast_in_dim(a, (2, 4), (1,)))(f32(3))
    c["jit concatenate"] = lambda: j(lambda a, b: lax.concatenate([a, b], 0))(f32(2, 3), f32(2, 4))
    c["jit slice arity"] = lambda: j(lambda a: lax.slice(a, (0,), (2,)))(f32(5, 5))
    c["jit slice out of range"] = lambda: j(lambda a: lax.slice(a, (0,), (7,)))(f32(5))
    c["jit dynamic_slice sizes"] = lambda: j(lambda a: lax.dynamic_slice(a, (0,), (7,)))(f32(5))
    c["jit dynamic_update_slice"] = lambda: j(lambda a, u: lax.dynamic_update_slice(a, u, (0,)))(f32(3), f32(4))
    c["jit transpose"] = lambda: j(lambda a: lax.transpose(a, (0, 0)))(f32(2, 3))
    c["jit select"] = lambda: j(lax.select)(np.array([True, False]), f32(2), f32(3))
    c["jit reduce_sum axis"] = lambda: j(lambda a: lax.reduce_sum(a, (2,)))(f32(2, 3))
    c["jit squeeze"] = lambda: j(lambda a: lax.squeeze(a, (0,)))(f32(2, 3))
    c["jit conv features"] = lambda: j(lambda a, w: lax.conv_general_dilated(a, w, (1, 1), "SAME"))(
        f32(1, 2, 5, 5), f32(3, 4, 3, 3)
    )
    c["jit gather float indices"] = lambda: j(
        lambda a, i: lax.gather(
            a, i, lax.GatherDimensionNumbers(offset_dims=(), collapsed_slice_dims=(0,), start_index_map=(0,)), (1,)
        )
    )(f32(5), f32(2, 1))
    c["jit jnp.add shape"] = lambda: j(jnp.add)(f32(3), f32(4))
    c["jit jnp.add rank"] = lambda: j(jnp.add)(f32(2, 3), f32(2))
    c["jit jnp.matmul"] = lambda: j(jnp.matmul)(f32(2, 3), f32(4, 2))
    c["jit jnp.reshape"] = lambda: j(lambda a: jnp.reshape(a, (4, 2)))(f32(2, 3))
    c["jit jnp.concatenate"] = lambda: j(lambda a, b: jnp.concatenate([a, b]))(f32(2, 3), f32(2, 4))
    c["jit jnp.sum axis"] = lambda: j(lambda a: jnp.sum(a, axis=2))(f32(2, 3))
    c["jit at set shape"] = lambda: j(lambda a, v: a.at[:2].set(v))(f32(3), f32(3))
    c["jit index too many"] = lambda: j(lambda a: a[0, 0, 0])(f32(3, 4))
    c["jit scan carry"] = lambda: j(lambda x: lax.scan(lambda c_, v: (c_.astype(np.int32), v), np.float32(0), x))(
        f32(3)
    )
    c["jit cond branches"] = lambda: j(lambda p: lax.cond(p, lambda: f32(2), lambda: f32(3)))(True)
    c["jit while carry"] = lambda: j(lambda v: lax.while_loop(lambda a: a < 3, lambda a: a + 1.0, v))(np.int32(0))
    c["jit vmap sizes"] = lambda: j(jax.vmap(lax.add))(f32(3), f32(4))
    c["jit grad non-scalar"] = lambda: j(jax.grad(lambda x: x * 2))(f32(3))


def _more_jnp(jax, c):
    jnp = jax.numpy
    c["jnp.linalg.matrix_power non-square"] = lambda: jnp.linalg.matrix_power(f32(2, 3), 2)
    c["jnp.linalg.matrix_power float n"] = lambda: jnp.linalg.matrix_power(f32(2, 2), 1.5)
    c["jnp.linalg.eig 1d"] = lambda: jnp.linalg.eig(f32(3))
    c["jnp.linalg.eig non-square"] = lambda: jnp.linalg.eig(f32(2, 3))
    c["jnp.linalg.matrix_power 1d"] = lambda: jnp.linalg.matrix_power(f32(3), 2)
    c["jnp.linalg.det non-square 2"] = lambda: jnp.linalg.det(f32(2, 2, 3))
    c["jnp.linalg.svd 1d"] = lambda: jnp.linalg.svd(f32(3))
    c["jnp.linalg.qr 1d"] = lambda: jnp.linalg.qr(f32(3))
    c["jnp.linalg.pinv 1d"] = lambda: jnp.linalg.pinv(f32(3))
    c["jnp.linalg.lstsq mismatch"] = lambda: jnp.linalg.lstsq(f32(3, 2), f32(4))
    c["jnp.linalg.slogdet 1d"] = lambda: jnp.linalg.slogdet(f32(3))
    c["jnp.linalg.norm axis oob"] = lambda: jnp.linalg.norm(f32(3), axis=1)
    c["jnp.fft.fft axis oob"] = lambda: jnp.fft.fft(f32(4), axis=1)
    c["jnp.fft.fft n zero"] = lambda: jnp.fft.fft(f32(4), n=0)
    c["jnp.fft.fft2 1d"] = lambda: jnp.fft.fft2(f32(4))
    c["jnp.argsort axis oob"] = lambda: jnp.argsort(f32(3), axis=1)
    c["jnp.diff negative n"] = lambda: jnp.diff(f32(3), n=-1)
    c["jnp.diff axis oob"] = lambda: jnp.diff(f32(3), axis=1)
    c["jnp.roll axis oob"] = lambda: jnp.roll(f32(3), 1, axis=1)
    c["jnp.roll shift/axis length"] = lambda: jnp.roll(f32(3, 3), (1, 2), axis=(0,))
    c["jnp.rot90 same axes"] = lambda: jnp.rot90(f32(3, 3), axes=(0, 0))
    c["jnp.rot90 1d"] = lambda: jnp.rot90(f32(3))
    c["jnp.tril 1d ok"] = lambda: jnp.tril(f32(3))
    c["jnp.histogram negative bins"] = lambda: jnp.histogram(f32(5), bins=-1)
    c["jnp.percentile q out of range ok"] = lambda: jnp.percentile(f32(5), 150.0)
    c["jnp.quantile bad method"] = lambda: jnp.quantile(f32(5), 0.5, method="bogus")
    c["jnp.insert axis oob"] = lambda: jnp.insert(f32(3), 0, 1.0, axis=1)
    c["jnp.delete axis oob"] = lambda: jnp.delete(f32(3), 0, axis=1)
    c["jnp.array_split zero sections"] = lambda: jnp.array_split(f32(4), 0)
    c["jnp.stack axis oob"] = lambda: jnp.stack([f32(2), f32(2)], axis=2)
    c["jnp.expand_dims repeated"] = lambda: jnp.expand_dims(f32(3), (0, 0))
    c["jnp.squeeze axis oob"] = lambda: jnp.squeeze(f32(1, 3), axis=2)
    c["jnp.unravel_index float"] = lambda: jnp.unravel_index(np.float32(1.0), (2, 3))
    c["jnp.ravel_multi_index arity"] = lambda: jnp.ravel_multi_index((i32(2),), (2, 3))
    c["jnp.identity negative"] = lambda: jnp.identity(-1)
    c["jnp.linspace float num"] = lambda: jnp.linspace(0, 1, 2.5)
    c["jnp.var float ddof ok"] = lambda: jnp.var(f32(4), ddof=1.5)
    c["jnp.average weights mismatch"] = lambda: jnp.average(f32(4), weights=f32(3))
    c["jnp.average weights axis needed"] = lambda: jnp.average(f32(2, 3), weights=f32(3))
    c["jnp.bincount negative length"] = lambda: jnp.bincount(i32(3), length=-1)
    c["jnp.digitize 2d bins"] = lambda: jnp.digitize(f32(3), f32(2, 2))
    c["jnp.searchsorted bad side"] = lambda: jnp.searchsorted(f32(3), f32(2), side="middle")
    c["jnp.argpartition kth oob"] = lambda: jnp.argpartition(f32(3), 5)
    c["jnp.partition kth oob"] = lambda: jnp.partition(f32(3), 5)
    c["jnp.take_along_axis shape"] = lambda: jnp.take_along_axis(f32(2, 3), i32(3, 1), axis=1)
    c["jnp.choose oob"] = lambda: jnp.choose(i32(3), [f32(3), f32(3)], mode="raise")
    c["jnp.select length mismatch"] = lambda: jnp.select([np.array([True])], [f32(1), f32(1)])
    c["jnp.select non-bool cond"] = lambda: jnp.select([f32(1)], [f32(1)])
    c["jnp.piecewise count mismatch"] = lambda: jnp.piecewise(f32(3), [f32(3) > 1], [1.0, 2.0, 3.0])
    c["jnp.apply_along_axis axis oob"] = lambda: jnp.apply_along_axis(jnp.sum, 2, f32(2, 3))
    c["jnp.vectorize bad signature"] = lambda: jnp.vectorize(lambda a: a, signature="(n)->(")(f32(3))
    c["jnp.einsum output repeated"] = lambda: jnp.einsum("ij->ii", f32(2, 2))
    c["jnp.cumsum bad dtype"] = lambda: jnp.cumsum(f32(3), dtype="nope")
    c["jnp.round float decimals"] = lambda: jnp.round(f32(3), decimals=1.5)
    c["jnp.isclose shape mismatch"] = lambda: jnp.isclose(f32(2), f32(3))
    c["jnp.meshgrid bad indexing"] = lambda: jnp.meshgrid(f32(2), f32(3), indexing="kj")
    c["jnp.kron ok"] = lambda: jnp.kron(f32(2), f32(3))
    c["jnp.polyval 2d coeffs"] = lambda: jnp.polyval(f32(2, 2), f32(3))
    c["jnp.trapezoid x mismatch"] = lambda: jnp.trapezoid(f32(3), x=f32(4))
    c["jnp.diagonal same axes"] = lambda: jnp.diagonal(f32(3, 3), axis1=0, axis2=0)
    c["jnp.tensordot axes negative int"] = lambda: jnp.tensordot(f32(2), f32(2), axes=-1)
    c["jnp.mean int axis tuple oob"] = lambda: jnp.mean(f32(2, 3), axis=(0, 2))
    c["jnp.full_like bad shape"] = lambda: jnp.full_like(f32(3), 1.0, shape=(-1,))
    c["jnp.empty bad dtype"] = lambda: jnp.empty(3, dtype="nope")
    c["jnp.tri negative"] = lambda: jnp.tri(-1)
    c["jnp.resize negative"] = lambda: jnp.resize(f32(3), (-1,))
    c["jnp.append axis oob"] = lambda: jnp.append(f32(3), f32(3), axis=1)
    c["jnp.flatnonzero under jit"] = lambda: jax.jit(jnp.flatnonzero)(f32(3))
    c["jnp.ndarray.item of vector"] = lambda: jnp.asarray(f32(3)).item()
    c["jnp.ndarray.tolist under jit"] = lambda: jax.jit(lambda x: x.tolist())(f32(3))
    c["jnp.ndarray.astype traced ok"] = lambda: jax.jit(lambda x: x.astype(np.int32))(f32(3))


def _more_lax_and_api(jax, c):
    lax, random = jax.lax, jax.random
    c["lax.psum unbound axis"] = lambda: lax.psum(f32(3), "i")
    c["lax.axis_index unbound"] = lambda: lax.axis_index("i")
    c["vmap psum wrong axis name"] = lambda: jax.vmap(lambda x: lax.psum(x, "j"), axis_name="i")(f32(3))
    c["vmap psum ok"] = lambda: jax.vmap(lambda x: lax.psum(x, "i"), axis_name="i")(f32(3))
    c["lax.sort_key_val shape"] = lambda: lax.sort_key_val(f32(3), f32(4))
    c["lax.shift_right_logical dtype"] = lambda: lax.shift_right_logical(i32(2), np.ones(2, np.uint32))
    c["lax.erf_inv int"] = lambda: lax.erf_inv(i32(2))
    c["lax.expm1 int"] = lambda: lax.expm1(i32(2))
    c["lax.cummax axis oob"] = lambda: lax.cummax(f32(3), axis=1)
    c["lax.map negative batch_size"] = lambda: lax.map(lambda v: v, f32(3), batch_size=-1)
    c["lax.stop_gradient string"] = lambda: lax.stop_gradient("abc")
    c["lax.cond operand tree mismatch in branches"] = lambda: lax.cond(True, lambda a, b: a, lambda a: a, 1.0, 2.0)
    c["lax.scan xs pytree with scalar leaf"] = lambda: lax.scan(lambda c_, x: (c_, x), 0.0, (f32(3), np.float32(1)))
    c["lax.scan reverse ok"] = lambda: lax.scan(lambda c_, x: (c_ + x, x), np.float32(0), f32(3), reverse=True)
    c["lax.fori_loop body returns tuple for scalar"] = lambda: lax.fori_loop(0, 3, lambda i, v: (v, v), 1.0)
    c["lax.while_loop body non-callable"] = lambda: lax.while_loop(lambda v: v < 3, 3, 1.0)
    c["jit static_argnums array"] = lambda: jax.jit(lambda x, s: x, static_argnums=1)(1.0, np.ones(2))
    c["jit static and donate same"] = lambda: jax.jit(lambda x: x, static_argnums=0, donate_argnums=0)(1)
    c["jit negative static_argnums oob"] = lambda: jax.jit(lambda x: x, static_argnums=-3)(1.0)
    c["hessian non-scalar"] = lambda: jax.hessian(lambda x: x * 2)(f32(2))
    c["jacfwd has_aux not pair"] = lambda: jax.jacfwd(lambda x: x, has_aux=True)(f32(2))
    c["jacrev non-array output"] = lambda: jax.jacrev(lambda x: "a")(f32(2))
    c["grad of None output"] = lambda: jax.grad(lambda x: None)(1.0)
    c["grad list argnums oob"] = lambda: jax.grad(lambda x, y: x, argnums=[0, 5])(1.0, 2.0)
    c["grad argnums float"] = lambda: jax.grad(lambda x: x, argnums=0.5)(1.0)
    c["vmap negative in_axes oob"] = lambda: jax.vmap(lambda x: x, in_axes=-2)(f32(3))
    c["vmap out_axes negative ok"] = lambda: jax.vmap(lambda x: x, out_axes=-1)(f32(3, 2))
    c["vmap kwargs batched"] = lambda: jax.vmap(lambda x, y: x + y)(f32(3), y=f32(4))
    c["vmap in_axes None for all with axis_size ok"] = lambda: jax.vmap(lambda x: x, in_axes=None, axis_size=2)(f32(3))
    c["custom_jvp without rule"] = lambda: jax.jvp(jax.custom_jvp(lambda x: x), (1.0,), (1.0,))
    c["custom_vjp without rule"] = lambda: jax.grad(jax.custom_vjp(lambda x: x))(1.0)
    c["pure_callback bad result spec"] = lambda: jax.pure_callback(lambda v: v, "abc", f32(2))
    c["tree_reduce empty no initializer"] = lambda: jax.tree_util.tree_reduce(lambda a, b: a + b, [])
    c["tree_leaves ok"] = lambda: jax.tree_util.tree_leaves({"a": [1, (2, None)]})
    c["nn.initializers glorot 1d"] = lambda: jax.nn.initializers.glorot_uniform()(random.PRNGKey(0), (3,))
    c["nn.initializers bad dtype"] = lambda: jax.nn.initializers.normal()(random.PRNGKey(0), (3,), np.int32)
    c["random.split float num"] = lambda: random.split(random.PRNGKey(0), 2.5)
    c["random.normal bad dtype string"] = lambda: random.normal(random.PRNGKey(0), (2,), dtype="nope")
    c["random.multivariate_normal cov shape"] = lambda: random.multivariate_normal(
        random.PRNGKey(0), f32(2), np.eye(3, dtype=np.float32)
    )
    c["random.dirichlet scalar alpha"] = lambda: random.dirichlet(random.PRNGKey(0), np.float32(1.0))
    c["random.gamma negative a ok"] = lambda: random.gamma(random.PRNGKey(0), np.float32(-1.0))
    c["random.randint minval > maxval ok"] = lambda: random.randint(random.PRNGKey(0), (2,), 5, 0)
    c["random.permutation float int"] = lambda: random.permutation(random.PRNGKey(0), 2.5)
    c["random.choice empty"] = lambda: random.choice(random.PRNGKey(0), f32(0), (2,))
    c["random.bits bad dtype"] = lambda: random.bits(random.PRNGKey(0), (2,), dtype=np.float32)
    c["random.key_data of array"] = lambda: random.key_data(f32(2))
    c["random.fold_in array data"] = lambda: random.fold_in(random.PRNGKey(0), i32(2))


def _scipy_and_rest(jax, c):
    # the submodules are not attributes until imported (of jax or fjax, whichever runs this)
    for sub in ("scipy.linalg", "scipy.special", "scipy.stats", "image"):
        importlib.import_module(f"{jax.__name__}.{sub}")
    lax, jnp, nn, sp = jax.lax, jax.numpy, jax.nn, jax.scipy
    c["scipy logsumexp b shape"] = lambda: sp.special.logsumexp(f32(3), b=f32(4))
    c["scipy gammaln int ok"] = lambda: sp.special.gammaln(i32(3))
    c["scipy xlogy shape"] = lambda: sp.special.xlogy(f32(2), f32(3))
    c["scipy solve_triangular mismatch"] = lambda: sp.linalg.solve_triangular(np.eye(3, dtype=np.float32), f32(4))
    c["scipy cho_solve mismatch"] = lambda: sp.linalg.cho_solve((np.eye(3, dtype=np.float32), True), f32(4))
    c["scipy expm non-square"] = lambda: sp.linalg.expm(f32(2, 3))
    c["scipy norm.logpdf shapes"] = lambda: sp.stats.norm.logpdf(f32(2), f32(3))
    c["lax.linalg.cholesky 1d"] = lambda: lax.linalg.cholesky(f32(3))
    c["lax.linalg.triangular_solve mismatch"] = lambda: lax.linalg.triangular_solve(
        np.eye(3, dtype=np.float32), f32(4, 2), left_side=True
    )
    c["lax.fft bad type"] = lambda: lax.fft(f32(4).astype(np.complex64), "BOGUS", (4,))
    c["lax.fft lengths mismatch"] = lambda: lax.fft(f32(4).astype(np.complex64), lax.FftType.FFT, (5,))
    c["lax.top_k scalar"] = lambda: lax.top_k(np.float32(1.0), 1)
    c["lax.reduce_window strides arity"] = lambda: lax.reduce_window(
        f32(4, 4), np.float32(0), lax.add, (2, 2), (1,), "VALID"
    )
    c["lax.conv_transpose rank"] = lambda: lax.conv_transpose(f32(1, 2, 5, 5), f32(3, 3, 2), (1, 1), "SAME")
    c["lax.rng_bit_generator key shape"] = lambda: lax.rng_bit_generator(np.zeros(3, np.uint32), (2,))
    c["lax.cumsum reverse ok"] = lambda: lax.cumsum(f32(3), reverse=True)
    c["lax.approx_max_k k too large"] = lambda: lax.approx_max_k(f32(3), 5)
    c["lax.clz float"] = lambda: lax.clz(f32(2))
    c["lax.polygamma int"] = lambda: lax.polygamma(i32(2), i32(2))
    c["lax.igamma shape"] = lambda: lax.igamma(f32(2), f32(3))
    c["nn.one_hot negative classes"] = lambda: nn.one_hot(i32(3), -1)
    c["nn.softmax int ok"] = lambda: nn.softmax(i32(3))
    c["nn.gelu approximate str ok"] = lambda: nn.gelu(f32(3), approximate="tanh")
    c["nn.normalize alias"] = lambda: nn.normalize(f32(3), axis=3)
    c["jax.image.resize rank"] = lambda: jax.image.resize(f32(4, 4), (2,), "linear")
    c["jax.image.resize bad method"] = lambda: jax.image.resize(f32(4), (2,), "bogus")
    c["jnp.fft.irfft n negative"] = lambda: jnp.fft.irfft(f32(4).astype(np.complex64), n=-2)


def _under_vmap_and_grad(jax, c):
    """The same mistakes made inside vmap (batching rules) and grad (JVP rules)."""
    lax, jnp = jax.lax, jax.numpy
    v, g = jax.vmap, jax.grad
    c["vmap lax.add shape"] = lambda: v(lax.add)(f32(2, 3), f32(2, 4))
    c["vmap lax.add dtype"] = lambda: v(lax.add)(f32(2, 3), i32(2, 3))
    c["vmap dot_general contracting"] = lambda: v(lambda a, b: lax.dot_general(a, b, (((0,), (0,)), ((), ()))))(
        f32(2, 3), f32(2, 4)
    )
    c["vmap reshape size"] = lambda: v(lambda a: lax.reshape(a, (4,)))(f32(2, 3))
    c["vmap jnp.reshape"] = lambda: v(lambda a: jnp.reshape(a, (4,)))(f32(2, 3))
    c["vmap concatenate"] = lambda: v(lambda a, b: lax.concatenate([a, b], 0))(f32(2, 3, 2), f32(2, 3, 4))
    c["vmap dynamic_slice size"] = lambda: v(lambda a, i: lax.dynamic_slice(a, (i,), (4,)))(f32(2, 3), i32(2))
    c["vmap dynamic_slice ok"] = lambda: v(lambda a, i: lax.dynamic_slice(a, (i,), (2,)))(f32(2, 3), i32(2))
    c["vmap transpose perm"] = lambda: v(lambda a: lax.transpose(a, (0, 0)))(f32(2, 3, 4))
    c["vmap cond branches"] = lambda: v(lambda p: lax.cond(p, lambda: f32(2), lambda: f32(3)))(np.array([True]))
    c["vmap cond batched pred ok"] = lambda: v(lambda p, x: lax.cond(p, lambda y: y, lambda y: -y, x))(
        np.array([True, False]), f32(2)
    )
    c["vmap scan carry"] = lambda: v(lambda x: lax.scan(lambda c_, t: (c_.astype(np.int32), t), np.float32(0), x))(
        f32(2, 3)
    )
    c["vmap while carry"] = lambda: v(lambda x: lax.while_loop(lambda a: a < 3, lambda a: a + 1.0, x))(i32(2))
    c["vmap index too many"] = lambda: v(lambda a: a[0, 0])(f32(2, 3))
    c["vmap at set shape"] = lambda: v(lambda a, u: a.at[:2].set(u))(f32(2, 3), f32(2, 3))
    c["vmap bool mask index"] = lambda: v(lambda a: a[a > 1])(f32(2, 3))
    c["vmap int() of batched"] = lambda: v(lambda a: int(a))(f32(2))
    c["vmap nonzero"] = lambda: v(jnp.nonzero)(f32(2, 3))
    c["grad lax.add shape"] = lambda: g(lambda a: lax.add(a, f32(4)).sum())(f32(3))
    c["grad dot mismatch"] = lambda: g(lambda a: jnp.dot(a, f32(4)))(f32(3))
    c["grad reshape size"] = lambda: g(lambda a: jnp.reshape(a, (4,)).sum())(f32(6))
    c["grad cond branches"] = lambda: g(lambda x: lax.cond(x > 0, lambda: x, lambda: f32(2)).sum())(1.0)
    c["grad scan carry"] = lambda: g(lambda x: lax.scan(lambda c_, t: (c_ * t, None), x, f32(3).astype(np.int32))[0])(
        1.0
    )
    c["grad bool mask index"] = lambda: g(lambda a: a[a > 1].sum())(f32(3))
    c["grad int() of tracer ok"] = lambda: g(lambda x: x * int(2.0))(1.0)
    c["grad of argmax output"] = lambda: g(lambda x: jnp.argmax(x))(f32(3))
    c["grad of int output"] = lambda: g(lambda x: x.astype(np.int32))(1.0)
    c["jacrev of int output"] = lambda: jax.jacrev(lambda x: x.astype(np.int32))(f32(2))
    c["jacrev complex output"] = lambda: jax.jacrev(lambda x: x * (1 + 1j))(f32(2))
    c["jacrev holomorphic real output"] = lambda: jax.jacrev(lambda x: jnp.real(x), holomorphic=True)(
        f32(2).astype(np.complex64)
    )
    c["jacrev holomorphic ok"] = lambda: jax.jacrev(lambda x: x * x, holomorphic=True)(f32(2).astype(np.complex64))
    c["jacfwd int output ok"] = lambda: jax.jacfwd(lambda x: x.astype(np.int32))(f32(2))
    c["hessian integer input"] = lambda: jax.hessian(lambda x: x.sum())(i32(2))


def all_cases(jax) -> dict[str, Callable[[], Any]]:
    """Every case of the sweep, keyed by a readable name."""
    c: dict[str, Callable[[], Any]] = {}
    for group in (_lax_elementwise, _lax_structural, _control_flow, _jnp, _indexing, _random, _transforms, _tree):
        group(jax, c)
    _nn(jax, c)
    _concrete(jax, c)
    _under_jit(jax, c)
    _more_jnp(jax, c)
    _more_lax_and_api(jax, c)
    _scipy_and_rest(jax, c)
    _under_vmap_and_grad(jax, c)
    return c
