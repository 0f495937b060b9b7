"""layernorm, rmsnorm, groupnorm and batchnorm, counted per the docstring of costs/norms.py.

Per normalised row of L elements: mean L, centre L, variance 2L, rstd 2 (1 rsqrt, counted as a
transcendental), normalise L → 5L + 2; an affine weight adds L multiplies, a bias L adds.
"""

from __future__ import annotations

import pytest

from neural_cost import Operation
from neural_cost.core.errors import RecordError, ShapeError

X = (8, 128, 768)  # 1,024 rows of 768


def test_layernorm_with_weight_and_bias():
    op = Operation("ln", "layernorm", (X, (768,), (768,)), X, "float32")
    # 1,024 * (5*768 + 2 = 3,842) = 3,934,208; affine 2 * 1,024 * 768 = 1,572,864; total 5,507,072
    assert op.cost.flops_by_dtype == {"float32": 5_507_072}
    assert op.cost.transcendentals == 1_024  # one rsqrt per row
    assert op.cost.read_bytes == 3_151_872  # 4 * (786,432 + 768 + 768) = 3,151,872
    assert op.cost.write_bytes == 3_145_728  # 4 * 786,432 = 3,145,728


def test_layernorm_without_affine_and_over_two_dims():
    plain = Operation("ln", "layernorm", (X,), X)
    assert plain.cost.flops == 3_934_208  # 1,024 * 3,842
    two = Operation("ln2", "layernorm", (X, (128, 768)), X, attrs={"normalized_dims": 2})
    # 8 rows of L = 128*768 = 98,304: 8 * (5*98,304 + 2 = 491,522) = 3,932,176; weight 8 * 98,304 = 786,432
    assert two.cost.flops == 4_718_608  # 3,932,176 + 786,432 = 4,718,608
    assert two.cost.transcendentals == 8


def test_rmsnorm():
    weighted = Operation("rms", "rmsnorm", ((4, 512), (512,)), (4, 512), "bfloat16")
    # per row: squares 512 + sum 511 + mean 1 + eps 1 + rsqrt 1 + scale 512 = 3*512 + 2 = 1,538; weight + 512
    assert weighted.cost.flops_by_dtype == {"bfloat16": 8_200}  # 4 * (1,538 + 512) = 8,200
    assert weighted.cost.transcendentals == 4
    assert weighted.cost.read_bytes == 5_120  # 2 bytes * (2,048 + 512) = 5,120
    plain = Operation("rms", "rmsnorm", ((4, 512),), (4, 512), "bfloat16")
    assert plain.cost.flops == 6_152  # 4 * 1,538 = 6,152


def test_groupnorm():
    op = Operation("gn", "groupnorm", ((2, 32, 8, 8), (32,), (32,)), (2, 32, 8, 8), attrs={"groups": 8})
    # rows = 2 samples * 8 groups = 16, L = 2*32*64 / 16 = 256: 16 * (5*256 + 2 = 1,282) = 20,512
    # affine: weight and bias each 1 per element: 2 * 4,096 = 8,192
    assert op.cost.flops == 28_704  # 20,512 + 8,192 = 28,704
    assert op.cost.transcendentals == 16


BN = (4, 16, 10, 10)  # 6,400 elements, 16 channels, L = 4*10*10 = 400 per channel
BN_FULL = (BN, (16,), (16,), (16,), (16,))  # x, weight, bias, running_mean, running_var


def test_batchnorm_inference():
    bare = Operation("bn", "batchnorm", (BN,), BN)
    assert bare.cost.flops == 12_832  # 2 per element (subtract, scale) 12,800 + 2 per channel (eps, rsqrt) 32
    assert bare.cost.transcendentals == 16  # one rsqrt per channel
    full = Operation("bn", "batchnorm", BN_FULL, BN, attrs={"affine": True})
    # folded as PyTorch's CPU kernel and TensorFlow's FusedBatchNorm run it: per channel
    # scale = γ·rsqrt(var + eps), shift = β - mean·scale (add, rsqrt, 2 multiplies, subtract = 5),
    # then y = x·scale + shift: 2 * 6,400 + 5 * 16 = 12,880 (was 25,632: 4 per element + 2 per channel)
    assert full.cost.flops == 12_880
    assert full.cost.transcendentals == 16  # one rsqrt per channel
    assert full.cost.read_bytes == 25_856  # 4 * (6,400 + 4 * 16) = 25,856
    assert full.cost.write_bytes == 25_600  # 4 * 6,400
    off = Operation("bn", "batchnorm", BN_FULL, BN, attrs={"affine": False})
    assert off.cost.flops == 12_832


def test_batchnorm_training():
    bare = Operation("bn", "batchnorm", (BN,), BN, attrs={"training": True})
    # 16 * (5*400 + 2 = 2,002) = 32,032 statistics; running stats 4 * 16 = 64
    assert bare.cost.flops == 32_096  # 32,032 + 64 = 32,096
    full = Operation("bn", "batchnorm", BN_FULL, BN, attrs={"training": True, "affine": True})
    assert full.cost.flops == 44_896  # 32,096 + 2 * 6,400 = 44,896
    assert full.cost.transcendentals == 16


def test_batchnorm_needs_affine_stated_when_it_has_per_channel_inputs():
    import pytest

    from neural_cost import RecordError

    # F.batch_norm(x, running_mean, running_var) also has three inputs: the count cannot tell
    with pytest.raises(RecordError, match=r"2 per-channel inputs.*attrs\['affine'\]"):
        Operation("bn", "batchnorm", (BN, (16,), (16,)), BN)


# --- norm_backward: x̂ 2E (RMS E); grad_input 7E (RMS 5E) + E with γ; grad_weight 2E-P; grad_bias E-P ---


def test_layer_norm_backward_every_gradient():
    x = (4, 8)  # E = 32 elements, P = 8 per-feature parameters
    inputs = (x, x, (4, 1), (4, 1), (8,))  # dy, x, mean, rstd, weight
    op = Operation("lnb", "norm_backward", inputs, x, extra_outputs=((8,), (8,)), attrs={"affine": True})
    # x̂ 64 + grad_input 7·32 + 32 = 256 + grad_weight 64 - 8 = 56 + grad_bias 32 - 8 = 24 → 400
    assert op.cost.flops_by_dtype == {"float32": 400}
    assert op.cost.transcendentals == 0
    assert op.cost.read_bytes == 320  # 4 * (32 + 32 + 4 + 4 + 8) = 320
    assert op.cost.write_bytes == 192  # 4 * (32 + 8 + 8) = 192


def test_rms_norm_backward_has_no_centring_and_no_bias():
    x = (4, 8)
    attrs = {"norm": "rms", "affine": True}
    op = Operation("rmsb", "norm_backward", (x, x, (4, 1), (8,)), x, extra_outputs=((8,),), attrs=attrs)
    assert op.cost.flops == 280  # x̂ 32 + grad_input 5·32 + 32 = 192 + grad_weight 64 - 8 = 56 → 280
    with pytest.raises(RecordError, match="RMS norm has no bias"):
        Operation("rmsb", "norm_backward", (x, x), x, attrs={"norm": "rms", "grad_bias": True})


def test_batch_norm_backward_training_and_eval():
    x = (2, 3, 4)  # E = 24, C = 3
    input_only = {"grad_weight": False, "grad_bias": False}
    train = Operation("bnb", "norm_backward", (x, x, (3,), (3,)), x, attrs={"norm": "batch", **input_only})
    assert train.cost.flops == 216  # x̂ 2·24 + grad_input 7·24 = 9 · 24 = 216
    attrs = {"norm": "batch", "training": False, "affine": True}
    only_input = Operation("bne", "norm_backward", (x, x, (3,), (3,), (3,)), x, attrs={**attrs, **input_only})
    assert only_input.cost.flops == 54  # rstd 2·3 + dy·γ·rstd 2·24 = 54
    assert only_input.cost.transcendentals == 3  # one rsqrt per channel
    every = Operation("bne", "norm_backward", (x, x, (3,), (3,), (3,)), x, attrs=attrs)
    assert every.cost.flops == 168  # 54 + grad_weight (x̂ 48 + Σ dy·x̂ 48 - 3 = 93) + grad_bias 24 - 3 = 21


def test_group_norm_backward_weight_gradient_only():
    x = (2, 4, 3)  # E = 24, P = 4 channels
    attrs = {"norm": "group", "grad_input": False, "grad_bias": False}
    op = Operation("gnb", "norm_backward", (x, x, (2, 1), (2, 1)), (4,), attrs=attrs)
    assert op.cost.flops == 92  # x̂ 48 + Σ dy·x̂ 48 - 4 = 92


def test_norm_backward_rejects_bad_shapes_and_attrs():
    with pytest.raises(ShapeError, match=r"dy \(4, 7\) must have x's shape"):
        Operation("b", "norm_backward", ((4, 7), (4, 8)), (4, 8))
    with pytest.raises(ShapeError, match="does not fit its inputs"):
        Operation("b", "norm_backward", ((4, 8), (4, 8)), (8,))  # grad_input asked: x's shape
    with pytest.raises(ShapeError, match=r"needs x \(N, C, \*spatial\)"):
        Operation("b", "norm_backward", ((8,), (8,)), (8,), attrs={"norm": "group"})
    with pytest.raises(RecordError, match=r"attrs\['norm'\]='instance'"):
        Operation("b", "norm_backward", ((4, 8), (4, 8)), (4, 8), attrs={"norm": "instance"})
