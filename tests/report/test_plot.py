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

from neural_cost import Coverage, HardwareSpec, Measurement, Operation, analyze_gap, estimate_operations  # noqa: E402
from neural_cost.analysis.pipeline import PipelineReport, StageResult  # noqa: E402
from neural_cost.core.errors import FrameworkNotInstalledError, NeuralCostError  # noqa: E402
from neural_cost.report.plot_labels import numbers_text, qualified_name, short_names  # noqa: E402

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


def test_title_shows_both_coverage_figures_rounded_down_with_work_as_a_ceiling():
    # Was (report/plot.py): "coverage 80.0%", the operations share only. 4 of 5 operations modeled
    # → 80.0%. The unmodeled "mystery" at its floor of 999 FLOPs and 0 bytes: byte share 100%, FLOP
    # share F / (F + 999) with F = 33,554,432 + 8,388,608 + 16,384 + 0 = 41,959,424 → 99.9976% →
    # "≤ 99.9%" (rounded down, where rounding would print 100.0%; a ceiling, as mystery is unmodeled)
    coverage = Coverage(total=5, modeled=4, unmodeled=(("mystery", 1),), unmodeled_work=(("mystery", 999, 0),))
    measurement = Measurement(SAMPLES, device="Intel Xeon", device_kind="cpu", device_source="test")
    report = analyze_gap(estimate_operations(OPS, coverage=coverage), measurement, SPEC)
    (axes,) = report.plot().axes
    assert axes.get_title() == "Test GPU (gpu) · ran on Intel Xeon (cpu) · coverage: operations 80.0% · work ≤ 99.9%"


def labelled(axes, label):
    return [c for c in axes.collections if c.get_label() == label]


def texts(axes, gid):
    return [t.get_text() for t in axes.texts if t.get_gid() == gid]


def test_roofline_axes_points_and_title():
    report = gap_report()
    figure = report.plot(top=8)
    (axes,) = figure.axes
    assert axes.get_xscale() == "log" and axes.get_yscale() == "log"
    assert axes.get_xlabel() == "arithmetic intensity (FLOP/byte)"
    assert axes.get_ylabel() == "performance (FLOP/s)"
    assert axes.get_title() == "Test GPU (gpu) · ran on Intel Xeon (cpu) · coverage: operations 100.0% · work 100.0%"

    # 4 operations in the top 8; cast has 0 FLOPs, so 3 points
    (ops,) = labelled(axes, "top 3 operations (bound-implied rate)")
    points = {tuple(p) for p in ops.get_offsets().tolist()}
    assert len(points) == 3
    mm = next(p for p in points if p[0] > 50)
    assert mm[0] == pytest.approx(33_554_432 / 458_752)
    assert mm[1] == pytest.approx(33_554_432 / (458_752 / 1e12))
    # points carry their row's number in the text report's table (by bound: fc 0.839 µs of
    # compute, mm 0.459 µs of memory, act and cast 0.131 µs each); the key beside names them
    assert texts(axes, "point") == ["1", "2", "3"]
    assert texts(axes, "program") == ["program (observed)"]
    assert texts(axes, "key") == [
        " #  operation   FLOP/B\n"
        " 1  fc            21.3\n"  # 8,388,608 / 393,216
        " 2  mm            73.1\n"  # 33,554,432 / 458,752
        " 3  act          0.125"  # 16,384 / 131,072
    ]
    (note,) = texts(axes, "note")
    assert "1 of the top operations not shown: zero FLOPs or zero bytes (4 cast)" in note

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


def twenty_operations():
    """20 operations: the same names in different scopes, coincident points, one int64 fill.

    Intensities (FLOP/B), float32 unless noted, as the key lists them:
      addmm ×4   linear (64,256)@(256,256): 2·64·256·256 / 4·(64·256+256·256+64·256) = 8,388,608/393,216 = 21.3
      relu ×4    elementwise (64,256): 16,384 / 4·2·16,384 = 0.125            (coincident with the biases)
      conv16     conv (8,16,32,32)*(16,16,3,3): 2·8·16·30·30·16·9 = 33,177,600 FLOPs
                 / 4·(8·16·32·32 + 16·16·9 + 8·16·30·30) = 994,304 B = 33.4
      conv32     2·8·32·30·30·32·9 = 132,710,400 / 4·(8·32·32·32 + 32·32·9 + 8·32·30·30) = 2,007,040 B = 66.1
      bias ×2    elementwise: 1 / 8 = 0.125
      proj_k ×4  float16 (128,k)@(k,128): 2·128·128·k / 2·(2·128·k + 128·128) = 32k/(k+64):
                 k = 64 → 32, 128 → 42.7, 512 → 56.9, 2048 → 62.1
      layer_norm ×2 (64,256): 64·(5·256+2) = 82,048 / 131,072 = 0.626 (coincident)
      MatMul     (32,128)@(128,512): 4,194,304 / 4·(4,096+65,536+16,384) = 344,064 B = 12.2
      arange     int64 (128,): 128 FLOPs / 8·2·128 = 2,048 B = 0.0625
    """
    ops = []
    for block in range(4):
        scope = f"encoder/block{block}/mlp"
        ops.append(Operation("addmm", "linear", ((64, 256), (256, 256)), (64, 256), scope=scope))
        ops.append(Operation("relu", "elementwise", ((64, 256),), (64, 256), scope=scope))
    for stage, channels in (("stage1", 16), ("stage2", 32)):
        scope, image = f"backbone/{stage}/conv", (8, channels, 30, 30)
        ops.append(
            Operation("convolution", "conv", ((8, channels, 32, 32), (channels, channels, 3, 3)), image, scope=scope)
        )
        ops.append(Operation("convolution.bias", "elementwise", (image,), image, scope=scope))
    for k in (64, 128, 512, 2048):
        ops.append(
            Operation("dot_general", "matmul", ((128, k), (k, 128)), (128, 128), "float16", scope=f"head/proj_{k}")
        )
    for block in (0, 3):
        ops.append(Operation("layer_norm", "layernorm", ((64, 256),), (64, 256), scope=f"encoder/block{block}/norm"))
    cell = "sequential/lstm/while/lstm_cell_1"
    ops.append(Operation("MatMul", "matmul", ((32, 128), (128, 512)), (32, 512), scope=cell))
    ops.append(Operation("arange", "elementwise", ((128,),), (128,), "int64", scope="embed"))
    measurement = Measurement((40e-6, 50e-6, 60e-6), device="Intel Xeon", device_kind="cpu", device_source="test")
    return analyze_gap(estimate_operations(ops), measurement, SPEC)


def drawn_boxes(figure):
    """Every text of the roofline's axes with its extent as the Agg renderer draws it."""
    figure.canvas.draw()
    renderer = figure.canvas.get_renderer()
    (axes,) = figure.axes
    return axes, [(t, t.get_window_extent(renderer)) for t in axes.texts]


def numbers_of(label):
    numbers = []
    for part in label.split(","):
        first, _, last = part.partition("–")
        numbers += range(int(first), int(last or first) + 1)
    return numbers


def test_twenty_points_have_separate_scope_qualified_labels(tmp_path):
    figure = twenty_operations().plot(tmp_path / "twenty.png", top=20)
    axes, boxes = drawn_boxes(figure)
    # no two labels intersect: point numbers, ridge labels, the program's, the key and the note
    for i, (text, box) in enumerate(boxes):
        for other, other_box in boxes[i + 1 :]:
            assert not box.overlaps(other_box), (text.get_text(), other.get_text())
    # point labels sit inside the axes and cover no marker
    frame = axes.get_window_extent()
    markers = [axes.transData.transform(xy) for c in axes.collections for xy in c.get_offsets()]
    for text, box in boxes:
        if text.get_gid() == "point":
            assert frame.x0 <= box.x0 and box.x1 <= frame.x1 and frame.y0 <= box.y0 and box.y1 <= frame.y1
            assert not any(box.contains(x, y) for x, y in markers), text.get_text()
    # each number once; coincident points share a label: the 0.125 FLOP/B biases and relus,
    # the four addmm (21.3), the two layer norms (0.626)
    labels = texts(axes, "point")
    assert sorted(n for label in labels for n in numbers_of(label)) == list(range(1, 21))
    assert {"3,5,12–15", "6–9", "16,17"} <= set(labels)
    assert len(labels) == 11
    # the key names every row scope-qualified, in the text report's order (by bound time)
    (key,) = texts(axes, "key")
    names = [line.split()[1] for line in key.splitlines()[1:]]
    assert names == [
        "backbone/stage2/conv/convolution",
        "backbone/stage1/conv/convolution",
        "backbone/stage2/conv/convolution.bias",
        "head/proj_2048/dot_general",
        "backbone/stage1/conv/convolution.bias",
        *(f"encoder/block{b}/mlp/addmm" for b in range(4)),
        "sequential/lstm/while/lstm_cell_1/MatMul",
        "head/proj_512/dot_general",
        *(f"encoder/block{b}/mlp/relu" for b in range(4)),
        "encoder/block0/norm/layer_norm",
        "encoder/block3/norm/layer_norm",
        "head/proj_128/dot_general",
        "head/proj_64/dot_general",
        "embed/arange",
    ]
    assert [line.split()[2] for line in key.splitlines()[1:5]] == ["66.1", "33.4", "0.125", "62.1"]
    assert imread(tmp_path / "twenty.png").ndim == 3


def roof_labels(axes):
    return [line.get_label() for line in axes.lines if "FLOP/s (ridge" in line.get_label()]


def test_roofs_only_for_dtypes_with_one_percent_of_the_flops():
    # the 20 operations: int64 arange 128 FLOPs of 294,076,544 (< 1%): no int64 roof, said in the note
    (axes,) = twenty_operations().plot(top=20).axes
    assert roof_labels(axes) == ["float16 100 TFLOP/s (ridge 100)", "float32 10.0 TFLOP/s (ridge 10)"]
    (note,) = texts(axes, "note")
    assert "no roof for int64: under 1% of the FLOPs" in note

    def plot(int64_elements):
        ops = [
            Operation("scale", "elementwise", ((9_900,),), (9_900,)),  # 9,900 float32 FLOPs
            Operation("fill", "elementwise", ((int64_elements,),), (int64_elements,), "int64"),
        ]
        measurement = Measurement(SAMPLES, device="Intel Xeon", device_kind="cpu", device_source="test")
        (axes,) = analyze_gap(estimate_operations(ops), measurement, SPEC).plot().axes
        return axes

    # 100 / (9,900 + 100) = 1% exactly: drawn; int64 has no peak of its own, so it shares
    # float32's 10 TFLOP/s (the spec's default) and the two share one roof
    assert roof_labels(plot(100)) == ["float32, int64 10.0 TFLOP/s (ridge 10)"]
    # 99 / 9,999 = 0.99%: not drawn
    assert roof_labels(plot(99)) == ["float32 10.0 TFLOP/s (ridge 10)"]


def test_short_names_keep_the_inner_scopes_and_stay_distinct():
    assert short_names(["a/b/c/conv", "conv"], limit=44) == ["a/b/c/conv", "conv"]
    # too long: the outer levels give way, "…" marks the cut
    assert short_names(["model/encoder/layers.11/attention/self/query/matmul"], limit=30) == [
        "…attention/self/query/matmul"
    ]
    # cut alike, different in full: lengthened until they differ
    assert short_names(["left/deep/block/conv", "right/deep/block/conv"], limit=12) == [
        "left/deep/block/conv",
        "right/deep/block/conv",
    ]
    # an index stays with what it indexes (PyTorch's "layers.0"), never "…0/attn/q"
    assert short_names(["model/layers.0/attn/q", "model/layers.1/attn/q"], limit=10) == [
        "…layers.0/attn/q",
        "…layers.1/attn/q",
    ]
    # one level longer than the limit keeps its end, where the op's name is
    assert short_names(["x" * 50 + "_matmul"], limit=12) == ["…xxxx_matmul"]
    assert qualified_name("relu", "block0") == "block0/relu"
    assert qualified_name("block0.relu", "block0") == "block0.relu"
    assert qualified_name("relu", None) == "relu"
    assert numbers_text([5, 1, 2, 3, 7, 8]) == "1–3,5,7,8"


def test_top_limits_points_and_scopes_group():
    report = gap_report()
    (axes,) = report.plot(top=1).axes
    (ops,) = labelled(axes, "top 1 operations (bound-implied rate)")
    assert len(ops.get_offsets()) == 1
    (axes,) = report.plot(top=8, group_by_scope=True).axes
    assert any(c.get_label().startswith("top ") and "scopes" in c.get_label() for c in axes.collections)
    (key,) = texts(axes, "key")
    assert key.split()[:2] == ["#", "scope"]


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


def test_pipeline_labels_inside_their_parts_and_legend_in_stack_order():
    # tree 3 ms, env 16 × 0.25 = 4 ms, tick 0.01 ms, unexplained 10 - 7.01 = 2.99 ms
    stages = (
        StageResult("tree", 1, Measurement((3e-3,), device="cpu0", device_kind="cpu")),
        StageResult("env", 16, Measurement((0.25e-3,), device="cpu0", device_kind="cpu")),
        StageResult("tick", 1, Measurement((0.01e-3,), device="cpu0", device_kind="cpu")),
    )
    total = StageResult("end-to-end", 1, Measurement((10e-3,), device="cpu0", device_kind="cpu"))
    figure = PipelineReport(stages, total, SPEC).plot()
    (axes,) = figure.axes
    # the legend reads top down as the bar stacks bottom up, the end-to-end line first
    assert [t.get_text() for t in axes.get_legend().get_texts()] == [
        "end-to-end: 10.000 ms",
        "unexplained: 2.990 ms",
        "tick × 1: 10.0 µs",
        "env × 16: 4.000 ms",
        "tree × 1: 3.000 ms",
    ]
    figure.canvas.draw()
    renderer = figure.canvas.get_renderer()
    # tick's part (0.1% of the bar) is too thin for its words: it has only its legend entry
    assert texts(axes, "segment") == ["tree × 1\n3.000 ms", "env × 16\n4.000 ms", "unexplained\n2.990 ms"]
    parts = {(p.get_y(), p.get_height()): p.get_window_extent(renderer) for p in axes.patches}
    for text in (t for t in axes.texts if t.get_gid() == "segment"):
        box = text.get_window_extent(renderer)
        assert (
            sum(
                part.x0 <= box.x0 and box.x1 <= part.x1 and part.y0 <= box.y0 and box.y1 <= part.y1
                for part in parts.values()
            )
            == 1
        )
    # a failed stage: the note sits below the x label, not over it, and keeps its dollar signs (no mathtext)
    failed = StageResult("search", 1, error="ValueError: bad $x$ shape")
    figure = PipelineReport((*stages, failed), total, SPEC).plot()
    (axes,) = figure.axes
    figure.canvas.draw()
    (note,) = [t for t in axes.texts if t.get_gid() == "note"]
    assert note.get_text() == (
        "failed: search (ValueError: bad $x$ shape)\nunexplained: unknown (a stage or the end-to-end run failed)"
    )
    assert note.get_window_extent(renderer).y1 <= axes.xaxis.label.get_window_extent(renderer).y0


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
