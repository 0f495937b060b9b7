"""Framework log noise stays off stderr unless --verbose (cli/quiet.py)."""

import os
import platform
import signal
import subprocess
import sys
import textwrap
import threading
import time
import warnings
from pathlib import Path

import pytest

from neural_cost.cli._stderr_filter import copy_filtered
from neural_cost.cli.quiet import is_noise, quiet_frameworks

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
# PyTorch's profiler (Kineto) on each profiled pass (issue 15), copied from a real run
KINETO = "USDT:2026-12-01 18:08:30 21121:21121 SyncActivityProfilerHandler.cpp:52] profiler_start"
ERROR_RECORD = "E0000 00:00:1758131045.203198 3722035 cuda_dnn.cc:8579] Unable to register cuDNN factory"


def test_noise_is_info_and_warning_records_only():
    for line in (ABSL_NOTICE, ONEDNN, ONEDNN.replace("I0000", "W0000"), OLD_FORMAT, CPU_GUARD_TAIL, KINETO):
        assert is_noise(line), line
    # an error record, the user's own output and a traceback line pass through
    for line in (ERROR_RECORD, "hello from my model", 'File "model.py", line 3', "I0000 is my log prefix"):
        assert not is_noise(line), line


def test_the_filter_drops_noise_and_keeps_the_rest_in_order():
    source_read, source_write = os.pipe()
    sink_read, sink_write = os.pipe()
    copier = threading.Thread(target=copy_filtered, args=(source_read, sink_write))
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
    assert ABSL_NOTICE in verbose.stderr  # what quiet hid, --verbose shows
    if _tensorflow_turns_onednn_on():  # and says so
        assert "oneDNN custom operations are on" in verbose.stderr


def _tensorflow_turns_onednn_on() -> bool:
    """TensorFlow's Linux default (``DefaultOneDnnPolicy`` in tensorflow/core/util/port.cc): oneDNN is on
    only on a CPU with one of these neural-network features; an AVX2-only x86 (a Zen 3 EPYC) runs without."""
    cpuinfo = Path("/proc/cpuinfo")
    if platform.machine() not in ("x86_64", "AMD64") or not cpuinfo.exists():
        return False
    flags_lines = [line for line in cpuinfo.read_text().splitlines() if line.startswith("flags")]
    flags = set(flags_lines[0].partition(":")[2].split()) if flags_lines else set()
    return bool(flags & {"avx512_vnni", "avx512_bf16", "avx_vnni", "amx_tile", "amx_int8", "amx_bf16"})


# A build that writes to fd 2 as C code does (os.write: no Python buffer) 2,000 real lines and a
# noise line, so that a filter dying with the process would still hold some of them at the end
# (a filter thread lost the last lines in 4 of 10 such runs: finding F6), then ends as ENDING says.
ENDING_BUILD = """
import ctypes, os, posix, signal, sys, time

NOISE = {noise!r}


def build():
    os.write(2, b"".join(b"real line %d\\n" % i for i in range(2000)) + NOISE + b"MARKER last words\\n")
    {ending}
"""
#: A Ctrl-C (SIGINT to the whole process group) that the build outlives to write once more, then obeys.
CTRL_C = (
    "signal.signal(signal.SIGINT, lambda *_: None); os.killpg(0, signal.SIGINT); time.sleep(0.3); "
    "os.write(2, b'after ctrl-c\\n'); raise KeyboardInterrupt"
)
REAL_LINES = "".join(f"real line {i}\n" for i in range(2000)) + "MARKER last words\n"


def _start_cli(tmp_path, ending, name="ending"):
    """``analyze`` of a build that ends as ``ending`` says, started in a session of its own."""
    script = tmp_path / f"{name}.py"
    script.write_text(textwrap.dedent(ENDING_BUILD).format(noise=(ONEDNN + "\n").encode(), ending=ending))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TF_CPP_", "PYTHON"))}
    env["PYTHONPATH"] = str(SRC)
    command = [sys.executable, "-m", "neural_cost.cli.main", "analyze", f"{script}:build"]
    return subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, start_new_session=True
    )


def _process_group(pgid):
    """Processes of the group ``pgid`` as (pid, state), zombies included: a filter left behind."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:  # it ended while we looked
            continue
        state, _parent, group = text[text.rindex(")") + 2 :].split()[:3]
        if int(group) == pgid:
            found.append((int(stat.parent.name), state))
    return found


def _still_running(pgid, seconds=5.0):
    """Processes of the group ``pgid`` that have not exited, after up to ``seconds`` for them to
    finish. A zombie has exited: one whose parent died is init's to reap (here within ~2 s)."""
    deadline = time.monotonic() + seconds
    while (running := [p for p in _process_group(pgid) if p[1] != "Z"]) and time.monotonic() < deadline:
        time.sleep(0.01)
    return running


needs_proc = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")


@needs_proc
def test_the_last_lines_before_an_abort_are_never_lost(tmp_path):
    # a C++ "Check failed" ends in abort(): the filter is a process of its own, which reads the
    # pipe to the end of file that the CLI's death brings; 10 runs, 5 at a time (a 2-core machine)
    for batch in range(2):
        clis = [_start_cli(tmp_path, "os.abort()", name=f"abort{batch}{i}") for i in range(5)]
        for cli in clis:
            _, stderr = cli.communicate(timeout=120)
            assert cli.returncode == -signal.SIGABRT, stderr[-2000:]
            assert REAL_LINES in stderr and "oneDNN" not in stderr
            # the filter exits once it has passed everything on (reparented to init, which reaps it)
            assert _still_running(cli.pid) == []


@needs_proc
@pytest.mark.parametrize(
    ("ending", "code"),
    [
        ("return None", 2),  # not a model: the CLI says so and exits 2
        ("raise RuntimeError('boom')", 2),
        ("sys.exit(3)", 2),  # reported, not obeyed (cli/exits.py)
        ("posix._exit(4)", 4),  # the real one, past the CLI's interception of os._exit
        ("ctypes.CDLL(None).exit(5)", 5),  # C's exit(): no Python cleanup
        ("os.kill(os.getpid(), signal.SIGSEGV)", -signal.SIGSEGV),
        # Ctrl-C reaches the whole group, filter included: it must stay, for what the CLI writes after
        (CTRL_C, 130),
    ],
)
def test_whatever_the_ending_noise_is_dropped_and_every_real_line_kept(tmp_path, ending, code):
    cli = _start_cli(tmp_path, ending)
    _, stderr = cli.communicate(timeout=120)
    assert cli.returncode == code, stderr[-2000:]
    assert REAL_LINES in stderr and "oneDNN" not in stderr
    # the CLI's own message goes straight to stderr, beside the filtered C stream, before or after it
    message = stderr.replace(REAL_LINES, "")
    if code == 130:
        assert sorted(message.splitlines()) == ["after ctrl-c", "neural-cost: interrupted"]
    if code == 2:
        assert message.startswith("neural-cost") and message.endswith("\n")
    if code in (2, 130):  # a normal exit: the CLI waited for the filter and reaped it, nothing is left
        assert _process_group(cli.pid) == []
    else:  # the filter outlived the CLI just long enough to pass the last lines on
        assert _still_running(cli.pid) == []
