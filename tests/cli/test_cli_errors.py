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


# ---- framework errors: one line, no ANSI codes, no framework frames, no <locals> (issue 13) ------

KERAS_TEXT = (
    "TensorFlowAdapter.benchmark: running sequential failed (ValueError): in user code:\n"
    "\n"
    '    File "/env/site-packages/neural_cost/adapters/tensorflow.py", line 156, in call  *\n'
    "        return model(*positional, training=False)\n"
    '    File "/home/me/model.py", line 12, in call\n'
    "        y = self.dense(x)\n"
    '    File "/env/site-packages/keras/src/utils/traceback_utils.py", line 122, in error_handler  **\n'
    "        raise e.with_traceback(filtered_tb) from None\n"
    "\n"
    "    ValueError: Exception encountered when calling Sequential.call().\n"
    "    \n"
    "    \x1b[1mInput 0 of layer 'dense' is incompatible with the layer: expected axis -1 of input shape "
    "to have value 16, but received input with shape (2, 15)\x1b[0m\n"
    "    \n"
    "    Arguments received by Sequential.call():\n"
    "      • inputs=tf.Tensor(shape=(2, 15), dtype=float32)\n"
    "      • training=False\n"
)


def test_a_keras_error_is_one_line_with_the_users_frame():
    from neural_cost.cli.tidy import one_line

    # kept: the message (bold codes stripped, "ValueError:" said once, Keras's header joined to it)
    # and the one frame in the user's file; dropped: the frames in installed packages, their code
    # lines, "in user code:" and the "Arguments received by" listing
    assert one_line(KERAS_TEXT) == (
        "TensorFlowAdapter.benchmark: running sequential failed (ValueError): Exception encountered when "
        "calling Sequential.call(): Input 0 of layer 'dense' is incompatible with the layer: expected axis -1 "
        "of input shape to have value 16, but received input with shape (2, 15) (at model.py:12 in call)"
    )


def test_locals_paths_are_removed_from_any_message():
    from neural_cost.cli.tidy import one_line

    text = "benchmark: TorchAdapter.benchmark.<locals>.run raised; build.<locals>.f() takes 1 argument"
    assert one_line(text) == "benchmark: run raised; f() takes 1 argument"


KERAS_SUBCLASS = """
import numpy as np
import keras
import tensorflow as tf


class Block(keras.Model):
    def __init__(self):
        super().__init__()
        self.dense = keras.layers.Dense(8)

    def call(self, x):
        return tf.reshape(self.dense(x), (3, 5))


def build():
    return Block(), (np.ones((2, 16), np.float32),)
"""


def test_a_real_keras_error_reaches_the_user_as_one_clean_line(tmp_path, capsys):
    # Was: ~15 lines of TensorFlow and Keras frames, the message wrapped in ANSI bold codes
    pytest.importorskip("keras")
    assert main(["analyze", _script(tmp_path, KERAS_SUBCLASS), *FAST]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "\x1b" not in err and 'File "' not in err and "site-packages" not in err
    assert err.startswith("neural-cost: error: TensorFlowAdapter.benchmark: running block failed (ValueError): ")
    assert "Cannot reshape a tensor with 16 elements to shape [3,5]" in err  # 2×8 = 16 elements, 3×5 = 15
    assert err.endswith(" (at work.py:13 in call)\n")  # the user's line: return tf.reshape(...)


TORCH_LATE_FAILURE = """
import torch


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(16, 8)
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        if self.calls > 2:
            raise ValueError(f"boom on call {self.calls}")
        return self.fc(x)


def build():
    return Net(), (torch.ones(2, 16),)
"""


def test_a_timing_failure_names_no_locals_and_points_at_the_user(tmp_path, capsys):
    # Was: "benchmark: TorchAdapter.benchmark.<locals>.run raised ValueError while being timed: boom on call 3"
    pytest.importorskip("torch")
    flags = ["--warmup", "1", "--repeats", "2", "--peak-flops", "1e11", "--memory-bandwidth", "1e10"]
    assert main(["analyze", _script(tmp_path, TORCH_LATE_FAILURE), *flags]) == 2
    # call 1: the adapter's untimed probe run; call 2: the warmup; call 3: the first timed run
    assert capsys.readouterr().err == (
        "neural-cost: error: benchmark: the workload raised ValueError while being timed: boom on call 3 "
        "(at work.py:14 in forward)\n"
    )
