"""``lax.scan``'s input-to-output forwarding, as JAX 0.10's ``scan`` does it before binding:

* a carry the body passes straight through (carry output ``i`` is carry input ``i``) is
  read-only, so it becomes a loop constant (moved in front of the other constants) and the
  scan's carry result is the initial value itself;
* a stacked output ``y`` that is just the scanned input ``x`` is dropped from the body, and the
  scan's ``ys`` result is ``xs`` itself (no copy).

``ys`` that are a carry input or a constant are kept (JAX keeps them: they are stacked). So
``make_jaxpr`` of such scans prints as JAX's, and under ``vmap`` a passed-through carry stays as
batched or unbatched as it came in.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import NamedTuple

from fjax.core import ClosedJaxpr, Jaxpr
from fjax.lax.control_flow.common import forwarded_outputs

__all__ = ["ScanForwarding", "scan_forwarding"]


class ScanForwarding(NamedTuple):
    """How to bind a forwarded scan: ``jaxpr`` (invars: moved carries, consts, kept carries,
    xs); ``move[i]`` whether carry ``i`` became a constant; ``ys_from_xs[j]`` the ``xs`` leaf
    that ``ys`` leaf ``j`` is (``None``: computed by the body)."""

    jaxpr: ClosedJaxpr
    move: tuple[bool, ...]
    ys_from_xs: tuple[int | None, ...]


_lock = threading.Lock()
_cache: OrderedDict = OrderedDict()
_MAXSIZE = 1024


def scan_forwarding(closed: ClosedJaxpr, num_consts: int, num_carry: int) -> ScanForwarding | None:
    """The forwarding of a traced scan body (inputs ``consts, carry, xs``; outputs ``carry, ys``),
    or ``None`` when nothing is forwarded. Kept per body (the trace cache hands back the same
    ``ClosedJaxpr`` for the same function and types), so eager calls rebuild nothing."""
    key = (id(closed), num_consts, num_carry)
    with _lock:
        hit = _cache.get(key)
        if hit is not None and hit[0] is closed:
            _cache.move_to_end(key)
            return hit[1]
    result = _compute(closed, num_consts, num_carry)
    with _lock:
        _cache[key] = (closed, result)  # holding ``closed`` keeps its id from being reused
        if len(_cache) > _MAXSIZE:
            _cache.popitem(last=False)
    return result


def _compute(closed: ClosedJaxpr, num_consts: int, num_carry: int) -> ScanForwarding | None:
    jaxpr = closed.jaxpr
    fwd = forwarded_outputs(jaxpr)
    carry_fwd, ys_fwd = fwd[:num_carry], fwd[num_carry:]
    move = tuple(f == num_consts + i for i, f in enumerate(carry_fwd))
    first_x = num_consts + num_carry
    ys_from_xs = tuple(f - first_x if f is not None and f >= first_x else None for f in ys_fwd)
    if not any(move) and all(f is None for f in ys_from_xs):
        return None
    invars = jaxpr.invars
    consts, carry, xs = invars[:num_consts], invars[num_consts:first_x], invars[first_x:]
    new_invars = [
        *[v for v, m in zip(carry, move) if m],
        *consts,
        *[v for v, m in zip(carry, move) if not m],
        *xs,
    ]
    outvars = jaxpr.outvars
    new_outvars = [
        *[v for v, m in zip(outvars[:num_carry], move) if not m],
        *[v for v, f in zip(outvars[num_carry:], ys_from_xs) if f is None],
    ]
    new = Jaxpr(list(jaxpr.constvars), new_invars, new_outvars, list(jaxpr.eqns))
    return ScanForwarding(ClosedJaxpr(new, list(closed.consts)), move, ys_from_xs)
