"""Horizontal fusion in the CUDA backend: independent elementwise nests of a kernel share one
launch (``render.render_group``). The emulator runs blocks in order, so it cannot see a race
between segments of one launch; this checks the property that rules races out on a GPU: no segment
of a fused launch reads a buffer another segment of it writes (views resolved to their storage),
over every program of the lowering corpus. And the numbers are those of one launch per nest."""

from __future__ import annotations

import re

import numpy as np
import pytest

import fjax
from fjax import tree_util
from fjax.backends import dispatch
from fjax.backends.cuda.records import Branch, Launch, Loop, View

_PARAM = re.compile(r"(const )?\w[\w ]*\* __restrict__ s(\d+)_(\d+)")


def _corpus() -> dict:
    with fjax.default_device(fjax.devices("cpu")[0]):
        from test_cuda_lowering import CORPUS  # noqa: PLC0415

    return CORPUS


def _plan(fn, args):
    closed = fjax.jit(fn).trace(*args).lower(lowering_platforms=("cuda",))
    backend = dispatch.get_backend("cuda")
    prog = dispatch.lower(closed.jaxpr, backend)
    return backend.build(prog)


def _launches(plan, views):
    for s in plan.steps:
        if isinstance(s, View):
            views[s.name] = s.src
        elif isinstance(s, Launch):
            yield s
        elif isinstance(s, Loop):
            yield from _launches(s.body, views)
            if s.cond is not None:
                yield from _launches(s.cond, views)
        elif isinstance(s, Branch):
            for b in s.branches:
                yield from _launches(b, views)


def _root(name: str, views: dict) -> str:
    while name in views:
        name = views[name]
    return name


@pytest.mark.parametrize("name", sorted(_corpus()))
def test_segments_of_a_fused_launch_are_independent(name):
    fn, args = _corpus()[name]
    plan, module = _plan(fn, args)
    views: dict = {}
    for launch in list(_launches(plan, views)):
        src = module.kernels[launch.kernel].src
        if "independent elementwise nests in one launch" not in src:
            continue
        sig = src[src.index(f"{launch.kernel}(") :].split(")", 1)[0]
        params = _PARAM.findall(sig)
        assert len(params) == len(launch.args), (name, launch.kernel)
        reads: dict = {}
        writes: dict = {}
        for (const, seg, _), a in zip(params, launch.args):
            (reads if const else writes).setdefault(int(seg), set()).add(_root(a, views))
        for i, w in writes.items():
            for k, r in reads.items():
                assert i == k or not (w & r), (name, launch.kernel, i, k, w & r)
            for k, w2 in writes.items():
                assert i == k or not (w & w2), (name, launch.kernel, i, k)


def test_dependent_nests_stay_separate_launches():
    """Per-example gradients: the [512] nest feeds the [512, 100] one, so they are two launches."""

    def loss(w, b, x, y):
        return fjax.numpy.logaddexp(0.0, -y * (x @ w + b))

    f = fjax.vmap(fjax.grad(loss, argnums=(0, 1)), in_axes=(None, None, 0, 0))
    rng = np.random.default_rng(0)
    x = rng.standard_normal((32, 16)).astype(np.float32)
    args = (rng.standard_normal(16).astype(np.float32), np.float32(0.0), x, np.sign(x[:, 0]))
    plan, module = _plan(f, args)
    ks = [s.kernel for s in _launches(plan, {})]
    assert len(ks) >= 2
    assert not any("independent elementwise nests" in module.kernels[k].src for k in ks)


def test_fused_and_unfused_launches_give_the_same_numbers(monkeypatch):
    from fjax.backends.cuda import emulate

    if emulate.compiler() is None:
        pytest.skip("no C++ compiler for the CUDA emulator")
    fn, args = _corpus()["mlp_step"]
    low = fjax.jit(fn).trace(*args)
    fused = emulate.run_lowered(low, *args)
    monkeypatch.setenv("FJAX_CUDA_HFUSE", "0")
    dispatch.register_backend("cuda", "fjax.backends.cuda.backend:CudaBackend")
    try:
        _, module = _plan(fn, args)
        assert not any("independent elementwise nests" in k.src for k in module.kernels.values())
        plain = emulate.run_lowered(low, *args)
    finally:
        monkeypatch.delenv("FJAX_CUDA_HFUSE")
        dispatch.register_backend("cuda", "fjax.backends.cuda.backend:CudaBackend")
    assert len(fused) == len(plain)
    for a, b in zip(fused, plain):
        np.testing.assert_array_equal(a, b)
    assert tree_util.tree_leaves(args)
