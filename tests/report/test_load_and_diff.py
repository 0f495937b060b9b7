"""Saved reports: exact round trip, re-scoring without frameworks, and before/after diffs."""

import json
import subprocess
import sys
import textwrap

import pytest

from neural_cost import (
    Coverage,
    HardwareSpec,
    Measurement,
    Operation,
    SchemaError,
    analyze_gap,
    diff_reports,
    estimate_operations,
    load_report,
)
from tests.helpers import M3_PRO, cpu_measurement, seed_estimate


def save(report, path):
    path.write_text(json.dumps(report.to_dict()))
    return path


def test_a_saved_report_renders_identically(tmp_path):
    report = analyze_gap(seed_estimate(), cpu_measurement(), M3_PRO)
    loaded = load_report(save(report, tmp_path / "r.json"))
    assert loaded.render(group_by_scope=True) == report.render(group_by_scope=True)
    assert loaded.estimate == report.estimate and loaded.measurement == report.measurement
    assert dict(loaded.provenance) == json.loads(json.dumps(report.to_dict()))["provenance"]


def test_a_saved_jax_trace_is_rescored_where_no_framework_can_be_imported(tmp_path):
    pytest.importorskip("jax")
    import jax.numpy as jnp

    from neural_cost import estimate_trace
    from neural_cost.adapters import JaxAdapter

    adapter = JaxAdapter(cross_check=False)
    trace = adapter.trace(lambda a, b: jnp.tanh(a @ b), (jnp.ones((32, 16)), jnp.ones((16, 8))))
    report = analyze_gap(estimate_trace(trace), Measurement((1e-5,) * 5, device_kind="cpu"), M3_PRO)
    path = save(report, tmp_path / "jax.json")
    code = textwrap.dedent(
        f"""
        import sys
        class Block:
            def find_spec(self, name, path=None, target=None):
                if name.split(".")[0] in {{"torch", "jax", "jaxlib", "tensorflow", "keras", "flax"}}:
                    raise ImportError(name)
        sys.meta_path.insert(0, Block())
        from neural_cost import HardwareSpec, analyze_gap, load_report
        r = load_report({str(path)!r})
        gpu = HardwareSpec("H100", 67e12, 3.35e12, kind="gpu")
        print(analyze_gap(r.estimate, r.measurement, gpu).render())
        print(r.estimate.operations[0].name)
        """
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "Device mismatch" in result.stdout and "dot_general" in result.stdout


@pytest.mark.parametrize(
    ("content", "match"),
    [
        ("[1, 2]", "a report is a JSON object"),
        ("{not json", "not JSON"),
        ('{"schema": "other"}', 'schema: "other" is not "neural-cost/report"'),
    ],
)
def test_bad_report_files_are_clear_errors(tmp_path, content, match):
    path = tmp_path / "bad.json"
    path.write_text(content)
    with pytest.raises(SchemaError, match=match):
        load_report(path)
    with pytest.raises(SchemaError, match="cannot read"):
        load_report(tmp_path / "missing.json")


def test_diff_shows_deltas_and_what_makes_reports_incomparable():
    before = analyze_gap(seed_estimate(), cpu_measurement(), M3_PRO)
    after_coverage = Coverage(total=2, modeled=1, unmodeled=(("sort", 1),))
    gpu_run = Measurement((20e-6,) * 5, device="cuda:0", device_kind="gpu")
    after = analyze_gap(seed_estimate(after_coverage), gpu_run, HardwareSpec("H100", 67e12, 3.35e12, kind="gpu"))
    text = diff_reports(before, after)
    observed = next(line for line in text.splitlines() if line.strip().startswith("observed"))
    assert "40.0 µs →" in observed and observed.endswith("-20.0 µs (-50.0%)")
    efficiency = next(line for line in text.splitlines() if line.strip().startswith("efficiency"))
    assert efficiency.endswith("-23.8 pp")  # 27.5% → 3.7% (11.0 µs/40 µs → 0.734 µs/20 µs)
    assert "NOTE: measured on different devices" in text and "NOTE: different coverage" in text
    assert "FLOPs" in text and "=" in text.split("FLOPs")[1].splitlines()[0]  # same program: no FLOP change


def test_diff_shows_both_coverage_figures_rounded_down_with_work_as_a_ceiling():
    # Was (report/diff.py): one "coverage" row, the operations share rounded to nearest (9,999 of
    # 10,000 → "100.0%"); a collapse of the work share appeared nowhere.
    # After: 9,999 of 10,000 operations → 99.9% (down), a change of -0.01 pp → "-<0.1 pp". The
    # unmodeled matrix_exp at a floor of 0 FLOPs and 1,649,152 bytes (the seed's own traffic):
    # byte share 1,649,152 / 3,298,304 = 50.0%, FLOP share 100% → work "≤ 50.0%", -50.0 pp.
    before = analyze_gap(seed_estimate(), cpu_measurement(), M3_PRO)
    coverage = Coverage(
        total=10_000, modeled=9_999, unmodeled=(("matrix_exp", 1),), unmodeled_work=(("matrix_exp", 0, 1_649_152),)
    )
    lines = diff_reports(before, analyze_gap(seed_estimate(coverage), cpu_measurement(), M3_PRO)).splitlines()
    assert lines[1] == (
        "  NOTE: different coverage: operations 100.0% of 1 operation, work 100.0% → operations 99.9% of "
        "10,000 operations, work ≤ 50.0%; FLOP and byte deltas include what became (un)modeled"
    )
    assert lines[8:10] == [  # after FLOPs, bytes, bound, program roofline, observed, efficiency
        "  coverage (operations)        100.0% →        99.9%   -<0.1 pp",
        "  coverage (work)              100.0% →      ≤ 50.0%   -50.0 pp",
    ]
    # The operations share held (9 of 10) while the work share became unknown (a size not
    # recorded): still a difference in coverage, noted; no change can be computed for work.
    held = Coverage(total=10, modeled=9, unmodeled=(("m", 1),), unmodeled_work=(("m", 0, 0),))
    unknown = Coverage(total=10, modeled=9, unmodeled=(("m", 1),))
    text = diff_reports(*(analyze_gap(seed_estimate(c), cpu_measurement(), M3_PRO) for c in (held, unknown)))
    assert "NOTE: different coverage: operations 90.0% of 10 operations, work ≤ 100.0% → " in text
    assert "  coverage (operations)         90.0% →        90.0%   =\n" in text
    assert "  coverage (work)            ≤ 100.0% →      unknown   n/a\n" in text


def test_a_malformed_analysis_section_is_a_schema_error_not_a_traceback(tmp_path):
    data = analyze_gap(seed_estimate(), cpu_measurement(), M3_PRO).to_dict()
    data["analysis"] = None  # the threshold falls back to the default; the records are intact
    assert (
        load_report(save_dict(data, tmp_path / "a.json")).render()
        == analyze_gap(seed_estimate(), cpu_measurement(), M3_PRO).render()
    )
    data["estimate"] = "oops"
    path = save_dict(data, tmp_path / "b.json")
    with pytest.raises(SchemaError) as caught:
        load_report(path)
    assert str(caught.value) == f'{path}: estimate: "oops" must be an object'


def save_dict(data, path):
    path.write_text(json.dumps(data))
    return path


def test_diff_notes_different_inputs():
    small = estimate_operations([Operation("mm", "matmul", ((4, 8), (8, 8)), (4, 8))], input_shapes=[("x", (4, 8))])
    big = estimate_operations([Operation("mm", "matmul", ((64, 8), (8, 8)), (64, 8))], input_shapes=[("x", (64, 8))])
    text = diff_reports(analyze_gap(small, cpu_measurement(), M3_PRO), analyze_gap(big, cpu_measurement(), M3_PRO))
    assert "NOTE: different inputs: x (4, 8) → (64, 8); FLOP" in text


def test_diff_names_only_the_inputs_that_differ():
    """A Keras model's inputs are its batch and every variable leaf: a diff at another batch size
    names the batch, not the 262 leaves, and counts what stayed the same."""
    leaves = [(f"weight{i}", (8, 8)) for i in range(262)]

    def report(batch, extra=()):
        op = Operation("mm", "matmul", ((batch, 8), (8, 8)), (batch, 8))
        shapes = [("x", (batch, 8)), *leaves, *extra]
        return analyze_gap(estimate_operations([op], input_shapes=shapes), cpu_measurement(), M3_PRO)

    text = diff_reports(report(4), report(64, [("mask", (64,))]))
    assert "NOTE: different inputs: x (4, 8) → (64, 8), mask absent → (64,) (262 other input(s) the same);" in text
    # past five differing inputs, the rest are counted
    many = [(f"extra{i}", (i + 1,)) for i in range(7)]
    text = diff_reports(report(4), report(4, many))
    assert "extra4 absent → (5,) and 2 more (263 other input(s) the same)" in text

    # the same inputs in another order: said, not an empty list
    def ordered(shapes):
        op = Operation("mm", "matmul", ((4, 8), (8, 8)), (4, 8))
        return analyze_gap(estimate_operations([op], input_shapes=shapes), cpu_measurement(), M3_PRO)

    text = diff_reports(ordered([("x", (4, 8)), ("w", (8, 8))]), ordered([("w", (8, 8)), ("x", (4, 8))]))
    assert "different inputs: the same shapes, listed in another order;" in text


HOSTILE = "\x1b]0;pwned\x07\x1b[31mEvil\rGPU\u202e\x9b2J"
SHOWN = "\\x1b]0;pwned\\x07\\x1b[31mEvil\\rGPU\\u202e\\x9b2J"


def hostile_report(tmp_path):
    """A saved report whose names carry terminal escapes (OSC title, SGR colour, CR, RLO, C1 CSI)."""
    estimate = estimate_operations([Operation("mm" + HOSTILE, "matmul", ((4, 8), (8, 8)), (4, 8), scope="s" + HOSTILE)])
    report = analyze_gap(estimate, Measurement((1e-5,) * 5, device="cpu" + HOSTILE), HardwareSpec(HOSTILE, 1e12, 1e11))
    return load_report(save(report, tmp_path / "hostile.json"))


def test_control_characters_in_a_report_are_escaped_when_rendered(tmp_path):
    loaded = hostile_report(tmp_path)
    assert loaded.hardware.name == HOSTILE  # kept as data; only the text shows it escaped
    for text in (loaded.render(), loaded.render(group_by_scope=True), diff_reports(loaded, loaded)):
        body = text.replace("\n", "")
        assert not any(ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F or c == "\u202e" for c in body), text
    text = loaded.render()
    assert f"peaks for {SHOWN} (kind unknown; user-supplied)" in text
    assert f"mm{SHOWN}" in text and f"cpu{SHOWN}" in text
    assert f"s{SHOWN}" in diff_reports(loaded, loaded)


def test_escaped_names_keep_the_table_aligned(tmp_path):
    table = hostile_report(tmp_path).render().split("top 1 of 1 operations by share of bound:")[1].splitlines()[1:]
    header, row = table
    assert header.index("kind") == row.index("matmul")  # the name column was sized on the escaped name
