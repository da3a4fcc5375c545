"""Records reference outputs of jax.image.resize / scale_and_translate into image_resize.json.

Run with JAX installed (never imported by the test suite): python tests/data/make_image_resize.py
It was run with JAX 0.10.2 on CPU, x64 off. The input image is a fixed deterministic array
(``np.sin(0.3 * arange)`` reshaped), so the file stores only the arguments and outputs.
"""

import json
import pathlib

import jax
import numpy as np

IMAGE = np.sin(0.3 * np.arange(2 * 7 * 9, dtype=np.float32)).reshape(2, 7, 9)

RESIZE = [
    (shape, method, antialias)
    for shape in ([2, 3, 4], [2, 13, 20], [2, 5, 9])
    for method in ("nearest", "linear", "cubic", "lanczos3", "lanczos5", "area")
    for antialias in (True, False)
]
SCALE_TRANSLATE = [
    ([2, 10, 6], [1, 2], [1.5, 0.6], [0.25, -1.0], "linear", True),
    ([2, 4, 12], [1, 2], [0.5, 1.3], [1.0, 0.5], "cubic", True),
    ([2, 4, 12], [1, 2], [0.5, 1.3], [1.0, 0.5], "lanczos3", False),
]


def main():
    cases = []
    for shape, method, aa in RESIZE:
        out = np.asarray(jax.image.resize(IMAGE, shape, method, antialias=aa))
        cases.append({"fn": "resize", "shape": shape, "method": method, "antialias": aa, "out": out.ravel().tolist()})
    for shape, dims, scale, trans, method, aa in SCALE_TRANSLATE:
        out = np.asarray(
            jax.image.scale_and_translate(
                IMAGE, shape, dims, np.array(scale, np.float32), np.array(trans, np.float32), method, antialias=aa
            )
        )
        cases.append(
            {
                "fn": "scale_and_translate",
                "shape": shape,
                "spatial_dims": dims,
                "scale": scale,
                "translation": trans,
                "method": method,
                "antialias": aa,
                "out": out.ravel().tolist(),
            }
        )
    data = {"about": __doc__, "jax_version": jax.__version__, "cases": cases}
    (pathlib.Path(__file__).parent / "image_resize.json").write_text(json.dumps(data, separators=(",", ":")))


if __name__ == "__main__":
    main()
