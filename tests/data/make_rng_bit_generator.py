"""Records reference outputs of ``jax.lax.rng_bit_generator`` into rng_bit_generator.json.

Run with JAX installed (NOT part of the test suite; the tests never import jax):
    python tests/data/make_rng_bit_generator.py
It was run with JAX 0.10.2 on the CPU backend (XLA's RngBitGenerator expansion: Philox is the
default algorithm there). Each case stores the key (uint32[4], or uint64[2] in the x64 pass), the
shape, dtype and algorithm name, and both outputs (new key and bits) as integer lists; the
``vmap`` cases store a batch of keys and JAX's batched result. The keys include counters next to
2**64 so that the carry into the high counter word is exercised.
"""

import json
import pathlib

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

M = 0xFFFFFFFF
KEYS32 = [
    [1, 2, 3, 4],
    [0, 0, 0, 0],
    [0xDEADBEEF, 0x12345678, 0x9ABCDEF0, 0x0F0F0F0F],
    [7, 8, M - 1, M],  # the counter word (entries 2, 3) overflows after a few blocks
    [M, M, M, M],
    [42, 0, 0xFFFFFFF0, M],
]
SHAPES = [(), (1,), (5,), (2, 3), (3, 5), (4, 1, 3), (3, 3, 3), (0,), (2, 0, 3), (7, 2), (1, 9)]
DTYPES = ["uint8", "uint16", "uint32"]
ALGOS = ["RNG_DEFAULT", "RNG_THREE_FRY", "RNG_PHILOX"]


def record(key, shape, dtype, algo):
    new_key, bits = lax.rng_bit_generator(key, shape, dtype=dtype, algorithm=lax.RandomAlgorithm[algo])
    return {
        "key": np.asarray(key).tolist(),
        "key_dtype": str(np.asarray(key).dtype),
        "shape": list(shape),
        "dtype": dtype,
        "algorithm": algo,
        "new_key": np.asarray(new_key).tolist(),
        "bits": np.asarray(bits).reshape(-1).tolist(),
    }


def main():
    cases = []
    for k in KEYS32:
        key = jnp.array(k, jnp.uint32)
        for algo in ALGOS:
            for shape in SHAPES:
                cases.append(record(key, shape, "uint32", algo))
            for dtype in ("uint8", "uint16"):
                cases.append(record(key, (3, 5), dtype, algo))
    vmap_cases = []
    keys = jnp.array(KEYS32[:3], jnp.uint32)
    for algo in ALGOS:
        nk, bits = jax.vmap(lambda k, a=algo: lax.rng_bit_generator(k, (2, 3), algorithm=lax.RandomAlgorithm[a]))(keys)
        vmap_cases.append(
            {
                "keys": np.asarray(keys).tolist(),
                "shape": [2, 3],
                "algorithm": algo,
                "new_keys": np.asarray(nk).tolist(),
                "bits": np.asarray(bits).tolist(),
            }
        )
    jax.config.update("jax_enable_x64", True)
    x64 = []
    for k in KEYS32[:4]:
        key = jnp.array(k, jnp.uint32)
        key64 = jnp.array(np.array(k, np.uint32).view(np.uint64))
        for algo in ALGOS:
            for shape in [(), (5,), (2, 3), (3, 3)]:
                x64.append(record(key, shape, "uint64", algo))
                x64.append(record(key64, shape, "uint32", algo))
                x64.append(record(key64, shape, "uint64", algo))
    out = {"_note": __doc__, "jax_version": jax.__version__, "cases": cases, "vmap": vmap_cases, "x64": x64}
    path = pathlib.Path(__file__).with_name("rng_bit_generator.json")
    path.write_text(json.dumps(out, separators=(",", ":")) + "\n")
    print(len(cases), len(vmap_cases), len(x64), path.stat().st_size)


if __name__ == "__main__":
    main()
