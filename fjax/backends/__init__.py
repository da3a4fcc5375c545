"""Backends: everything between a jaxpr and a compiled callable.

The transforms (``fjax.interpreters``: ad, batching, partial_eval) never import this package; it
imports ``fjax.core`` and the primitives' registrations. ``lowering`` turns a jaxpr into the
backend-neutral kernel IR and keeps the compile cache; each backend is a subpackage
(``fjax.backends.numba``) that renders and compiles the IR.
"""
