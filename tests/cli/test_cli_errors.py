"""The CLI on odd flags and paths: one clear error line and exit 2, never a traceback or a half-written file."""

from __future__ import annotations

import textwrap

import pytest

from neural_cost.cli.main import main

FAST = ["--warmup", "0", "--repeats", "1", "--peak-flops", "1e11", "--memory-bandwidth", "1e10"]
JAX_SCRIPT = """
import jax.numpy as jnp

def build():
    return (lambda w, x: jnp.tanh(x @ w)), (jnp.ones((16, 8)), jnp.ones((4, 16)))
"""


def _script(tmp_path, text):
    path = tmp_path / "work.py"
    path.write_text(textwrap.dedent(text))
    return f"{path}:build"


@pytest.mark.parametrize(
    ("flags", "match"),
    [
        (["--batch", "-1"], "--batch"),
        (["--batch", "0"], "--batch"),
        (["--top", "-3"], "--top"),
    ],
)
def test_cli_rejects_bad_sizes(flags, match, capsys):
    # Was: --batch -1 crashed inside numpy with a traceback; --batch 0 printed a report of an
    # empty computation at 12,735% efficiency; --top -3 silently dropped the table.
    with pytest.raises(SystemExit) as exit_info:
        main(["example", *flags, "--repeats", "1", "--peak-flops", "1e11", "--memory-bandwidth", "1e10"])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert match in err and "Traceback" not in err


def test_cli_unwritable_json_path_is_a_clear_error(tmp_path, capsys):
    # Was (cli/example.py): --json into a missing directory of an unwritable tree, or onto a
    # directory, raised OSError with a traceback naming a temporary file.
    blocked = tmp_path / "file"
    blocked.write_text("x")
    for target in (blocked / "report.json", tmp_path):
        code = main(
            [
                *("example", "--batch", "2", "--warmup", "0", "--repeats", "1"),
                *("--peak-flops", "1e11", "--memory-bandwidth", "1e10", "--json", str(target)),
            ]
        )
        err = capsys.readouterr().err
        assert code == 2
        assert err.startswith(f"neural-cost: error: --json {target}: cannot write the report")


def test_analyze_plot_to_an_unknown_extension_writes_nothing(tmp_path, capsys):
    # Was (cli/analyze.py): `--json r.json --plot r.pdf` timed, printed the full report and wrote
    # r.json, and only then failed on the plot's extension — exit 2 with a complete-looking JSON left
    # behind. Right: one stderr line, exit 2, no report, no JSON, no plot.
    pytest.importorskip("jax")
    out, plot = tmp_path / "r.json", tmp_path / "r.pdf"
    code = main(["analyze", _script(tmp_path, JAX_SCRIPT), *FAST, "--json", str(out), "--plot", str(plot)])
    captured = capsys.readouterr()
    assert code == 2
    assert captured.out == ""
    assert captured.err.count("\n") == 1 and ".pdf" in captured.err and "Traceback" not in captured.err
    assert not out.exists() and not plot.exists()
    assert list(tmp_path.iterdir()) == [tmp_path / "work.py"]


def test_analyze_refuses_calibrate_with_given_peaks(tmp_path, capsys):
    # Was (cli/analyze.py): `--calibrate --peak-flops P --memory-bandwidth B` silently scored against
    # P and B; the user believed the peaks were measured. Right: a clear error, exit 2.
    pytest.importorskip("jax")
    code = main(["analyze", _script(tmp_path, JAX_SCRIPT), *FAST, "--calibrate"])
    assert code == 2
    assert "--calibrate" in capsys.readouterr().err
