"""`neural-cost kinds`: one column of names as wide as the longest, so every summary starts aligned."""

from neural_cost import known_kinds
from neural_cost.cli.main import main


def test_kinds_summaries_start_in_one_column(capsys):
    assert main(["kinds"]) == 0
    lines = capsys.readouterr().out.splitlines()
    kinds = sorted(known_kinds())
    width = max(len(kind) for kind in kinds)  # e.g. foreach_elementwise (19) is wider than the old 12
    assert width > 12
    assert [line[:width].rstrip() for line in lines] == kinds
    assert all(line[width : width + 2] == "  " and line[width + 2] != " " for line in lines)
    assert {line[width + 2 :] for line in lines} == set(known_kinds().values())
