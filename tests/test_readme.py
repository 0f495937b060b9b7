"""The README's Python examples run, in order, in one namespace: they cannot go stale."""

import re
from pathlib import Path

README = Path(__file__).resolve().parent.parent / "README.md"


def python_blocks(text: str) -> list[str]:
    return re.findall(r"```python\n(.*?)```", text, flags=re.DOTALL)


def test_readme_has_examples():
    assert len(python_blocks(README.read_text(encoding="utf-8"))) >= 3


def test_readme_examples_run(capsys):
    namespace: dict = {"__name__": "readme"}
    for block in python_blocks(README.read_text(encoding="utf-8")):
        exec(compile(block, str(README), "exec"), namespace)
    assert "Neural cost gap analysis" in capsys.readouterr().out


def test_readme_opens_with_the_two_commands():
    text = README.read_text(encoding="utf-8")
    first_block = re.search(r"```sh\n(.*?)```", text, flags=re.DOTALL).group(1)
    commands = [line.split("#")[0].strip() for line in first_block.splitlines() if line.strip()]
    assert commands == ["make run", "make test"]
    ci = (README.parent / ".ci" / "run").read_text(encoding="utf-8")
    assert "make test" in ci
