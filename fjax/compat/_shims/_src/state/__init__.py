"""``jax._src.state``: JAX's mutable references; fjax's are in ``fjax.ref``."""
