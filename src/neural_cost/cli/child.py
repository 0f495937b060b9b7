"""One platform of ``neural-cost compare``, in its own process (JAX allows one platform per process).

``python -m neural_cost.cli.child FILE.py:build --platform P --json OUT`` checks that JAX
can use platform P, loads the script, calls ``build()`` (only here, never in the parent),
analyzes the workload and writes ``{"platform", "status", "framework", "error", "report"}``
to OUT. The status is ``ok``, ``unavailable`` or ``failed``; the exit code is 0 only for ok.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
import traceback
from collections.abc import Sequence
from typing import Any

from ..core.errors import NeuralCostError
from .exits import WORKLOAD_ADVICE, exits_reported
from .output import write_json_atomic
from .quiet import filtered_stderr, quiet_frameworks
from .tidy import one_line

RESULT_SCHEMA = "neural-cost/compare-platform"


def _first_line(error: BaseException) -> str:
    text = one_line(str(error).strip(), error)
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


def platform_problem(platform: str) -> str | None:
    """Why JAX cannot run on ``platform`` in this process, or None when it can."""
    if importlib.util.find_spec("jax") is None:
        return None if platform == "cpu" else "jax is not installed; compare selects platforms through JAX_PLATFORMS"
    os.environ["JAX_PLATFORMS"] = platform  # normally already set by the parent; JAX reads it on first use
    try:
        import jax

        devices = jax.devices()
    except Exception as error:  # JAX raises RuntimeError (or others) for a backend it cannot start
        if not str(error).strip():  # jax asserts, silently, when no plugin for the platform is installed
            name = type(error).__name__
            return f"platform {platform!r} is not available: no JAX backend started ({name}); is its plugin installed?"
        return f"platform {platform!r} is not available: {_first_line(error)}"
    if not devices:
        return f"platform {platform!r} is not available: JAX lists no devices for it"
    return None


def run_platform(
    spec: str, platform: str, warmup: int, repeats: int, profile: bool = True, profile_runs: int = 3
) -> dict[str, Any]:
    """Everything the parent's row needs, as plain data; never raises for a workload's failure.
    ``profile``/``profile_runs``: the profiled pass after timing (``analyze_workload``'s)."""
    result: dict[str, Any] = {
        "schema": RESULT_SCHEMA,
        "platform": platform,
        "status": "failed",
        "framework": None,
        "error": None,
        "note": None,
        "report": None,
    }
    problem = platform_problem(platform)
    if problem is not None:
        result.update(status="unavailable", error=problem)
        return result
    from ..adapters import adapter_for
    from ..analysis.workload import analyze_workload
    from .build import call_build, infer_framework, load_build

    try:
        fn, args, kwargs = call_build(load_build(spec))
        framework = infer_framework(fn, args, kwargs)
        result["framework"] = framework
        adapter = adapter_for(framework)
        if not adapter.device_from_environment and platform != "cpu":
            result["note"] = f"a {framework} workload runs where build() put it; JAX_PLATFORMS does not move it"
        with exits_reported("the workload", WORKLOAD_ADVICE):
            report = analyze_workload(
                adapter, fn, args, kwargs, warmup=warmup, repeats=repeats, profile=profile, profile_runs=profile_runs
            )
    except NeuralCostError as error:
        result["error"] = one_line(str(error).strip(), error) or type(error).__name__
        return result
    except Exception as error:  # a bug of ours or the framework's: the row says what, stderr has the traceback
        traceback.print_exc()
        result["error"] = _first_line(error)
        return result
    result.update(status="ok", report=report.to_dict())
    return result


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m neural_cost.cli.child", description=__doc__)
    parser.add_argument("build", metavar="FILE.py:build")
    parser.add_argument("--platform", required=True)
    parser.add_argument("--json", metavar="PATH", required=True)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--verbose", action="store_true", help="let the frameworks' log lines through")
    parser.add_argument("--no-profile", dest="profile", action="store_false", help="no profiled pass after timing")
    parser.add_argument("--profile-runs", type=int, default=3, help="runs under the profiler (default 3)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    run = (args.build, args.platform, args.warmup, args.repeats, args.profile, args.profile_runs)
    if args.verbose:
        result = run_platform(*run)
    else:
        quiet_frameworks()  # before JAX (or the workload's framework) is imported
        with filtered_stderr():
            result = run_platform(*run)
    write_json_atomic(args.json, result)
    if result["error"]:
        print(f"neural-cost compare ({args.platform}): {result['error']}", file=sys.stderr)
    return 0 if result["status"] == "ok" else 1


if __name__ == "__main__":
    sys.exit(main())
