"""Cost rules refuse inputs that would silently change a count (moved from tests/review/)."""

from __future__ import annotations

import pytest

from neural_cost import Operation, RecordError, ShapeError


def test_custom_flops_naming_one_dtype_twice_is_an_error():
    # Was (costs/other.py, custom): {"fp16": 10, "float16": 5} canonicalised both keys to float16
    # and kept only the last value, silently dropping 10 FLOPs.
    with pytest.raises(RecordError, match=r"attrs\['flops'\] names float16 twice"):
        Operation("c", "custom", ((2,),), (2,), attrs={"flops": {"fp16": 10, "float16": 5}})


def test_attention_mask_must_broadcast_to_the_scores():
    # Was (costs/linalg.py, attention): a mask of any shape was accepted and its bytes added to the
    # traffic; (99, 99) for scores (1, 1, 4, 4) inflated reads by 4·99·99 = 39,204 B.
    q = (1, 1, 4, 2)
    with pytest.raises(ShapeError, match=r"mask \(99, 99\) does not broadcast to the scores \(1, 1, 4, 4\)"):
        Operation("a", "attention", (q, q, q, (99, 99)), q)
    ok = Operation("a", "attention", (q, q, q, (4, 4)), q, input_dtypes=("float32",) * 3 + ("bool",))
    assert ok.cost.read_bytes == 3 * 4 * 8 + 16  # q, k, v 32 B each + a 16-element bool mask
