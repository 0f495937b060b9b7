"""embedding, gather, scatter and copy: data movement counted by the elements touched.

Convention (ARCHITECTURE.md): gather reads the indices and only the rows/elements it touches (as
many as the output has), never the whole operand; scatter writes only the touched elements in
place; scatter-add also reads the old values of the touched elements. Indices default to int64.
"""

from __future__ import annotations

import pytest

from neural_cost import Operation
from neural_cost.core.errors import RecordError, ShapeError

TABLE = (1_000_000, 64)  # 256,000,000 bytes of float32 that a 3-row lookup must never be charged


def test_gather_three_rows_of_a_large_table_with_int32_indices():
    op = Operation("rows", "gather", (TABLE, (3,)), (3, 64), "float32", input_dtypes=("float32", "int32"))
    assert op.cost.read_bytes == 780  # 3 rows * 64 * 4 bytes + 3 indices * 4 bytes = 768 + 12 = 780
    assert op.cost.write_bytes == 768  # 3 * 64 * 4 = 768
    assert op.cost.flops_by_dtype == {}  # pure movement


def test_embedding_three_rows_of_a_large_table():
    int32 = Operation("emb", "embedding", (TABLE, (3,)), (3, 64), "float32", input_dtypes=("float32", "int32"))
    assert int32.cost.read_bytes == 780  # 3 * 64 * 4 + 3 * 4 = 780
    assert int32.cost.write_bytes == 768  # 3 * 64 * 4
    default = Operation("emb", "embedding", (TABLE, (3,)), (3, 64), "float32")
    assert default.cost.read_bytes == 792  # indices default to int64: 768 + 3 * 8 = 792


def test_embedding_with_two_dimensional_indices():
    op = Operation(
        "tok", "embedding", ((50_000, 32), (4, 5)), (4, 5, 32), "bfloat16", input_dtypes=("bfloat16", "int64")
    )
    assert op.cost.read_bytes == 1_440  # 4*5*32 = 640 elements * 2 bytes = 1,280, + 20 indices * 8 = 160
    assert op.cost.write_bytes == 1_280  # 640 * 2


def test_gather_of_elements_along_an_axis():
    # torch.gather(x (128, 50), 1, idx (128, 5)): one operand element per output element.
    op = Operation("take", "gather", ((128, 50), (128, 5)), (128, 5), "float32")
    assert op.cost.read_bytes == 7_680  # 640 * 4 bytes + 640 int64 indices * 8 bytes = 2,560 + 5,120 = 7,680
    assert op.cost.write_bytes == 2_560  # 640 * 4


SCATTER_INPUTS = ((1_000, 16), (10, 1), (10, 16))  # operand, indices (int32), updates: 160 touched elements
SCATTER_DTYPES = ("float32", "int32", "float32")


def _scatter(mode):
    return Operation(
        "sc", "scatter", SCATTER_INPUTS, (1_000, 16), "float32", attrs={"mode": mode}, input_dtypes=SCATTER_DTYPES
    )


def test_scatter_update_writes_only_touched_elements():
    op = _scatter("update")
    assert op.cost.read_bytes == 680  # indices 10 * 4 = 40 + updates 160 * 4 = 640 → 680; operand never read
    assert op.cost.write_bytes == 640  # 160 touched * 4 bytes, not the 64,000-byte operand
    assert op.cost.flops_by_dtype == {}


def test_scatter_add_also_reads_the_old_touched_values():
    op = _scatter("add")
    assert op.cost.read_bytes == 1_320  # 680 + old values of the 160 touched elements 640 = 1,320
    assert op.cost.write_bytes == 640  # still only the touched elements
    assert op.cost.flops_by_dtype == {"float32": 160}  # one add per update
    assert _scatter("max").cost.read_bytes == 1_320  # every combining mode reads the old values


def test_scatter_of_a_broadcast_scalar_writes_every_touched_element():
    # x[mask] = 0 with 160 True entries: one float32 scalar read, 160 elements written
    op = Operation(
        "fill",
        "scatter",
        ((1_000, 16), (10, 1), ()),
        (1_000, 16),
        "float32",
        attrs={"mode": "update", "touched": 160},
        input_dtypes=SCATTER_DTYPES,
    )
    assert op.cost.read_bytes == 44  # indices 10 * 4 = 40 + the scalar 4 = 44
    assert op.cost.write_bytes == 640  # 160 touched * 4 bytes
    added = Operation(
        "acc",
        "scatter",
        ((1_000, 16), (10, 1), ()),
        (1_000, 16),
        "float32",
        attrs={"mode": "add", "touched": 160},
        input_dtypes=SCATTER_DTYPES,
    )
    assert added.cost.read_bytes == 684  # 44 + old values of the 160 touched elements 640
    assert added.cost.flops_by_dtype == {"float32": 160}  # one add per touched element


def test_scatter_touches_at_least_its_updates():
    with pytest.raises(ShapeError, match=r"attrs\['touched'\]=100 is fewer than the 160 updates"):
        Operation("sc", "scatter", SCATTER_INPUTS, (1_000, 16), attrs={"touched": 100}, input_dtypes=SCATTER_DTYPES)


def test_copy_cast_reads_and_writes_at_each_width():
    op = Operation("cast", "copy", ((16, 1024),), (16, 1024), "bfloat16", input_dtypes=("float32",))
    assert op.cost.read_bytes == 65_536  # 16,384 * 4 bytes
    assert op.cost.write_bytes == 32_768  # 16,384 * 2 bytes
    assert op.cost.flops == 0


def test_copy_concat_reads_every_source():
    op = Operation("cat", "copy", ((2, 3), (4, 3)), (6, 3), "float32")
    assert (op.cost.read_bytes, op.cost.write_bytes) == (72, 72)  # 4 * (6 + 12) = 72; 4 * 18 = 72


def test_scatter_sub_combines_like_add():
    op = _scatter("sub")
    assert op.cost.read_bytes == 1_320  # indices 40 + updates 640 + old touched values 640
    assert op.cost.write_bytes == 640  # 160 touched * 4 bytes
    assert op.cost.flops_by_dtype == {"float32": 160}  # one subtract per update


def test_copy_that_reads_only_what_it_keeps():
    # lax.dynamic_slice of 4 rows from a (1,000, 64) table: reads the slice and two int32 start indices
    op = Operation(
        "ds",
        "copy",
        ((1_000, 64), (), ()),
        (4, 64),
        "float32",
        attrs={"reads": "touched"},
        input_dtypes=("float32", "int32", "int32"),
    )
    assert op.cost.read_bytes == 1_032  # 4*64 elements * 4 bytes = 1,024 + 2 indices * 4 bytes = 1,032
    assert op.cost.write_bytes == 1_024  # 4 * 64 * 4
    whole = Operation("ds", "copy", ((1_000, 64), (), ()), (4, 64), input_dtypes=("float32", "int32", "int32"))
    assert whole.cost.read_bytes == 256_008  # reads='all' (the default): 64,000 * 4 + 8


def test_copy_touched_cannot_read_more_than_its_source():
    with pytest.raises(ShapeError, match=r"reads 12 touched elements of inputs\[0\] \(2, 3\), more than it has"):
        Operation("pad", "copy", ((2, 3),), (3, 4), attrs={"reads": "touched"})
    with pytest.raises(RecordError, match=r"attrs\['reads'\]='some'; use one of all, touched"):
        Operation("c", "copy", ((2, 3),), (2, 3), attrs={"reads": "some"})
