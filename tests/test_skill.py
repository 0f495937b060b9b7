"""The agent skill's Python examples run, in order, in one namespace: they cannot go stale."""

import re
from pathlib import Path

SKILL = Path(__file__).resolve().parent.parent / "skill" / "SKILL.md"


def test_skill_has_front_matter_agents_expect():
    text = SKILL.read_text(encoding="utf-8")
    front = text.split("---")[1]
    assert re.search(r"^name: neural-cost$", front, flags=re.MULTILINE)
    assert re.search(r"^description: .{40,}", front, flags=re.MULTILINE)
    assert "Never quote a roofline efficiency without the device" in text


def test_skill_examples_run(capsys):
    namespace: dict = {"__name__": "skill"}
    blocks = re.findall(r"```python\n(.*?)```", SKILL.read_text(encoding="utf-8"), flags=re.DOTALL)
    assert len(blocks) >= 5
    for block in blocks:
        exec(compile(block, str(SKILL), "exec"), namespace)
    assert "Neural cost gap analysis" in capsys.readouterr().out
