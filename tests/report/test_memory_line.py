"""The distributed report's memory line: one device's memory after sharding, by hand.

One device of 8 runs a data-parallel training step (float32, 4 B per element):
  boundary: x (256, 32) input sharded to (32, 32) = 4,096 B; w1 (32, 64) = 8,192 B and w2 (64, 16)
  = 4,096 B parameters, replicated (whole on every device); out (256, 16) sharded to (32, 16) = 2,048 B.
  parameters 8,192 + 4,096 = 12,288 B (12.3 kB); a training step (dw2 is labeled backward):
  gradients = the trainable parameters ≤ 12,288 B (a report does not say which parameters train:
  every parameter and buffer); optimizer state unknown, Adam's would be ≤ 2 × 12,288 = 24,576 B (24.6 kB).
  activations: outputs mm1 (32, 64) 8,192 B, mm2 (32, 16) 2,048 B, dw2 (64, 16) 4,096 B,
  grad_sum (64, 16) 4,096 B: largest 8,192 B (8.19 kB), all kept 18,432 B (18.4 kB).
"""

import json

import pytest

from neural_cost import HardwareSpec, Operation, SchemaError, TensorSpec, analyze_gap, estimate_operations
from neural_cost.report.load import report_from_dict
from tests.helpers import cpu_measurement

SPEC = HardwareSpec("T", 1e12, 1e11, kind="cpu")
ALL_REDUCE = {"collective": "all_reduce", "group_size": 8}
OPS = (
    Operation("mm1", "matmul", ((32, 32), (32, 64)), (32, 64), "float32"),
    Operation("mm2", "matmul", ((32, 64), (64, 16)), (32, 16), "float32"),
    Operation("dw2", "matmul", ((64, 32), (32, 16)), (64, 16), "float32", attrs={"phase": "backward"}),
    Operation("grad_sum", "collective", ((64, 16),), (64, 16), "float32", attrs=ALL_REDUCE),
)
BOUNDARY = (
    TensorSpec("x", (256, 32), shard_shape=(32, 32)),
    TensorSpec("w1", (32, 64), role="parameter"),
    TensorSpec("w2", (64, 16), role="parameter"),
    TensorSpec("out", (256, 16), role="output", shard_shape=(32, 16)),
)
LINE = (
    "memory per device: parameters 12.3 kB · gradients ≤ 12.3 kB (every parameter and buffer) · optimizer state "
    "unknown: not in the trace (Adam's two moments would be ≤ 24.6 kB) · activations 8.19 kB to 18.4 kB (one "
    "result alive at a time to none freed) (one of 8 devices)"
)


def report(ops=OPS, boundary=BOUNDARY, devices=8, framework=None):
    estimate = estimate_operations(ops, boundary=boundary, devices=devices, framework=framework)
    return analyze_gap(estimate, cpu_measurement(), SPEC)


def memory_lines(text):
    return [line.strip() for line in text.splitlines() if line.strip().startswith("memory per device:")]


def test_a_sharded_training_step_shows_one_devices_memory_after_the_communication_line():
    text = report().render(top=0)
    assert memory_lines(text) == [LINE]
    lines = [line.strip() for line in text.splitlines()]
    assert lines[lines.index(LINE) - 1].startswith("communication: ")


def test_the_profile_counts_sharded_tensors_at_their_shards():
    memory = report().memory
    # inputs: x's shard 32·32·4 = 4,096 B (not 256·32·4 = 32,768); outputs: out's 32·16·4 = 2,048 B
    assert (memory.parameter_bytes, memory.gradient_bytes, memory.input_bytes, memory.output_bytes) == (
        12_288,
        12_288,
        4_096,
        2_048,
    )
    assert (memory.optimizer_state_bytes, memory.training_minimum_bytes, memory.devices) == (None, None, 8)
    assert memory.notes[0] == (
        "2 sharded tensors at the boundary counted at the part one device holds (one of 8 devices); "
        "the others whole on every device"
    )


def test_inference_on_devices_named_only_by_a_collective_shows_parameters_and_activations():
    # no backward record: no gradients, no optimizer state; estimate.devices = 1, group size 8 names the devices
    ops = (OPS[0], OPS[3])
    line = memory_lines(report(ops, devices=1).render(top=0))
    # activations: mm1 8,192 B largest; 8,192 + 4,096 = 12,288 B all kept
    assert line == [
        "memory per device: parameters 12.3 kB · activations 8.19 kB to 12.3 kB "
        "(one result alive at a time to none freed) (one of 8 devices)"
    ]


def test_a_program_on_one_device_has_no_memory_line_and_null_json():
    single = report(OPS[:3], BOUNDARY[1:3], devices=1)
    assert memory_lines(single.render(top=0)) == []
    assert single.to_dict()["analysis"]["memory"] is None


def test_a_step_that_cannot_fit_on_its_device_warns():
    # capacity 20,000 B < parameters + gradients 24,576 B (the optimizer state unknown, so not in the sum)
    small = HardwareSpec("T", 1e12, 1e11, kind="cpu", memory_capacity=20_000)
    estimate = estimate_operations(OPS, boundary=BOUNDARY, devices=8)
    text = analyze_gap(estimate, cpu_measurement(), small).render(top=0)
    assert "warning: parameters and gradients need 24.6 kB, more than the 20.0 kB of T" in text


def test_the_memory_json_survives_a_reload():
    original = report().to_dict()
    assert original["analysis"]["memory"]["parameter_bytes"] == 12_288
    assert original["analysis"]["memory"]["devices"] == 8
    loaded = report_from_dict(json.loads(json.dumps(original)))
    assert loaded.to_dict()["analysis"]["memory"] == original["analysis"]["memory"]
    assert loaded.estimate.boundary == BOUNDARY  # the shard shapes come back


def test_a_saved_memory_of_the_wrong_type_is_refused_by_path():
    data = json.loads(json.dumps(report().to_dict()))
    data["analysis"]["memory"]["parameter_bytes"] = -1
    with pytest.raises(SchemaError, match=r"analysis\.memory\.parameter_bytes"):
        report_from_dict(data)


def test_without_a_marked_parameter_the_parameters_are_unknown_not_zero():
    # a JAX step traced without param_argnums: w1 and w2 are inputs; nothing is derived from 0 B
    unmarked = tuple(TensorSpec(t.name, t.shape, t.dtype, "input", t.shard_shape) for t in BOUNDARY)
    line = memory_lines(report(boundary=unmarked, framework="jax").render(top=0))
    assert line == [
        "memory per device: parameters unknown (JAX: pass param_argnums=) · activations 8.19 kB to 18.4 kB "
        "(one result alive at a time to none freed) (one of 8 devices)"
    ]
    assert memory_lines(report(boundary=unmarked).render(top=0))[0].startswith(
        "memory per device: parameters unknown (the trace marks none) · activations"
    )


def test_a_jax_step_s_optimizer_state_is_an_argument():
    (line,) = memory_lines(report(framework="jax").render(top=0))
    assert "optimizer state unknown: a JAX step's is an argument, counted with the inputs (Adam's two" in line


def test_gradients_are_exact_when_the_trainable_bytes_are_known():
    from neural_cost.analysis.memory import memory_profile

    estimate = report().estimate
    bounded = memory_profile(estimate, training=True, optimizer_state_multiplier=None)
    assert bounded.gradients_upper_bound and bounded.gradient_bytes == 12_288
    assert bounded.notes[1].startswith("gradients and optimizer state counted for every tensor marked a parameter")
    # w2 frozen: 8,192 B of 12,288 train (a PyTorch module says which, profile_model reads it)
    exact = memory_profile(estimate, training=True, optimizer_state_multiplier=2, trainable_bytes=8_192)
    assert (exact.gradients_upper_bound, exact.gradient_bytes, exact.optimizer_state_bytes) == (False, 8_192, 16_384)
