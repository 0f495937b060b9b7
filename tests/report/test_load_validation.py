"""load_report checks the whole document first: each failure is one SchemaError naming the path.

The base report has three float32 matmuls (built by hand, numbers derived beside them):
fc1 (4×8 @ 8×16, scope layer1): 2·4·8·16 = 1,024 FLOPs, read 4·(32 + 128) = 640 B, write 4·64 = 256 B;
fc2 (4×16 @ 16×2, scope layer2): 2·4·16·2 = 256 FLOPs, read 4·(64 + 32) = 384 B, write 4·8 = 32 B;
out (4×2 @ 2×2, no scope): 2·4·2·2 = 32 FLOPs, read 4·(8 + 4) = 48 B, write 4·8 = 32 B.
Totals: 1,312 FLOPs, read 640 + 384 + 48 = 1,072 B, write 256 + 32 + 32 = 320 B.
"""

import json
import os
import threading
import time

import pytest

from neural_cost import Operation, SchemaError, TensorSpec, analyze_gap, estimate_operations, load_report
from neural_cost.analysis.gap import SCHEMA_VERSION
from neural_cost.report.document import DEFAULT_MAX_BYTES, MAX_DEPTH
from neural_cost.report.load import report_from_dict
from neural_cost.report.validate import VALIDATORS
from tests.helpers import M3_PRO, cpu_measurement

OPS = (
    Operation("fc1", "matmul", ((4, 8), (8, 16)), (4, 16), scope="layer1"),
    Operation("fc2", "matmul", ((4, 16), (16, 2)), (4, 2), scope="layer2"),
    Operation("out", "matmul", ((4, 2), (2, 2)), (4, 2)),
)
# x 4·8·4 = 128 B, fc1.weight 8·16·4 = 512 B, y 4·2·4 = 32 B: 672 B moved once.
BOUNDARY = (
    TensorSpec("x", (4, 8)),
    TensorSpec("fc1.weight", (8, 16), role="parameter"),
    TensorSpec("y", (4, 2), role="output"),
)


def short_id(value):
    return str(value)[:40]


def base():
    estimate = estimate_operations(OPS, boundary=BOUNDARY, input_shapes=[("x", (4, 8))])
    return json.loads(json.dumps(analyze_gap(estimate, cpu_measurement(), M3_PRO).to_dict()))


def write(tmp_path, data, name="r.json"):
    path = tmp_path / name
    path.write_text(json.dumps(data) if not isinstance(data, str) else data)
    return path


def problem(tmp_path, data):
    """The SchemaError's message without the file name in front."""
    path = write(tmp_path, data)
    with pytest.raises(SchemaError) as caught:
        load_report(path)
    message = str(caught.value)
    assert message.startswith(f"{path}: ")
    return message.removeprefix(f"{path}: ")


def test_the_base_report_is_what_the_docstring_derives(tmp_path):
    data = base()
    assert data["estimate"]["flops_by_dtype"] == {"float32": 1312}
    assert (data["estimate"]["read_bytes"], data["estimate"]["write_bytes"]) == (1072, 320)
    assert data["estimate"]["compulsory_bytes"] == 672
    loaded = load_report(write(tmp_path, data))
    assert loaded.estimate.to_dict() == data["estimate"]


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (-5, "estimate.flops_by_dtype.float32: -5 must be a non-negative integer"),
        (float("nan"), "estimate.flops_by_dtype.float32: NaN must be a non-negative integer"),
        (float("inf"), "estimate.flops_by_dtype.float32: Infinity must be a non-negative integer"),
        ("1312", 'estimate.flops_by_dtype.float32: "1312" must be a non-negative integer'),
        (1312.0, "estimate.flops_by_dtype.float32: 1312.0 must be a non-negative integer"),
        (True, "estimate.flops_by_dtype.float32: true must be a non-negative integer"),
        (None, "estimate.flops_by_dtype.float32: null must be a non-negative integer"),
        ([1312], "estimate.flops_by_dtype.float32: an array must be a non-negative integer"),
        (10**400, "estimate.flops_by_dtype.float32: a 401-digit integer is above 10^60, more than any program does"),
    ],
    ids=short_id,
)
def test_a_count_must_be_a_bounded_non_negative_integer(tmp_path, value, message):
    data = base()
    data["estimate"]["flops_by_dtype"]["float32"] = value
    assert problem(tmp_path, data) == message


@pytest.mark.parametrize(
    ("path", "value", "message"),
    [
        (
            ("measurement", "samples_seconds", 0),
            float("nan"),
            "measurement.samples_seconds[0]: NaN must be a finite non-negative number",
        ),
        (
            ("measurement", "samples_seconds", 0),
            -4e-05,
            "measurement.samples_seconds[0]: -4e-05 must be a finite non-negative number",
        ),
        (
            ("measurement", "samples_seconds", 0),
            "4e-05",
            'measurement.samples_seconds[0]: "4e-05" must be a finite non-negative number',
        ),
        (
            ("measurement", "samples_seconds", 0),
            10**400,
            "measurement.samples_seconds[0]: a 401-digit integer is above 1e+100, "
            "more than any time, rate or share in a report",
        ),
        (("measurement", "samples_seconds"), [], "measurement.samples_seconds: must not be empty"),
        (
            ("measurement", "samples_seconds", 0),
            1e300,
            "measurement.samples_seconds[0]: 1e+300 is above 1e+100, more than any time, rate or share in a report",
        ),
        (("hardware", "peak_flops"), 0, "hardware.peak_flops: 0 must be a positive finite number"),
        (
            ("hardware", "memory_bandwidth"),
            float("-inf"),
            "hardware.memory_bandwidth: -Infinity must be a positive finite number",
        ),
        (
            ("analysis", "coverage_threshold"),
            2,
            "analysis.coverage_threshold: 2 must be a finite non-negative number no larger than 1",
        ),
        (
            ("measurement", "device_kind"),
            "quantum",
            'measurement.device_kind: "quantum" is not a device kind (cpu, gpu, tpu, npu, unknown, mixed)',
        ),
        (
            ("estimate", "by_operation", 0, "operation", "count"),
            2**63,
            "estimate.by_operation[0].operation.count: 9223372036854775808 is above 2^63 - 1, "
            "the largest count a framework can hold",
        ),
        (
            ("estimate", "by_operation", 0, "operation", "dtype"),
            "float33",
            'estimate.by_operation[0].operation.dtype: "float33" is not a dtype name neural-cost knows',
        ),
        # 2^62 · 4 = 2^64 = 18,446,744,073,709,551,616 elements
        (
            ("estimate", "by_operation", 0, "operation", "output"),
            [2**62, 4],
            "estimate.by_operation[0].operation.output: has 18446744073709551616 elements, "
            "more than any framework can hold (2^63 - 1)",
        ),
        (("estimate", "coverage"), [], "estimate.coverage: an array must be an object"),
        (
            ("estimate", "by_operation", 0, "operation", "name"),
            "",
            'estimate.by_operation[0].operation.name: "" must be a non-empty string',
        ),
        (
            ("provenance", "threads", "affinity"),
            float("nan"),
            "provenance.threads.affinity: NaN must be a finite number",
        ),
        (
            ("provenance", "threads", "affinity"),
            -(2**64),
            "provenance.threads.affinity: -18446744073709551616 is outside the 64-bit integer range",
        ),
        (
            ("provenance", "threads", "\x1b[2J"),
            1e999,
            'provenance.threads["\\u001b[2J"]: Infinity must be a finite number',
        ),
    ],
    ids=short_id,
)
def test_each_field_has_its_type_and_range(tmp_path, path, value, message):
    data = base()
    data["provenance"].setdefault("threads", {})
    target = data
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    assert problem(tmp_path, data) == message


def test_a_missing_required_field_is_named(tmp_path):
    data = base()
    del data["estimate"]["by_operation"][1]["read_bytes"]
    assert problem(tmp_path, data) == "estimate.by_operation[1].read_bytes: missing"


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (
            lambda d: d["estimate"].update(read_bytes=1073),
            "estimate.read_bytes: 1073 is not the sum of estimate.by_operation[*].read_bytes (1072)",
        ),
        (
            lambda d: d["estimate"]["by_operation"][1].update(write_bytes=33),
            "estimate.write_bytes: 320 is not the sum of estimate.by_operation[*].write_bytes (321)",
        ),
        (
            lambda d: d["estimate"]["flops_by_dtype"].update(float32=1311),
            "estimate.flops_by_dtype.float32: 1311 is not the sum over estimate.by_operation (1312)",
        ),
        (
            lambda d: d["estimate"]["flops_by_dtype"].update(float16=0),
            "estimate.flops_by_dtype.float16: 0 is not the sum over estimate.by_operation (they have no float16 FLOPs)",
        ),
        (
            lambda d: d["estimate"].update(flops=1313),
            "estimate.flops: 1313 is not the sum of its flops_by_dtype (1312)",
        ),
        (
            lambda d: d["estimate"]["by_scope"][0].update(read_bytes=641),
            'estimate.by_scope[0].read_bytes: 641 is not the sum over the operations of scope "layer1" (640)',
        ),
        (
            lambda d: d["estimate"]["by_operation"][0]["operation"].update(scope="layer2"),
            "estimate.by_scope: has 3 rows, but estimate.by_operation names 2 scopes",
        ),
        (
            lambda d: d["estimate"]["by_scope"].reverse(),
            'estimate.by_scope[0].scope: "(no scope)" is not the scope of the operations in this position ("layer1")',
        ),
        (
            lambda d: d["estimate"]["coverage"].update(total=4),
            "estimate.coverage.total: 4 is not modeled 3 + free 0 + unmodeled 0 (3)",
        ),
        (
            lambda d: d["estimate"].update(compulsory_bytes=673),
            "estimate.compulsory_bytes: 673 is not the bytes of estimate.boundary, each tensor once (672)",
        ),
        (lambda d: d["measurement"].update(runs=4), "measurement.runs: 4 is not the number of samples_seconds (5)"),
        (
            lambda d: d["operation_rows"][0].update(flops=d["operation_rows"][0]["flops"] + 1),
            "operation_rows[*].flops: 1313 is not the estimate's FLOPs (1312)",
        ),
        (lambda d: d["scope_rows"].pop(), "scope_rows: has 2 rows for the 3 of estimate.by_scope"),
    ],
)
def test_totals_equal_the_sum_of_their_rows(tmp_path, edit, message):
    data = base()
    edit(data)
    assert problem(tmp_path, data) == message


def test_a_zero_median_and_an_infinite_time_are_refused(tmp_path):
    data = base()
    data["measurement"].update(samples_seconds=[0.0, 0.0, 1e-5], runs=3)
    assert problem(tmp_path, data) == (
        "measurement.samples_seconds: the median is 0 s: the clock did not resolve the work, "
        "so there is no time to score"
    )
    data = base()
    data["hardware"]["peak_flops"] = 1e-320  # 1,312 FLOPs / 1e-320 FLOP/s overflows to inf seconds
    assert problem(tmp_path, data) == "hardware.peak_flops: 1e-320 FLOP/s makes the compute time of 1312 FLOPs infinite"


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda d: d.update(schema_version=3), "schema_version: 3; this neural-cost reads version 1 or 2"),
        (lambda d: d.update(schema_version="1"), 'schema_version: "1"; this neural-cost reads version 1 or 2'),
        (lambda d: d.update(schema_version=True), "schema_version: true; this neural-cost reads version 1 or 2"),
        (
            lambda d: d.pop("schema"),
            'schema: missing; it should be "neural-cost/report"; is this a neural-cost report?',
        ),
        (
            lambda d: d.update(schema="x" * 10**6),
            'schema: "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx..." is not "neural-cost/report"; '
            "is this a neural-cost report?",
        ),
        (lambda d: d.pop("schema_version"), "schema_version: missing; this neural-cost reads version 1 or 2"),
    ],
)
def test_schema_and_version(tmp_path, edit, message):
    data = base()
    edit(data)
    assert problem(tmp_path, data) == message


def test_every_version_the_writer_writes_has_a_validator():
    # Bumping SCHEMA_VERSION without a validator fails here, not for users; version 1 still loads.
    assert (SCHEMA_VERSION, sorted(VALIDATORS)) == (2, [1, 2])


def test_a_record_that_fails_its_own_rule_is_named_by_its_row(tmp_path):
    data = base()
    data["estimate"]["by_operation"][2]["operation"]["inputs"] = [[4, 2], [3, 2]]  # contraction 2 ≠ 3
    message = problem(tmp_path, data)
    assert message.startswith("estimate.by_operation[2]: Operation 'out' (matmul)"), message


def test_unknown_keys_are_ignored_and_the_numbers_kept(tmp_path):
    data = base()
    data["future_section"] = {"anything": [1, 2.5, "x"]}
    data["estimate"]["by_operation"][0]["operation"]["new_field"] = 7
    data["hardware"]["memory_levels"] = []
    loaded = load_report(write(tmp_path, data))
    assert loaded.estimate.to_dict() == base()["estimate"]


def test_invalid_utf8_names_the_byte_offset(tmp_path):
    path = tmp_path / "r.json"
    path.write_bytes(b'{"schema": "neural-cost/report\xff"}')  # 0xff at offset 12 + 18 = 30
    with pytest.raises(SchemaError) as caught:
        load_report(path)
    assert str(caught.value) == (
        f"{path}: not UTF-8: byte 0xff at byte offset 30 (invalid start byte); a report is UTF-8 JSON"
    )


def test_deep_nesting_fails_before_parsing(tmp_path):
    deep = '{"a":' * 100_000 + "1" + "}" * 100_000
    # The 65th '{' is the first too deep: 64 openings of 5 characters before it, offset 320.
    assert problem(tmp_path, deep) == (
        f"nested more than {MAX_DEPTH} levels deep (at byte offset 320); "
        f"a report nests about 10 levels, so this is not one"
    )
    data = base()
    inner: dict = {}
    data["provenance"]["deep"] = inner
    for _ in range(900):
        inner["x"] = {}
        inner = inner["x"]
    assert problem(tmp_path, data).startswith(f"nested more than {MAX_DEPTH} levels deep (at byte offset ")


def test_brackets_inside_strings_do_not_count_as_nesting(tmp_path):
    data = base()
    data["provenance"]["note"] = "[" * 1000 + '\\"{' * 100
    assert dict(load_report(write(tmp_path, data)).provenance)["note"] == data["provenance"]["note"]


def test_an_unterminated_string_of_escaped_quotes_fails_fast(tmp_path):
    # 1,000,000 escaped quotes and no closing one: a string pattern that could fail would rescan
    # the rest of the file from each of them (10^12 steps); this one reaches the end once.
    start = time.perf_counter()
    assert problem(tmp_path, '{"a' + '\\"' * 1_000_000).startswith("not JSON (Unterminated string")
    assert time.perf_counter() - start < 5.0


def test_dev_zero_fails_at_the_first_byte():
    start = time.perf_counter()
    with pytest.raises(SchemaError) as caught:
        load_report("/dev/zero")
    assert str(caught.value) == (
        "/dev/zero: a report is a JSON object, which starts with '{'; this file has byte 0x00 at byte offset 0"
    )
    assert time.perf_counter() - start < 1.0  # one 1 MiB chunk is read, not the 400 MB limit


def test_an_oversize_file_is_refused_before_reading(tmp_path):
    path = write(tmp_path, base())
    size = os.path.getsize(path)
    with pytest.raises(SchemaError) as caught:
        load_report(path, max_bytes=1000)
    assert str(caught.value) == (
        f"{path}: {size:,} bytes, larger than the 1,000-byte limit for a report; if it really is one, "
        f"pass max_bytes= a larger number"
    )
    assert load_report(path, max_bytes=size).estimate.flops == 1312
    with pytest.raises(SchemaError, match="max_bytes=0 must be a positive number of bytes"):
        load_report(path, max_bytes=0)
    assert DEFAULT_MAX_BYTES == 400_000_000


def test_a_stream_is_read_no_further_than_the_limit(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    written = []

    def writer():
        with open(fifo, "wb") as pipe:
            try:
                for _ in range(64):  # 64 MiB offered; the reader stops after 1 MiB + 1 byte
                    pipe.write(b"{" + b" " * ((1 << 20) - 1))
                    written.append(1)
            except BrokenPipeError:
                pass

    thread = threading.Thread(target=writer)
    thread.start()
    with pytest.raises(SchemaError) as caught:
        load_report(fifo, max_bytes=1 << 20)
    thread.join(timeout=10)
    assert str(caught.value) == (
        f"{fifo}: larger than the 1,048,576-byte limit for a report; "
        f"if it really is one, pass max_bytes= a larger number"
    )
    assert len(written) < 64


def test_an_integer_literal_past_the_interpreters_digit_limit(tmp_path):
    text = json.dumps(base()).replace('"read_bytes": 1072', '"read_bytes": 1' + "0" * 5000, 1)
    assert problem(tmp_path, text).startswith("not a report: an integer literal longer than 4300 digits")


def test_report_from_dict_checks_a_dict_built_in_code():
    with pytest.raises(SchemaError) as caught:
        report_from_dict([1, 2])
    assert str(caught.value) == "report: a report is a JSON object, not an array"


def with_unmodeled():
    """The base report with one unmodeled op, sized: 4 executed, 3 modeled, and an ``svd`` of a
    float32 (2, 2) at its elementwise floor: U, S, Vh out = 4 + 2 + 4 = 10 elements → 10 FLOPs;
    bytes 16 read + 40 written = 56."""
    from neural_cost import Coverage

    coverage = Coverage(total=4, modeled=3, unmodeled=(("svd", 1),), unmodeled_work=(("svd", 10, 56),))
    estimate = estimate_operations(OPS, coverage=coverage, boundary=BOUNDARY, input_shapes=[("x", (4, 8))])
    return json.loads(json.dumps(analyze_gap(estimate, cpu_measurement(), M3_PRO).to_dict()))


def test_version_2_work_fields_round_trip_and_are_checked(tmp_path):
    data = with_unmodeled()
    coverage = data["estimate"]["coverage"]
    assert (coverage["unmodeled_work"], coverage["unmodeled_flops"], coverage["unmodeled_bytes"]) == (
        [["svd", 10, 56]],
        10,
        56,
    )
    # FLOP share 1,312 / 1,322 = 99.2%; byte share (1,072 + 320) / (1,392 + 56) = 1,392 / 1,448 = 96.1%
    assert data["estimate"]["work_fraction"] == 1_392 / 1_448
    loaded = load_report(write(tmp_path, data))
    assert loaded.estimate.coverage.unmodeled_work == (("svd", 10, 56),) and loaded.estimate.work_share == (
        1_392,
        1_448,
    )
    coverage["unmodeled_work"][0][2] = 57
    assert problem(tmp_path, data) == ("estimate.coverage.unmodeled_bytes: 56 is not the sum over unmodeled_work (57)")
    data = with_unmodeled()
    data["estimate"]["coverage"]["unmodeled_work"][0][0] = "qr"
    assert (
        problem(tmp_path, data)
        == 'estimate.coverage.unmodeled_work[0][0]: "qr" is not among estimate.coverage.unmodeled'
    )
    data = with_unmodeled()
    data["estimate"]["coverage"]["unmodeled_work"].append(["svd", 1, 1])
    assert problem(tmp_path, data) == 'estimate.coverage.unmodeled_work[1][0]: "svd" is listed twice'
    data = with_unmodeled()
    data["estimate"]["coverage"]["unmodeled_work"][0][1] = -1
    assert problem(tmp_path, data) == "estimate.coverage.unmodeled_work[0][1]: -1 must be a non-negative integer"
    data = with_unmodeled()
    data["estimate"]["coverage"]["unmodeled_work"] = []
    assert problem(tmp_path, data) == (
        "estimate.coverage.unmodeled_flops: 10 is not null: an unmodeled operation has no size (null)"
    )
    data = with_unmodeled()
    del data["estimate"]["coverage"]["unmodeled_work"]
    assert problem(tmp_path, data) == "estimate.coverage.unmodeled_work: missing"


def test_a_version_1_report_loads_with_its_work_share_unknown(tmp_path):
    data = with_unmodeled()
    data["schema_version"] = 1
    assert problem(tmp_path, data) == ("estimate.coverage.unmodeled_work: is a version-2 field in a version-1 report")
    for key in ("unmodeled_work", "unmodeled_flops", "unmodeled_bytes"):
        del data["estimate"]["coverage"][key]
    del data["estimate"]["work_fraction"]  # what a version-1 writer wrote
    loaded = load_report(write(tmp_path, data))
    assert loaded.estimate.work_share is None and loaded.gate_fraction == 3 / 4  # the operation share alone
    assert "coverage: operations 75.0% · work unknown (of 4 operations: modeled 3, free 0, unmodeled 1: svd x1; " in (
        loaded.render()
    )
    data = base() | {"schema_version": 1}
    del data["estimate"]["coverage"]["unmodeled_work"]
    assert load_report(write(tmp_path, data)).estimate.work_share == (1_312, 1_312)  # nothing unmodeled: all of it
