"""Every single-field corruption of a real report loads with the same numbers, or fails with
SchemaError — never another exception (issue 12, item 3).

Real reports: the bundled JAX MLP (``neural_cost.examples.jax_mlp``, small sizes) traced and
timed by JaxAdapter, a PyTorch MLP by TorchAdapter, and a framework-free report with every
optional section filled (scopes, a loop, a boundary, unmodeled operations, two dtypes, a
cross-check, allocator figures, kernels and memory levels, a profiled pass with events, an
unmatched event and notes). Hypothesis draws corruptions of one field each — a value
replaced (wrong types, NaN, ±Infinity, negatives, 10^400, strings, deep nesting), a key
deleted or added, a number nudged, a byte of the file replaced or the file cut — with a
fixed derandomised seed: the same ~2,700 cases every run.

What "the same numbers" means: a report that loads must hold the original's counts, times
and rates, unless the corrupted field is itself a free input (a timing sample, a hardware
figure, the coverage threshold), in which case every derived number must still be finite.
"""

import json
import math
import os
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from neural_cost import (
    Coverage,
    HardwareSpec,
    Kernel,
    LoopAssumption,
    Measurement,
    MemoryLevel,
    Operation,
    SchemaError,
    TensorSpec,
    analyze_gap,
    diff_reports,
    estimate_operations,
    load_report,
)
from neural_cost.core.profile import MeasuredKernel, Profile, ProfileEvent

DEEP = "\x00deep\x00"  # replaced in the text by nesting json.dumps could not write
VALUES = [
    None,
    True,
    False,
    0,
    1,
    -1,
    -5,
    0.5,
    -0.0,
    1e-320,
    1e308,
    2**63,
    -(2**63) - 1,
    10**400,
    float("nan"),
    float("inf"),
    float("-inf"),
    "123",
    "",
    "float32",
    "\x1b[31m\r",
    [],
    {},
    [1, 2],
    [[1, 2]],
    {"a": 1},
    DEEP,
]
# Free inputs: a different valid value there is a different, legitimate report.
# A profiled pass is an input too: another valid profile gives the rows other measured times;
# so is which operations a kernel runs unmodeled (it moves time coverage, nothing else).
FREE = re.compile(
    r"^(measurement\.(samples_seconds|warmup_seconds|compile_seconds|peak_memory_bytes)|hardware|analysis$"
    r"|analysis\.coverage_threshold|estimate\.kernels\[\d+\]\.(footprint_bytes|unmodeled)|profile)"
)


def _path_text(path):
    text = ""
    for key in path:
        text += f"[{key}]" if isinstance(key, int) else (f".{key}" if text else key)
    return text


def _walk(value, path=()):
    yield path, value
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _walk(item, (*path, key))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _walk(item, (*path, i))


def first_difference(a, b, path=()):
    """The path of the first place where two JSON values differ (None if they are equal)."""
    if type(a) is not type(b) or not isinstance(a, (dict, list)):
        return None if a == b or (a != a and b != b) else path
    keys = list(a) + [k for k in b if k not in a] if isinstance(a, dict) else range(max(len(a), len(b)))
    for key in keys:
        if isinstance(a, dict) and (key not in a or key not in b):
            return (*path, key)
        if isinstance(a, list) and key >= min(len(a), len(b)):
            return (*path, key)
        found = first_difference(a[key], b[key], (*path, key))
        if found is not None:
            return found
    return None


def numbers(report):
    """Every count, time and rate a loaded report holds (names and shapes aside)."""
    e, m, h = report.estimate, report.measurement, report.hardware
    rows = [
        (dict(r.flops_by_dtype), r.read_bytes, r.write_bytes, r.dense_flops, r.transcendentals) for r in e.by_operation
    ]
    scopes = [(s.scope, dict(s.flops_by_dtype), s.read_bytes, s.write_bytes, s.executions) for s in e.by_scope]
    counts = [op.count for op in e.operations]
    coverage = (
        e.coverage.total,
        e.coverage.modeled,
        e.coverage.free,
        sorted(c for _, c in e.coverage.unmodeled),
        sorted((f, b) for _, f, b in e.coverage.unmodeled_work),
    )
    estimate = (
        dict(e.flops_by_dtype),
        e.read_bytes,
        e.write_bytes,
        e.compulsory_bytes,
        e.dense_flops,
        e.transcendentals,
    )
    timing = (m.samples_seconds, m.warmup_seconds, m.compile_seconds, m.peak_memory_bytes)
    spec = (h.peak_flops, h.memory_bandwidth, h.peak_flops_by_dtype, h.memory_capacity)
    analysis = (report.compute_seconds, report.memory_seconds, report.compulsory_seconds, report.coverage_threshold)
    kernels = [
        (k.operations, dict(k.flops_by_dtype), k.traffic_bytes, k.footprint_bytes, k.executions) for k in e.kernels
    ]
    levels = [(lv.capacity_bytes, lv.bandwidth) for lv in h.memory_levels]
    bound = (report.bound_seconds, e.compiled_bytes, [(r.bound_seconds, r.traffic_bytes) for r in report.kernel_rows])
    measured = (
        [(r.measured_seconds, r.events) for r in report.kernel_rows],
        [(r.measured_seconds, r.shared) for r in report.operation_rows],
        [r.measured_seconds for r in report.scope_rows],
        report.time_coverage,
        report.profile,
    )
    return (estimate, rows, scopes, counts, coverage, timing, spec, analysis, kernels, levels, bound, measured)


def corrupt(doc, corruption):
    """The file text of ``doc`` with one corruption applied, and the path it touched."""
    kind, path, value = corruption
    doc = json.loads(json.dumps(doc))
    if kind == "bytes":  # path: an offset into the file; value: the bytes that replace the rest, or b""
        raw = json.dumps(doc).encode()
        offset = path % len(raw)
        raw = raw[:offset] + value + (raw[offset + 1 :] if value else b"")
        try:  # the field the edit landed in: a key renamed is that key deleted
            touched = first_difference(doc, json.loads(raw))
        except ValueError:
            touched = ()
        return raw, touched or ()
    if kind == "add_key":
        target = doc
        for key in path:
            target = target[key]
        if isinstance(target, dict):
            target["extra" if value != "float32" else "float32_"] = value
        else:
            target.append(value)
    else:
        *parent_path, last = path
        parent = doc
        for key in parent_path:
            parent = parent[key]
        old = parent[last]
        if kind == "replace":
            parent[last] = value
        elif kind == "delete":
            del parent[last]
        elif kind == "nudge":
            parent[last] = old + value if isinstance(old, int) and not isinstance(old, bool) else old * 2
        elif kind == "retype":
            parent[last] = str(old) if not isinstance(old, str) else (int(old) if old.isdigit() else [old])
    text = json.dumps(doc)
    text = text.replace(json.dumps(DEEP), "[" * 100_000 + "]" * 100_000)
    return text.encode(), path


def corruptions(doc):
    paths = [p for p, _ in _walk(doc) if p]
    scalars = [p for p, v in _walk(doc) if p and not isinstance(v, (dict, list))]
    numeric = [p for p, v in _walk(doc) if p and type(v) in (int, float)]
    containers = [p for p, v in _walk(doc) if isinstance(v, (dict, list))]
    size = len(json.dumps(doc))
    return st.one_of(
        st.tuples(st.just("replace"), st.sampled_from(paths), st.sampled_from(VALUES)),
        st.tuples(st.just("delete"), st.sampled_from(paths), st.none()),
        st.tuples(st.just("add_key"), st.sampled_from(containers), st.sampled_from(VALUES)),
        st.tuples(st.just("nudge"), st.sampled_from(numeric), st.sampled_from([1, -1])),
        st.tuples(st.just("retype"), st.sampled_from(scalars), st.none()),
        st.tuples(st.just("bytes"), st.integers(0, size - 1), st.sampled_from([b"", b"\xff", b"\x00", b"[", b'"'])),
    )


def check(doc, original, corruption, path_file):
    raw, path = corrupt(doc, corruption)
    path_file.write_bytes(raw)
    try:
        loaded = load_report(path_file)
    except SchemaError as error:
        assert str(error).startswith(f"{path_file}: "), error
        return "refused"
    text = json.dumps(loaded.to_dict(), allow_nan=False)  # every number it holds is finite
    assert "NaN" not in text and "Infinity" not in text
    loaded.render(group_by_scope=True)
    diff_reports(original, loaded)
    if not FREE.match(_path_text(path)):
        assert numbers(loaded) == numbers(original), corruption
    else:
        assert all(math.isfinite(x) for x in (loaded.bound_seconds, loaded.efficiency, loaded.observed_seconds))
    return "loaded"


def handmade_report():
    ops = [
        Operation("embed", "gather", ((1000, 64), (8, 16)), (8, 16, 64), input_dtypes=("float32", "int32")),
        Operation("fc1", "matmul", ((128, 64), (64, 256)), (128, 256), "bfloat16", scope="block/mlp", count=4),
        Operation("act", "elementwise", ((128, 256),), (128, 256), "bfloat16", scope="block/mlp", attrs={"op": "tanh"}),
        Operation("fc2", "matmul", ((128, 256), (256, 64)), (128, 64), scope="block/out"),
        Operation("norm", "layernorm", ((128, 64), (64,), (64,)), (128, 64), scope="block/out"),
    ]
    count = sum(op.count for op in ops) + 2
    # The SVD of a float32 (64, 64) at its elementwise floor: outputs U, S, Vh = 64·64 + 64 + 64·64 = 8,256
    # elements (FLOPs); bytes read 16,384 + written 8,256·4 = 33,024 → 49,408.
    coverage = Coverage(
        total=count + 1,
        modeled=count - 2,
        free=2,
        unmodeled=(("aten::svd", 1),),
        static_total=9,
        unmodeled_work=(("aten::svd", 8_256, 49_408),),
    )
    estimate = estimate_operations(
        ops,
        coverage=coverage,
        boundary=[TensorSpec("tokens", (8, 16), "int32"), TensorSpec("y", (128, 64), role="output")],
        input_shapes=[("tokens", (8, 16))],
        loop_assumptions=[LoopAssumption("layers", 4, "default", scope="block", location="model.py:12")],
        framework="custom",
        notes=["a note"],
        cross_check={"source": "XLA cost_analysis", "flops": 1.5e6, "bytes": None},
        # fc1 and act fused (×4), a copy that executes no record; embed, fc2 and norm unmapped
        kernels=[
            Kernel("fusion.1", (1, 2), traffic_bytes=98_304, footprint_bytes=98_304, executions=4, kind="fusion"),
            Kernel("copy.2", (), traffic_bytes=65_536, footprint_bytes=32_768, scopes=("block/out",), kind="copy"),
        ],
        kernel_source="XLA optimized HLO",
    )
    spec = HardwareSpec(
        "H100",
        67e12,
        3.35e12,
        kind="gpu",
        peak_flops_by_dtype={"bfloat16": 989e12},
        memory_capacity=80 * 10**9,
        memory_levels=(MemoryLevel("L2", 50 * 10**6, 10e12), MemoryLevel("HBM", 80 * 10**9)),
    )
    timing = Measurement(
        (2e-5, 2.2e-5, 2.1e-5),
        device="cuda:0",
        device_kind="gpu",
        warmup_seconds=(1e-4,),
        peak_memory_bytes=10**6,
        allocator={"reserved_bytes": 2 * 10**6},
        compile_seconds=0.5,
    )
    # 3 profiled runs: fusion.1 ×4 per run (12 events), copy.2 once per run; one memset matched no kernel
    profile = Profile(
        runs=3,
        wall_seconds=90e-6,
        kernels=(MeasuredKernel(0, 36e-6, 12), MeasuredKernel(1, 9e-6, 3)),
        kernel_seconds=45e-6,
        source="test profiler",
        unmatched=(("memset", 3e-6, 3),),
        notes=("a profile note",),
        events=(ProfileEvent(0, 0.0, 3e-6), ProfileEvent(1, 3e-6, 3e-6, thread=7)),
    )
    return analyze_gap(
        estimate, timing, spec, coverage_threshold=0.5, profile=profile, profile_notes=("a note on the profile",)
    )


def jax_report():
    pytest.importorskip("jax")
    from neural_cost import estimate_trace
    from neural_cost.adapters import JaxAdapter
    from neural_cost.examples.jax_mlp import build

    forward, (params, x) = build(batch=8, d_in=32, hidden=64, d_out=16)
    adapter = JaxAdapter()
    trace = adapter.trace(forward, (params, x), param_argnums=0)
    return analyze_gap(
        estimate_trace(trace),
        adapter.benchmark(forward, params, x, warmup=1, repeats=5),
        HardwareSpec("cpu", 1e11, 2e10),
    )


def torch_report():
    torch = pytest.importorskip("torch")
    from neural_cost import estimate_trace
    from neural_cost.adapters import TorchAdapter

    model = torch.nn.Sequential(
        torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.LayerNorm(64), torch.nn.Linear(64, 8)
    )
    x = torch.randn(8, 32)
    adapter = TorchAdapter()
    trace = adapter.trace(model, (x,))
    return analyze_gap(
        estimate_trace(trace), adapter.benchmark(model, x, warmup=1, repeats=5), HardwareSpec("cpu", 1e11, 2e10)
    )


@pytest.mark.slow
@pytest.mark.parametrize(("make", "examples"), [(handmade_report, 900), (jax_report, 1100), (torch_report, 700)])
def test_single_field_corruptions_load_the_same_numbers_or_fail_with_schema_error(make, examples, tmp_path_factory):
    original_report = make()
    doc = json.loads(json.dumps(original_report.to_dict()))
    path_file = tmp_path_factory.mktemp("fuzz") / "report.json"
    path_file.write_text(json.dumps(doc))
    original = load_report(path_file)
    assert numbers(original) == numbers(original_report)  # the uncorrupted file round-trips exactly
    outcomes = {"refused": 0, "loaded": 0}

    @settings(
        max_examples=examples,
        derandomize=True,
        database=None,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(corruptions(doc))
    def run(corruption):
        outcomes[check(doc, original, corruption, path_file)] += 1

    run()
    # Both outcomes occur: extra keys and free inputs load; broken totals and types are refused.
    assert outcomes["refused"] > examples // 4 and outcomes["loaded"] > examples // 20, outcomes
    os.remove(path_file)
