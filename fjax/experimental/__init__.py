"""``jax.experimental``: APIs JAX keeps outside its stable namespace."""
