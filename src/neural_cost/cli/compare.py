"""``neural-cost compare FILE.py:build --platforms cpu,cuda``: one workload, one process per JAX platform, one table.

JAX allows one platform per process, so each platform runs in a child process
(``neural_cost.cli.child``) with ``JAX_PLATFORMS`` set; the parent never calls ``build``.
A platform that is unavailable, crashes or times out is a row saying so.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..core.errors import NeuralCostError
from ..core.estimate import CostEstimate
from ..core.units import format_percent, format_seconds, format_si
from ..report.text import coverage_figures
from .build import check_spec
from .output import write_json
from .progress import Progress

SCHEMA = "neural-cost/compare"
SCHEMA_VERSION = 1
#: After killing a timed-out child's group, how long to wait for its pipes to close.
_DRAIN_SECONDS = 5.0
HEADERS = (
    "platform",
    "device",
    "time (median ± stdev, runs)",
    "bound",
    "efficiency",
    "coverage (ops · work)",
    "FLOP/s",
    "bytes/s",
)


def parse_platforms(text: str) -> list[str]:
    platforms = list(dict.fromkeys(p.strip().lower() for p in text.split(",") if p.strip()))
    if not platforms:
        raise NeuralCostError(f"--platforms {text!r} names no platform; pass JAX platforms such as cpu,cuda,tpu")
    return platforms


def _last_line(text: str | bytes | None) -> str:
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    lines = [line.strip() for line in (text or "").splitlines() if line.strip()]
    return lines[-1] if lines else ""


def _child_env(platform: str) -> dict[str, str]:
    env = dict(os.environ, JAX_PLATFORMS=platform)
    # the child imports this very neural_cost, installed or not
    source_root = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (source_root, env.get("PYTHONPATH", "")) if p)
    return env


def _kill_group(child: subprocess.Popen[str]) -> None:
    """Kill the child and everything it started: it leads its own process group (start_new_session)."""
    if sys.platform == "win32":
        child.kill()
        return
    with contextlib.suppress(ProcessLookupError, PermissionError):  # the whole group already gone
        os.killpg(child.pid, signal.SIGKILL)


def run_command(command: list[str], env: Mapping[str, str], timeout: float) -> tuple[int | None, str, str]:
    """Run ``command`` in a new session; (exit code, or None when it timed out; stdout; stderr).
    On a timeout (or Ctrl-C, which no longer reaches a child in its own session) the whole
    process group is killed, so a process the workload started does not outlive it."""
    child = subprocess.Popen(
        command, env=dict(env), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
    )
    try:
        stdout, stderr = child.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        finished = child.poll() is not None  # done, but something it started still holds the pipes
        _kill_group(child)
        try:
            stdout, stderr = child.communicate(timeout=_DRAIN_SECONDS)
        except subprocess.TimeoutExpired:  # a descendant left the group (its own session) holding the pipes
            stdout, stderr = "", ""
        return (child.returncode if finished else None), stdout, stderr
    except BaseException:
        _kill_group(child)
        child.wait()
        raise
    return child.returncode, stdout, stderr


def _ended(code: int) -> str:
    if code < 0:
        with contextlib.suppress(ValueError):
            return f"was killed by {signal.Signals(-code).name}"
    return f"exited with code {code}"


def run_child(
    spec: str,
    platform: str,
    warmup: int,
    repeats: int,
    timeout: float,
    verbose: bool = False,
    profile: bool = True,
    profile_runs: int = 3,
) -> dict[str, Any]:
    """One platform's result as the child wrote it, or a failed row built from what the child left.
    ``verbose``: the child keeps the frameworks' log lines, and its stderr is copied to ours;
    ``profile``/``profile_runs``: the child's profiled pass after timing."""
    with tempfile.TemporaryDirectory(prefix="neural-cost-compare-") as folder:
        out = Path(folder) / f"{platform}.json"
        command = [sys.executable, "-m", "neural_cost.cli.child", spec, "--platform", platform, "--json", str(out)]
        command += ["--warmup", str(warmup), "--repeats", str(repeats)] + (["--verbose"] if verbose else [])
        command += ["--profile-runs", str(profile_runs)] + ([] if profile else ["--no-profile"])
        start = time.perf_counter()
        code, stdout, stderr = run_command(command, _child_env(platform), timeout)
        wall = time.perf_counter() - start
        if verbose and stderr:
            sys.stderr.write(stderr if stderr.endswith("\n") else stderr + "\n")
        if code is None:
            last = _last_line(stderr)
            error = f"timed out after {timeout:g} s" + (f" (last error line: {last})" if last else "")
            return _failed(platform, "timeout", error, wall)
        if out.is_file():
            try:
                result: dict[str, Any] = json.loads(out.read_text(encoding="utf-8"))
            except ValueError as bad:
                return _failed(platform, "failed", f"the child wrote unreadable JSON ({bad})", wall)
            result["wall_seconds"] = wall
            return result
        last = _last_line(stderr) or _last_line(stdout) or "no output"
        error = f"the child process {_ended(code)} without a report (during build() or the analysis): {last}"
        return _failed(platform, "failed", error, wall)


def _failed(platform: str, status: str, error: str, wall: float) -> dict[str, Any]:
    return {
        "platform": platform,
        "status": status,
        "framework": None,
        "error": error,
        "report": None,
        "wall_seconds": wall,
    }


def _row(result: Mapping[str, Any]) -> tuple[str, ...] | str:
    """The table cells of an ok result, or the one message of a row that has no numbers."""
    report = result.get("report")
    if result.get("status") != "ok" or not isinstance(report, Mapping):
        return f"{result.get('status', 'failed')}: {result.get('error') or 'no report'}"
    measurement, analysis = report["measurement"], report["analysis"]
    device = str(measurement["device"])
    if analysis.get("device_mismatch"):
        device += f" (peaks for {report['hardware']['name']})"
    spread = f"{format_seconds(measurement['median_seconds'])} ± {format_seconds(measurement['stdev_seconds'])}"
    return (
        str(result["platform"]),
        device,
        f"{spread} ({measurement['runs']})",
        f"{format_seconds(analysis['bound_seconds'])} ({analysis['bound_side']})",
        format_percent(analysis["efficiency"]),
        # the report's own figures (exact shares, rounded down, work a ceiling), rebuilt from its JSON
        " · ".join(coverage_figures(CostEstimate.from_dict(report["estimate"]))) + _time_figure(analysis),
        format_si(analysis["achieved_flops_per_second"], "FLOP/s"),
        format_si(analysis["achieved_bytes_per_second"], "B/s"),
    )


def _time_figure(analysis: Mapping[str, Any]) -> str:
    """`` · 92.3%``, the time share, when the platform's report measured time per kernel (as its coverage
    line prints it); the header then reads ``coverage (ops · work · time)``."""
    from ..analysis.suspects import percent_down

    coverage = analysis.get("time_coverage")
    fraction = coverage.get("fraction") if isinstance(coverage, Mapping) else None
    return f" · {percent_down(fraction)}" if isinstance(fraction, (int, float)) else ""


def render_table(spec: str, results: Sequence[Mapping[str, Any]]) -> str:
    """One line per platform; a platform without numbers says why in place of its cells."""
    frameworks = sorted({str(r["framework"]) for r in results if r.get("framework")})
    title = f"neural-cost compare: {spec}" + (f" ({', '.join(frameworks)})" if frameworks else "")
    rows = [_row(r) for r in results]
    cells = [r for r in rows if isinstance(r, tuple)]
    reports = [r.get("report") for r in results]
    timed = any(isinstance(r, Mapping) and _time_figure(r.get("analysis") or {}) for r in reports)
    headers = tuple(h.replace("work)", "work · time)") if timed else h for h in HEADERS)
    widths = [max([len(h), *(len(c[i]) for c in cells)]) for i, h in enumerate(headers)]
    lines = [title, "  " + "  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)).rstrip()]
    for result, row in zip(results, rows, strict=True):
        if isinstance(row, tuple):
            lines.append("  " + "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())
        else:
            lines.append(f"  {str(result['platform']).ljust(widths[0])}  {row}")
    notes = [f"  {r['platform']}: {r['note']}" for r in results if r.get("note")]
    return "\n".join([*lines, *notes]) + "\n"


def run_compare(args: argparse.Namespace) -> int:
    check_spec(args.build)  # a typo or a missing file fails here, once, not in every child
    platforms = parse_platforms(args.platforms)
    results = []
    progress = Progress(sys.stderr)  # one line redrawn on a terminal; nothing when stderr is piped
    verbose = getattr(args, "verbose", False)
    try:
        for done, platform in enumerate(platforms):
            progress.runs(f"running {platform}", done, len(platforms))
            results.append(
                run_child(
                    args.build,
                    platform,
                    args.warmup,
                    args.repeats,
                    args.timeout,
                    verbose,
                    getattr(args, "profile", True),
                    getattr(args, "profile_runs", 3),
                )
            )
    except BaseException:
        progress.close()
        raise
    progress.close("done")
    print(render_table(args.build, results), end="")
    if args.json:
        combined = {
            "schema": SCHEMA,
            "schema_version": SCHEMA_VERSION,
            "build": args.build,
            "warmup": args.warmup,
            "repeats": args.repeats,
            "platforms": results,
        }
        print(f"wrote {write_json(args.json, combined)}")
    return 0 if any(r.get("status") == "ok" for r in results) else 1
