#!/usr/bin/env python3
"""Set up .venv with the pinned dependencies, then run the main job or the tests.

    python3 scripts/dev.py run     # what `make run` does
    python3 scripts/dev.py test    # what `make test` does: ruff, mypy, pytest

Standard library only: it runs on a machine that has nothing but Python 3.11+.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VENV = ROOT / ".venv"
REQUIREMENTS = ROOT / "requirements" / "test.txt"
STAMP = VENV / ".neural-cost-installed"
BIN = VENV / ("Scripts" if os.name == "nt" else "bin")


def say(message: str) -> None:
    print(f"[dev] {message}", flush=True)


def run(*command: str | Path, check: bool = True) -> int:
    result = subprocess.run([str(c) for c in command], cwd=ROOT)
    if check and result.returncode != 0:
        raise SystemExit(f"[dev] failed ({result.returncode}): {' '.join(str(c) for c in command)}")
    return result.returncode


def fingerprint() -> str:
    digest = hashlib.sha256()
    for path in (REQUIREMENTS, ROOT / "pyproject.toml"):
        digest.update(path.read_bytes())
    digest.update(sys.version.encode())
    return digest.hexdigest()


def setup() -> None:
    if sys.version_info < (3, 11):  # noqa: UP036 - this script runs before the venv exists
        raise SystemExit(f"[dev] neural-cost needs Python >= 3.11; this is {sys.version.split()[0]}")
    if not (BIN / "python").exists():
        say(f"creating {VENV.relative_to(ROOT)}")
        venv.EnvBuilder(with_pip=True, clear=True).create(VENV)
    wanted = fingerprint()
    if STAMP.exists() and STAMP.read_text() == wanted:
        return
    say(f"installing pinned dependencies from {REQUIREMENTS.relative_to(ROOT)} (about two minutes the first time)")
    pip = (BIN / "python", "-m", "pip", "install", "-qq", "--disable-pip-version-check")
    run(*pip, "-r", REQUIREMENTS)
    run(*pip, "--no-deps", "-e", ".")
    STAMP.write_text(wanted)


def main_job(extra: list[str]) -> int:
    """`neural-cost analyze` on the bundled JAX MLP: traced, timed and scored on this machine."""
    return run(BIN / "neural-cost", "analyze", "examples/mlp.py:build", *extra, check=False)


def tests(extra: list[str]) -> int:
    env_note = "TF_CPP_MIN_LOG_LEVEL=2"
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    say(f"ruff ({env_note})")
    failed = run(BIN / "ruff", "check", "src", "tests", "benchmarks", "scripts", "examples", check=False) != 0
    say("mypy src/")
    failed |= run(BIN / "mypy", check=False) != 0
    say("pytest")
    failed |= run(BIN / "python", "-m", "pytest", *extra, check=False) != 0
    return 1 if failed else 0


def main() -> int:
    if len(sys.argv) < 2 or sys.argv[1] not in ("run", "test", "setup"):
        print(__doc__)
        return 2
    setup()
    command, extra = sys.argv[1], sys.argv[2:]
    if command == "setup":
        return 0
    return main_job(extra) if command == "run" else tests(extra)


if __name__ == "__main__":
    sys.exit(main())
