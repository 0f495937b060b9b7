"""The roofline and pipeline plots, checked on the returned Figure and on the saved files.

The program (hand derivation of the points):
  mm      matmul (256, 512) @ (512, 128) float16: 2·256·512·128 = 33,554,432 FLOPs,
          bytes 2·(256·512 + 512·128 + 256·128) = 458,752            → intensity 73.14
  fc      linear (64, 256) @ (256, 256) float32: 2·64·256·256 = 8,388,608 FLOPs,
          bytes 4·(64·256 + 256·256 + 64·256) = 393,216              → intensity 21.33
  act     elementwise float32 (64, 256): 16,384 FLOPs, bytes 4·2·16,384 = 131,072 → intensity 0.125
  cast    copy (64, 256) float32 → 0 FLOPs: has no place on log axes, skipped with a note
  spec    float16 100 TFLOP/s, float32 10 TFLOP/s, 1 TB/s → ridges 100 and 10 FLOP/B
  mm      compute 33,554,432/1e14 = 0.3355 µs, memory 458,752/1e12 = 0.4588 µs
          → bound-implied rate 33,554,432/0.4588e-6 = 73.14 TFLOP/s
"""

import math
import xml.etree.ElementTree as ET

import pytest

matplotlib = pytest.importorskip("matplotlib")
from matplotlib.image import imread  # noqa: E402

from neural_cost import HardwareSpec, Measurement, Operation, analyze_gap, estimate_operations  # noqa: E402
from neural_cost.analysis.pipeline import PipelineReport, StageResult  # noqa: E402
from neural_cost.core.errors import FrameworkNotInstalledError, NeuralCostError  # noqa: E402

OPS = (
    Operation("mm", "matmul", ((256, 512), (512, 128)), (256, 128), "float16"),
    Operation("fc", "linear", ((64, 256), (256, 256)), (64, 256), "float32"),
    Operation("act", "elementwise", ((64, 256),), (64, 256), "float32"),
    Operation("cast", "copy", ((64, 256),), (64, 256), "float32"),
)
SPEC = HardwareSpec(
    "Test GPU",
    peak_flops=10e12,
    memory_bandwidth=1e12,
    kind="gpu",
    peak_flops_by_dtype={"float16": 100e12, "float32": 10e12},
)
SAMPLES = (4e-6, 5e-6, 6e-6)


def gap_report():
    measurement = Measurement(SAMPLES, device="Intel Xeon", device_kind="cpu", device_source="test")
    return analyze_gap(estimate_operations(OPS), measurement, SPEC)


def labelled(axes, label):
    return [c for c in axes.collections if c.get_label() == label]


def test_roofline_axes_points_and_title():
    report = gap_report()
    figure = report.plot(top=8)
    (axes,) = figure.axes
    assert axes.get_xscale() == "log" and axes.get_yscale() == "log"
    assert axes.get_xlabel() == "arithmetic intensity (FLOP/byte)"
    assert axes.get_ylabel() == "performance (FLOP/s)"
    assert axes.get_title() == "Test GPU (gpu) · ran on Intel Xeon (cpu) · coverage 100.0%"

    # 4 operations in the top 8; cast has 0 FLOPs, so 3 points
    (ops,) = labelled(axes, "top 3 operations (bound-implied rate)")
    points = {tuple(p) for p in ops.get_offsets().tolist()}
    assert len(points) == 3
    mm = next(p for p in points if p[0] > 50)
    assert mm[0] == pytest.approx(33_554_432 / 458_752)
    assert mm[1] == pytest.approx(33_554_432 / (458_752 / 1e12))
    names = {t.get_text() for t in axes.texts}
    assert {"mm", "fc", "act", "program (observed)"} <= names
    (note,) = [t.get_text() for t in axes.texts if t.get_gid() == "note"]
    assert "1 of the top operations not shown: zero FLOPs or zero bytes (cast)" in note

    # the program at its intensity and achieved rate (median 5 µs)
    (program,) = labelled(axes, "program (observed)")
    ((x, y),) = program.get_offsets().tolist()
    estimate = report.estimate
    assert x == pytest.approx(estimate.flops / estimate.bytes)
    assert y == pytest.approx(estimate.flops / 5e-6)

    # one roof per dtype present, at its peak, each with its ridge marked
    roofs = {line.get_label().split()[0]: line for line in axes.lines if line.get_label().startswith("float")}
    assert set(roofs) == {"float16", "float32"}
    assert set(roofs["float16"].get_ydata()) == {100e12}
    assert roofs["float16"].get_xdata()[0] == pytest.approx(100.0)
    assert roofs["float32"].get_xdata()[0] == pytest.approx(10.0)
    ridges = {line.get_gid(): tuple(line.get_xydata()[0]) for line in axes.lines if line.get_gid()}
    assert ridges == {"ridge:float16": (100.0, 100e12), "ridge:float32": (10.0, 10e12)}
    (memory,) = [line for line in axes.lines if line.get_label().startswith("memory")]
    xs, ys = memory.get_xdata(), memory.get_ydata()
    assert all(math.isclose(b, 1e12 * a) for a, b in zip(xs, ys, strict=True))


def test_top_limits_points_and_scopes_group():
    report = gap_report()
    (axes,) = report.plot(top=1).axes
    (ops,) = labelled(axes, "top 1 operations (bound-implied rate)")
    assert len(ops.get_offsets()) == 1
    (axes,) = report.plot(top=8, group_by_scope=True).axes
    assert any(c.get_label().startswith("top ") and "scopes" in c.get_label() for c in axes.collections)


def test_roofline_saved_as_png_and_svg(tmp_path):
    report = gap_report()
    png, svg = tmp_path / "roof.png", tmp_path / "out" / "roof.svg"
    report.plot(png)
    report.plot(svg)
    image = imread(png)
    assert image.ndim == 3 and image.shape[0] > 100 and image.shape[1] > 100
    assert ET.parse(svg).getroot().tag == "{http://www.w3.org/2000/svg}svg"
    assert sorted(p.name for p in tmp_path.rglob("*") if p.is_file()) == ["roof.png", "roof.svg"]


def pipeline_report(total_seconds):
    def timed(name, calls, seconds):
        return StageResult(name, calls, Measurement((seconds,), device="cpu0", device_kind="cpu"))

    stages = (timed("tree", 1, 3e-3), timed("env", 16, 0.25e-3))
    return PipelineReport(stages, timed("end-to-end", 1, total_seconds), SPEC)


def bars(axes):
    return [(p.get_y(), p.get_height()) for p in axes.patches]


def test_pipeline_stacked_bar_with_unexplained(tmp_path):
    # stages: 3 ms + 16·0.25 ms = 7 ms; end-to-end 10 ms → unexplained 3 ms, hatched on top
    figure = pipeline_report(10e-3).plot()
    (axes,) = figure.axes
    assert axes.get_ylabel() == "time per pipeline run (ms)"
    assert axes.get_xlabel() and axes.get_title()
    assert [(pytest.approx(y), pytest.approx(h)) for y, h in bars(axes)] == [(0, 3), (3, 4), (7, 3)]
    assert axes.patches[-1].get_hatch() == "//"
    (reference,) = [line for line in axes.lines if line.get_label().startswith("end-to-end")]
    assert list(reference.get_ydata()) == [pytest.approx(10.0)] * 2

    png, svg = tmp_path / "pipe.png", tmp_path / "pipe.svg"
    pipeline_report(10e-3).plot(png)
    pipeline_report(10e-3).plot(svg)
    assert imread(png).ndim == 3
    assert ET.parse(svg).getroot().tag == "{http://www.w3.org/2000/svg}svg"


def test_pipeline_overlap_is_a_bar_below_zero():
    # end-to-end 5 ms < 7 ms of stages: -2 ms overlap
    (axes,) = pipeline_report(5e-3).plot().axes
    assert [(pytest.approx(y), pytest.approx(h)) for y, h in bars(axes)] == [(0, 3), (3, 4), (0, -2)]
    assert [t.get_text() for t in axes.get_xticklabels()] == ["pipeline", "overlap"]


@pytest.mark.parametrize("name", ["roof.pdf", "roof", "roof.jpeg"])
def test_unknown_extension_is_a_clear_error(tmp_path, name):
    with pytest.raises(NeuralCostError, match=r"\.png or \.svg"):
        gap_report().plot(tmp_path / name)
    with pytest.raises(NeuralCostError, match=r"\.png or \.svg"):
        pipeline_report(10e-3).plot(tmp_path / name)
    assert list(tmp_path.iterdir()) == []


def test_failed_save_leaves_no_file(tmp_path, monkeypatch):
    from matplotlib.figure import Figure

    def broken_savefig(self, handle, **kwargs):
        handle.write(b"\x89PNG half")
        raise RuntimeError("disk full")

    monkeypatch.setattr(Figure, "savefig", broken_savefig)
    with pytest.raises(RuntimeError, match="disk full"):
        gap_report().plot(tmp_path / "roof.png")
    with pytest.raises(RuntimeError, match="disk full"):
        pipeline_report(10e-3).plot(tmp_path / "pipe.svg")
    assert list(tmp_path.iterdir()) == []


def test_failed_save_keeps_the_previous_file(tmp_path, monkeypatch):
    from matplotlib.figure import Figure

    target = tmp_path / "roof.png"
    target.write_bytes(b"previous")

    def broken_savefig(self, handle, **kwargs):
        raise RuntimeError("disk full")

    monkeypatch.setattr(Figure, "savefig", broken_savefig)
    with pytest.raises(RuntimeError):
        gap_report().plot(target)
    assert target.read_bytes() == b"previous"
    assert list(tmp_path.iterdir()) == [target]


def test_without_matplotlib_names_the_extra(monkeypatch):
    monkeypatch.setitem(__import__("sys").modules, "matplotlib.figure", None)
    with pytest.raises(FrameworkNotInstalledError, match=r"pip install 'neural-cost\[plot\]'"):
        gap_report().plot()
    with pytest.raises(FrameworkNotInstalledError, match=r"neural-cost\[plot\]"):
        pipeline_report(10e-3).plot()
