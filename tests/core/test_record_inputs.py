"""Records refuse what is not a record or not a count, naming the field (moved from tests/review/)."""

from __future__ import annotations

import pytest

from neural_cost import Coverage, LoopAssumption, RecordError, Trace, estimate_operations


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"unmodeled": (("sort", True),)}, r"unmodeled count for 'sort'"),
        ({"static_total": True}, r"static_total=True"),
    ],
)
def test_coverage_counts_are_not_bools(kwargs, match):
    # Was (core/records.py, Coverage): True was accepted as a count (total 2 = 1 modeled + True).
    total = 2 if "unmodeled" in kwargs else 1
    with pytest.raises(RecordError, match=match):
        Coverage(total=total, modeled=1, **kwargs)


def test_trace_boundary_and_loops_must_be_records():
    # Was (core/records.py, Trace; costs/estimate.py): a boundary of ints or loop assumptions of
    # strings were accepted and crashed later with AttributeError deep in the estimate or findings.
    with pytest.raises(RecordError, match=r"Trace.boundary\[0\] is a int, not a TensorSpec"):
        Trace((), Coverage(0, 0), boundary=[1])
    with pytest.raises(RecordError, match=r"Trace.loop_assumptions\[0\] is a str, not a LoopAssumption"):
        Trace((), Coverage(0, 0), loop_assumptions=["while_0"])
    with pytest.raises(RecordError, match=r"boundary\[0\] is a int, not a TensorSpec"):
        estimate_operations([], boundary=[1])
    with pytest.raises(RecordError, match=r"loop_assumptions\[0\] is a str, not a LoopAssumption"):
        estimate_operations([], loop_assumptions=["while_0"])
    with pytest.raises(RecordError, match=r"operations=5 is not a sequence of Operation records"):
        estimate_operations(5)  # type: ignore[arg-type]
    assert Trace((), Coverage(0, 0), loop_assumptions=[LoopAssumption("l", 2, "explicit")]).loop_assumptions
