"""Issue 12, items 2 (CLI part), 5 and 7: options checked before any work, a build() that exits,
a --framework that does not match the program, compare's grandchildren, output file modes.

Each test says what the CLI did before ("Was: ...") and asserts the one-line message and exit code now.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from neural_cost.cli.build import chosen_framework
from neural_cost.cli.compare import run_command
from neural_cost.cli.exits import exit_call
from neural_cost.cli.main import main
from neural_cost.cli.output import write_json_atomic
from neural_cost.core.errors import NeuralCostError

ROOT = Path(__file__).resolve().parents[2]
FAST = ["--warmup", "0", "--repeats", "1"]
PEAKS = ["--peak-flops", "1e11", "--memory-bandwidth", "1e10"]
SRC_ENV = dict(
    os.environ, PYTHONPATH=os.pathsep.join(p for p in (str(ROOT / "src"), os.environ.get("PYTHONPATH")) if p)
)


def _script(tmp_path: Path, text: str, name: str = "work.py") -> str:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return f"{path}:build"


def _parse_error(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    """The stderr of a command line argparse refuses (exit 2, nothing on stdout)."""
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    captured = capsys.readouterr()
    assert exit_info.value.code == 2 and captured.out == ""
    return captured.err


# ---- item 5: every option checked by argparse, before the workload is loaded ---------------------

PEAK_TOO_SMALL = "below 0.001 FLOP/s: a bound divided by it overflows; pass the device's peak, e.g. 1e12"
NOT_SECONDS = "must be a number of seconds > 0 and <= 1e+06"
NOT_FRACTION = "is not a fraction in [0, 1] (0.9 means 90%)"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        # Was: "bound: inf" printed, then a ValueError traceback from json ("Out of range float values
        # are not JSON compliant: inf"), exit 1.
        (["analyze", "w.py:build", "--peak-flops", "1e-320"], f"1e-320 FLOP/s is {PEAK_TOO_SMALL}"),
        (["example", "--peak-flops", "1e-320"], f"1e-320 FLOP/s is {PEAK_TOO_SMALL}"),
        (["example", "--peak-flops", "inf"], "inf is not a finite number"),
        (["example", "--memory-bandwidth", "1e-4"], f"1e-4 bytes/s is {PEAK_TOO_SMALL.replace('FLOP/s', 'bytes/s')}"),
        (["example", "--memory-bandwidth", "0"], "0 must be a positive number of bytes/s"),
        # Was: a ValueError traceback from selectors ("cannot convert float NaN to integer"), exit 1.
        (["compare", "w.py:build", "--timeout", "nan"], "nan is not a finite number"),
        (["compare", "w.py:build", "--timeout", "0"], f"0 {NOT_SECONDS}"),
        # 1e300 s overflows poll()'s C int of milliseconds inside subprocess
        (["compare", "w.py:build", "--timeout", "1e300"], f"1e300 {NOT_SECONDS}"),
        # Was: --min-coverage nan passed every gate (nothing is < nan); --min-coverage 2 ran the whole
        # analysis, printed the report, then "coverage 100.0% is below --min-coverage 200.0%", exit 1.
        (["analyze", "w.py:build", "--min-coverage", "nan"], "nan is not a finite number"),
        (["analyze", "w.py:build", "--min-coverage", "2"], f"2 {NOT_FRACTION}"),
        (["analyze", "w.py:build", "--min-coverage", "-0.5"], f"-0.5 {NOT_FRACTION}"),
        # Was: type=int; "benchmark: warmup=-1 must be an integer >= 0" came only after build() had run
        (["analyze", "w.py:build", "--warmup", "-1"], "-1 must be an integer >= 0"),
        (["analyze", "w.py:build", "--repeats", "0"], "0 must be an integer >= 1"),
        (["analyze", "w.py:build", "--warm-seconds", "-1"], "-1 must be a number of seconds >= 0 and <= 1e+06"),
        (["example", "--warm-seconds", "nan"], "nan is not a finite number"),
        # Was: checked only after build() had run
        (
            ["analyze", "w.py:build", "--trip-count", "loop"],
            "'loop': write LOOP=N, e.g. --trip-count 0=16 or search/while_1=4",
        ),
    ],
)
def test_bad_option_values_are_one_line_before_any_work(argv, message, capsys):
    command, flag = argv[0], argv[-2]
    assert _parse_error(argv, capsys) == f"neural-cost {command}: error: argument {flag}: {message}\n"


def test_peaks_alone_fail_before_build_runs(tmp_path, capsys):
    # Was: build() ran and the workload was timed before "--peak-flops and --memory-bandwidth go together".
    marker = tmp_path / "built"
    target = _script(tmp_path, f"def build():\n    open({str(marker)!r}, 'w').close()\n")
    assert main(["analyze", target, *FAST, "--peak-flops", "1e12"]) == 2
    assert capsys.readouterr().err == (
        "neural-cost: error: --peak-flops and --memory-bandwidth go together; give both, or neither to detect\n"
    )
    assert not marker.exists()


# ---- item 2: --framework that does not match the program ----------------------------------------


def test_framework_mismatch_is_an_error_naming_both(capsys):
    # Was: exit 0 with "coverage: 100.0% of 0 aten ops modeled", "work: 0 FLOP", "bound: 0 s" —
    # the PyTorch adapter traced a JAX program, saw nothing, and --min-coverage 1.0 passed.
    pytest.importorskip("jax")
    target = f"{ROOT / 'examples' / 'mlp.py'}:build"
    assert main(["analyze", target, "--framework", "torch", "--min-coverage", "1.0", *FAST]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == (
        "neural-cost: error: --framework torch does not match the workload: build() returned a JAX program "
        "(forward, told from the types of the model and its arguments), not a PyTorch one; "
        "pass --framework jax or leave --framework out\n"
    )


def test_framework_flag_decides_where_nothing_tells():
    def plain(x):
        return x

    # a plain function of Python numbers: no framework to infer, so the flag is taken as given
    assert chosen_framework("jax", plain, (3,)) == "jax"
    with pytest.raises(NeuralCostError, match="cannot tell the framework of"):
        chosen_framework(None, plain, (3,))


# ---- item 7: a build() (or workload) that exits --------------------------------------------------


def test_build_calling_sys_exit_is_reported(tmp_path, capsys):
    # Was: exit 3, nothing on stdout or stderr.
    target = _script(tmp_path, "import sys\n\ndef build():\n    sys.exit(3)\n")
    assert main(["analyze", target, *FAST]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == (
        "neural-cost: error: build() called sys.exit(3), so there is no report; return (fn_or_model, args) or "
        "(fn_or_model, args, kwargs) from build() in work.py instead\n"
    )


def test_script_exiting_while_loaded_is_reported(tmp_path, capsys):
    # Was: the SystemExit went through the loader: exit 5, no message.
    target = _script(tmp_path, "import sys\nsys.exit(5)\n\ndef build():\n    pass\n")
    assert main(["analyze", target, *FAST]) == 2
    assert capsys.readouterr().err == (
        "neural-cost: error: loading work.py called sys.exit(5), so there is no report; "
        "guard its command-line code with if __name__ == '__main__':\n"
    )


def test_exit_calls_are_named_as_written():
    assert [exit_call(code) for code in (3, None, "bye")] == ["sys.exit(3)", "sys.exit()", "sys.exit('bye')"]


def test_build_calling_os_exit_is_reported_not_obeyed(tmp_path):
    # Was: exit 0 and no output at all: os._exit skips every handler, so the CLI ended "successfully".
    # Run as the console script does, in its own process: if os._exit got through, it would end pytest.
    target = _script(tmp_path, "import os\n\ndef build():\n    os._exit(0)\n")
    done = subprocess.run(
        [sys.executable, "-m", "neural_cost.cli.main", "analyze", target, *FAST],
        capture_output=True,
        text=True,
        env=SRC_ENV,
        timeout=120,
    )
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == (
        "neural-cost: error: build() called os._exit(0), which would end the process without a report; return "
        "(fn_or_model, args) or (fn_or_model, args, kwargs) from build() in work.py instead\n"
    )


def test_a_forked_child_still_ends_through_the_real_os_exit():
    # multiprocessing's forked workers end with os._exit: the guard must let a child process go.
    code = textwrap.dedent(
        """
        import os
        from neural_cost.cli.exits import exits_reported
        with exits_reported("build()", "return instead"):
            pid = os.fork()
            if pid == 0:
                os._exit(7)
            _, status = os.waitpid(pid, 0)
        print(os.waitstatus_to_exitcode(status))
        """
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=SRC_ENV, timeout=60)
    assert (done.returncode, done.stdout) == (0, "7\n")


def test_workload_calling_sys_exit_while_timed_is_reported(tmp_path, capsys):
    # Was: exit 4 with no message, from inside the timing loop.
    pytest.importorskip("jax")
    text = "import sys\nimport jax.numpy as jnp\n\ndef build():\n    return (lambda x: sys.exit(4)), (jnp.ones(2),)\n"
    assert main(["analyze", _script(tmp_path, text), *FAST, *PEAKS]) == 2
    assert capsys.readouterr().err == (
        "neural-cost: error: the workload called sys.exit(4), so there is no report; the function or model "
        "returned by build() must return its result, not exit\n"
    )


# ---- item 7: compare kills the whole process group of a timed-out child --------------------------


def _gone(pid: int) -> bool:
    """Ended: no such process, or a zombie (killed; this container's init may not reap it)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True


SPAWNER = (
    "import subprocess, sys, time\n"
    "p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(120)'])\n"
    "open(sys.argv[1], 'w').write(str(p.pid))\n"
)


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads process states from /proc")
@pytest.mark.parametrize("child_waits", [True, False])
def test_timeout_kills_the_grandchild_too(tmp_path, child_waits):
    # Was: subprocess.run(timeout=) killed only the child; its sleeping grandchild kept running.
    # child_waits=False: the child is done but the grandchild holds its pipes open until the timeout:
    # the child's exit code is kept (its JSON is read as usual) and the grandchild is killed too.
    pid_file = tmp_path / "grandchild.pid"
    body = SPAWNER + ("time.sleep(120)\n" if child_waits else "")
    start = time.perf_counter()
    code, _, _ = run_command([sys.executable, "-c", body, str(pid_file)], os.environ, timeout=3.0)
    assert time.perf_counter() - start < 60
    assert code == (None if child_waits else 0)
    grandchild = int(pid_file.read_text())
    deadline = time.monotonic() + 10
    while not _gone(grandchild) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _gone(grandchild)


# ---- item 7: result files get the user's umask, not mkstemp's 0600 -------------------------------


@pytest.fixture
def umask():
    """Set the process umask for one test and put the old one back."""
    previous = os.umask(0o022)
    yield lambda mask: os.umask(mask)
    os.umask(previous)


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX permission bits")
def test_json_gets_the_umask_and_keeps_an_existing_mode(tmp_path, umask):
    # Was: 0600 whatever the umask (the temporary file's mode survived the atomic rename).
    umask(0o022)
    assert stat.S_IMODE(write_json_atomic(tmp_path / "a.json", {}).stat().st_mode) == 0o644  # 0o666 & ~0o022
    umask(0o077)
    assert stat.S_IMODE(write_json_atomic(tmp_path / "b.json", {}).stat().st_mode) == 0o600  # 0o666 & ~0o077
    existing = tmp_path / "a.json"
    existing.chmod(0o640)
    umask(0o022)
    write_json_atomic(existing, {"again": True})  # an overwrite keeps the file's own mode, as open("w") does
    assert stat.S_IMODE(existing.stat().st_mode) == 0o640


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX permission bits")
def test_plot_gets_the_umask(tmp_path, umask):
    # Was: 0600, as for --json.
    pytest.importorskip("matplotlib")
    from matplotlib.figure import Figure

    from neural_cost.report.plot import save_figure

    umask(0o027)
    assert stat.S_IMODE(save_figure(Figure(), tmp_path / "r.svg").stat().st_mode) == 0o640  # 0o666 & ~0o027
