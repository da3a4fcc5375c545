"""``fjax.scipy.spatial.transform``: ``Rotation`` and ``Slerp``, as ``jax.scipy.spatial.transform``.

A ``Rotation`` is a NamedTuple holding unit quaternions ``quat`` in scalar-last order
``(x, y, z, w)``, shape ``(4,)`` for one rotation or ``(N, 4)`` for several; being a NamedTuple
it is a pytree, so it passes through ``jit``/``vmap``/``grad``. Every method is written with
``fjax.numpy`` and is differentiable (small-angle branches use series so gradients stay finite
at the identity). Conventions follow scipy: extrinsic Euler sequences are lower case
(``"xyz"``), intrinsic upper case (``"XYZ"``); in gimbal lock the third angle is set to zero.
Where JAX's own versions fail (``identity(num)``, ``random``, ``concatenate`` of single and
stacked rotations) fjax does what scipy does.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

import fjax.numpy as jnp
from fjax import core
from fjax.numpy import _util

__all__ = ["Rotation", "Slerp"]


def _safe_norm(v: Any) -> tuple[Any, Any]:
    """(|v| over the last axis, a mask of |v| > 0), with a finite gradient at 0."""
    sq = jnp.sum(v * v, axis=-1)
    nz = sq > 0
    return jnp.where(nz, jnp.sqrt(jnp.where(nz, sq, 1.0)), 0.0), nz


def _qmul(p: Any, q: Any) -> Any:
    pv, pw = p[..., :3], p[..., 3:]
    qv, qw = q[..., :3], q[..., 3:]
    w = pw * qw - jnp.sum(pv * qv, axis=-1, keepdims=True)
    v = pw * qv + qw * pv + jnp.cross(pv, qv)
    return jnp.concatenate([v, w], axis=-1)


def _canonical(q: Any) -> Any:
    """The quaternion of the pair (q, -q) with w >= 0 (and, for w == 0, first nonzero > 0)."""
    x, y, z, w = q[..., 0], q[..., 1], q[..., 2], q[..., 3]
    flip = (w < 0) | ((w == 0) & ((x < 0) | ((x == 0) & ((y < 0) | ((y == 0) & (z < 0))))))
    return jnp.where(flip[..., None], -q, q)


def _elementary(axis: int, angle: Any) -> Any:
    half = angle / 2
    zero = jnp.zeros_like(half)
    parts = [zero, zero, zero, jnp.cos(half)]
    parts[axis] = jnp.sin(half)
    return jnp.stack(parts, axis=-1)


def _from_euler(seq: str, angles: Any) -> Any:
    extrinsic = seq.islower()
    axes = ["xyz".index(c) for c in seq.lower()]
    q = _elementary(axes[0], angles[..., 0])
    for k in range(1, len(axes)):
        e = _elementary(axes[k], angles[..., k])
        q = _qmul(e, q) if extrinsic else _qmul(q, e)  # extrinsic: later rotations act on the left
    return q


def _as_euler(q: Any, seq: str) -> Any:
    """Euler angles of unit quaternions (Bernardes & Viollet 2022, as scipy): any sequence of three
    axes with consecutive ones different, proper (``zxz``) or Tait-Bryan (``xyz``)."""
    extrinsic = seq.islower()
    i, j, k = ["xyz".index(c) for c in seq.lower()]
    if not extrinsic:
        i, k = k, i
    proper = i == k
    if proper:
        k = 3 - i - j
    sign = (i - j) * (j - k) * (k - i) // 2
    w = q[..., 3]
    if proper:
        a, b, c, d = w, q[..., i], q[..., j], q[..., k] * sign
    else:
        a, b = w - q[..., j], q[..., i] + q[..., k] * sign
        c, d = q[..., j] + w, q[..., k] * sign - q[..., i]
    second = 2 * jnp.arctan2(jnp.hypot(c, d), jnp.hypot(a, b))
    eps = 1e-7
    at_zero = jnp.abs(second) <= eps
    at_pi = jnp.abs(second - math.pi) <= eps
    half_sum, half_diff = jnp.arctan2(b, a), jnp.arctan2(d, c)
    first, third = half_sum - half_diff, half_sum + half_diff
    # gimbal lock: the output's third angle is 0 and the first carries the whole rotation
    lock = at_zero | at_pi
    locked = jnp.where(at_zero, 2 * half_sum, 2 * half_diff * (-1 if extrinsic else 1))
    if extrinsic:
        first = jnp.where(lock, locked, first)
        third = jnp.where(lock, 0.0, third)
    else:  # the angles come out reversed below: the output's third angle is `first`
        first = jnp.where(lock, 0.0, first)
        third = jnp.where(lock, locked, third)
    if not proper:
        third = third * sign
        second = second - math.pi / 2
    angles = [first, second, third]
    if not extrinsic:
        angles = angles[::-1]
    out = jnp.stack(angles, axis=-1)
    return jnp.where(out < -math.pi, out + 2 * math.pi, jnp.where(out > math.pi, out - 2 * math.pi, out))


def _from_matrix(m: Any) -> Any:
    """Shepperd's method: built from the largest of the diagonal and the trace, then normalized."""
    m00, m11, m22 = m[..., 0, 0], m[..., 1, 1], m[..., 2, 2]
    tr = m00 + m11 + m22
    choice = jnp.argmax(jnp.stack([m00, m11, m22, tr], axis=-1), axis=-1)
    cands = []
    for i in range(3):
        j, k = (i + 1) % 3, (i + 2) % 3
        q = [None] * 4
        q[i] = 1 - tr + 2 * m[..., i, i]
        q[j] = m[..., j, i] + m[..., i, j]
        q[k] = m[..., k, i] + m[..., i, k]
        q[3] = m[..., k, j] - m[..., j, k]
        cands.append(jnp.stack(q, axis=-1))
    cands.append(
        jnp.stack([m[..., 2, 1] - m[..., 1, 2], m[..., 0, 2] - m[..., 2, 0], m[..., 1, 0] - m[..., 0, 1], 1 + tr], -1)
    )
    q = cands[3]
    for i in range(3):
        q = jnp.where((choice == i)[..., None], cands[i], q)
    return q / jnp.linalg.norm(q, axis=-1, keepdims=True)


def _as_matrix(q: Any) -> Any:
    x, y, z, w = q[..., 0], q[..., 1], q[..., 2], q[..., 3]
    rows = [
        [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
        [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
        [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)],
    ]
    return jnp.stack([jnp.stack(r, axis=-1) for r in rows], axis=-2)


def _from_rotvec(v: Any) -> Any:
    angle, nz = _safe_norm(v)
    small = angle <= 1e-3
    a2 = angle * angle
    safe = jnp.where(small, 1.0, angle)
    scale = jnp.where(small, 0.5 - a2 / 48 + a2 * a2 / 3840, jnp.sin(safe / 2) / safe)
    return jnp.concatenate([scale[..., None] * v, jnp.cos(angle / 2)[..., None]], axis=-1)


def _as_rotvec(q: Any) -> Any:
    q = _canonical(q)
    n, _ = _safe_norm(q[..., :3])
    angle = 2 * jnp.arctan2(n, q[..., 3])
    small = angle <= 1e-3
    a2 = angle * angle
    safe = jnp.where(small, 1.0, angle)
    scale = jnp.where(small, 2 + a2 / 12 + 7 * a2 * a2 / 2880, safe / jnp.sin(safe / 2))
    return scale[..., None] * q[..., :3]


class Rotation(NamedTuple):
    """Rotations in 3 dimensions (``jax.scipy.spatial.transform.Rotation``): build them with the
    ``from_*`` constructors, never from raw quaternions through the constructor."""

    quat: Any

    @classmethod
    def concatenate(cls, rotations: Sequence[Rotation]) -> Rotation:
        """The rotations of ``rotations`` (single or stacked) one after another."""
        return cls(jnp.concatenate([jnp.atleast_2d(r.quat) for r in rotations]))

    @classmethod
    def from_euler(cls, seq: str, angles: Any, degrees: bool = False) -> Rotation:
        """From Euler angles about the axes of ``seq``: 1 to 3 of ``xyz`` (extrinsic, about the
        fixed frame) or of ``XYZ`` (intrinsic, about the rotating frame), never mixed."""
        if not isinstance(seq, str) or not 1 <= len(seq) <= 3:
            raise ValueError(f"Expected axis specification to be a string of up to 3 characters, got {seq!r}")
        if not (re.fullmatch("[xyz]+", seq) or re.fullmatch("[XYZ]+", seq)):
            raise ValueError(f"Expected axes from `seq` to be from ['x', 'y', 'z'] or ['X', 'Y', 'Z'], got {seq}")
        if any(a == b for a, b in zip(seq, seq[1:])):
            raise ValueError(f"Expected consecutive axes to be different, got {seq}")
        (angles,) = _util.promote_dtypes_inexact("Rotation.from_euler", angles)
        n = len(seq)
        if n == 1 and angles.ndim == 0:
            angles = angles[None]
        if angles.ndim == 0 or angles.shape[-1] != n:
            raise ValueError(f"Expected angles of shape (..., {n}) for sequence {seq!r}, got {angles.shape}")
        if degrees:
            angles = jnp.deg2rad(angles)
        return cls(_from_euler(seq, angles))

    @classmethod
    def from_matrix(cls, matrix: Any) -> Rotation:
        """From rotation matrices ``(3, 3)`` or ``(N, 3, 3)`` (a non-orthogonal one gives the
        normalized quaternion Shepperd's method reads off it, as scipy's approximation)."""
        (matrix,) = _util.promote_dtypes_inexact("Rotation.from_matrix", matrix)
        if matrix.ndim not in (2, 3) or matrix.shape[-2:] != (3, 3):
            raise ValueError(f"Expected `matrix` to have shape (3, 3), or (N, 3, 3), got {matrix.shape}")
        return cls(_from_matrix(matrix))

    @classmethod
    def from_mrp(cls, mrp: Any) -> Rotation:
        """From modified Rodrigues parameters ``(3,)`` or ``(N, 3)``."""
        (mrp,) = _util.promote_dtypes_inexact("Rotation.from_mrp", mrp)
        _check_last(mrp, 3, "mrp")
        n2 = jnp.sum(mrp * mrp, axis=-1, keepdims=True)
        return cls(jnp.concatenate([2 * mrp, 1 - n2], axis=-1) / (1 + n2))

    @classmethod
    def from_quat(cls, quat: Any) -> Rotation:
        """From quaternions ``(x, y, z, w)`` (scalar last), normalized."""
        (quat,) = _util.promote_dtypes_inexact("Rotation.from_quat", quat)
        _check_last(quat, 4, "quat")
        return cls(quat / jnp.linalg.norm(quat, axis=-1, keepdims=True))

    @classmethod
    def from_rotvec(cls, rotvec: Any, degrees: bool = False) -> Rotation:
        """From rotation vectors (axis times angle) ``(3,)`` or ``(N, 3)``."""
        (rotvec,) = _util.promote_dtypes_inexact("Rotation.from_rotvec", rotvec)
        _check_last(rotvec, 3, "rotvec")
        if degrees:
            rotvec = jnp.deg2rad(rotvec)
        return cls(_from_rotvec(rotvec))

    @classmethod
    def identity(cls, num: int | None = None, dtype: Any = float) -> Rotation:
        """The identity rotation (``num`` of them when given)."""
        q = jnp.array([0.0, 0.0, 0.0, 1.0], dtype=dtype)
        return cls(q if num is None else jnp.tile(q, (int(num), 1)))

    @classmethod
    def random(cls, random_key: Any, num: int | None = None) -> Rotation:
        """Rotations uniform on SO(3) (normalized Gaussian quaternions) from ``random_key``."""
        from fjax import random  # noqa: PLC0415

        shape = (4,) if num is None else (int(num), 4)
        return cls.from_quat(random.normal(random_key, shape))

    def __getitem__(self, indexer: Any) -> Rotation:
        if self.single:
            raise TypeError("Single rotation is not subscriptable.")
        return Rotation(self.quat[indexer])

    def __len__(self) -> int:
        if self.single:
            raise TypeError("Single rotation has no len().")
        return self.quat.shape[0]

    def __mul__(self, other: Rotation) -> Rotation:  # type: ignore[override]
        """Composition: ``(p * q).apply(v) == p.apply(q.apply(v))``."""
        if not isinstance(other, Rotation):
            return NotImplemented
        return Rotation(_qmul(self.quat, other.quat))

    def apply(self, vectors: Any, inverse: bool = False) -> Any:
        """Rotate ``vectors`` (``(3,)`` or ``(N, 3)``) by the rotation(s) (or their inverses)."""
        (vectors,) = _util.promote_dtypes_inexact("Rotation.apply", vectors)
        _check_last(vectors, 3, "vectors")
        m = self.as_matrix()
        if inverse:
            m = jnp.swapaxes(m, -1, -2)
        return jnp.matmul(m, vectors[..., None])[..., 0]

    def as_euler(self, seq: str, degrees: bool = False) -> Any:
        """Euler angles for a sequence of three axes (see ``from_euler``)."""
        if len(seq) != 3:
            raise ValueError(f"Expected 3 axes, got {seq}.")
        if not (re.fullmatch("[xyz]+", seq) or re.fullmatch("[XYZ]+", seq)):
            raise ValueError(f"Expected axes from `seq` to be from ['x', 'y', 'z'] or ['X', 'Y', 'Z'], got {seq}")
        if seq[0] == seq[1] or seq[1] == seq[2]:
            raise ValueError(f"Expected consecutive axes to be different, got {seq}")
        angles = _as_euler(self.quat, seq)
        return jnp.rad2deg(angles) if degrees else angles

    def as_matrix(self) -> Any:
        """Rotation matrices, ``(3, 3)`` or ``(N, 3, 3)``."""
        return _as_matrix(self.quat)

    def as_mrp(self) -> Any:
        """Modified Rodrigues parameters (of the quaternion with w >= 0: norm at most 1)."""
        q = _canonical(self.quat)
        return q[..., :3] / (1 + q[..., 3:])

    def as_quat(self, canonical: bool = False, scalar_first: bool = False) -> Any:
        """Quaternions, scalar last unless ``scalar_first``; ``canonical``: w >= 0."""
        q = _canonical(self.quat) if canonical else self.quat
        return jnp.roll(q, 1, axis=-1) if scalar_first else q

    def as_rotvec(self, degrees: bool = False) -> Any:
        """Rotation vectors: axis times angle, the angle in [0, pi]."""
        rv = _as_rotvec(self.quat)
        return jnp.rad2deg(rv) if degrees else rv

    def inv(self) -> Rotation:
        """The inverse rotation(s)."""
        return Rotation(self.quat * jnp.array([-1.0, -1.0, -1.0, 1.0], dtype=self.quat.dtype))

    def magnitude(self) -> Any:
        """Rotation angles in radians, in [0, pi]."""
        n, _ = _safe_norm(self.quat[..., :3])
        return 2 * jnp.arctan2(n, jnp.abs(self.quat[..., 3]))

    def mean(self, weights: Any = None) -> Rotation:
        """The (weighted) mean rotation: the eigenvector of the largest eigenvalue of
        ``sum w_i q_i q_i^T`` (its sign is arbitrary, as in scipy)."""
        q = jnp.atleast_2d(self.quat)
        w = jnp.ones(q.shape[0], q.dtype) if weights is None else jnp.asarray(weights, q.dtype)
        if w.ndim != 1 or w.shape[0] != q.shape[0]:
            raise ValueError(f"Expected `weights` to have shape ({q.shape[0]},), got {w.shape}")
        k = jnp.einsum("n,ni,nj->ij", w, q, q)
        _, vecs = jnp.linalg.eigh(k)
        return Rotation(vecs[:, -1])

    @property
    def single(self) -> bool:
        """Whether this holds one rotation (quaternion shape ``(4,)``)."""
        return self.quat.ndim == 1


def _check_last(x: Any, n: int, what: str) -> None:
    if x.ndim not in (1, 2) or x.shape[-1] != n:
        raise ValueError(f"Expected `{what}` to have shape ({n},) or (N, {n}), got {x.shape}")


class Slerp(NamedTuple):
    """Spherical linear interpolation of rotations (``jax.scipy.spatial.transform.Slerp``):
    ``Slerp.init(times, rotations)``, then call it with times. Times outside the key times
    extrapolate the first or last segment (JAX does not check them; scipy raises)."""

    times: Any
    timedelta: Any
    rotations: Rotation
    rotvecs: Any

    @classmethod
    def init(cls, times: Any, rotations: Rotation) -> Slerp:
        """An interpolator through ``rotations`` (at least 2) at increasing ``times``."""
        if not isinstance(rotations, Rotation):
            raise TypeError("`rotations` must be a `Rotation` instance.")
        if rotations.single or len(rotations) == 1:
            raise ValueError("`rotations` must be a sequence of at least 2 rotations.")
        (times,) = _util.promote_dtypes_inexact("Slerp", times)
        if times.ndim != 1:
            raise ValueError(f"Expected times to be specified in a 1 dimensional array, got {times.ndim} dimensions.")
        if times.shape[0] != len(rotations):
            raise ValueError(
                f"Expected number of rotations to be equal to number of timestamps given, got {len(rotations)} "
                f"rotations and {times.shape[0]} timestamps."
            )
        if not isinstance(times, core.Tracer) and np.any(np.diff(np.asarray(times)) <= 0):
            raise ValueError("Times must be in strictly increasing order.")
        timedelta = jnp.diff(times)
        rotvecs = (rotations[:-1].inv() * rotations[1:]).as_rotvec()
        return cls(times, timedelta, rotations[:-1], rotvecs)

    def __call__(self, times: Any) -> Rotation:  # type: ignore[override]
        """The interpolated rotation(s) at ``times`` (a scalar gives a single rotation)."""
        (t,) = _util.promote_dtypes_inexact("Slerp", times)
        idx = jnp.clip(jnp.searchsorted(self.times, t, side="right") - 1, 0, self.timedelta.shape[0] - 1)
        alpha = (t - self.times[idx]) / self.timedelta[idx]
        step = Rotation(_from_rotvec(self.rotvecs[idx] * alpha[..., None]))
        return Rotation(_qmul(self.rotations.quat[idx], step.quat))
