"""MFU and HFU of a training step, by hand (``analysis/utilization.py``).

A hand-built step: a forward matmul (64,64)@(64,64) float32 — 2·64³ = 524,288 FLOPs — and a
bias-free add of two (64,64) — 4,096 FLOPs —; its backward: the same matmul recomputed
(labeled ``recompute``: 524,288) and two gradient matmuls (2 × 524,288 = 1,048,576).
  model    = 524,288 + 4,096 + 1,048,576 = 1,576,960 FLOPs
  hardware = model + 524,288             = 2,101,248 FLOPs
Spec: 1 TFLOP/s (float32), observed 5 µs on 1 device → capacity 5e-6 × 1e12 = 5,000,000 FLOPs.
  MFU = 1,576,960 / 5,000,000 = 0.315392 (31.5%); HFU = 2,101,248 / 5,000,000 = 0.4202496 (42.0%).
"""

import json

import pytest

from neural_cost import HardwareSpec, Operation, analyze_gap, estimate_operations
from neural_cost.analysis.utilization import utilization
from neural_cost.core.errors import RecordError
from neural_cost.report.load import report_from_dict
from tests.helpers import cpu_measurement

MM = ((64, 64), (64, 64))
BACKWARD = {"phase": "backward"}
STEP = (
    Operation("mm", "matmul", MM, (64, 64), "float32"),
    Operation("add", "elementwise", MM, (64, 64), "float32", attrs={"op": "add"}),
    Operation("mm", "matmul", MM, (64, 64), "float32", attrs={**BACKWARD, "recompute": "true"}),
    Operation("mm_grad", "matmul", MM, (64, 64), "float32", attrs=BACKWARD, count=2),
)
SPEC = HardwareSpec("T", 1e12, 1e11, kind="cpu", source="test table")
OBSERVED = cpu_measurement((5e-6,) * 5)


def report_of(operations, spec=SPEC, measurement=OBSERVED, framework=None):
    return analyze_gap(estimate_operations(operations, framework=framework), measurement, spec)


def test_mfu_and_hfu_by_hand():
    report = report_of(STEP)
    u = report.utilization
    assert (u.model_flops, u.hardware_flops, u.recomputed_flops) == (1_576_960, 2_101_248, 524_288)
    assert (u.dtype, u.peak, u.devices) == ("float32", 1e12, 1)
    assert u.mfu == pytest.approx(0.315392) and u.hfu == pytest.approx(0.4202496)
    assert (
        "  utilization: MFU 31.5% · HFU 42.0% (model 1.58 MFLOP, hardware 2.10 MFLOP incl. 524 kFLOP recomputed; "
        "float32 peak 1.00 TFLOP/s (test table) × 1 device)\n"
    ) in report.render(top=0)
    assert report.to_dict()["analysis"]["utilization"] == {
        "model_flops": 1_576_960,
        "hardware_flops": 2_101_248,
        "recomputed_flops": 524_288,
        "mfu": u.mfu,
        "hfu": u.hfu,
        "peak": 1e12,
        "dtype": "float32",
        "devices": 1,
    }


def test_the_labels_survive_a_saved_report():
    report = report_of(STEP)
    loaded = report_from_dict(json.loads(json.dumps(report.to_dict())))
    assert loaded.utilization == report.utilization


def test_without_recomputation_model_equals_hardware():
    report = report_of(STEP[:2] + STEP[3:])
    u = report.utilization
    assert u.model_flops == u.hardware_flops == 1_576_960 and u.mfu == u.hfu == pytest.approx(0.315392)
    assert "(model = hardware 1.58 MFLOP, nothing recomputed; float32 peak" in report.render(top=0)


def test_inference_has_no_utilization():
    forward = STEP[:2]
    report = report_of(forward)
    assert report.utilization is None
    assert "utilization:" not in report.render(top=0)
    assert report.to_dict()["analysis"]["utilization"] is None


def test_a_backward_is_told_by_each_framework_s_marks():
    plain = [op for op in STEP if not op.attrs]
    torch_step = [*plain, Operation("mm_grad", "matmul", MM, (64, 64), "float32", scope="backward")]
    tf_step = [*plain, Operation("MatMul", "matmul", MM, (64, 64), "float32", scope="gradient_tape/dense")]
    assert report_of(torch_step, framework="torch").utilization is not None
    assert report_of(tf_step, framework="tensorflow").utilization is not None
    # A JAX module that happens to be called "backward" is no backward pass.
    assert report_of(torch_step, framework="jax").utilization is None


def test_the_peak_is_that_of_the_dtype_of_the_matrix_flops():
    # bfloat16 matmuls: forward and backward 2 × 524,288 = 1,048,576; a float32 add over
    # (1024,1024): 1,048,576 FLOPs — as many, but no matrix FLOPs, so the peak is bfloat16's.
    # model = hardware = 2,097,152; capacity 1e-6 × 4e12 = 4,000,000 → MFU = 0.524288.
    ops = (
        Operation("mm", "matmul", MM, (64, 64), "bfloat16"),
        Operation("mm_grad", "matmul", MM, (64, 64), "bfloat16", attrs=BACKWARD),
        Operation("add", "elementwise", ((1024, 1024), (1024, 1024)), (1024, 1024), "float32", attrs={"op": "add"}),
    )
    spec = HardwareSpec("G", 2e12, 1e12, kind="gpu", peak_flops_by_dtype={"bfloat16": 4e12, "float32": 2e12})
    u = report_of(ops, spec, cpu_measurement((1e-6,) * 5)).utilization
    assert (u.dtype, u.peak, u.matrix_dtype) == ("bfloat16", 4e12, True)
    assert u.mfu == pytest.approx(0.524288)


def test_without_matrix_flops_the_dtype_with_most_flops_is_said():
    # add 4,096 float32 FLOPs forward and, in the backward, 4,096 more: 8,192 over 5,000,000.
    ops = (STEP[1], Operation("add", "elementwise", MM, (64, 64), "float32", attrs={"op": "add", **BACKWARD}))
    report = report_of(ops)
    assert report.utilization.mfu == pytest.approx(8_192 / 5_000_000)
    assert "float32 (no matmul or convolution FLOPs) peak 1.00 TFLOP/s" in report.render(top=0)


def test_devices_from_collectives_scale_the_step_not_the_ratio():
    # One device's program of 8 (a psum of the (64,64) result over 8: 7/8 · 4,096 = 3,584
    # reduction FLOPs, hardware but not model FLOPs): model 524,288 + 524,288 = 1,048,576 per
    # device, hardware 1,052,160; the step is 8 × those, 8,388,608 and 8,417,280 FLOPs, on
    # 8 × 1 TFLOP/s for 5 µs (40,000,000): MFU 0.2097152 and HFU 0.210432, one device's ratios.
    psum = Operation(
        "psum", "collective", ((64, 64),), (64, 64), "float32", attrs={"collective": "all_reduce", "group_size": 8}
    )
    ops = (STEP[0], Operation("mm_grad", "matmul", MM, (64, 64), "float32", attrs=BACKWARD), psum)
    report = report_of(ops)
    u = report.utilization
    assert (u.devices, u.model_flops, u.hardware_flops) == (8, 8_388_608, 8_417_280)
    assert u.mfu == pytest.approx(0.2097152) and u.hfu == pytest.approx(0.210432)
    assert (u.recomputed_flops, u.partitioning_flops) == (0, 8 * 3_584)
    assert "× 8 devices)" in report.render(top=0)
    given = utilization(report, devices=16)  # more devices than one group: still one device's program
    assert (given.devices, given.model_flops) == (16, 16_777_216) and given.mfu == pytest.approx(0.2097152)


def test_a_partitioned_program_is_one_device_s_share():
    # A sharded jit's trace (devices=8: each record is one device's share) with no collective
    # record: the step is 8 × 1,576,960 = 12,615,680 model FLOPs (hardware 8 × 2,101,248 =
    # 16,809,984) on 8 × 1 TFLOP/s for 5 µs (40,000,000): MFU 0.315392, one device's own ratio.
    report = analyze_gap(estimate_operations(STEP, devices=8), OBSERVED, SPEC)
    assert report.estimate.devices == 8
    u = report.utilization
    assert (u.devices, u.model_flops, u.hardware_flops) == (8, 12_615_680, 16_809_984)
    assert u.mfu == pytest.approx(0.315392) and u.hfu == pytest.approx(0.4202496)
    # a collective over 4 of the 8 devices does not make the program 4 devices'
    psum = Operation(
        "psum", "collective", ((64, 64),), (64, 64), "float32", attrs={"collective": "all_reduce", "group_size": 4}
    )
    grouped = analyze_gap(estimate_operations((*STEP, psum), devices=8), OBSERVED, SPEC).utilization
    assert grouped.devices == 8 and grouped.model_flops == 8 * 1_576_960  # the psum's adds train nothing
    assert grouped.hardware_flops == 8 * (2_101_248 + 3 * 4_096 // 4)  # + 3/4·4,096 adds on each device


def test_a_partitioned_program_s_model_flops_are_its_global_count():
    # The adapter's count before the per-device rewrite, 12,000,000 (say: work each device repeats
    # counted once), is the model FLOPs as given; hardware stays one device's × 8: 16,809,984, of
    # which 8 × 524,288 = 4,194,304 recomputed, and 16,809,984 - 12,000,000 - 4,194,304 = 615,680
    # more than the model's (repeated work). MFU 12,000,000 / 40,000,000 = 0.3.
    report = analyze_gap(estimate_operations(STEP, devices=8, global_model_flops=12_000_000), OBSERVED, SPEC)
    u = report.utilization
    assert (u.model_flops, u.hardware_flops, u.recomputed_flops, u.partitioning_flops) == (
        12_000_000,
        16_809_984,
        4_194_304,
        615_680,
    )
    assert u.mfu == pytest.approx(0.3) and u.hfu == pytest.approx(0.4202496)
    assert u.notes[0].startswith("model FLOPs: the step's records at their global shapes")
    saved = report.to_dict()
    assert saved["estimate"]["global_model_flops"] == 12_000_000 and saved["analysis"]["utilization"]["notes"]
    assert report_from_dict(json.loads(json.dumps(saved))).utilization == u  # the global count survives a reload
    assert "global_model_flops" not in report_of(STEP).to_dict()["estimate"]  # written only when set


@pytest.mark.parametrize("value", [-1, 2.5, True, "7"])
def test_a_global_model_count_must_be_a_non_negative_integer(value):
    with pytest.raises(RecordError, match=r"CostEstimate\.global_model_flops=.* must be None or a non-negative"):
        estimate_operations(STEP, devices=8, global_model_flops=value)


def test_devices_given_for_a_whole_step_divide_it():
    # No collectives: the trace is the whole step, spread over the 4 devices given:
    # 1,576,960 / (5e-6 · 1e12 · 4) = 0.078848.
    u = utilization(report_of(STEP), devices=4)
    assert (u.devices, u.model_flops) == (4, 1_576_960) and u.mfu == pytest.approx(0.078848)


@pytest.mark.parametrize("devices", [0, -1, 2.0, True])
def test_devices_must_be_a_positive_integer(devices):
    with pytest.raises(RecordError, match=r"utilization: devices=.* must be a positive integer"):
        utilization(report_of(STEP), devices=devices)


def test_labels_are_checked_and_never_change_a_cost():
    labeled = STEP[0].relabeled(STEP[2].attrs)
    assert labeled.cost == STEP[0].cost and labeled.attrs["recompute"] == "true"
    with pytest.raises(RecordError, match="recompute"):
        Operation("mm", "matmul", MM, (64, 64), attrs={"recompute": True})
    with pytest.raises(RecordError, match="phase"):
        Operation("mm", "matmul", MM, (64, 64), attrs={"phase": "backwards"})


# A hand-built transformer LM training step: batch B=2 of T=4 int32 token ids, a (V=10, D=8)
# embedding table, one attention layer (L=1) with H=2 heads of Q=4, one (8,8) weight w.
#   embedding: 0 FLOPs (a lookup).
#   attention (non-causal, fused): B·H·(T·T·(2·(Q+Q)+6) − 2·T) = 4·(16·22 − 8) = 1,376.
#   w forward (8 tokens, 8)@(8, 8): 2·8·8·8 = 1,024; its two gradients 2 × 1,024 = 2,048.
#   attention backward, four (2,2,4,4)@(2,2,4,4): 4 × 2·2·2·4·4·4 = 2,048.
#   model = 1,376 + 1,024 + 2,048 + 2,048 = 6,496 FLOPs.
# PaLM appendix B: N = 64 (w; the 80-element table is embedding), tokens = B·T = 8:
#   8 × (6·64 + 12·1·2·4·4) = 8 × (384 + 384) = 6,144; ours is 6,496/6,144 − 1 = +5.7% (+6%).
# Throughput over 5 µs: 2 / 5e-6 = 400,000 samples/s; × 4 = 1,600,000 tokens/s.
def lm_step(table=True, seq=4):
    from neural_cost.core.records import TensorSpec

    qkv = (2, 2, seq, 4)
    ops = (
        Operation("embed", "embedding", ((10, 8), (2, 4)), (2, 4, 8), "float32", input_dtypes=("float32", "int32")),
        Operation("attn", "attention", (qkv,) * 3, qkv, "float32"),
        Operation("w", "matmul", ((8, 8), (8, 8)), (8, 8), "float32"),
        Operation("w_grad", "matmul", ((8, 8), (8, 8)), (8, 8), "float32", attrs=BACKWARD, count=2),
        Operation("attn_grad", "matmul", ((2, 2, 4, 4),) * 2, (2, 2, 4, 4), "float32", attrs=BACKWARD, count=4),
    )
    parameters = [TensorSpec("table", (10, 8), "float32", "parameter")] if table else []
    boundary = [
        TensorSpec("tokens", (2, 4), "int32", "input"),
        *parameters,
        TensorSpec("w", (8, 8), "float32", "parameter"),
    ]
    shapes = [("tokens", (2, 4)), ("table", (10, 8)), ("w", (8, 8))]
    return analyze_gap(estimate_operations(ops, boundary=boundary, input_shapes=shapes), OBSERVED, SPEC)


def test_tokens_per_second_and_the_closed_form_by_hand():
    report = lm_step()
    u = report.utilization
    assert (u.model_flops, u.batch, u.sequence, u.closed_form_flops) == (6_496, 2, 4, 6_144)
    assert u.samples_per_second == pytest.approx(400_000) and u.tokens_per_second == pytest.approx(1_600_000)
    text = report.render(top=0)
    assert "inputs: tokens (2, 4), table (10, 8), w (8, 8) · batch 2 (leading dim of tokens)\n" in text
    assert (
        "× 1 device) · 1,600,000 tokens/s (batch 2 × seq 4); closed form 6·N·T + attention: 6.14 kFLOP "
        "(ours 6.50 kFLOP, +6%: ours counts elementwise, norms and softmax the formula leaves out)\n"
    ) in text
    saved = report.to_dict()["analysis"]["utilization"]
    assert saved["closed_form_flops"] == 6_144 and saved["tokens_per_second"] == pytest.approx(1_600_000)


def test_samples_per_second_for_a_float_input():
    # STEP's input x (64, 64) float32: batch 64, no tokens; 64 / 5e-6 = 12,800,000 samples/s.
    from neural_cost.core.records import TensorSpec

    estimate = estimate_operations(
        STEP, boundary=[TensorSpec("x", (64, 64), "float32", "input")], input_shapes=[("x", (64, 64))]
    )
    u = analyze_gap(estimate, OBSERVED, SPEC).utilization
    assert (u.batch, u.sequence, u.tokens_per_second, u.closed_form_flops) == (64, None, None, None)
    line = analyze_gap(estimate, OBSERVED, SPEC).render(top=0)
    assert "× 1 device) · 12,800,000 samples/s\n" in line and "closed form" not in line


def test_no_closed_form_without_every_term():
    # The table not a parameter of the boundary: N unreadable. An attention over 5 positions
    # where the tokens have 4: T unreadable. Neither guesses; throughput stays.
    for report in (lm_step(table=False), lm_step(seq=5)):
        u = report.utilization
        assert u.closed_form_flops is None and u.sequence == 4
        assert "closed form" not in report.render(top=0)


def test_no_closed_form_for_a_partitioned_program():
    # The same LM step as one device's share of 8 (estimate.devices = 8): its attention records are
    # a device's, N and the batch global, so 6·N·T and 12·L·H·Q·T cannot be put together. Before,
    # the check printed 8 × 6,144 = 49,152: counted on every device as if each held the whole model.
    lm = lm_step().estimate
    partitioned = estimate_operations(
        [row.operation for row in lm.by_operation], boundary=lm.boundary, input_shapes=lm.input_shapes, devices=8
    )
    report = analyze_gap(partitioned, OBSERVED, SPEC)
    u = report.utilization
    assert (u.closed_form_flops, u.model_flops, u.batch, u.sequence) == (None, 8 * 6_496, 2, 4)
    assert u.notes == (
        "no closed-form check: a partitioned program's records are one device's share (its attention cut with "
        "them), while the parameters and the batch are global",
    )
    assert "closed form" not in report.render(top=0)


def test_closed_form_of_a_tiny_torch_gpt_by_hand():
    # Two pre-norm blocks (D=32, H=4, Q=8), an embedding (100, 32) and an untied head (100, 32)
    # traced on int64 tokens (2, 16). Parameters 31,808 (= sum of numel); N = 31,808 − 3,200
    # (the table; the head's (100, 32) stays) = 28,608. Per token 6·28,608 + 12·2·4·8·16 =
    # 171,648 + 12,288 = 183,936; × 32 tokens = 5,885,952.
    torch = pytest.importorskip("torch")
    from torch import nn

    from neural_cost import estimate_trace
    from neural_cost.adapters import TorchAdapter

    class Block(nn.Module):
        def __init__(self, d=32, h=4):
            super().__init__()
            self.h, self.ln1, self.ln2 = h, nn.LayerNorm(d), nn.LayerNorm(d)
            self.qkv, self.o = nn.Linear(d, 3 * d), nn.Linear(d, d)
            self.fc, self.pr = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

        def forward(self, x):
            b, t, d = x.shape
            q, k, v = (y.view(b, t, self.h, d // self.h).transpose(1, 2) for y in self.qkv(self.ln1(x)).split(d, -1))
            a = nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.o(a.transpose(1, 2).reshape(b, t, d))
            return x + self.pr(nn.functional.gelu(self.fc(self.ln2(x))))

    model = nn.Sequential(nn.Embedding(100, 32), Block(), Block(), nn.Linear(32, 100, bias=False))
    assert sum(p.numel() for p in model.parameters()) == 31_808
    tokens = torch.randint(0, 100, (2, 16))
    estimate = estimate_trace(TorchAdapter().trace(model, (tokens,), training=True, loss_fn=lambda out: out.sum()))
    u = analyze_gap(estimate, OBSERVED, SPEC).utilization
    assert (u.batch, u.sequence, u.closed_form_flops) == (2, 16, 5_885_952)
