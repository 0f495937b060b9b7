"""``neural-cost``: subcommands are thin; the library does the work."""

from __future__ import annotations

import argparse
import contextlib
import functools
import math
import os
import sys
from collections.abc import Callable, Sequence
from typing import NoReturn

from .. import __version__
from ..core.errors import NeuralCostError
from .quiet import filtered_stderr, quiet_frameworks
from .tidy import print_error


def _batches(text: str) -> tuple[int, ...]:
    """An argparse type: ``8`` or ``8,32,128``, each an integer >= 1, none twice; returned in ascending order."""
    parse = _count(1)
    found = tuple(parse(part.strip()) for part in text.split(","))
    if len(set(found)) != len(found):
        raise argparse.ArgumentTypeError(f"{text!r} names a batch twice")
    return tuple(sorted(found))


def _count(minimum: int) -> Callable[[str], int]:
    """An argparse type: an integer >= ``minimum`` (argparse names the flag and the value on error)."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"{value} must be an integer >= {minimum}")
        return value

    parse.__name__ = f"integer >= {minimum}"
    return parse


def _number(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"{text} is not a finite number")
    return value


def _fraction(text: str) -> float:
    """An argparse type: a finite number in [0, 1] (checked here, before any work, not after the analysis)."""
    value = _number(text)
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"{text} is not a fraction in [0, 1] (0.9 means 90%)")
    return value


#: Longest --timeout: poll() takes a C int of milliseconds (24.8 days); beyond it subprocess raises.
_MAX_SECONDS = 1e6


def _seconds(text: str, zero: bool = False) -> float:
    """An argparse type: a positive (or, with ``zero``, non-negative), finite number of seconds."""
    value = _number(text)
    if not (value >= 0.0 if zero else value > 0.0) or value > _MAX_SECONDS:
        raise argparse.ArgumentTypeError(
            f"{text} must be a number of seconds {'>=' if zero else '>'} 0 and <= {_MAX_SECONDS:g}"
        )
    return value


def _rate(unit: str) -> Callable[[str], float]:
    """An argparse type: a peak rate, finite and at least 1e-3 ``unit``; below that a bound
    (work ÷ rate) overflows to infinity for an ordinary program and no report can hold it."""
    minimum = 1e-3

    def parse(text: str) -> float:
        value = _number(text)
        if value <= 0:
            raise argparse.ArgumentTypeError(f"{text} must be a positive number of {unit}")
        if value < minimum:
            raise argparse.ArgumentTypeError(
                f"{text} {unit} is below {minimum:g} {unit}: a bound divided by it overflows; "
                f"pass the device's peak, e.g. 1e12"
            )
        return value

    parse.__name__ = unit
    return parse


def _trip_count(text: str) -> tuple[int | str, int]:
    """An argparse type: ``LOOP=N`` → (the loop's index or label, N)."""
    loop, sep, value = text.rpartition("=")
    if not sep or not loop or not value.isdigit():
        raise argparse.ArgumentTypeError(f"{text!r}: write LOOP=N, e.g. --trip-count 0=16 or search/while_1=4")
    return (int(loop) if loop.isdigit() else loop), int(value)


class _Parser(argparse.ArgumentParser):
    """Errors in one stderr line naming the flag and its value (argparse's usage block is left out)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message}\n")


def _add_report_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--top", type=_count(0), default=10, help="rows in the table (default 10)")
    parser.add_argument(
        "--by",
        choices=TABLES,
        default=None,
        help="the table: per operation (default), per scope (module), or per kernel (each executed kernel's "
        "traffic, memory level and own bound); --plot draws operations, or scopes with --by scope",
    )
    parser.add_argument("--group-by-scope", action="store_true", help="the same as --by scope")
    parser.add_argument("--json", metavar="PATH", help="also write the report as JSON (written atomically)")
    parser.add_argument(
        "--peak-flops", type=_rate("FLOP/s"), help="score against this peak FLOP/s instead of the host formula"
    )
    parser.add_argument(
        "--memory-bandwidth",
        type=_rate("bytes/s"),
        help="score against this bandwidth (bytes/s) instead of a measured one",
    )
    parser.add_argument("--warmup", type=_count(0), default=3, help="untimed runs before timing (default 3)")
    parser.add_argument("--repeats", type=_count(1), default=20, help="timed runs (default 20)")
    parser.add_argument(
        "--warm-seconds",
        type=functools.partial(_seconds, zero=True),
        default=0.5,
        help="also keep running untimed until this long has passed before timing (default 0.5: on a shared "
        "machine an idle core's threads take about that long to come back; 0: the --warmup runs only)",
    )


def _add_profile_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--profile",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="after timing, run the workload --profile-runs more times under the framework's profiler to measure "
        "each kernel's time: the tables gain measured and eff columns, coverage a time share (default: on)",
    )
    parser.add_argument(
        "--profile-runs", type=_count(1), default=3, help="runs under the profiler, after the timed ones (default 3)"
    )


def _add_trace_out(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--trace-out",
        metavar="PATH",
        help="also write the profiled kernels as a Chrome/Perfetto trace (JSON, atomically; needs --profile)",
    )


#: The tables ``--by`` chooses (``GapReport.render(by=...)``; ``report/kernel_text.py`` holds the same tuple).
TABLES = ("operation", "scope", "kernel")
VERBOSE_HELP = "show the frameworks' own log lines and warnings (TensorFlow, absl, XLA), hidden by default"


def _add_verbose(parser: argparse.ArgumentParser, default: object) -> None:
    parser.add_argument("-v", "--verbose", action="store_true", default=default, help=VERBOSE_HELP)


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="neural-cost",
        description="Roofline analysis that says what it doesn't know.",
    )
    parser.add_argument("--version", action="version", version=f"neural-cost {__version__}")
    _add_verbose(parser, False)
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    example = commands.add_parser(
        "example", help="analyze the bundled two-layer MLP on this machine (JAX if installed, else numpy)"
    )
    example.add_argument(
        "--framework",
        choices=("auto", "jax", "numpy"),
        default="auto",
        help="trace a JAX model with JaxAdapter, or time numpy with hand-written operations "
        "(default: jax if installed)",
    )
    example.add_argument("--batch", type=_count(1), default=256, help="batch size of the example (default 256)")
    _add_report_options(example)
    _add_profile_options(example)
    _add_trace_out(example)
    commands.add_parser("kinds", help="list the operation kinds and the convention each cost rule counts by")
    hardware = commands.add_parser(
        "hardware", help="print the detected spec of a device, where each number came from, and its ridge points"
    )
    hardware.add_argument("--device", default=None, help="cpu (default), cuda, cuda:N, gpu, mps, tpu")
    hardware.add_argument(
        "--calibrate", action="store_true", help="measure the fastest kernels and copy bandwidth; cache them"
    )
    hardware.add_argument(
        "--recalibrate", action="store_true", help="drop this machine's cached figures and measure them afresh"
    )
    hardware.add_argument("--dtypes", default="float32", help="dtypes to calibrate, comma-separated (default float32)")
    hardware.add_argument("--size", type=_count(16), default=2048, help="calibration matmul size n (n×n, default 2048)")
    hardware.add_argument("--json", metavar="PATH", help="also write the spec and calibration as JSON")
    compare = commands.add_parser(
        "compare", help="run one workload on each JAX platform, each in its own process, and print one table"
    )
    compare.add_argument(
        "build", metavar="FILE.py:build", help="a function of no arguments returning (fn_or_model, args[, kwargs])"
    )
    compare.add_argument("--platforms", default="cpu", help="JAX platforms, comma-separated (default cpu)")
    compare.add_argument("--warmup", type=_count(0), default=3, help="untimed runs before timing (default 3)")
    compare.add_argument("--repeats", type=_count(1), default=20, help="timed runs (default 20)")
    compare.add_argument("--timeout", type=_seconds, default=600.0, help="seconds per platform (default 600)")
    compare.add_argument("--json", metavar="PATH", help="also write every platform's report as JSON (atomically)")
    _add_profile_options(compare)
    analyze = commands.add_parser("analyze", help="trace, time and score FILE.py:build here; print the full report")
    analyze.add_argument(
        "target", metavar="FILE.py:build", help="a function of no arguments returning (fn, args[, kwargs])"
    )
    analyze.add_argument("--framework", choices=("jax", "torch", "tensorflow"), help="default: inferred")
    analyze.add_argument("--device", help="score against this device's spec (cpu, cuda:N, mps...)")
    analyze.add_argument("--calibrate", action="store_true", help="score against measured peaks of this device")
    analyze.add_argument(
        "--trip-count", type=_trip_count, action="append", metavar="LOOP=N", help="a while loop's trip count"
    )
    analyze.add_argument("--default-trip-count", type=_count(0), default=8, help="for loops nothing counts (default 8)")
    analyze.add_argument(
        "--min-coverage",
        type=_fraction,
        help="exit 1 when coverage (the lower of operations and work) is below this fraction in [0, 1] (a CI gate)",
    )
    analyze.add_argument(
        "--min-time-coverage",
        type=_fraction,
        help="exit 1 when the measured time in modeled kernels is below this fraction of the kernel time (a CI "
        "gate; exit 2 when no time was measured)",
    )
    analyze.add_argument("--plot", metavar="PATH", help="also save the roofline plot (.png or .svg)")
    analyze.add_argument(
        "--expected",
        action="store_true",
        help="add the expected time from this device's kernel model (calibrated the first time: a few minutes)",
    )
    _add_report_options(analyze)
    _add_profile_options(analyze)
    _add_trace_out(analyze)
    diff = commands.add_parser("diff", help="compare two saved reports (--json files): before → after")
    diff.add_argument("before", help="the earlier report's JSON")
    diff.add_argument("after", help="the later report's JSON")
    diff.add_argument("--top", type=_count(0), default=10, help="scopes to list (default 10)")
    diff.add_argument(
        "--max-bytes", type=_count(1), default=None, help="read reports larger than the default limit (400 MB)"
    )
    merge = commands.add_parser("merge", help="merge the saved reports of a run's ranks (one --json file a rank)")
    merge.add_argument("reports", nargs="+", metavar="REPORT.json", help="one saved report per rank")
    merge.add_argument(
        "--max-bytes", type=_count(1), default=None, help="read reports larger than the default limit (400 MB)"
    )
    predict = commands.add_parser(
        "predict", help="the expected time of FILE.py:build from its trace and this device's kernel model"
    )
    predict.add_argument(
        "target", metavar="FILE.py:build", help="build() or build(batch=N) returning (fn, args[, kwargs])"
    )
    predict.add_argument("--framework", choices=("jax", "torch", "tensorflow"), help="default: inferred")
    predict.add_argument(
        "--batch", type=_batches, default=None,
        help="call build(batch=N): predict at batch N; N,M,... predicts each and prints them side by side",
    )  # fmt: skip
    predict.add_argument("--calibration", metavar="FILE", help="a kernel model saved by calibrate --kernels --json")
    predict.add_argument("--no-floor", action="store_true", help="skip the batch-1 run that measures the floor")
    predict.add_argument("--top", type=_count(0), default=10, help="kernels to list (default 10)")
    predict.add_argument("--json", metavar="PATH", help="also write the expectation as JSON (atomically)")
    calibrate = commands.add_parser("calibrate", help="measure this device's kernel model (--kernels) and cache it")
    calibrate.add_argument("--kernels", action="store_true", help="micro-benchmark every kernel class and fit it")
    calibrate.add_argument("--framework", choices=("jax", "torch", "tensorflow"), default="torch")
    calibrate.add_argument("--json", metavar="PATH", help="also save the kernel model to PATH (for predict elsewhere)")
    calibrate.add_argument(
        "--fresh",
        action="store_true",
        help="forget this machine's earlier calibrations (each point is otherwise the median of this and the last two)",
    )
    for command in commands.choices.values():
        # also after the command (`analyze x.py:build -v`); SUPPRESS keeps a `-v` given before it
        _add_verbose(command, argparse.SUPPRESS)
    return parser


def _table_choice(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """``--group-by-scope`` is ``--by scope``; with ``--by`` naming another table it is an error."""
    if not getattr(args, "group_by_scope", False):
        return
    if args.by not in (None, "scope"):
        parser.error(f"--group-by-scope is --by scope; it cannot go with --by {args.by} (pass one)")
    args.by = "scope"


def _profile_choice(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """What needs a profiled pass cannot go with ``--no-profile``: said before any work."""
    if getattr(args, "profile", True):
        return
    for flag, value in (("--trace-out", "trace_out"), ("--min-time-coverage", "min_time_coverage")):
        if getattr(args, value, None) is not None:
            parser.error(f"{flag} needs the profiled pass that --no-profile turns off (drop one of them)")


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    _table_choice(parser, args)
    _profile_choice(parser, args)
    if args.verbose:
        return _run(args)
    quiet_frameworks()  # before any framework is imported: every import below is lazy
    with filtered_stderr():
        return _run(args)


def _run(args: argparse.Namespace) -> int:
    try:
        if args.command == "example":
            from .example import run_example

            return run_example(args)
        if args.command == "hardware":
            from .hardware import run_hardware

            return run_hardware(args)
        if args.command == "analyze":
            from .analyze import run_analyze

            return run_analyze(args)
        if args.command == "diff":
            from .analyze import run_diff

            return run_diff(args)
        if args.command == "merge":
            from .merge import run_merge

            return run_merge(args)
        if args.command in ("predict", "calibrate"):
            from .predict import run_calibrate, run_predict

            return run_predict(args) if args.command == "predict" else run_calibrate(args)
        if args.command == "compare":
            from .compare import run_compare

            return run_compare(args)
        if args.command == "kinds":
            from ..costs import known_kinds

            kinds = sorted(known_kinds().items())
            width = max(len(kind) for kind, _ in kinds)  # the longest name sets the column, so summaries align
            for kind, summary in kinds:
                print(f"{kind:{width}s}  {summary}")
            return 0
    except NeuralCostError as error:
        print_error(error, verbose=args.verbose)
        return 2
    except KeyboardInterrupt:
        print("neural-cost: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `neural-cost kinds | head`: the reader left; no traceback about it
        with contextlib.suppress(OSError, ValueError):  # stdout's final flush must not raise again
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141  # 128 + SIGPIPE, what a shell reports for a command cut off by a closed pipe
    raise AssertionError(f"unhandled command {args.command!r}")


if __name__ == "__main__":
    sys.exit(main())
