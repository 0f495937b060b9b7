"""The one lowering driver (``adapters._walk``): its failure policy, loop trip counts and the
most-expensive-branch rule, without any framework."""

import pytest

from neural_cost import Operation
from neural_cost.adapters._registry import OpTable
from neural_cost.adapters._walk import (
    Loops,
    WalkState,
    check_loop_options,
    closed_form_trips,
    lower,
    take_costliest_branch,
)
from neural_cost.core.errors import AdapterError, RecordError, ShapeError

TABLE: OpTable = OpTable("test op", "call")
TABLE.free("only reads a shape", "shape_of")
TABLE.empty_reasons["maybe_view"] = "a view when its input is contiguous"

MM = Operation("mm", "matmul", ((4, 8), (8, 2)), (4, 2))  # 2·4·8·2 = 128 FLOPs


def _records(*_args):
    return [MM]


def _nothing(*_args):
    return []


def test_unknown_op_is_unmodeled_under_its_label():
    state = WalkState()
    lower(state, TABLE, None, "erfinv", 3, (), label="aten.erfinv")
    assert (state.modeled, state.free, dict(state.unmodeled), state.notes) == (0, 0, {"aten.erfinv": 3}, [])


def test_free_entry_is_free_with_its_reason():
    state = WalkState()
    lower(state, TABLE, TABLE.entries["shape_of"], "shape_of", 2, ())
    assert (state.free, state.free_reasons) == (2, {"shape_of": "only reads a shape"})


def test_records_make_the_op_modeled_once_per_execution():
    state = WalkState()
    lower(state, TABLE, _records, "mm", 5, ("call",))
    assert (state.modeled, state.operations) == (5, [MM])
    assert state.operations[0].cost.flops == 128


def test_an_empty_result_is_free_with_the_tables_reason_or_its_default():
    state = WalkState()
    lower(state, TABLE, _nothing, "maybe_view", 1, ())
    lower(state, TABLE, _nothing, "other_view", 1, ())
    assert state.free == 2
    assert state.free_reasons == {
        "maybe_view": "a view when its input is contiguous",
        "other_view": "aliases its input for this call",
    }


@pytest.mark.parametrize(
    "error",
    [
        ShapeError("inputs do not broadcast"),
        RecordError("attrs['axis'] must be an integer"),
        AdapterError("Einsum 'ii->i': a repeated letter"),
        KeyError("dimension_numbers"),
        IndexError("tuple index out of range"),
    ],
)
def test_a_builder_that_raises_leaves_the_op_unmodeled_with_a_note(error):
    def broken(*_args):
        raise error

    state = WalkState()
    lower(state, TABLE, broken, "einsum", 4, ("call",), label="aten.einsum", where="block0")
    assert (state.modeled, state.free, dict(state.unmodeled)) == (0, 0, {"aten.einsum": 4})
    (note,) = state.notes
    assert note.startswith(f"aten.einsum at block0: not modeled for this call ({type(error).__name__}: ")


def test_a_record_its_rule_rejects_is_caught_by_the_same_policy():
    def bad_record(*_args):  # a 4×8 by 9×2 matmul: the matmul rule rejects the shapes
        return [Operation("mm", "matmul", ((4, 8), (9, 2)), (4, 2))]

    state = WalkState()
    lower(state, TABLE, bad_record, "mm", 1, ())
    assert dict(state.unmodeled) == {"mm": 1} and state.operations == []
    assert state.notes[0].startswith("mm: not modeled for this call (")


# -- loops ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("start", "bound", "step", "relation", "trips"),
    [
        (0, 16, 1, "lt", 16),  # 0..15
        (0, 10, 2, "le", 6),  # 0, 2, 4, 6, 8, 10
        (3, 16, 1, "lt", 13),  # 3..15
        (5, 0, -1, "gt", 5),  # 5, 4, 3, 2, 1
        (5, 0, -2, "ge", 3),  # 5, 3, 1
        (5, 0, 1, "lt", 0),  # never runs
        (0, 12, 3, "ne", 4),  # 0, 3, 6, 9
        (0, 10, 3, "ne", None),  # steps over its bound: never ends by this counter
        (0, 10, -1, "lt", None),  # steps away from its bound
    ],
)
def test_closed_form_trip_counts(start, bound, step, relation, trips):
    assert closed_form_trips(start, bound, step, relation) == trips


def test_loops_resolve_explicit_inferred_and_default_in_order():
    loops = Loops({1: 7, "net/while_2": 3}, default_trip_count=8)
    first = loops.enter(None, lambda: 16, "a.py:1")
    second = loops.enter("net", lambda: 99, "a.py:2")  # explicit by index wins over inference
    third = loops.enter("net", lambda: None, None)  # explicit by label
    fourth = loops.enter(None, lambda: None, None)  # nothing says: the default
    assert [(lp.label, lp.trip_count, lp.source) for lp in (first, second, third, fourth)] == [
        ("while_0", 16, "inferred"),
        ("net/while_1", 7, "explicit"),
        ("net/while_2", 3, "explicit"),
        ("while_3", 8, "default"),
    ]
    loops.check()


def test_loop_options_and_keys_are_checked():
    with pytest.raises(AdapterError, match="default_trip_count=-1 must be an integer >= 0"):
        check_loop_options("X", None, -1)
    with pytest.raises(AdapterError, match=r"trip_counts key 1\.5 must be"):
        check_loop_options("X", {1.5: 2}, 8)
    loops = Loops({"while_9": 2}, 8)
    loops.enter(None, lambda: None, None)
    with pytest.raises(AdapterError, match=r"names no loop of this program: \['while_9'\].*0 \(while_0\)"):
        loops.check()
    with pytest.raises(AdapterError, match="give a non-negative integer"):
        Loops({0: -3}, 8).enter(None, lambda: None, None)


# -- conditionals ---------------------------------------------------------------------------


def test_the_most_expensive_branch_is_counted_and_unmodeled_work_elsewhere_kept():
    cheap, costly = WalkState(), WalkState()
    cheap.operations.append(Operation("add", "elementwise", ((4, 2), (4, 2)), (4, 2)))  # 8 FLOPs
    cheap.static = cheap.executed = cheap.modeled = 1
    cheap.unmodeled["cholesky"] = 1
    cheap.static += 1
    costly.operations.append(MM)  # 128 FLOPs
    costly.static = costly.executed = costly.modeled = 1
    state = WalkState()
    chosen = take_costliest_branch(state, [cheap, costly], 1, "cond", "cond at top level", "equations")
    assert chosen == 1 and state.operations == [MM]
    # executed: the costly branch's matmul, plus the cheap branch's unmodeled op; static: all 3
    assert (state.executed, state.static, state.modeled, state.free) == (2, 3, 1, 1)
    assert dict(state.unmodeled) == {"cholesky": 1}
    assert state.free_reasons == {"cond": "selects a branch; the most expensive branch's equations are counted"}
    assert state.notes[0] == "cond at top level costed as its most expensive branch (1 of 2)"
    assert "branch 0, not costed, holds unmodeled cholesky (1)" in state.notes[1]
