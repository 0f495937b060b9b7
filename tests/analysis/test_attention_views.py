"""Attention read per query head, and off the flash kernel's 16-row blocks in a class of its own
(``analysis/attention_views.py``)."""

from __future__ import annotations

import pytest

from neural_cost import estimate_trace
from neural_cost.analysis.attention_views import SEQUENCE_BLOCK, UNALIGNED, attention_class, query_heads
from neural_cost.analysis.expected import expected_time
from neural_cost.analysis.kernel_classes import kernel_class, one_part, repeats
from neural_cost.analysis.kernels import kernel_rows
from neural_cost.core.records import Operation
from tests.analysis.test_kernel_bound import SPEC
from tests.analysis.test_kernel_classes import _calibration, _flat

torch = pytest.importorskip("torch")


def _attention(q: tuple[int, ...], k: tuple[int, ...], count: int = 1) -> Operation:
    return Operation("sdpa", "attention", (q, k, k), (*q[:3], k[3]), "float32", count=count)


def test_a_sequence_off_the_blocks_makes_the_kernel_unaligned():
    """q and k of 128 rows are on the 16-row blocks; 120 query rows, or 120 key rows under 128 query rows, are not;
    head size 60 alone is no matter (120 × 60 and 120 × 64 ran alike a head)."""
    assert SEQUENCE_BLOCK == 16
    assert attention_class([_attention((2, 4, 128, 60), (2, 4, 128, 60))]) == "attention"
    assert attention_class([_attention((2, 4, 120, 64), (2, 4, 120, 64))]) == UNALIGNED
    assert attention_class([_attention((2, 4, 128, 64), (2, 4, 120, 64))]) == UNALIGNED
    assert attention_class([Operation("mm", "matmul", ((120, 60), (60, 7)), (120, 7), "float32")]) == "attention"


def test_query_heads_count_batch_times_heads_of_q_and_each_records_sequences():
    """Grouped-query heads count by q: batch 2 × 8 query heads (k and v have 2) = 16. Two variable-length records
    of 1 × 4 heads each, for 3 and 5 sequences (``count``): 4·3 + 4·5 = 32. A matmul record adds none, and a kernel
    without attention records reads once."""
    assert query_heads([_attention((2, 8, 64, 64), (2, 2, 64, 64))]) == 16
    assert (
        query_heads([_attention((1, 4, 10, 64), (1, 4, 10, 64), 3), _attention((1, 4, 7, 64), (1, 4, 7, 64), 5)]) == 32
    )
    assert query_heads([Operation("mm", "matmul", ((8, 8), (8, 8)), (8, 8), "float32")]) == 1


def _sdpa_estimate(*shapes: tuple[int, int, int, int]):
    from neural_cost.adapters import adapter_for

    class Attend(torch.nn.Module):
        def forward(self, *qs):
            return [torch.nn.functional.scaled_dot_product_attention(q, q, q) for q in qs]

    args = tuple(torch.randn(*shape) for shape in shapes)
    return estimate_trace(adapter_for("torch").trace(Attend(), args))


def test_an_attention_kernel_is_read_once_per_query_head():
    """Two SDPA calls, (1, 2, 16, 8) on the blocks and (1, 3, 15, 8) off them: 2 and 3 heads. With ``attention``
    flat at 1 µs a head and no curve of the unaligned class, they read 2 µs and 3 µs, and a note names the class
    read off ``attention``; with ``unaligned_attention`` flat at 3 µs (10^-5.522879 s), the second reads 9 µs."""
    estimate = _sdpa_estimate((1, 2, 16, 8), (1, 3, 15, 8))
    rows = [row for row in kernel_rows(estimate, SPEC)[0] if row.executions]  # the costlier bound first
    found = {
        kernel_class(estimate, row): (repeats(estimate, row, kernel_class(estimate, row)), row.name) for row in rows
    }
    assert sorted(found.values()) == [(2, found["attention"][1]), (3, found[UNALIGNED][1])]
    names = {found["attention"][1]: "attention", found[UNALIGNED][1]: UNALIGNED}
    expected = expected_time(estimate, _calibration({"attention": _flat("attention", -6.0)}), machine={})
    read = {names[row.name]: row.seconds for row in expected.rows if row.executions}
    assert read == pytest.approx({"attention": 2e-6, UNALIGNED: 3e-6})
    assert any(f"{UNALIGNED} (1) off attention" in note for note in expected.notes)
    both = {"attention": _flat("attention", -6.0), UNALIGNED: _flat(UNALIGNED, -5.522879)}
    expected = expected_time(estimate, _calibration(both), machine={})
    read = {names[row.name]: row.seconds for row in expected.rows if row.executions}
    assert read == pytest.approx({"attention": 2e-6, UNALIGNED: 9e-6}, rel=1e-5)


def test_the_torch_grids_attention_points_are_per_head_on_and_off_the_blocks():
    """The grid's SDPA programs read per query head (a point's times are one head's: ``Part.point`` divides by its
    repeats, 8 × 8 = 64 for ``sdpa 8x8x77x64``), its 77- and 100-row ones ``unaligned_attention``, its 64- and
    128-row ones ``attention``; none is a held-out model's shape (batch 4, 8 or 16 × 4 heads × 120 × 60)."""
    from neural_cost.adapters import adapter_for

    adapter = adapter_for("torch")
    programs = {p.name: p for p in adapter.microbenchmarks(False) if p.name.startswith("sdpa")}
    assert not any(name.startswith(f"sdpa {b}x4x120x60") for b in (4, 8, 16) for name in programs)
    for name, kind, heads in (("sdpa 8x8x77x64", UNALIGNED, 64), ("sdpa 8x4x100x48 causal", UNALIGNED, 32),
                              ("sdpa 4x16x64x96", "attention", 64), ("sdpa 2x4x128x64", "attention", 8)):  # fmt: skip
        program = programs[name]
        estimate = estimate_trace(adapter.trace(program.fn, program.args))
        row = next(row for row in kernel_rows(estimate, SPEC)[0] if row.executions)
        part = one_part(estimate, row, SPEC)
        assert (part.kernel_class, part.repeats) == (kind, heads), name
        assert part.point(1.0, name).measured_seconds == pytest.approx(1.0 / heads)
