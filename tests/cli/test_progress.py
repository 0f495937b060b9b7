"""The progress line: drawn in place with \\r on a terminal, nothing at all when stderr is not one."""

import io
import sys
import textwrap

import pytest

from neural_cost.cli.main import main
from neural_cost.cli.progress import Progress


class FakeTTY(io.StringIO):
    def isatty(self):
        return True


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


@pytest.fixture(autouse=True)
def wide_terminal(monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")  # shutil.get_terminal_size reads it first: no truncation


def test_the_line_is_redrawn_in_place_and_ends_with_a_newline():
    stream, clock = FakeTTY(), Clock()
    progress = Progress(stream, clock=clock)
    progress.stage("tracing")
    clock.now += 1.0
    progress.runs("timing", 1, 4)  # a new stage: drawn at once
    clock.now += 0.0625
    progress.runs("timing", 2, 4)  # 0.0625 s after the last draw: skipped (MIN_REDRAW_SECONDS 0.1)
    clock.now += 0.4375
    progress.runs("timing", 4, 4)  # the last run: always drawn
    progress.close("done")
    # bars of 20: 1/4 → 20·1//4 = 5 filled; 4/4 → 20 filled; times since the start: 0, 1, 1 + 0.0625 + 0.4375
    first = "neural-cost: tracing · 0.0 s"
    second = "neural-cost: timing [#####···············] 1/4 · 1.0 s"
    third = "neural-cost: timing [####################] 4/4 · 1.5 s"
    last = "neural-cost: done · 1.5 s"
    padding = " " * (len(third) - len(last))  # covers what the longer previous line showed
    assert stream.getvalue() == f"\r{first}\r{second}\r{third}\r{last}{padding}\n"


def test_nothing_is_written_when_the_stream_is_not_a_terminal():
    stream = io.StringIO()
    progress = Progress(stream)
    progress.stage("tracing")
    progress.runs("timing", 3, 3)
    progress.close("done")
    assert not progress.enabled and stream.getvalue() == ""


def test_close_without_a_draw_writes_nothing_and_a_long_line_is_cut_to_the_terminal(monkeypatch):
    stream = FakeTTY()
    Progress(stream).close("done")
    assert stream.getvalue() == ""
    monkeypatch.setenv("COLUMNS", "21")
    progress = Progress(stream, clock=Clock())
    progress.stage("loading a_very_long_file_name.py")
    # 21 columns − 1 (a full line would wrap) = 20 characters: 19 of the text and "…"
    assert stream.getvalue() == "\rneural-cost: loadin…"


JAX_SCRIPT = """
import jax.numpy as jnp

def build():
    return (lambda w, x: jnp.tanh(x @ w)), (jnp.ones((16, 8)), jnp.ones((4, 16)))
"""


def test_analyze_draws_each_stage_on_a_terminal(tmp_path, monkeypatch, capsys):
    pytest.importorskip("jax")
    script = tmp_path / "work.py"
    script.write_text(textwrap.dedent(JAX_SCRIPT))
    stream = FakeTTY()
    monkeypatch.setattr(sys, "stderr", stream)
    flags = ["--warmup", "2", "--repeats", "3", "--peak-flops", "1e11", "--memory-bandwidth", "1e10"]
    assert main(["analyze", f"{script}:build", *flags]) == 0
    drawn = [part.split(" · ")[0].rstrip() for part in stream.getvalue().split("\r") if part]
    assert drawn[0] == "neural-cost: loading work.py"
    assert drawn[1] == "neural-cost: compiling"  # JaxAdapter.compiles_when_timing
    # warmup 1/2 (new stage, drawn), 2/2 (last, drawn); timing 1/3 and 3/3 at least
    assert "neural-cost: warmup [####################] 2/2" in drawn
    assert "neural-cost: timing [######··············] 1/3" in drawn  # 20·1//3 = 6
    assert drawn[-3:] == ["neural-cost: timing [####################] 3/3", "neural-cost: tracing", "neural-cost: done"]
    assert stream.getvalue().endswith("\n") and stream.getvalue().count("\n") == 1
    assert capsys.readouterr().out.startswith("Neural cost gap analysis")


def test_analyze_piped_writes_no_progress(tmp_path, capsys):
    pytest.importorskip("jax")
    script = tmp_path / "work.py"
    script.write_text(textwrap.dedent(JAX_SCRIPT))
    flags = ["--warmup", "0", "--repeats", "1", "--peak-flops", "1e11", "--memory-bandwidth", "1e10"]
    assert main(["analyze", f"{script}:build", *flags]) == 0
    assert capsys.readouterr().err == ""  # capsys's stream is no terminal
