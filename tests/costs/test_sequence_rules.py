"""attention_backward, qkv_bias_rescale and rnn_gate_backward, per the docstrings of
costs/sequence.py."""

from __future__ import annotations

import pytest

from neural_cost import Operation
from neural_cost.core.errors import RecordError, ShapeError

Q, KV = (2, 4, 16, 8), (2, 2, 32, 8)  # grouped-query: 4 query heads share 2 key/value heads
READS = ((2, 4, 16, 8), (2, 4, 16, 8), (2, 4, 16))  # dO, O, the log-sum-exp


def test_attention_backward_is_two_and_a_half_forwards_over_the_executed_pairs():
    attrs = {"causal": True, "skips_masked": True}
    op = Operation("ab", "attention_backward", (Q, KV, KV, *READS), Q, extra_outputs=(KV, KV), attrs=attrs)
    forward = Operation("af", "attention", (Q, KV, KV), Q, attrs=attrs)
    # top-left causal 16 queries by 32 keys: 1 + 2 + ... + 16 = 136 pairs per head, 8 heads
    assert op.cost.flops == 87_040  # 2 * 8 * 136 * (3*8 + 2*8 = 40) = 87,040
    assert op.cost.flops == forward.cost.dense_flops * 136 // (16 * 32) * 5 // 2  # 2.5× the forward's matmuls 34,816
    # the forward also counts its scale and softmax: 8 * (136 * (32 + 6) - 2 * 16 rows) = 8 * 5,136 = 41,088
    assert forward.cost.flops == 41_088
    assert op.cost.dense_flops == 327_680  # 2 * 8 * (16*32) * 40, FlopCounterMode's backward formula
    assert op.cost.transcendentals == 1_088  # 8 * 136 exponentials recomputed
    assert op.cost.read_bytes == 20_992  # 4 * (q 1,024 + k 1,024 + v 1,024 + dO 1,024 + O 1,024 + lse 128)
    assert op.cost.write_bytes == 12_288  # dq, dk, dv: 4 * 3 * 1,024


def test_attention_backward_dense_and_tiled():
    dense = Operation("ab", "attention_backward", (Q, KV, KV), Q)
    assert dense.cost.flops == dense.cost.dense_flops == 327_680  # every one of the 16 * 32 pairs
    tiled = {"causal": True, "skips_masked": True, "causal_blocks": (32, 512)}
    assert Operation("ab", "attention_backward", (Q, KV, KV), Q, attrs=tiled).cost.flops == 327_680  # one tile


def test_attention_backward_rejects_bad_shapes():
    with pytest.raises(ShapeError, match="needs q, k, v as"):
        Operation("ab", "attention_backward", ((4, 16, 8), KV, KV), (4, 16, 8))
    with pytest.raises(ShapeError, match="4 query heads cannot share 3 key/value heads"):
        Operation("ab", "attention_backward", (Q, (2, 3, 32, 8), (2, 3, 32, 8)), Q)
    with pytest.raises(RecordError, match="causal_alignment"):
        Operation("ab", "attention_backward", (Q, KV, KV), Q, attrs={"causal_alignment": "middle"})


def test_qkv_bias_rescale_four_per_embed_feature():
    qkv, heads = (2, 5, 48), (2, 4, 5, 4)  # D = 16 in 4 heads of 4
    op = Operation("tb", "qkv_bias_rescale", (qkv, (48,)), heads, extra_outputs=(heads, heads))
    assert op.cost.flops == 640  # 10 rows * (3D adds + D multiplies = 64) = 640
    assert (op.cost.read_bytes, op.cost.write_bytes) == (2_112, 1_920)  # 4 * (480 + 48); 4 * 480
    stacked = Operation("tb", "qkv_bias_rescale", (qkv, (48,)), (3, *heads))
    assert stacked.cost.flops == 640


def test_qkv_bias_rescale_rejects_bad_shapes():
    with pytest.raises(ShapeError, match=r"must end in 3·embed_dim"):
        Operation("tb", "qkv_bias_rescale", ((2, 5, 47), (47,)), (2, 5, 47))
    with pytest.raises(ShapeError, match="one value per qkv feature"):
        Operation("tb", "qkv_bias_rescale", ((2, 5, 48), (16,)), (3, 2, 4, 5, 4))
    with pytest.raises(ShapeError, match="hold 160 elements"):
        Operation("tb", "qkv_bias_rescale", ((2, 5, 48), (48,)), (2, 4, 5, 4))


@pytest.mark.parametrize(
    ("mode", "output", "flops", "transcendentals"),
    [
        # per unit, from the catalog: add 1, sub 1, mul 1, tanh 1 (+1 transcendental),
        # sigmoid_backward 3, tanh_backward 3, threshold_backward 2
        # lstm: 2 add + 6 mul + tanh + 2 tanh_backward + 3 sigmoid_backward = 2 + 6 + 1 + 6 + 9 = 24;
        # 3 rows * 16 units * 24, one tanh(c') per unit
        ("lstm", (3, 64), 1_152, 48),
        # gru: add + 2 sub + 5 mul + tanh_backward + 2 sigmoid_backward = 1 + 2 + 5 + 3 + 6 = 17: 3 * 16 * 17
        ("gru", (3, 48), 816, 0),
        ("rnn_tanh", (3, 16), 192, 0),  # add + tanh_backward = 4: 3 * 16 * 4
        # add + threshold_backward (compare, select) = 3: 3 * 16 * 3 (was 96 = 3 * 16 * 2, when relu's
        # derivative was counted as a select alone, not the catalog's threshold_backward)
        ("rnn_relu", (3, 16), 144, 0),
    ],
)
def test_rnn_gate_backward_per_unit(mode, output, flops, transcendentals):
    op = Operation("gb", "rnn_gate_backward", (output, (3, 16)), output, attrs={"mode": mode})
    assert (op.cost.flops, op.cost.transcendentals) == (flops, transcendentals)


def test_rnn_gate_backward_rejects_bad_shapes():
    with pytest.raises(ShapeError, match=r"must be the gate gradients \(batch, 4·hidden\)"):
        Operation("gb", "rnn_gate_backward", ((3, 63),), (3, 63), attrs={"mode": "lstm"})
    with pytest.raises(RecordError, match=r"attrs\['mode'\]='lstmp'"):
        Operation("gb", "rnn_gate_backward", ((3, 64),), (3, 64), attrs={"mode": "lstmp"})
