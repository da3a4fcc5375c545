"""The ``out_sharding=`` / ``sharding=`` argument of array-producing functions (``lax.dot_general``,
``jnp.zeros``, ``random.normal``, ...), in one place.

JAX's rules (``canonicalize_sharding``): ``None`` leaves the result as it is; a ``NamedSharding`` on an
empty mesh is ``None``; otherwise only a ``NamedSharding`` or a ``PartitionSpec`` (the latter over the
mesh set with ``jax.set_mesh`` / ``with mesh:``) is accepted, and a spec may only name ``Explicit``
mesh axes. fjax arrays hold their global value, so the sharding changes no value: an eager result is
laid out with it (``device_put``: its ``.sharding`` is the one asked for, the shape must divide as the
sharding requires), a traced one is checked against it and passes unchanged (as ``reshard`` and
``with_sharding_constraint`` do under ``jit``).
"""

from __future__ import annotations

import functools
import inspect
from typing import Any, Callable

from fjax import core


def canonicalize(sharding: Any, api_name: str) -> Any:
    """``sharding`` as a ``NamedSharding`` (or ``None``), with JAX's errors for what it rejects. A
    ``PartitionSpec`` under only an abstract mesh (``use_abstract_mesh``) comes back as
    ``(AbstractMesh, spec)``."""
    if sharding is None:
        return None
    from fjax import sharding as sh  # noqa: PLC0415

    if isinstance(sharding, sh.NamedSharding) and sharding.mesh.empty:
        return None
    if not isinstance(sharding, (sh.NamedSharding, sh.PartitionSpec)):
        raise TypeError(
            f"`out_sharding` argument of {api_name} only supports instances of `NamedSharding` or `PartitionSpec`. "
            f"Got {sharding} of type: {type(sharding)}"
        )
    cur = sh.get_abstract_mesh()
    if isinstance(sharding, sh.PartitionSpec):
        if cur.empty:
            raise ValueError(
                "Using PartitionSpec when you are not under a mesh context is not allowed. Please pass a "
                f"NamedSharding instance or enter into a mesh context via `jax.set_mesh`. Got {sharding}"
            )
        spec = sharding
        mesh = sh.current_mesh()
        if mesh is None or mesh.empty or mesh.abstract_mesh != cur:
            _check_axis_types(cur, spec, api_name)
            return (cur, spec)
        sharding = sh.NamedSharding(mesh, spec)
    else:
        am = sharding.mesh.abstract_mesh
        all_auto = all(t == sh.AxisType.Auto for t in am.axis_types)
        cur_auto = all(t == sh.AxisType.Auto for t in cur.axis_types)
        if not (all_auto and cur_auto) and not cur.empty and am != cur:
            raise ValueError(f"Context mesh {cur} should match the mesh of sharding {am} passed to {api_name}.")
    _check_axis_types(sharding.mesh.abstract_mesh, sharding.spec, api_name)
    return sharding


def _check_axis_types(mesh: Any, spec: Any, api_name: str) -> None:
    from fjax import sharding as sh  # noqa: PLC0415

    types = dict(zip(mesh.axis_names, mesh.axis_types))
    for p in spec:
        for name in () if p is None else (p if isinstance(p, tuple) else (p,)):
            if name not in types:
                raise ValueError(f"Resource axis: {name} of {spec!r} is not found in mesh: {tuple(mesh.axis_names)}.")
            t = types[name]
            if t in (sh.AxisType.Auto, sh.AxisType.Manual):
                raise ValueError(
                    f"PartitionSpec passed to {api_name} cannot contain axis names that are of type Auto or Manual. "
                    f"Got PartitionSpec: {spec} with axis name: {name} of type: AxisType.{t.name}."
                )


def _check_divides(mesh_shape: dict, spec: Any, shape: tuple, api_name: str) -> None:
    parts = spec._normalized(len(shape))
    for dim, names in zip(shape, parts):
        k = 1
        for n in names or ():
            k *= mesh_shape[n]
        if dim % k:
            raise ValueError(
                f"{api_name}: the out_sharding {spec!r} splits a dimension of size {dim} into {k} parts "
                f"(result shape {tuple(shape)}): it must divide evenly"
            )


def apply(x: Any, sharding: Any, api_name: str) -> Any:
    """The result ``x`` of ``api_name`` laid out with ``out_sharding=sharding`` (module docstring)."""
    if sharding is None:
        return x
    s = canonicalize(sharding, api_name)
    if s is None:
        return x
    if isinstance(x, (tuple, list)):  # (several results, as lax.reduce of several operands)
        return type(x)(apply(v, sharding, api_name) for v in x)
    shape = tuple(core.get_aval(x).shape)
    if isinstance(s, tuple):  # a spec over an abstract mesh: nothing to place it on
        mesh, spec = s
        if len(spec) > len(shape):
            raise ValueError(f"{api_name}: out_sharding {spec!r} has more entries than the result's rank {len(shape)}")
        _check_divides(mesh.shape, spec, shape, api_name)
        if isinstance(x, core.Tracer):
            return x
        raise NotImplementedError(
            f"{api_name}: out_sharding={spec!r} under an abstract mesh without devices (use_abstract_mesh "
            "outside jit): fjax cannot place an eager result on it"
        )
    if len(s.spec) > len(shape):
        raise ValueError(f"{api_name}: out_sharding {s.spec!r} has more entries than the result's rank {len(shape)}")
    _check_divides(s.mesh.shape, s.spec, shape, api_name)
    if isinstance(x, core.Tracer):
        return x
    from fjax._devices import device_put  # noqa: PLC0415

    return device_put(x, s)


def check_device_and_sharding(device: Any, out_sharding: Any) -> None:
    """JAX's error when both ``device=`` and ``out_sharding=`` are given (``jnp.zeros`` and co)."""
    if device is not None and out_sharding is not None:
        raise ValueError(
            "Only one of `device` or `out_sharding` can be set. "
            f"Got device={device!r} and out_sharding={out_sharding!r}"
        )


def created(api_name: str, device: Any, out_sharding: Any, fn: Callable, *args: Any, **kwargs: Any) -> Any:
    """``fn(*args, **kwargs)`` (a jnp creation function called without ``device``/``out_sharding``)
    put on ``device`` (``on_device``) or laid out with ``out_sharding`` (``apply``); JAX's
    ValueError, before any work, when both are given."""
    check_device_and_sharding(device, out_sharding)
    x = fn(*args, **kwargs)
    return apply(x, out_sharding, api_name) if out_sharding is not None else on_device(x, device)


def place(x: Any, sharding: Any, api_name: str) -> Any:
    """``lax.full``'s ``sharding=``: an eager result is put with any concrete sharding (as
    ``device_put``); a traced one is returned as it is (JAX ignores the sharding under ``jit``)."""
    if sharding is None or isinstance(x, core.Tracer):
        return x
    from fjax._devices import _is_sharding, device_put  # noqa: PLC0415

    if not _is_sharding(sharding):
        raise TypeError(f"{api_name}: sharding must be a jax.sharding.Sharding, got {sharding!r}")
    return device_put(x, sharding)


def with_out_sharding(fn: Callable, api_name: str) -> Callable:
    """``fn`` with a keyword-only ``out_sharding=`` (shown by ``inspect.signature``) laying out its
    result (``apply``). For functions whose warnings find the user's frame themselves (the
    ``fjax.random`` samplers); elsewhere the parameter is written out, so as not to add a frame."""
    sig = inspect.signature(fn)
    params = list(sig.parameters.values())
    at = len(params) - (1 if params and params[-1].kind == inspect.Parameter.VAR_KEYWORD else 0)
    params.insert(at, inspect.Parameter("out_sharding", inspect.Parameter.KEYWORD_ONLY, default=None))

    @functools.wraps(fn)
    def wrapper(*args: Any, out_sharding: Any = None, **kwargs: Any) -> Any:
        if out_sharding is None:
            return fn(*args, **kwargs)
        canonicalize(out_sharding, api_name)  # (its errors before any work)
        return apply(fn(*args, **kwargs), out_sharding, api_name)

    wrapper.__signature__ = sig.replace(parameters=params)  # type: ignore[attr-defined]
    return wrapper


def on_device(x: Any, device: Any) -> Any:
    """The result ``x`` of a creation function given ``device=`` (a ``Device`` or a sharding): put
    there as ``jax.device_put`` puts it (committed), as JAX does; traced values pass unchanged."""
    if device is None or isinstance(x, core.Tracer):
        return x
    from fjax._devices import device_put  # noqa: PLC0415

    return device_put(x, device)
