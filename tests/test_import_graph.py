"""The package's import graph keeps the architecture's one-way layering (read from the source with
``ast``, so lazy imports inside functions count too):

- the transforms (``fjax.interpreters``: ad, batching, partial_eval) never import a backend;
- no backend module imports the user-facing layers (``fjax.jit``, ``fjax.api``) or the primitives
  (``fjax.lax``, which registers its lowering rules with ``fjax.backends.registry``);
- the kernel IR and the lowering import no backend subpackage (``fjax.backends.numba``);
- no import cycle runs through a backend module;
- importing the user-facing modules (``fjax``, ``fjax.numpy``, ``fjax.random``, ``fjax.lax``,
  ``fjax.nn``) loads no backend subpackage, numba or cupy: the jit backend is created on first use
  (``fjax.backends.dispatch`` names it by a ``"module:Class"`` string), and the eager kernels of
  random and linalg import the numba backend when first called (checked in a fresh interpreter).
"""

from __future__ import annotations

import ast
import json
import pathlib
import subprocess
import sys

import fjax

ROOT = pathlib.Path(fjax.__file__).parent


def _module_name(path: pathlib.Path) -> str:
    rel = path.relative_to(ROOT.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, pathlib.Path]:
    return {_module_name(p): p for p in ROOT.rglob("*.py")}


def _imports(path: pathlib.Path, name: str, modules: dict) -> set[str]:
    """The fjax modules ``path`` imports (``from fjax import core`` names ``fjax.core``; the
    package ``fjax`` itself, which every import passes through, is left out)."""
    pkg = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = pkg.split(".")[: len(pkg.split(".")) - node.level + 1]
                base = ".".join(up + ([base] if base else []))
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names]
        else:
            continue
        out.update(t for t in targets if t in modules and t != "fjax")
    return out


GRAPH = {name: _imports(p, name, _modules()) for name, p in _modules().items()}


def _is_backend(m: str) -> bool:
    return m == "fjax.backends" or m.startswith("fjax.backends.")


def test_transforms_never_import_backends():
    for m in ("fjax.interpreters.ad", "fjax.interpreters.batching", "fjax.interpreters.partial_eval"):
        assert GRAPH[m], m  # the graph was read
        assert not [t for t in GRAPH[m] if _is_backend(t)], m


def test_backends_never_import_the_api_layers():
    for m, targets in GRAPH.items():
        if _is_backend(m):
            assert not targets & {"fjax.jit", "fjax.api"}, (m, targets & {"fjax.jit", "fjax.api"})


def test_backends_never_import_the_primitives():
    # lax registers its lowering rules with fjax.backends.registry; facts a backend needs about an
    # equation come through the registration (``aux``), never from importing lax
    for m, targets in GRAPH.items():
        if _is_backend(m):
            assert not [t for t in targets if t.startswith("fjax.lax") or t.startswith("fjax.numpy")], m


def test_ir_and_lowering_are_backend_neutral():
    for m in ("fjax.backends.kernel_ir", "fjax.backends.lowering", "fjax.backends.backend"):
        assert not [t for t in GRAPH[m] if t.startswith("fjax.backends.numba")], m


def _sccs(graph: dict) -> list[set]:
    """Strongly connected components (Tarjan, iterative)."""
    index, low, on, stack, out, counter = {}, {}, set(), [], [], [0]
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter[0]
        counter[0] += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(graph.get(w, ())))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = set()
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.add(w)
                    if w == v:
                        break
                out.append(comp)
    return out


def test_no_import_cycle_through_a_backend():
    cyclic = [c for c in _sccs(GRAPH) if len(c) > 1 and any(_is_backend(m) for m in c)]
    assert not cyclic, cyclic


def test_the_cycle_check_sees_cycles():
    g = {"fjax.backends.a": {"fjax.b"}, "fjax.b": {"fjax.backends.a"}, "fjax.c": set()}
    assert [c for c in _sccs(g) if len(c) > 1] == [{"fjax.backends.a", "fjax.b"}]


def test_importing_fjax_loads_no_backend_subpackage():
    code = (
        "import json, sys\n"
        "import fjax, fjax.numpy, fjax.random, fjax.lax, fjax.nn\n"
        "print(json.dumps(sorted(sys.modules)))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    loaded = json.loads(out.splitlines()[-1])
    assert "fjax.backends.dispatch" in loaded  # the jit hook is installed (its backend is not)
    unwanted = [
        m
        for m in loaded
        if m.startswith("fjax.backends.numba")
        or m.startswith("fjax.backends.cuda")
        or m.split(".")[0] in ("numba", "cupy")
    ]
    assert not unwanted, unwanted
