"""The saved profile and the measured figures: what ``load_report`` checks, and what it refuses
(one SchemaError naming the JSON path). The report is ``tests/report/profiled.py``'s: 4 kernels,
a profile of 2 runs (wall 800 µs, kernels 600 µs: outside 200 µs), 8 events."""

import json

import pytest

from neural_cost import SchemaError, load_report
from tests.report.profiled import profiled_report


@pytest.fixture(scope="module")
def saved():
    return profiled_report(profile_notes=("a note",)).to_dict()


def _load(tmp_path, data):
    path = tmp_path / "r.json"
    path.write_text(json.dumps(data))
    return load_report(path)


def _edit(data, path, value):
    data = json.loads(json.dumps(data))
    *parents, last = path
    target = data
    for key in parents:
        target = target[key]
    if value is KeyError:
        del target[last]
    else:
        target[last] = value
    return data


@pytest.mark.parametrize(
    ("path", "value", "message"),
    [
        # the estimate has kernels 0..3
        (
            ("profile", "kernels", 0, "kernel"),
            4,
            "profile.kernels[0].kernel: 4 is not a kernel: estimate.kernels has 4",
        ),
        (("profile", "kernels", 1, "kernel"), 0, "profile.kernels[1].kernel: kernel 0 is measured twice"),
        (("profile", "events", 7, "kernel"), 9, "profile.events[7].kernel: 9 is not a kernel"),
        (("profile", "kernels", 0, "seconds"), -1, "profile.kernels[0].seconds: -1 must be a finite non-negative"),
        (("profile", "kernels", 0, "events"), 1.5, "profile.kernels[0].events: 1.5 must be a non-negative integer"),
        (("profile", "runs"), 0, "profile.runs: 0 must be a positive integer"),
        (("profile", "source"), "", 'profile.source: "" must be a non-empty string'),
        (("profile", "wall_seconds"), "800", 'profile.wall_seconds: "800" must be a finite non-negative number'),
        (("profile", "unmatched"), [["x", 1e-6]], "profile.unmatched[0]: "),
        (("profile", "events", 0, "duration_seconds"), None, "profile.events[0].duration_seconds: null must be"),
        (("profile", "notes"), [3], "profile.notes[0]: 3 must be a string"),
        # 800 − 600 µs is 200 µs, not 300 µs
        (("profile", "outside_seconds"), 300e-6, "profile.outside_seconds: 0.0003 is not wall − kernel seconds"),
        # Σ seconds / runs = 300 µs per run
        (("analysis", "time_coverage", "kernel_seconds"), 1e-3, "analysis.time_coverage.kernel_seconds: 0.001 is not"),
        (("analysis", "time_coverage", "wall_seconds"), 1e-3, "analysis.time_coverage.wall_seconds: 0.001 is not"),
        (("analysis", "time_coverage", "fraction"), 1.5, "analysis.time_coverage.fraction: 1.5 must be"),
        (("analysis", "time_coverage", "unmodeled"), [["sort"]], "analysis.time_coverage.unmodeled[0]: "),
        (("analysis", "time_coverage"), None, "analysis.time_coverage: null, but the report has a profile"),
        (("profile_notes",), "a note", 'profile_notes: "a note" must be an array'),
        (("operation_rows", 0, "measured_seconds"), "1", 'operation_rows[0].measured_seconds: "1" must be'),
        (("operation_rows", 0, "shared"), 1, "operation_rows[0].shared: 1 must be true or false"),
        (("kernel_rows", 0, "events"), -2, "kernel_rows[0].events: -2 must be a non-negative integer"),
        (("kernel_rows", 0, "index"), "0", 'kernel_rows[0].index: "0" must be a non-negative integer'),
        (("kernel_rows", 0, "unmodeled"), "sort", 'kernel_rows[0].unmodeled: "sort" must be an array'),
        (("estimate", "kernels", 3, "unmodeled"), [None], "estimate.kernels[3].unmodeled[0]: null must be a string"),
    ],
)
def test_a_bad_profile_or_measured_field_is_one_schema_error_naming_its_path(tmp_path, saved, path, value, message):
    with pytest.raises(SchemaError) as error:
        _load(tmp_path, _edit(saved, path, value))
    assert f"r.json: {message}" in str(error.value)


def test_a_time_coverage_without_a_profile_is_refused(tmp_path, saved):
    data = _edit(saved, ("profile",), None)
    with pytest.raises(SchemaError, match=r"analysis\.time_coverage: an object, but the report has no profile"):
        _load(tmp_path, data)
    _load(tmp_path, _edit(data, ("analysis", "time_coverage"), None))  # both null: a report without a profile


def test_a_version_1_report_with_a_profile_is_refused(tmp_path):
    data = profiled_report().to_dict()
    data["schema_version"] = 1
    del data["estimate"]["coverage"]["unmodeled_work"]
    data["estimate"]["kernels"] = []
    with pytest.raises(SchemaError, match="profile: is a version-2 field in a version-1 report"):
        _load(tmp_path, data)


def test_saved_measured_times_are_recomputed_not_believed(tmp_path, saved):
    # a row's measured time is derived from the profile: a different saved value is replaced on load
    data = _edit(saved, ("kernel_rows", 0, "measured_seconds"), 1.0)
    loaded = _load(tmp_path, data)
    assert loaded.kernel_rows[0].measured_seconds == pytest.approx(250e-6)  # big.2: 500 µs / 2 runs


def test_the_measured_figures_are_optional_and_a_profile_without_events_loads(tmp_path, saved):
    data = _edit(saved, ("profile", "events"), KeyError)
    data = _edit(data, ("profile", "outside_seconds"), KeyError)
    data = _edit(data, ("profile", "unmatched"), KeyError)
    loaded = _load(tmp_path, data)
    assert loaded.profile.events == () and loaded.time_coverage.fraction == pytest.approx(277 / 300)
