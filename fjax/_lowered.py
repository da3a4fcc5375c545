"""``jit(f).lower(*args)`` / ``.trace(*args)``: the ``Lowered`` stage (JAX's ``jax.stages.Lowered``)
holding the traced jaxpr, its generated source per platform, and ``compile()``."""

from __future__ import annotations

import sys
from typing import Any

from fjax import _tree_lifted as tu
from fjax.core import ClosedJaxpr


def _expanded(jaxpr: ClosedJaxpr) -> ClosedJaxpr:
    return sys.modules["fjax.jit"]._expanded(jaxpr)  # (jit's lowering expander, set by mlir)


# lowering platform -> backend rendering it
_PLATFORM_BACKENDS = {"cpu": "numba", "cuda": "cuda", "gpu": "cuda"}


class Lowered:
    """The result of ``jit(f).lower(*args)``: the jaxpr and the generated source."""

    def __init__(self, jaxpr: ClosedJaxpr, consts: list, name: str, platform: str = "cpu", sig: Any = None):
        self.jaxpr = jaxpr
        self.consts = consts
        self.name = name
        self.platform = platform
        # the call's signature (fjax._aot.Signature), for compile() and the properties: computed on
        # first use from ``sig`` when that is a function (lower() stays as cheap as a cache lookup)
        self._sig_src = sig

    @property
    def _sig(self) -> Any:
        s = self._sig_src
        if callable(s):
            s = self._sig_src = s()
        return s

    def _need_sig(self, what: str) -> Any:
        if self._sig is None:
            raise AttributeError(f"Lowered.{what}: this Lowered was not made by jit(f).lower/trace")
        return self._sig

    # JAX's Traced/Lowered signature properties (fjax._aot)
    in_tree = property(lambda self: self._need_sig("in_tree").in_tree)
    out_tree = property(lambda self: self._need_sig("out_tree").out_tree)
    donate_argnums = property(lambda self: self._need_sig("donate_argnums").donate_argnums)
    fun_name = property(lambda self: self._need_sig("fun_name").fun_name)

    @property
    def in_avals(self) -> Any:
        sig = self._need_sig("in_avals")
        return tu.tree_unflatten(sig.in_tree, list(sig.in_avals))

    @property
    def out_avals(self) -> Any:
        return tu.tree_unflatten(self._need_sig("out_avals").out_tree, list(self.jaxpr.out_avals))

    @property
    def args_info(self) -> Any:
        from fjax import _aot  # noqa: PLC0415

        return _aot.args_info(self._need_sig("args_info"))

    @property
    def out_info(self) -> Any:
        from fjax import _aot  # noqa: PLC0415

        return _aot.out_info(self._need_sig("out_info"), self.jaxpr)

    def cost_analysis(self) -> dict:
        """fjax's estimate of the program's flops, transcendentals and bytes (``fjax._aot``)."""
        from fjax import _aot  # noqa: PLC0415

        return _aot.cost_analysis(self.jaxpr)

    def lower(self, *, lowering_platforms: tuple | None = None, _private_parameters: Any = None) -> Lowered:
        """``jit(f).trace(*args).lower(lowering_platforms=("cuda",))`` (JAX's spelling): the same
        trace lowered for another platform. ``"cpu"`` renders numba source, ``"cuda"`` (or
        ``"gpu"``) one CUDA C++ translation unit; lowering needs no GPU and no cupy."""
        platforms = tuple(lowering_platforms) if lowering_platforms else ("cpu",)
        if len(platforms) != 1:
            raise NotImplementedError(f"lower: one lowering platform at a time, got {platforms}")
        p = str(platforms[0]).lower()
        if p not in _PLATFORM_BACKENDS:
            raise ValueError(
                f"lower: unknown lowering platform {platforms[0]!r} (expected one of 'cpu', 'cuda', 'gpu')"
            )
        return Lowered(self.jaxpr, self.consts, self.name, "cuda" if p == "gpu" else p, self._sig_src)

    def as_text(self, dialect: str | None = None) -> str:
        """What ``jit`` compiles: ``dialect=None`` the generated source for the lowering platform
        (numba source for ``cpu``, a CUDA C++ translation unit for ``cuda``), ``"numba"`` or
        ``"cuda"`` that backend's source, ``"ir"`` the kernel IR program, ``"jaxpr"`` the jaxpr."""
        from fjax.backends import dispatch  # noqa: PLC0415

        backend = _PLATFORM_BACKENDS[self.platform]
        if dialect is None or dialect in ("numba", "cuda"):
            return dispatch.source_for(_expanded(self.jaxpr), dialect or backend)
        if dialect == "ir":
            return dispatch.ir_text(_expanded(self.jaxpr), backend)
        if dialect == "jaxpr":
            return str(self.jaxpr)
        raise ValueError(
            f"Lowered.as_text: unknown dialect {dialect!r} (expected None, 'numba', 'cuda', 'ir' or 'jaxpr')"
        )

    def compiler_ir(self, dialect: str | None = None) -> Any:
        """The lowered module as ``jax.stages.Lowered.compiler_ir``: an object whose ``str`` (and
        ``as_hlo_text()``) is an HLO-style text rendering of the jaxpr (``dialect`` ``"hlo"`` or
        ``"stablehlo"``, the default); fjax compiles with numba, not XLA (see ``fjax._hlo_text``)."""
        from fjax import _hlo_text  # noqa: PLC0415

        if dialect not in (None, "hlo", "stablehlo", "mhlo"):
            raise ValueError(f"Lowered.compiler_ir: unknown dialect {dialect!r} (expected 'hlo' or 'stablehlo')")
        return _hlo_text.CompilerIR(_hlo_text.hlo_text(self.jaxpr, self.name), dialect or "stablehlo")

    def compile(self, compiler_options: dict | None = None) -> Any:
        """Compile now (not on the first call, nor in the background) and return a
        ``jax.stages.Compiled``: call it with ``f``'s arguments, static ones left out."""
        from fjax import _aot  # noqa: PLC0415
        from fjax.backends import dispatch  # noqa: PLC0415

        if compiler_options:
            raise NotImplementedError(
                f"Lowered.compile: compiler_options {sorted(compiler_options)} (XLA options) have no meaning "
                "for fjax's numba and CUDA backends"
            )
        from fjax._devices import default_backend  # noqa: PLC0415

        # the numba program now, where calls run on the host (a GPU program compiles on its first call)
        on_host = self.platform == "cpu" and default_backend() == "cpu"
        program = dispatch.compile_jaxpr(_expanded(self.jaxpr), tiered=False) if on_host else None
        if self._sig is None:
            raise AttributeError("Lowered.compile: this Lowered was not made by jit(f).lower/trace")
        return _aot.Compiled(self, program)

    def __repr__(self) -> str:
        return f"Lowered({self.name})"
