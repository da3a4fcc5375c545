"""Backends: everything between a jaxpr and a compiled callable.

The transforms (``fjax.interpreters``: ad, batching, partial_eval) never import this package; it
imports ``fjax.core`` and the primitives' registrations. ``lowering`` turns a jaxpr into the
backend-neutral kernel IR; ``dispatch`` keeps the compile cache (per backend and program) and
creates backends on first use; each backend is a subpackage (``fjax.backends.numba``,
``fjax.backends.cuda``) that renders and compiles the IR.
"""
