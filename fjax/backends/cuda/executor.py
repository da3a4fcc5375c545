"""Running a launch plan (``plan.py``) on a runtime: ``runtime.py`` (cupy, a GPU), ``emulate.py``
(the CPU emulator) or a test double; they share ``module/launch/empty/to_device/to_host/matmul``
and may add ``kernel(module, name)`` (a launcher fetched once), ``fft`` (plans with FFT steps need
it) and ``capture_graph``.

A plan is turned once into a list of small closures over a slot list (``_Compiled``): each Alloc,
View, Launch, MatMul and Fft record becomes one call with its names resolved to slots, its kernel
function fetched, and its shapes and grids made tuples, so a call of a jitted GPU program spends its
host time on the launches themselves, not on reading records (this is the hot path of every small
GPU call). From the second call on, a plan that reads nothing back to the host and launches enough
work (and runs no FFT over several axes: see ``graph_steps``) is captured as a CUDA graph (``runtime.capture_graph``)
and replayed.
"""

from __future__ import annotations

import functools
import math
import os
from operator import itemgetter
from typing import Any, Callable

import numpy as np

from fjax.backends.cuda.ops import LOW_FLOATS
from fjax.backends.cuda.plan import Module, plan_text
from fjax.backends.cuda.records import Alloc, Branch, Fft, HostCallback, Launch, Loop, MatMul, Plan, View

__all__ = ["GRAPH_MIN_STEPS", "Executor", "graph_steps", "launch_grid"]

# plans with fewer launches + GEMMs than this run launch by launch: a graph replay's own four
# operations (input copy kernel, graph launch, output allocation and copy) would cost more than the
# launches they save. On an H200 (2026-11-26) per-example gradients (3 launches) took 0.054 ms launch
# by launch and 0.044 ms as a graph (JAX: 0.039). FJAX_CUDA_GRAPH_MIN_STEPS overrides it.
GRAPH_MIN_STEPS = int(os.environ.get("FJAX_CUDA_GRAPH_MIN_STEPS", "3"))


def launch_grid(n: int, block: int) -> tuple:
    return (max(1, min(4096, -(-n // block))), 1, 1)


def graph_steps(plan: Plan) -> int | None:
    """The launches + GEMMs one run of ``plan`` makes (scan bodies counted per iteration), or None
    when it reads a value back to the host (``while``, ``cond``, a host call) or runs an FFT over
    several axes, and so is not made a CUDA graph."""
    n = 0
    for s in plan.steps:
        if isinstance(s, (Launch, MatMul)):
            n += 1
        elif isinstance(s, Branch) or (isinstance(s, Loop) and s.kind != "scan"):
            return None
        elif isinstance(s, HostCallback):
            return None  # the function runs on the host on every call, between the launches
        elif isinstance(s, Fft):
            if len(s.lengths) != 1 or os.environ.get("FJAX_CUDA_FFT_GRAPHS", "1") == "0":
                # several axes go through cupy.fft, whose plans cupy may create or evict at any
                # call: never captured (fft_exec says what one-axis transforms do instead)
                return None
            n += 1
        elif isinstance(s, Loop):
            b = graph_steps(s.body)
            if b is None:
                return None
            n += s.length * (b + (1 if any(math.prod(y[1][1:]) for y in s.ys) else 0))
    return n


class _Compiled:
    """A plan as closures over a slot list: ``template`` holds the uploaded constants, ``ins`` and
    ``outs`` are the slots of the plan's inputs and outputs, ``ops`` run in order."""

    __slots__ = ("alloc_op", "ins", "ops", "outs", "template")

    def __init__(self, template: list, ins: list, ops: list, outs: list, alloc_op: dict | None = None):
        self.template, self.ins, self.ops, self.outs = template, ins, ops, outs
        self.alloc_op = alloc_op or {}  # slot -> index in ops of the Alloc that creates it

    def __call__(self, args: Any, into: dict | None = None) -> list:
        """The outputs; ``into`` (output index -> a buffer of its shape and dtype) has the outputs
        that ``direct_outputs`` names written straight into the given buffers (a CUDA graph writes
        its outputs where a replay reads them, with no copy)."""
        env = self.template.copy()
        for i, a in zip(self.ins, args):
            env[i] = a
        ops = self.ops
        if into:
            ops = list(ops)
            for k, buf in into.items():
                ops[self.alloc_op[self.outs[k]]] = _preset(self.outs[k], buf)
        for op in ops:
            op(env)
        return [env[i] for i in self.outs]

    def direct_outputs(self) -> list[int]:
        """Indices of the outputs a caller may place (``into``): buffers the plan allocates at top
        level and returns once (not an input, a constant, a view or a loop's buffer)."""
        return [k for k, i in enumerate(self.outs) if i in self.alloc_op and self.outs.count(i) == 1]


class Executor:
    """Runs a plan on a runtime; buffers are the runtime's array objects (``.reshape`` /
    ``.transpose`` / slicing give views)."""

    def __init__(self, plan: Plan, module: Module, rt: Any, options: tuple = ()):
        self.plan, self.rt = plan, rt
        self.src = module.source(plan_text(plan))
        self.mod = rt.module(self.src, tuple(options))
        self._fns: dict = {}
        self._prog = self._compile(plan)
        # a CUDA graph of the whole plan (runtime.capture_graph), replayed from the second call on
        # when the plan reads nothing back to the host (no while/cond) and launches enough work
        # that launch overhead matters; None: not yet tried, False: not used
        n = graph_steps(plan)
        use = os.environ.get("FJAX_CUDA_GRAPHS", "1") != "0" and hasattr(rt, "capture_graph")
        self._graph: Any = None if use and n is not None and n >= GRAPH_MIN_STEPS else False
        self._calls = 0

    def __call__(self, *args: Any) -> list:
        g = self._graph
        if g:
            outs = g.replay(args)
            if outs is not None:
                return outs
        elif g is None and self._calls >= 1:
            # second call: capture (the first warmed up cuBLAS and the module); on any failure the
            # plan simply keeps running launch by launch
            self._graph = self.rt.capture_graph(self._prog, args) or False
            if self._graph:
                outs = self._graph.replay(args)
                if outs is not None:
                    return outs
        self._calls += 1
        return self._prog(args)

    # -----------------------------------------------------------------------------------------
    # compiling a plan into closures

    def _kernel(self, name: str) -> Callable:
        fn = self._fns.get(name)
        if fn is None:
            get = getattr(self.rt, "kernel", None)
            fn = get(self.mod, name) if get is not None else functools.partial(self.rt.launch, self.mod, name)
            self._fns[name] = fn
        return fn

    def _compile(self, plan: Plan) -> _Compiled:
        rt = self.rt
        slots: dict = {}

        def slot(name: str) -> int:
            i = slots.get(name)
            if i is None:
                i = slots[name] = len(slots)
            return i

        ins = [slot(n) for n in plan.inputs]
        # (not np.ascontiguousarray, which makes a 0-d constant 1-d: runtimes copy to C order themselves)
        consts = [(slot(n), rt.to_device(np.asarray(c))) for n, c in plan.consts.items()]
        ops: list = []
        alloc_op: dict = {}
        for s in plan.steps:
            if isinstance(s, Alloc):
                alloc_op[slot(s.name)] = len(ops)
                ops.append(_alloc(rt.empty, slot(s.name), tuple(s.shape), np.dtype(s.dtype)))
            elif isinstance(s, View):
                ops.append(_view(slot(s.name), slot(s.src), tuple(s.shape)))
            elif isinstance(s, Launch):
                spec = [(slot(a), None) if isinstance(a, str) else (-1, a) for a in s.args]
                ops.append(_launch(self._kernel(s.kernel), tuple(s.grid), tuple(s.block), spec, int(s.shared_mem)))
            elif isinstance(s, MatMul):
                ops.append(_matmul(rt, s, slot(s.out), slot(s.lhs), slot(s.rhs)))
            elif isinstance(s, Fft):
                ops.append(_fft(rt, s, slot(s.out), slot(s.src)))
            elif isinstance(s, HostCallback):
                ops.append(_host_call(rt, s, [slot(i) for i in s.ins], [slot(o) for o in s.outs]))
            elif isinstance(s, Loop):
                ops.append(self._loop(s, slot))
            elif isinstance(s, Branch):
                ops.append(self._branch(s, slot))
            else:
                raise NotImplementedError(f"CUDA runtime: plan record {type(s).__name__}")
        outs = [slot(n) for n in plan.outputs]
        template: list = [None] * len(slots)
        for i, c in consts:
            template[i] = c
        return _Compiled(template, ins, ops, outs, {i: j for i, j in alloc_op.items() if i not in ins})

    def _loop(self, s: Loop, slot: Callable) -> Callable:
        rt = self.rt
        body = self._compile(s.body)
        cs, ks, xs = [slot(c) for c in s.consts], [slot(c) for c in s.carries], [slot(x) for x in s.xs]
        outs = [slot(o) for o in s.outs]
        nk = len(ks)
        if s.kind == "scan":
            length, rev = s.length, s.reverse
            ys = []  # (shape, dtype, slice shape, elements) of each stacked output
            for _, shape, dt, _, _ in s.ys:
                ys.append((tuple(shape), np.dtype(dt), tuple(shape[1:]), math.prod(shape[1:])))
            # one launch copies every (nonempty) y of a step into its row of the stacked buffer
            live = [j for j, y in enumerate(ys) if y[3]]
            if live:
                copy_fn = self._kernel(s.ys[live[0]][3])
                copy_block = (s.ys[live[0]][4], 1, 1)
                copy_grid = launch_grid(max(ys[j][3] for j in live), copy_block[0])

            def scan(env: list) -> None:
                consts = [env[i] for i in cs]
                carry = [env[i] for i in ks]
                xv = [env[i] for i in xs]
                yb = [rt.empty(y[0], y[1]) for y in ys]
                for it in range(length):
                    t = length - 1 - it if rev else it
                    res = body(consts + carry + [x[t : t + 1].reshape(x.shape[1:]) for x in xv])
                    carry = res[:nk]
                    if live:
                        yv = res[nk:]
                        srcs = [yv[j] for j in live]
                        dsts = [yb[j][t : t + 1].reshape(ys[j][2]) for j in live]
                        copy_fn(copy_grid, copy_block, tuple(srcs + dsts))
                for i, v in zip(outs, carry + yb):
                    env[i] = v

            return scan
        cond = self._compile(s.cond)
        ccs = [slot(c) for c in s.cond_consts]

        def while_(env: list) -> None:
            consts = [env[i] for i in cs]
            cconsts = [env[i] for i in ccs]
            carry = [env[i] for i in ks]
            while True:
                (p,) = cond(cconsts + carry)
                if not bool(np.asarray(rt.to_host(p)).reshape(())):
                    break
                carry = body(consts + carry)
            for i, v in zip(outs, carry):
                env[i] = v

        return while_

    def _branch(self, s: Branch, slot: Callable) -> Callable:
        rt = self.rt
        branches = [self._compile(b) for b in s.branches]
        idx, ins, outs = slot(s.index), [slot(x) for x in s.ins], [slot(o) for o in s.outs]
        last = len(branches) - 1

        def branch(env: list) -> None:
            i = int(np.asarray(rt.to_host(env[idx])).reshape(()))
            res = branches[min(max(i, 0), last)]([env[j] for j in ins])
            for j, v in zip(outs, res):
                env[j] = v

        return branch


def _alloc(empty: Callable, i: int, shape: tuple, dt: np.dtype) -> Callable:
    def op(env: list) -> None:
        env[i] = empty(shape, dt)

    return op


def _preset(i: int, buf: Any) -> Callable:
    def op(env: list) -> None:
        env[i] = buf

    return op


def _view(i: int, j: int, shape: tuple) -> Callable:
    def op(env: list) -> None:
        env[i] = env[j].reshape(shape)

    return op


def _launch(fn: Callable, grid: tuple, block: tuple, spec: list, shared: int) -> Callable:
    """One kernel launch: ``spec`` gives each argument as (slot, None) or (-1, scalar)."""
    if shared:  # (cupy takes shared_mem by keyword only)
        fn = functools.partial(fn, shared_mem=shared)
    if any(k < 0 for k, _ in spec):

        def mixed(env: list) -> None:
            fn(grid, block, tuple([env[k] if k >= 0 else v for k, v in spec]))

        return mixed
    keys = [k for k, _ in spec]
    if len(keys) == 1:
        (k0,) = keys

        def one(env: list) -> None:
            fn(grid, block, (env[k0],))

        return one
    get = itemgetter(*keys) if keys else (lambda env: ())

    def op(env: list) -> None:
        fn(grid, block, get(env))

    return op


def _matmul(rt: Any, s: MatMul, o: int, li: int, ri: int) -> Callable:
    """``dot_general`` as GEMMs: one 2-D GEMM when there is one batch (no reshape of operands that
    already have the matrix's shape: each reshape is a call into cupy), batched 3-D otherwise."""
    nb, nl, nk, nr = s.dims
    lperm, rperm, lt, rt_ = s.lhs_perm, s.rhs_perm, s.lhs_t, s.rhs_t
    la, ra = ((nb, nk, nl) if lt else (nb, nl, nk)), ((nb, nr, nk) if rt_ else (nb, nk, nr))
    oshape = (nb, nl, nr)
    if nb == 1:
        la, ra, oshape = la[1:], ra[1:], oshape[1:]
    ax = (1, 0) if nb == 1 else (0, 2, 1)
    out_shape, dt = tuple(s.out_shape), np.dtype(s.dtype)
    same = oshape == out_shape
    empty, matmul = rt.empty, rt.matmul
    if dt in LOW_FLOATS or s.in_dtype is not None:
        # 16-bit floats: the runtime's buffers may hold their bits (cupy has no bfloat16)
        types = (np.dtype(s.in_dtype or dt), dt)
        matmul = functools.partial(rt.matmul, types=types)
    elif s.compute:
        matmul = functools.partial(rt.matmul, compute=s.compute)

    def op(env: list) -> None:
        lhs, rhs = env[li], env[ri]
        if lperm is not None:
            lhs = lhs.transpose(lperm)
        if rperm is not None:
            rhs = rhs.transpose(rperm)
        if lhs.shape != la:
            lhs = lhs.reshape(la)
        if rhs.shape != ra:
            rhs = rhs.reshape(ra)
        out = empty(oshape, dt)
        matmul(lhs.transpose(ax) if lt else lhs, rhs.transpose(ax) if rt_ else rhs, out)
        env[o] = out if same else out.reshape(out_shape)

    return op


def _fft(rt: Any, s: Fft, o: int, i: int) -> Callable:
    """``lax.fft`` by the runtime's ``fft(x, out, fft_type, lengths)`` (cuFFT), written into the
    output buffer allocated before it."""
    fft = getattr(rt, "fft", None)
    if fft is None:
        raise NotImplementedError(f"CUDA runtime {type(rt).__name__}: no fft (plan record Fft)")
    kind, lengths = int(s.fft_type), tuple(s.lengths)

    def op(env: list) -> None:
        fft(env[i], env[o], kind, lengths)

    return op


def _host_call(rt: Any, s: HostCallback, ins: list, outs: list) -> Callable:
    """``s.fn`` on host copies of the operands, each seen with its aval's shape and dtype (bfloat16
    buffers hold bits; a loop's 0-d carry may live in a 1-element buffer), its results uploaded as
    new buffers of the declared shapes and dtypes."""
    fn, in_specs, specs = s.fn, list(s.in_avals), list(s.out_avals)

    def host(buf: Any, shape: tuple, dt: np.dtype) -> np.ndarray:
        h = np.asarray(rt.to_host(buf))
        if h.dtype != dt and h.dtype.itemsize == dt.itemsize:
            h = h.view(dt)
        return h.reshape(shape) if h.shape != shape else h

    def op(env: list) -> None:
        res = fn(*[host(env[i], *spec) for i, spec in zip(ins, in_specs)])
        for o, r, (shape, dt) in zip(outs, res, specs):
            env[o] = rt.to_device(np.asarray(r, dt).reshape(shape))

    return op
