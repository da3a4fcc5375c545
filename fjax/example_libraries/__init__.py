"""``jax.example_libraries``: the small ``optimizers`` and ``stax`` libraries of JAX's examples."""
