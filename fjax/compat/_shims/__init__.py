"""Modules under ``jax.`` whose path fjax itself lacks, so libraries importing them can start.

``jax.X`` resolves to ``fjax.X`` first; only when that does not exist does it resolve here.
"""
