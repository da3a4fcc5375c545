"""The algorithm / accuracy vocabulary of ``jax.lax``: ``DotAlgorithm``, ``DotAlgorithmPreset``,
``Tolerance``, ``AccuracyMode``, ``RandomAlgorithm`` and the argument checks that use them.

What they mean in fjax (a CPU backend that multiplies in the operands' dtype with numpy/BLAS or
its own loops): a ``precision=`` of any accepted form (a ``Precision``, a pair of them, a
``DotAlgorithmPreset`` or its name, a ``DotAlgorithm``) is checked as JAX checks it, kept on the
equation, and on the CPU computes the same product as ``precision=None`` -- the full product in
the operands' dtype (or ``preferred_element_type``), at least as accurate as every preset. ``accuracy=`` on the
transcendental unary ops (``exp``, ``sin``, ``tanh``, ...) is checked the same way and fjax's own
implementation (accurate to a few ulp) is used whatever it asks. ``RandomAlgorithm`` names the
bit generators of ``rng_bit_generator``, which fjax does not provide.

``canonicalize_precision`` gives the ``precision`` param ``dot_general`` / ``conv_general_dilated``
equations carry (JAX's canonical forms, config ``jax_default_matmul_precision`` filling in None);
a GPU backend reads it to choose TF32 or float32 GEMMs. ``cpu_precision_error`` is what the CPU
refuses when it runs the equation (as JAX's CPU backend refuses it when lowering).

This module imports nothing from ``fjax.lax`` so the wrappers of ``lax_wrappers`` can use it.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

from fjax.config import config

__all__ = [
    "AccuracyMode",
    "DotAlgorithm",
    "DotAlgorithmPreset",
    "RaggedDotDimensionNumbers",
    "RandomAlgorithm",
    "Tolerance",
]


class DotAlgorithm(NamedTuple):
    """A dot product algorithm, as ``jax.lax.DotAlgorithm``: storage types of the operands, the
    accumulation type, how many components each operand is split into and how many primitive
    products are summed. XLA's CPU backend accepts none of them (JAX raises ValueError there),
    and neither does fjax's ``dot_general``; the type exists so code that builds them imports."""

    lhs_precision_type: Any
    rhs_precision_type: Any
    accumulation_type: Any
    lhs_component_count: int = 1
    rhs_component_count: int = 1
    num_primitive_operations: int = 1
    allow_imprecise_accumulation: bool = False


def _bf16() -> Any:
    from fjax import dtypes  # noqa: PLC0415 - fjax.dtypes imports ml_dtypes lazily

    return dtypes.bfloat16


# name -> (lhs/rhs storage types, accumulation type), None where the preset leaves them open;
# the type names are resolved to numpy scalar types on access (bfloat16 through fjax.dtypes)
_PRESET_TYPES: dict[str, tuple[tuple[str, ...] | None, str | None]] = {
    "DEFAULT": (None, None),
    "ANY_F8_ANY_F8_F32": (None, "float32"),
    "ANY_F8_ANY_F8_F32_FAST_ACCUM": (None, "float32"),
    "ANY_F8_ANY_F8_ANY": (None, None),
    "ANY_F8_ANY_F8_ANY_FAST_ACCUM": (None, None),
    "F16_F16_F16": (("float16",), "float16"),
    "F16_F16_F32": (("float16",), "float32"),
    "BF16_BF16_BF16": (("bfloat16", "float32"), "bfloat16"),
    "BF16_BF16_F32": (("bfloat16", "float32"), "float32"),
    "BF16_BF16_F32_X3": (("float32",), "float32"),
    "BF16_BF16_F32_X6": (("float32",), "float32"),
    "BF16_BF16_F32_X9": (("float32",), "float32"),
    "TF32_TF32_F32": (("float32",), "float32"),
    "TF32_TF32_F32_X3": (("float32",), "float32"),
    "F32_F32_F32": (("float32",), "float32"),
    "F64_F64_F64": (("float64",), "float64"),
}


def _scalar_type(name: str) -> Any:
    return _bf16() if name == "bfloat16" else getattr(np, name)


class DotAlgorithmPreset(enum.Enum):
    """Named dot algorithms, as ``jax.lax.DotAlgorithmPreset`` (same members and values): pass one
    (or its name) as ``precision=``. fjax computes every accepted preset in full precision in the
    operands' dtype; the presets JAX's CPU backend refuses, fjax refuses too (ValueError)."""

    DEFAULT = 1
    ANY_F8_ANY_F8_F32 = 2
    ANY_F8_ANY_F8_F32_FAST_ACCUM = 3
    ANY_F8_ANY_F8_ANY = 4
    ANY_F8_ANY_F8_ANY_FAST_ACCUM = 5
    F16_F16_F16 = 6
    F16_F16_F32 = 7
    BF16_BF16_BF16 = 8
    BF16_BF16_F32 = 9
    BF16_BF16_F32_X3 = 10
    BF16_BF16_F32_X6 = 11
    BF16_BF16_F32_X9 = 12
    TF32_TF32_F32 = 13
    TF32_TF32_F32_X3 = 14
    F32_F32_F32 = 15
    F64_F64_F64 = 16

    def __repr__(self) -> str:
        return f"DotAlgorithmPreset.{self.name}"

    def __str__(self) -> str:
        return self.name

    @property
    def supported_lhs_types(self) -> tuple[Any, ...] | None:
        """The lhs storage types this preset accepts (None: any)."""
        types = _PRESET_TYPES[self.name][0]
        return None if types is None else tuple(_scalar_type(t) for t in types)

    @property
    def supported_rhs_types(self) -> tuple[Any, ...] | None:
        """The rhs storage types this preset accepts (None: any)."""
        return self.supported_lhs_types

    @property
    def accumulation_type(self) -> Any:
        """The type products are summed in (None: decided by the operands)."""
        acc = _PRESET_TYPES[self.name][1]
        return None if acc is None else _scalar_type(acc)

    def supported_output_types(self, lhs_dtype: Any, rhs_dtype: Any) -> tuple[Any, ...] | None:
        """The result types a product of ``lhs_dtype`` and ``rhs_dtype`` may have (None: any)."""
        if self.name.startswith("ANY_F8_ANY_F8_F32"):
            from fjax import dtypes  # noqa: PLC0415

            f8 = tuple(
                getattr(dtypes, n)
                for n in ("float8_e4m3fn", "float8_e5m2", "float8_e5m2fnuz", "float8_e4m3fnuz", "float8_e4m3b11fnuz")
                if hasattr(dtypes, n)
            )
            return (np.float32, np.float16, _bf16(), *f8)
        acc = self.accumulation_type
        return None if acc is None else (acc,)


# presets JAX refuses on CPU with "The precision '...' is not supported by dot_general on CPU"
# (jax 0.10.2, any operand dtype), so fjax does the same. The others JAX's CPU backend accepts
# compute the plain product there (BF16_BF16_F32 on float32 does not round to bfloat16), as in
# fjax; F16_F16_F16 and F64_F64_F64 fail at run time in XLA's CPU emitter and fjax computes them
_CPU_UNSUPPORTED = frozenset(
    {
        "ANY_F8_ANY_F8_F32",
        "ANY_F8_ANY_F8_F32_FAST_ACCUM",
        "ANY_F8_ANY_F8_ANY",
        "ANY_F8_ANY_F8_ANY_FAST_ACCUM",
        "F16_F16_F32",
        "BF16_BF16_BF16",
        "BF16_BF16_F32_X9",
        "TF32_TF32_F32",
        "TF32_TF32_F32_X3",
    }
)


class Tolerance:
    """Tolerances (``atol``, ``rtol``, ``ulps``) a transcendental op's result may be within, as
    ``jax.lax.Tolerance``; pass one as ``accuracy=`` to ``lax.exp`` etc. fjax checks it and
    computes with its own implementation (a few ulp) whatever it asks."""

    def __init__(self, atol: float = 0.0, rtol: float = 0.0, ulps: int = 0):
        if atol < 0.0 or rtol < 0.0 or ulps < 0:
            raise ValueError("Tolerances must be non-negative.")
        if atol == 0.0 and rtol == 0.0 and ulps == 0:
            raise ValueError("At least one of atol, rtol, or ulps must be set.")
        self.atol = atol
        self.rtol = rtol
        self.ulps = ulps

    def __repr__(self) -> str:
        return f"Tolerance(atol={self.atol}, rtol={self.rtol}, ulps={self.ulps})"


class AccuracyMode(enum.Enum):
    """``HIGHEST`` or ``DEFAULT`` accuracy for a transcendental op, as ``jax.lax.AccuracyMode``
    (fjax has one implementation of each op: both name it)."""

    HIGHEST = 1
    DEFAULT = 2


class RandomAlgorithm(enum.IntEnum):
    """The bit generators of XLA's RngBitGenerator, as ``jax.lax.RandomAlgorithm``."""

    RNG_DEFAULT = 0
    RNG_THREE_FRY = 1
    RNG_PHILOX = 2

    def __str__(self) -> str:
        return self.name


@dataclasses.dataclass(frozen=True, init=False)
class RaggedDotDimensionNumbers:
    """Dimension numbers of ``ragged_dot_general``: the ``dot_general`` ones, the lhs ragged
    dimensions and the rhs group dimensions (as ``jax.lax.RaggedDotDimensionNumbers``)."""

    dot_dimension_numbers: tuple
    lhs_ragged_dimensions: tuple[int, ...]
    rhs_group_dimensions: tuple[int, ...]

    def __init__(
        self, dot_dimension_numbers: Any, lhs_ragged_dimensions: Sequence[int], rhs_group_dimensions: Sequence[int]
    ):
        dn = tuple(tuple(tuple(int(d) for d in dims) for dims in pair) for pair in dot_dimension_numbers)
        object.__setattr__(self, "dot_dimension_numbers", dn)
        object.__setattr__(self, "lhs_ragged_dimensions", tuple(int(d) for d in lhs_ragged_dimensions))
        object.__setattr__(self, "rhs_group_dimensions", tuple(int(d) for d in rhs_group_dimensions))


# the strings ``precision=`` accepts (exactly these spellings, as JAX) and the Precision each names
_PRECISION_NAMES = {
    "highest": "HIGHEST",
    "float32": "HIGHEST",
    "high": "HIGH",
    "bfloat16_3x": "HIGH",
    "tensorfloat32": "HIGH",
    "default": "DEFAULT",
    "bfloat16": "DEFAULT",
    "fastest": "DEFAULT",
}
_PRECISION_STRINGS = tuple(_PRECISION_NAMES)
# the values config ``jax_default_matmul_precision`` takes (JAX's enum option: not 'bfloat16_3x'
# nor 'fastest', nor the preset name 'DEFAULT', nor Precision / DotAlgorithmPreset objects)
DEFAULT_MATMUL_PRECISION_VALUES = (
    "default",
    "high",
    "highest",
    "bfloat16",
    "tensorfloat32",
    "float32",
    *(name for name in DotAlgorithmPreset.__members__ if name != "DEFAULT"),
)


def check_default_matmul_precision(value: Any) -> None:
    """Raise JAX's ValueError unless ``value`` may be set as ``jax_default_matmul_precision``."""
    if value is None or (isinstance(value, str) and value in DEFAULT_MATMUL_PRECISION_VALUES):
        return
    raise ValueError(
        f"new enum value must be None or in {list(DEFAULT_MATMUL_PRECISION_VALUES)}, got {value} of type {type(value)}."
    )


def _on_config(name: str, value: Any) -> None:
    if name == "jax_default_matmul_precision":
        check_default_matmul_precision(value)


config._validators.append(_on_config)  # validators run before a value is set: a bad one raises


def _precision_error(precision: Any) -> ValueError:
    return ValueError(
        "Precision argument must be one of:\n- None,\n"
        f"- a string in {list(_PRECISION_STRINGS) + [None]},\n"
        "- a lax.Precision value,\n- a tuple of two lax.Precision values or strings,\n"
        "- a lax.DotAlgorithmPreset or the name of one of these presets, or\n"
        f"- a lax.DotAlgorithm value;\nbut got {precision}."
    )


_Precision: Any = None  # fjax.lax.Precision, bound on first use (fjax.lax._extra imports fjax.lax)


def _precision_class() -> Any:
    global _Precision
    if _Precision is None:
        from fjax.lax._extra import Precision  # noqa: PLC0415

        _Precision = Precision
    return _Precision


def _canonicalize(precision: Any) -> Any:
    P = _precision_class()
    if isinstance(precision, str):
        name = _PRECISION_NAMES.get(precision)
        if name is not None:
            p = P[name]
            return (p, p)
        member = DotAlgorithmPreset.__members__.get(precision)
        if member is not None:
            return member
    elif isinstance(precision, P):
        return (precision, precision)
    elif isinstance(precision, (DotAlgorithm, DotAlgorithmPreset)):
        return precision
    elif isinstance(precision, (list, tuple)) and len(precision) == 2:
        if all(isinstance(p, P) for p in precision):
            return (precision[0], precision[1])
        if all(isinstance(p, str) and p in _PRECISION_NAMES for p in precision):
            return (P[_PRECISION_NAMES[precision[0]]], P[_PRECISION_NAMES[precision[1]]])
    raise _precision_error(precision)


def canonicalize_precision(precision: Any) -> Any:
    """The ``precision`` param a ``dot_general`` / ``conv_general_dilated`` equation carries for a
    ``precision=`` argument, as ``jax.lax`` computes it (``jax._src.lax.lax.canonicalize_precision``):

    - ``None`` -> config ``jax_default_matmul_precision`` canonicalized now (at trace time), or
      ``None`` when that is unset;
    - a ``Precision`` or one of its strings ('highest'/'float32' -> HIGHEST, 'high'/'bfloat16_3x'/
      'tensorfloat32' -> HIGH, 'default'/'bfloat16'/'fastest' -> DEFAULT) -> a pair ``(p, p)``;
    - a pair of ``Precision`` values, or of such strings -> a tuple of two ``Precision``;
    - a ``DotAlgorithmPreset`` or its name ('F32_F32_F32') -> the preset; a ``DotAlgorithm`` -> itself.

    Anything else raises JAX's ValueError. Canonical values are hashable and canonicalize to
    themselves. Whether a backend can compute the one asked is not checked here (the CPU's
    refusals: ``cpu_precision_error``)."""
    if precision is None:
        default = config.jax_default_matmul_precision
        if default is None:
            return None
        try:
            return _canonicalize(default)
        except ValueError:
            raise ValueError(
                "jax_default_matmul_precision flag must be set to None, a value in "
                f"{list(_PRECISION_STRINGS)}, or the name of a lax.DotAlgorithmPreset, but got {default}"
            ) from None
    if type(precision) is tuple and len(precision) == 2 and all(type(p) is _Precision for p in precision):
        return precision  # already canonical (the transformation rules pass params through)
    return _canonicalize(precision)


def cpu_precision_error(precision: Any, op: str = "dot_general") -> ValueError | None:
    """The ValueError JAX's CPU backend raises (when the program is lowered, eagerly or under jit)
    for a canonical ``precision`` it cannot compute with ``op``, or None. Only ``dot_general``
    refuses any (some presets and every ``DotAlgorithm``); ``conv_general_dilated`` takes all."""
    if op != "dot_general":
        return None
    if isinstance(precision, DotAlgorithm):
        return ValueError(f"The precision '{precision!r}' is not supported by {op} on CPU")
    if isinstance(precision, DotAlgorithmPreset) and precision.name in _CPU_UNSUPPORTED:
        return ValueError(f"The precision '{precision}' is not supported by {op} on CPU")
    return None


def check_precision(precision: Any, op: str = "dot_general") -> Any:
    """Canonicalize ``precision`` and raise as JAX on the CPU does for one it does not accept;
    return the canonical value (``canonicalize_precision`` then ``cpu_precision_error``)."""
    canon = canonicalize_precision(precision)
    err = cpu_precision_error(canon, op)
    if err is not None:
        raise err
    return canon


def check_accuracy(accuracy: Any) -> None:
    """``accuracy=`` of the transcendental ops: None, a ``Tolerance`` or an ``AccuracyMode``."""
    if accuracy is None or isinstance(accuracy, (Tolerance, AccuracyMode)):
        return
    raise NotImplementedError(f"Accuracy {accuracy} not supported")
