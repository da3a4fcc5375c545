"""When jit's first call of a program is evaluated eagerly while the program compiles.

``fjax_tiered_compile``:

- ``"auto"`` (the default): the first call of a program evaluates it primitive by primitive (numpy)
  while one background thread compiles it, **when** (1) evaluating it that way is cheap (the cost
  model below estimates at most ``EAGER_BUDGET_S``: no collective; ``scan`` lengths times their
  bodies; dots and convolutions by their multiply-adds) and
  (2) this machine has not compiled the program before. A ``while_loop``'s trip count is unknown:
  a program with one (and no callback, whose effects must not run twice) is tiered with a
  deadline, ``WHILE_BUDGET_S`` of eager evaluation, past which the eager call stops and waits for
  the compiled program (a cold compile of such programs takes seconds: an ODE solve's first call
  went from 11 s to 0.08 s) (a marker per program in the disk cache:
  a program whose kernels are on disk loads them in a fraction of a second, so it waits for them
  and its first call gives the compiled program's bits). Otherwise the first call compiles, as JAX.
- ``True``: every program's first call is evaluated eagerly while it compiles.
- ``False``: the first call compiles (the results of every call come from the compiled program).

The markers only steer this choice: a missing or stale marker costs time, never a wrong result.
"""

from __future__ import annotations

import hashlib
import math
import os
import re
import weakref
from typing import Any

from fjax import core
from fjax.config import config

# a program evaluated eagerly in at most this many (estimated) seconds is worth tiering: a cold
# compile costs at least this much (importing numba alone takes ~0.3 s, each kernel 0.1-1 s)
EAGER_BUDGET_S = 0.5
# the eager evaluation of a program with while loops stops after this long (then it compiles)
WHILE_BUDGET_S = 0.5
_EQN_S = 5e-6  # one primitive's eager dispatch (bind, the numpy call, wrapping)
_ITER_S = 20e-6  # one scan step's own overhead
_ELEM_S = 2e-9  # per output element of an elementwise-like primitive
_MAC_S = 1e-10  # per multiply-add of a dot (numpy's BLAS)
_CONV_MAC_S = 7e-9  # per multiply-add of a convolution (the eager one: padding, copies, an einsum)
_COLLECTIVES = frozenset(
    {"psum", "pmax", "pmin", "all_gather", "reduce_scatter", "all_to_all", "ppermute", "axis_index"}
)


def _mode(value: Any) -> str:
    """``fjax_tiered_compile`` (or jit's ``tiered`` argument) as "auto", "on" or "off"."""
    if isinstance(value, str):
        s = value.strip().lower()
        if s == "auto":
            return "auto"
        return "on" if s in ("1", "true", "yes", "on") else "off"
    return "on" if value else "off"


def mode(tiered: Any = None) -> str:
    return _mode(config.fjax_tiered_compile if tiered is None else tiered)


def _subjaxprs(params: dict) -> list:
    out = []
    for v in params.values():
        for x in v if isinstance(v, (tuple, list)) else (v,):
            if isinstance(x, core.ClosedJaxpr):
                out.append(x.jaxpr)
            elif isinstance(x, core.Jaxpr):
                out.append(x)
    return out


def _size(aval: Any) -> int:
    return math.prod(getattr(aval, "shape", ()) or ())


def _work(eqn: core.JaxprEqn) -> float:
    name = eqn.primitive.name
    out = sum(_size(v.aval) for v in eqn.outvars)
    if name == "dot_general":
        (lc, _), _ = eqn.params["dimension_numbers"]
        k = math.prod(eqn.invars[0].aval.shape[d] for d in lc)
        return out * k * _MAC_S
    if name == "conv_general_dilated":
        w = eqn.invars[1].aval.shape
        dn = eqn.params.get("dimension_numbers")
        out_feat = dn.rhs_spec[0] if hasattr(dn, "rhs_spec") else 0
        # multiply-adds per output element: the kernel's entries for one output feature
        return out * (math.prod(w) // max(1, w[out_feat])) * _CONV_MAC_S
    return out * _ELEM_S


def eager_seconds(jaxpr: core.Jaxpr, while_once: bool = False) -> float:
    """A rough estimate of evaluating ``jaxpr`` primitive by primitive (inf with a while loop, or
    with ``while_once`` its body counted once; inf with a collective, or, under ``while_once``, a
    callback: effects that a stopped evaluation would run again)."""
    t = 0.0
    for eqn in jaxpr.eqns:
        name = eqn.primitive.name
        if name in _COLLECTIVES or name.startswith("mpi_") or (while_once and "callback" in name):
            # collectives keep every process on the same path
            return math.inf
        if name == "while" and not while_once:  # its trip count is unknown
            return math.inf
        subs = _subjaxprs(eqn.params)
        if name == "scan":
            t += eqn.params["length"] * (_ITER_S + sum(eager_seconds(s, while_once) for s in subs))
        elif name == "cond":
            t += _EQN_S + max((eager_seconds(s, while_once) for s in subs), default=0.0)
        elif subs:
            t += _EQN_S + sum(eager_seconds(s, while_once) for s in subs)
        else:
            t += _EQN_S + _work(eqn)
        if t > 1e6:
            return t
    return t


def tier_deadline(closed: core.ClosedJaxpr, backend: str) -> float | None:
    """In "auto" mode: None to compile before the first call; else the first call is evaluated
    eagerly while ``closed`` compiles, for at most this many seconds (inf: no limit)."""
    if compiled_before(closed, backend):
        return None
    if eager_seconds(closed.jaxpr) <= EAGER_BUDGET_S:
        return math.inf
    if eager_seconds(closed.jaxpr, while_once=True) <= EAGER_BUDGET_S:
        return WHILE_BUDGET_S
    return None


_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")
_keys: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def program_key(closed: core.ClosedJaxpr, backend: str) -> str:
    """A name for the program that is the same in every process (its printed jaxpr, hashed)."""
    per = _keys.get(closed)
    if per is None:
        per = _keys[closed] = {}
    key = per.get(backend)
    if key is None:
        text = _ADDRESS.sub("", f"{backend}\n{closed.in_avals}\n{closed.jaxpr}")
        key = per[backend] = hashlib.sha1(text.encode()).hexdigest()[:24]
    return key


def _marker(closed: core.ClosedJaxpr, backend: str) -> str | None:
    if not config.fjax_disk_cache:
        return None
    d = os.path.join(os.path.expanduser(str(config.fjax_cache_dir)), "programs")
    return os.path.join(d, f"{backend}-{program_key(closed, backend)}")


def compiled_before(closed: core.ClosedJaxpr, backend: str) -> bool:
    """Whether a process on this machine compiled ``closed`` (its kernels are likely on disk)."""
    try:
        path = _marker(closed, backend)
        return path is not None and os.path.exists(path)
    except Exception:  # noqa: BLE001 - a policy hint: when in doubt, tier
        return False


def note_compiled(closed: core.ClosedJaxpr, backend: str) -> None:
    """Leave the marker ``compiled_before`` looks for (silently skipped where it cannot be written)."""
    try:
        path = _marker(closed, backend)
        if path is None or os.path.exists(path):
            return
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w"):
            pass
    except Exception:  # noqa: BLE001, S110 - a read-only or full cache only loses the hint
        pass


def worth_tiering(closed: core.ClosedJaxpr, backend: str) -> bool:
    """In "auto" mode: evaluate the first call eagerly while ``closed`` compiles?"""
    return tier_deadline(closed, backend) is not None
