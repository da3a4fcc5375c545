"""Tests for fjax.tree_util: flattening, structures, tree_map, key paths and node registration.

Expected reprs and error behaviours were checked against JAX's tree_util.
"""

from __future__ import annotations

import collections
import dataclasses
import functools
import pickle
from typing import Any, NamedTuple

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fjax import tree_util as tu

Point = collections.namedtuple("Point", ["x", "y"])


class Single(NamedTuple):
    a: Any


# ---------------------------------------------------------------------------------------------
# Helpers and strategies
# ---------------------------------------------------------------------------------------------


@dataclasses.dataclass
class Tagged:
    """An unregistered class: a leaf."""

    value: Any


def same(a: Any, b: Any) -> bool:
    """Structural equality that also checks container types and dict key order."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        if list(a) != list(b):
            return False
        if isinstance(a, collections.defaultdict) and a.default_factory is not b.default_factory:
            return False
        return all(same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return a == b


def follow(tree: Any, path: tuple) -> Any:
    """The subtree of ``tree`` at ``path``."""
    for key in path:
        if isinstance(key, tu.SequenceKey):
            tree = tree[key.idx]
        elif isinstance(key, tu.DictKey):
            tree = tree[key.key]
        elif isinstance(key, tu.GetAttrKey):
            tree = getattr(tree, key.name)
        else:
            raise TypeError(f"unexpected key {key!r}")
    return tree


keys = st.sampled_from(["a", "b", "c", "zz", "B"])


def _containers(children: st.SearchStrategy) -> st.SearchStrategy:
    return st.one_of(
        st.lists(children, max_size=3),
        st.lists(children, max_size=3).map(tuple),
        st.dictionaries(keys, children, max_size=3),
        st.builds(Point, children, children),
        st.builds(Single, children),
        st.dictionaries(keys, children, max_size=3).map(lambda d: collections.OrderedDict(reversed(d.items()))),
        st.dictionaries(keys, children, max_size=3).map(lambda d: collections.defaultdict(list, d)),
    )


trees = st.recursive(st.integers(-3, 3) | st.none(), _containers, max_leaves=8)


# ---------------------------------------------------------------------------------------------
# Property tests
# ---------------------------------------------------------------------------------------------


@given(trees)
def test_roundtrip(tree):
    leaves, treedef = tu.tree_flatten(tree)
    assert all(isinstance(x, int) for x in leaves)  # None is a node, never a leaf
    assert treedef.num_leaves == len(leaves)
    assert tu.tree_leaves(tree) == leaves
    # Several unflattens: the later ones go through the compiled unflattener.
    for _ in range(3):
        rebuilt = tu.tree_unflatten(treedef, leaves)
        assert tu.tree_structure(rebuilt) == treedef
        assert tu.tree_leaves(rebuilt) == leaves
        assert rebuilt == tree
    # Rebuilding from a fresh flatten of the rebuilt tree is exact (dicts come back sorted).
    again = tu.tree_unflatten(treedef, leaves)
    assert same(tu.tree_unflatten(*reversed(tu.tree_flatten(again))), again)


@given(trees)
def test_structure_counts_and_children(tree):
    treedef = tu.tree_structure(tree)
    children = treedef.children()
    if children:
        assert treedef.num_nodes == 1 + sum(c.num_nodes for c in children)
        assert treedef.num_leaves == sum(c.num_leaves for c in children)
    assert tu.treedef_children(treedef) == children
    assert tu.treedef_is_leaf(treedef) == (not children)


@given(trees)
def test_structure_equality_hash_and_pickle(tree):
    treedef = tu.tree_structure(tree)
    other = tu.tree_structure(tu.tree_map(lambda x: str(x), tree))
    assert treedef == other
    assert hash(treedef) == hash(other)
    assert pickle.loads(pickle.dumps(treedef)) == treedef
    assert repr(treedef) == repr(other)
    wrapped = tu.tree_structure([tree])
    assert wrapped != treedef


@given(trees)
def test_tree_map_several_trees_and_prefix(tree):
    doubled = tu.tree_map(lambda x: 2 * x, tree)
    summed = tu.tree_map(lambda x, y, z: x + y + z, tree, doubled, tree)
    assert tu.tree_leaves(summed) == [4 * x for x in tu.tree_leaves(tree)]
    # The structure of ``tree`` is a prefix of a tree with a subtree at each leaf.
    expanded = tu.tree_map(lambda x: (x, [x, None]), tree)
    treedef = tu.tree_structure(tree)
    assert treedef.flatten_up_to(expanded) == [(x, [x, None]) for x in tu.tree_leaves(tree)]
    pairs = tu.tree_map(lambda x, sub: Tagged((x, sub)), tree, expanded)
    assert tu.tree_structure(pairs) == treedef
    assert [t.value for t in tu.tree_leaves(pairs)] == [(x, (x, [x, None])) for x in tu.tree_leaves(tree)]


@given(trees)
def test_paths_lead_to_leaves(tree):
    with_path, treedef = tu.tree_flatten_with_path(tree)
    assert treedef == tu.tree_structure(tree)
    assert [x for _, x in with_path] == tu.tree_leaves(tree)
    for path, leaf in with_path:
        assert follow(tree, path) == leaf
    mapped = tu.tree_map_with_path(lambda p, x: tu.keystr(p), tree)
    assert tu.tree_leaves(mapped) == [tu.keystr(p) for p, _ in with_path]


@given(trees)
def test_none_as_leaf_with_is_leaf(tree):
    leaves = tu.tree_leaves(tree, is_leaf=lambda x: x is None)
    assert [x for x in leaves if x is not None] == tu.tree_leaves(tree)
    treedef = tu.tree_structure(tree, is_leaf=lambda x: x is None)
    assert tu.tree_unflatten(treedef, leaves) == tree


@given(st.lists(st.integers(), max_size=6))
def test_tree_reduce_matches_sum(xs):
    assert tu.tree_reduce(lambda a, b: a + b, {"xs": xs}, 0) == sum(xs)
    assert tu.tree_all(xs) == all(xs)


# ---------------------------------------------------------------------------------------------
# Node types
# ---------------------------------------------------------------------------------------------


def test_dict_keys_flatten_sorted_and_rebuild_sorted():
    leaves, treedef = tu.tree_flatten({"b": 1, "a": (2, 3), "c": None})
    assert leaves == [2, 3, 1]
    assert repr(treedef) == "PyTreeDef({'a': (*, *), 'b': *, 'c': None})"
    rebuilt = tu.tree_unflatten(treedef, [7, 8, 9])
    assert list(rebuilt) == ["a", "b", "c"]
    assert rebuilt == {"a": (7, 8), "b": 9, "c": None}
    assert tu.tree_structure({"b": 1, "a": 2}) == tu.tree_structure({"a": 1, "b": 2})
    assert tu.tree_structure({"a": 1}) != tu.tree_structure({"b": 1})
    assert treedef.node_data() == (dict, ["a", "b", "c"])


def test_dict_with_unsortable_keys_raises():
    with pytest.raises(ValueError, match="sorting pytree dictionary keys"):
        tu.tree_flatten({1: "x", "a": "y"})


def test_ordered_dict_keeps_insertion_order():
    od = collections.OrderedDict([("b", 1), ("a", 2)])
    leaves, treedef = tu.tree_flatten(od)
    assert leaves == [1, 2]
    assert repr(treedef) == "PyTreeDef(CustomNode(OrderedDict[('b', 'a')], [*, *]))"
    rebuilt = tu.tree_unflatten(treedef, [3, 4])
    assert type(rebuilt) is collections.OrderedDict and list(rebuilt.items()) == [("b", 3), ("a", 4)]
    assert treedef != tu.tree_structure(collections.OrderedDict([("a", 1), ("b", 2)]))
    assert treedef != tu.tree_structure({"b": 1, "a": 2})


def test_defaultdict_sorted_and_keeps_factory():
    dd = collections.defaultdict(list, {"b": 1, "a": 2})
    leaves, treedef = tu.tree_flatten(dd)
    assert leaves == [2, 1]
    assert repr(treedef) == "PyTreeDef(CustomNode(defaultdict[(<class 'list'>, ('a', 'b'))], [*, *]))"
    rebuilt = tu.tree_unflatten(treedef, [5, 6])
    assert type(rebuilt) is collections.defaultdict and rebuilt.default_factory is list
    assert list(rebuilt.items()) == [("a", 5), ("b", 6)]


def test_namedtuples_are_distinct_node_types():
    other = collections.namedtuple("Other", ["x", "y"])
    assert tu.tree_structure(Point(1, 2)) != tu.tree_structure(other(1, 2))
    assert tu.tree_structure(Point(1, 2)) != tu.tree_structure((1, 2))
    treedef = tu.tree_structure(Point(1, [2]))
    assert repr(treedef) == "PyTreeDef(CustomNode(namedtuple[Point], [*, [*]]))"
    assert tu.tree_unflatten(treedef, ["a", "b"]) == Point("a", ["b"])
    assert type(tu.tree_unflatten(treedef, ["a", "b"])) is Point
    assert treedef.node_data() == (Point, None)


def test_subclasses_of_containers_are_leaves():
    class MyTuple(tuple):
        pass

    class MyDict(dict):
        pass

    assert tu.tree_leaves([MyTuple((1, 2)), MyDict(a=1)]) == [(1, 2), {"a": 1}]


def test_none_is_an_empty_subtree():
    leaves, treedef = tu.tree_flatten(None)
    assert leaves == [] and repr(treedef) == "PyTreeDef(None)"
    assert treedef.num_leaves == 0 and treedef.num_nodes == 1
    assert tu.tree_unflatten(treedef, []) is None
    assert tu.tree_leaves([1, None, {"a": None}, 2]) == [1, 2]
    assert tu.tree_map(lambda x: x + 1, [1, None, 2]) == [2, None, 3]
    assert tu.tree_structure(None) != tu.tree_structure(1)
    assert not tu.all_leaves([None])
    assert tu.all_leaves([None], is_leaf=lambda x: x is None)


def test_tree_map_none_in_first_tree_requires_none():
    assert tu.tree_map(lambda x, y: (x, y), [1, None], [2, None]) == [(1, 2), None]
    # A leaf of the first tree may face None (a whole subtree) in another tree...
    assert tu.tree_map(lambda x, y: (x, y), [1, 2], [None, 3]) == [(1, None), (2, 3)]
    # ...but None in the first tree is a node that only matches None.
    with pytest.raises(ValueError, match=r"(?s)different types at key path\n    tree_map tree\[0\]\n.*NoneType"):
        tu.tree_map(lambda x, y: (x, y), [None, 2], [1, 3])
    out = tu.tree_map(lambda x, y: (x, y), [None, 2], [1, 3], is_leaf=lambda x: x is None)
    assert out == [(None, 1), (2, 3)]


def test_leaf_structure():
    leaves, treedef = tu.tree_flatten(5)
    assert leaves == [5] and repr(treedef) == "PyTreeDef(*)"
    assert treedef.num_nodes == 1 and treedef.children() == [] and treedef.node_data() is None
    assert tu.tree_unflatten(treedef, [[1, 2]]) == [1, 2]
    assert treedef.flatten_up_to({"a": [1]}) == [{"a": [1]}]
    assert tu.tree_map(lambda x, y: x + y, 1, 2) == 3


@pytest.mark.parametrize(
    ("tree", "expected"),
    [
        ([1, {"a": 2}], "PyTreeDef([*, {'a': *}])"),
        ((), "PyTreeDef(())"),
        ((1,), "PyTreeDef((*,))"),
        ([None], "PyTreeDef([None])"),
        ({1: "x", 2: "y"}, "PyTreeDef({1: *, 2: *})"),
        ({"a": {}}, "PyTreeDef({'a': {}})"),
        ([[]], "PyTreeDef([[]])"),
        (Point(None, [1]), "PyTreeDef(CustomNode(namedtuple[Point], [None, [*]]))"),
    ],
)
def test_repr_matches_jax(tree, expected):
    treedef = tu.tree_structure(tree)
    assert repr(treedef) == expected
    assert str(treedef) == expected


def test_is_leaf_called_on_every_subtree_in_order():
    seen = []
    tu.tree_flatten([1, None, (2,)], is_leaf=lambda x: seen.append(x) or False)
    assert seen == [[1, None, (2,)], 1, None, (2,), 2]
    leaves, treedef = tu.tree_flatten((1, [2]), is_leaf=lambda x: isinstance(x, list))
    assert leaves == [1, [2]] and repr(treedef) == "PyTreeDef((*, *))"


def test_deep_and_large_structures_unflatten():
    deep: Any = 0
    for _ in range(100):
        deep = [deep, {"k": None}]
    wide = {f"k{i}": (i, [i]) for i in range(3000)}
    for tree in (deep, wide):
        leaves, treedef = tu.tree_flatten(tree)
        for _ in range(3):
            assert tu.tree_unflatten(treedef, leaves) == tree


# ---------------------------------------------------------------------------------------------
# PyTreeDef methods
# ---------------------------------------------------------------------------------------------


def test_flatten_up_to_errors_name_the_mismatch():
    treedef = tu.tree_structure([1, {"a": 2}])
    assert treedef.flatten_up_to([5, {"a": (6, 7)}]) == [5, (6, 7)]
    with pytest.raises(ValueError, match=r"List arity mismatch.*expected 2 children, got 1"):
        treedef.flatten_up_to([5])
    with pytest.raises(ValueError, match="Expected list, got tuple"):
        treedef.flatten_up_to((5, {"a": 1}))
    with pytest.raises(ValueError, match=r"Dict key mismatch at key path \[1\].*present keys: \['b'\]"):
        treedef.flatten_up_to([5, {"b": 1}])
    with pytest.raises(ValueError, match=r"Expected dict at key path \[1\], got 6"):
        treedef.flatten_up_to([5, 6])
    with pytest.raises(ValueError, match="Dict key mismatch"):
        treedef.flatten_up_to([5, {"a": 1, "b": 2}])
    with pytest.raises(ValueError, match="Expected named tuple"):
        tu.tree_structure(Point(1, 2)).flatten_up_to((1, 2))
    with pytest.raises(ValueError, match="Mismatch custom node data"):
        tu.tree_structure(collections.OrderedDict(a=1)).flatten_up_to(collections.OrderedDict(b=1))


def test_unflatten_wrong_number_of_leaves():
    treedef = tu.tree_structure([1, (2, 3)])
    with pytest.raises(ValueError, match="expected 3, got 2"):
        tu.tree_unflatten(treedef, [1, 2])
    with pytest.raises(ValueError, match=r"^Too many leaves for PyTreeDef; expected 3\.$"):  # JAX's words
        treedef.unflatten([1, 2, 3, 4])
    assert treedef.unflatten(iter([1, 2, 3])) == [1, (2, 3)]


def test_tree_map_mismatch_names_the_key_path():
    # JAX 0.10.2's prefix-error words (more in tests/test_error_words_linalg_api.py)
    with pytest.raises(ValueError) as info:
        tu.tree_map(lambda x, y: x, [1, 2], (1, 2))
    msg = str(info.value)
    assert "<class 'list'>" in msg and "<class 'tuple'>" in msg
    with pytest.raises(ValueError, match=r"different lengths of list at key path\n    tree_map tree\n"):
        tu.tree_map(lambda *xs: xs, [1, 2], [1, 2], [1, 2, 3])
    with pytest.raises(ValueError, match=r"key path\n    tree_map tree\['a'\]\[1\]\n"):
        tu.tree_map(lambda *xs: xs, {"a": [1, (2, 3)]}, {"a": [1, (2,)]})


def test_children_node_data_and_compose():
    treedef = tu.tree_structure((1, [2, None], {"k": 3}))
    assert [repr(c) for c in treedef.children()] == [
        "PyTreeDef(*)",
        "PyTreeDef([*, None])",
        "PyTreeDef({'k': *})",
    ]
    assert treedef.node_data() == (tuple, None)
    assert tu.tree_structure(None).node_data() == (type(None), None)
    composed = tu.tree_structure((1, 2)).compose(tu.tree_structure([1, None]))
    assert repr(composed) == "PyTreeDef(([*, None], [*, None]))"
    assert composed.num_leaves == 2
    tupled = tu.treedef_tuple([tu.tree_structure(1), tu.tree_structure([1])])
    assert repr(tupled) == "PyTreeDef((*, [*]))" and tupled.num_leaves == 2


def test_tree_transpose():
    outer = tu.tree_structure([0, 0])
    inner = tu.tree_structure((0, 0, 0))
    assert tu.tree_transpose(outer, inner, [(1, 2, 3), (4, 5, 6)]) == ([1, 4], [2, 5], [3, 6])
    assert tu.tree_transpose(outer, None, [(1, 2, 3), (4, 5, 6)]) == ([1, 4], [2, 5], [3, 6])
    out = tu.tree_transpose(tu.tree_structure({"a": 0, "b": 0}), tu.tree_structure([0, 0]), {"a": [1, 2], "b": [3, 4]})
    assert out == [{"a": 1, "b": 3}, {"a": 2, "b": 4}]
    with pytest.raises(TypeError, match="Mismatch"):
        tu.tree_transpose(outer, tu.tree_structure((0, 0)), [(1, 2, 3), (4, 5, 6)])


def test_reduce_all_and_all_leaves():
    assert tu.tree_reduce(lambda a, b: a + b, [1, (2, 3)]) == 6
    assert tu.tree_reduce(lambda a, b: a + b, [1, 2, 3], 10) == 16
    with pytest.raises(TypeError):
        tu.tree_reduce(lambda a, b: a + b, [])
    assert tu.tree_all([1, True]) and not tu.tree_all([1, 0]) and tu.tree_all([]) and tu.tree_all(None)
    assert tu.all_leaves([1, 2.0, "x"]) and not tu.all_leaves([[1]])


def test_flatten_one_level():
    assert tu.flatten_one_level({"b": 1, "a": 2}) == ((2, 1), ("a", "b"))
    assert tu.flatten_one_level(None) == ((), None)
    with pytest.raises(ValueError, match="can't tree-flatten"):
        tu.flatten_one_level(1)


# ---------------------------------------------------------------------------------------------
# Key paths
# ---------------------------------------------------------------------------------------------


def test_key_paths_and_keystr():
    class Box:
        def __init__(self, a, b):
            self.a, self.b = a, b

    tu.register_pytree_node(Box, lambda b: ((b.a, b.b), None), lambda _, ch: Box(*ch))
    tree = {"a": [1, (2,)], "b": Point(3, 4), "c": Box(5, 6), "d": collections.OrderedDict(z=7)}
    with_path, _ = tu.tree_flatten_with_path(tree)
    assert [tu.keystr(p) for p, _ in with_path] == [
        "['a'][0]",
        "['a'][1][0]",
        "['b'].x",
        "['b'].y",
        "['c'][<flat index 0>]",
        "['c'][<flat index 1>]",
        "['d']['z']",
    ]
    assert [x for _, x in with_path] == [1, 2, 3, 4, 5, 6, 7]
    assert with_path[0][0] == (tu.DictKey("a"), tu.SequenceKey(0))
    assert repr(tu.SequenceKey(0)) == "SequenceKey(idx=0)"
    assert repr(tu.GetAttrKey("x")) == "GetAttrKey(name='x')"
    assert repr(tu.FlattenedIndexKey(3)) == "FlattenedIndexKey(key=3)"
    path = (tu.DictKey("a"), tu.SequenceKey(1), tu.GetAttrKey("x"), tu.FlattenedIndexKey(2))
    assert tu.keystr(path) == "['a'][1].x[<flat index 2>]"
    assert tu.keystr(path, simple=True, separator="/") == "a/1/x/2"
    assert tu.keystr(()) == ""
    assert tu.tree_leaves_with_path(7) == [((), 7)]
    assert tu.tree_flatten_with_path(None) == ([], tu.tree_structure(None))


def test_tree_map_with_path_several_trees():
    out = tu.tree_map_with_path(lambda p, x, y: (tu.keystr(p), x + y), {"a": [1, 2]}, {"a": [10, 20]})
    assert out == {"a": [("['a'][0]", 11), ("['a'][1]", 22)]}


# ---------------------------------------------------------------------------------------------
# Registration
# ---------------------------------------------------------------------------------------------


class Pair:
    def __init__(self, first, second):
        self.first, self.second = first, second

    def __eq__(self, other):
        return type(other) is Pair and (self.first, self.second) == (other.first, other.second)

    __hash__ = None


tu.register_pytree_node(Pair, lambda p: ((p.first, p.second), "pair-aux"), lambda aux, ch: Pair(*ch))


def test_register_pytree_node():
    tree = Pair(1, [2, None])
    leaves, treedef = tu.tree_flatten(tree)
    assert leaves == [1, 2]
    assert repr(treedef) == "PyTreeDef(CustomNode(Pair[pair-aux], [*, [*, None]]))"
    assert treedef.node_data() == (Pair, "pair-aux")
    for _ in range(3):
        assert tu.tree_unflatten(treedef, [3, 4]) == Pair(3, [4, None])
    assert tu.tree_map(lambda x: -x, tree) == Pair(-1, [-2, None])
    with pytest.raises(ValueError, match="Custom node type mismatch|Expected"):
        treedef.flatten_up_to((1, [2, None]))


def test_register_twice_raises():
    with pytest.raises(ValueError, match="Duplicate"):
        tu.register_pytree_node(Pair, lambda p: ((), None), lambda aux, ch: Pair(1, 2))
    with pytest.raises(ValueError, match="Duplicate"):
        tu.register_pytree_node(list, lambda p: ((), None), lambda aux, ch: [])


def test_unhashable_aux_data_still_hashes():
    class Unhashable:
        pass

    tu.register_pytree_node(Unhashable, lambda u: ((1,), [3]), lambda aux, ch: Unhashable())
    a, b = tu.tree_structure(Unhashable()), tu.tree_structure(Unhashable())
    assert a == b and hash(a) == hash(b)
    assert isinstance(tu.tree_unflatten(a, [1]), Unhashable)


def test_register_pytree_node_class_and_with_keys():
    @tu.register_pytree_node_class
    class Wrapper:
        def __init__(self, x):
            self.x = x

        def tree_flatten(self):
            return (self.x,), None

        @classmethod
        def tree_unflatten(cls, aux, children):
            return cls(*children)

    out = tu.tree_map(lambda v: v * 3, Wrapper([1, 2]))
    assert type(out) is Wrapper and out.x == [3, 6]
    assert repr(tu.tree_structure(Wrapper(1))) == "PyTreeDef(CustomNode(Wrapper[None], [*]))"

    @tu.register_pytree_with_keys_class
    class Keyed:
        def __init__(self, a, b):
            self.a, self.b = a, b

        def tree_flatten_with_keys(self):
            return ((tu.GetAttrKey("a"), self.a), (tu.GetAttrKey("b"), self.b)), None

        @classmethod
        def tree_unflatten(cls, aux, children):
            return cls(*children)

    assert [tu.keystr(p) for p, _ in tu.tree_leaves_with_path(Keyed(1, [2]))] == [".a", ".b[0]"]
    assert tu.tree_leaves(Keyed(1, [2])) == [1, 2]


def test_register_static():
    @tu.register_static
    class Static:
        def __init__(self, v):
            self.v = v

        def __eq__(self, other):
            return isinstance(other, Static) and self.v == other.v

        def __hash__(self):
            return hash(self.v)

    leaves, treedef = tu.tree_flatten([Static(1), 2])
    assert leaves == [2]
    assert treedef == tu.tree_structure([Static(1), 3]) != tu.tree_structure([Static(2), 3])
    assert tu.tree_unflatten(treedef, [5])[0].v == 1


def test_register_dataclass_explicit_fields():
    @functools.partial(tu.register_dataclass, data_fields=["a"], meta_fields=["n"])
    @dataclasses.dataclass
    class DC:
        a: Any
        n: int

    leaves, treedef = tu.tree_flatten(DC([1, 2], 3))
    assert leaves == [1, 2]
    assert repr(treedef) == "PyTreeDef(CustomNode(DC[(3,)], [[*, *]]))"
    assert tu.tree_unflatten(treedef, [5, 6]) == DC([5, 6], 3)
    assert treedef != tu.tree_structure(DC([1, 2], 4))
    assert [tu.keystr(p) for p, _ in tu.tree_leaves_with_path(DC([1, 2], 3))] == [".a[0]", ".a[1]"]


def test_register_dataclass_inferred_and_decorator_forms():
    @tu.register_dataclass
    @dataclasses.dataclass
    class Model:
        w: Any
        b: Any
        op: str = dataclasses.field(default="add", metadata={"static": True})

    m = Model(1, [2], "mul")
    leaves, treedef = tu.tree_flatten(m)
    assert leaves == [1, 2]
    assert repr(treedef) == "PyTreeDef(CustomNode(Model[('mul',)], [*, [*]]))"
    assert tu.tree_map(lambda x: x + 1, m) == Model(2, [3], "mul")

    @tu.register_dataclass(data_fields=["x"], meta_fields=[])
    @dataclasses.dataclass
    class Holder:
        x: Any

    assert tu.tree_leaves(Holder((1, 2))) == [1, 2]

    class Plain:
        def __init__(self, a, b):
            self.a, self.b = a, b

    tu.register_dataclass(Plain, data_fields=["a"], meta_fields=["b"])
    rebuilt = tu.tree_map(lambda x: x * 10, Plain(1, "meta"))
    assert (rebuilt.a, rebuilt.b) == (10, "meta")


def test_register_dataclass_errors():
    with pytest.raises(TypeError, match="not a dataclass"):

        @tu.register_dataclass
        class NotDC:
            pass

    with pytest.raises(ValueError, match="Missing fields"):

        @functools.partial(tu.register_dataclass, data_fields=["a"], meta_fields=[])
        @dataclasses.dataclass
        class Missing:
            a: Any
            n: int

    with pytest.raises(ValueError, match="must not overlap"):
        tu.register_dataclass(type("Overlap", (), {}), data_fields=["a"], meta_fields=["a"])

    with pytest.raises(TypeError, match="must both be specified when either is specified"):
        tu.register_dataclass(type("Half", (), {}), data_fields=["a"])


# ---------------------------------------------------------------------------------------------
# Partial
# ---------------------------------------------------------------------------------------------


def _add3(a, b, c=1):
    return a + b + c


def test_partial_is_a_pytree():
    p = tu.Partial(_add3, 1, c=3)
    assert p(2) == 6
    leaves, treedef = tu.tree_flatten(p)
    assert leaves == [1, 3]
    assert repr(treedef).startswith("PyTreeDef(CustomNode(Partial[<function _add3")
    assert repr(treedef).endswith("], [(*,), {'c': *}]))")
    scaled = tu.tree_map(lambda x: x * 10, p)
    assert isinstance(scaled, tu.Partial) and scaled(2) == 42
    assert tu.tree_structure(tu.Partial(_add3, 5, c=6)) == treedef
    assert tu.tree_structure(tu.Partial(_add3, 5)) != treedef


def test_partial_of_partial_keeps_inner_arguments_static():
    inner = functools.partial(_add3, 1)
    p = tu.Partial(inner, 2)
    assert p() == 4
    assert tu.tree_leaves(p) == [2]
    assert tu.tree_leaves(tu.Partial(tu.Partial(_add3, 1), 2)) == [2]
