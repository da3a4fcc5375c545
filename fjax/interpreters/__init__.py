"""Interpreters: the transforms (ad, batching, partial_eval) and the jit backends."""
