"""Framework log noise stays off stderr unless --verbose (cli/quiet.py)."""

import os
import platform
import subprocess
import sys
import textwrap
import threading
import warnings
from pathlib import Path

import pytest

from neural_cost.cli.quiet import _copy_filtered, is_noise, quiet_frameworks

SRC = Path(__file__).resolve().parents[2] / "src"

# lines TensorFlow 2.21 writes on import, copied from a real run (issue 13)
ABSL_NOTICE = "WARNING: All log messages before absl::InitializeLog() is called are written to STDERR"
ONEDNN = (
    "I0000 00:00:1796140672.024660   20375 port.cc:153] oneDNN custom operations are on. You may see "
    "slightly different numerical results due to floating-point round-off errors from different computation "
    "orders. To turn them off, set the environment variable `TF_ENABLE_ONEDNN_OPTS=0`."
)
OLD_FORMAT = "2025-09-17 14:44:05.157831: I external/local_xla/xla/tsl/cuda/cudart_stub.cc:32] Could not find cuda"
CPU_GUARD_TAIL = (
    "To enable the following instructions: AVX2 AVX512F FMA, in other operations, rebuild TensorFlow with "
    "the appropriate compiler flags."
)
ERROR_RECORD = "E0000 00:00:1758131045.203198 3722035 cuda_dnn.cc:8579] Unable to register cuDNN factory"


def test_noise_is_info_and_warning_records_only():
    for line in (ABSL_NOTICE, ONEDNN, ONEDNN.replace("I0000", "W0000"), OLD_FORMAT, CPU_GUARD_TAIL):
        assert is_noise(line), line
    # an error record, the user's own output and a traceback line pass through
    for line in (ERROR_RECORD, "hello from my model", 'File "model.py", line 3', "I0000 is my log prefix"):
        assert not is_noise(line), line


def test_the_filter_drops_noise_and_keeps_the_rest_in_order():
    source_read, source_write = os.pipe()
    sink_read, sink_write = os.pipe()
    copier = threading.Thread(target=_copy_filtered, args=(source_read, sink_write))
    copier.start()
    text = "\n".join([ABSL_NOTICE, "kept 1", ONEDNN, ERROR_RECORD, OLD_FORMAT, "kept 2", "no newline at the end"])
    os.write(source_write, text.encode())
    os.close(source_write)
    copier.join(10)
    os.close(sink_write)
    with open(sink_read, "rb") as sink:
        assert sink.read().decode() == f"kept 1\n{ERROR_RECORD}\nkept 2\nno newline at the end"


def test_framework_warnings_are_ignored_and_the_users_are_not(monkeypatch):
    monkeypatch.delenv("TF_CPP_MIN_LOG_LEVEL", raising=False)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        quiet_frameworks()
        for module in ("tensorflow.python.framework.ops", "keras", "jax._src.xla_bridge", "mymodel", "jaxfoo"):
            warnings.warn_explicit(f"from {module}", UserWarning, "x.py", 1, module=module)
    assert [str(w.message) for w in caught] == ["from mymodel", "from jaxfoo"]
    assert os.environ["TF_CPP_MIN_LOG_LEVEL"] == "2"  # set for TensorFlow's own C++ logger (and for children)


KERAS_BUILD = """
import numpy as np
import keras


def build():
    model = keras.Sequential([keras.Input((16,)), keras.layers.Dense(8, activation="relu"), keras.layers.Dense(4)])
    return model, (np.ones((2, 16), np.float32),)
"""


def _analyze(tmp_path, *extra):
    script = tmp_path / "work.py"
    script.write_text(textwrap.dedent(KERAS_BUILD))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TF_CPP_", "PYTHONWARNINGS"))}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(SRC), env.get("PYTHONPATH", "")) if p)
    flags = ["--warmup", "0", "--repeats", "1", "--peak-flops", "1e11", "--memory-bandwidth", "1e10"]
    command = [sys.executable, "-m", "neural_cost.cli.main", "analyze", f"{script}:build", *flags, *extra]
    return subprocess.run(command, capture_output=True, text=True, timeout=300, env=env)


@pytest.mark.slow
def test_analyze_of_a_keras_build_prints_no_framework_log_lines(tmp_path):
    # Was: "WARNING: All log messages before absl::InitializeLog()...", "I0000 ... port.cc:153] oneDNN
    # custom operations are on..." (twice) and the cpu_feature_guard notice on every run
    pytest.importorskip("keras")
    quiet = _analyze(tmp_path)
    assert quiet.returncode == 0, quiet.stderr
    assert quiet.stderr == ""  # piped: no progress line either
    assert quiet.stdout.startswith("Neural cost gap analysis")
    verbose = _analyze(tmp_path, "--verbose")
    assert verbose.returncode == 0 and verbose.stdout.startswith("Neural cost gap analysis")
    if platform.machine() in ("x86_64", "AMD64"):  # where TensorFlow turns oneDNN on, and says so
        assert "oneDNN custom operations are on" in verbose.stderr
