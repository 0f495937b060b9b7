"""``--by {operation,scope,kernel}`` chooses the report's table; ``--group-by-scope`` is ``--by scope``;
``diff`` says when its two files were written in different schema versions."""

import json
import textwrap

import pytest

from neural_cost.cli.main import main

PEAKS = ["--peak-flops", "1e11", "--memory-bandwidth", "1e10"]
EXAMPLE = ["example", "--framework", "numpy", "--batch", "8", "--warmup", "0", "--repeats", "2", *PEAKS]


def table(text):
    """The table at the end of the report, from its ``top N of M ...`` line."""
    return text[text.index("  top ") :]


def test_by_kernel_prints_the_kernel_table(capsys):
    # The numpy example reads no compiled program: each of its 5 operations is its own kernel, at main
    # memory (the user-supplied spec names no levels). fc1 (8×1024 @ 1024×4096, float32): FLOPs
    # 2·8·1024·4096 = 67,108,864 → "67.1 MFLOP"; traffic 4·(8·1024 + 1024·4096) + 4·8·4096 = 16,941,056 B
    # → "16.9 MB", 16,941,056 / 1e10 = 1.694 ms (compute 67.1e6 / 1e11 = 0.671 ms is less). fc2 moves the
    # same bytes: 4·(8·4096 + 4096·1024) + 4·8·1024 = 16,941,056. Every row is memory-bound, so the kernel
    # bound is all the bytes at 1e10 B/s: 2·16,941,056 + bias1 278,528 + relu 262,144 + bias2 69,632
    # = 34,492,416 B → 3.449 ms; each matmul's share 16,941,056 / 34,492,416 = 49.1%.
    assert main([*EXAMPLE, "--by", "kernel"]) == 0
    text = capsys.readouterr().out
    assert "  bound: 3.449 ms, the sum of 5 operations' own bounds (each its own kernel; program roofline" in text
    assert table(text).splitlines()[:4] == [
        "  top 5 of 5 kernels by share of bound (no compiled program read: each operation scored as its own kernel):",
        "  #  kernel  scopes  runs       FLOPs  traffic  level           bound  share",
        "  1  fc1     layer1    ×1  67.1 MFLOP  16.9 MB  main memory  1.694 ms  49.1%",
        "  2  fc2     layer2    ×1  67.1 MFLOP  16.9 MB  main memory  1.694 ms  49.1%",
    ]


def test_group_by_scope_is_by_scope(capsys):
    assert main([*EXAMPLE, "--by", "scope"]) == 0
    by_scope = table(capsys.readouterr().out)
    assert main([*EXAMPLE, "--group-by-scope"]) == 0
    assert table(capsys.readouterr().out) == by_scope
    assert by_scope.startswith("  top 2 of 2 scopes by share of bound:\n")
    assert main([*EXAMPLE, "--group-by-scope", "--by", "scope"]) == 0  # the same table asked for twice
    assert table(capsys.readouterr().out) == by_scope


def test_group_by_scope_with_another_table_is_a_clear_error(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main([*EXAMPLE, "--group-by-scope", "--by", "kernel"])
    assert exit_info.value.code == 2
    assert capsys.readouterr().err == (
        "neural-cost: error: --group-by-scope is --by scope; it cannot go with --by kernel (pass one)\n"
    )
    with pytest.raises(SystemExit) as exit_info:
        main([*EXAMPLE, "--by", "kernels"])
    assert exit_info.value.code == 2
    assert "argument --by: invalid choice: 'kernels' (choose from " in capsys.readouterr().err


def test_analyze_by_kernel_still_plots_operations(tmp_path, capsys):
    pytest.importorskip("jax")
    pytest.importorskip("matplotlib")
    path = tmp_path / "work.py"
    path.write_text(
        textwrap.dedent(
            """
            import jax.numpy as jnp

            def build():
                return (lambda w, x: jnp.tanh(x @ w)), (jnp.ones((16, 8)), jnp.ones((4, 16)))
            """
        )
    )
    plot = tmp_path / "roofline.png"
    args = ["analyze", f"{path}:build", "--warmup", "1", "--repeats", "2", *PEAKS, "--by", "kernel"]
    assert main([*args, "--plot", str(plot)]) == 0
    text = capsys.readouterr().out
    assert " kernels by share of bound (" in text and text.endswith(f"wrote {plot}\n")
    assert plot.read_bytes().startswith(b"\x89PNG")


def test_the_cli_offers_the_tables_render_draws():
    from neural_cost.cli.main import TABLES as CLI_TABLES
    from neural_cost.report.kernel_text import TABLES

    assert CLI_TABLES == TABLES == ("operation", "scope", "kernel")


def test_diff_of_a_version_1_and_a_version_2_report_says_so(tmp_path, capsys):
    from neural_cost import analyze_gap
    from tests.helpers import M3_PRO, cpu_measurement, seed_estimate

    data = json.loads(json.dumps(analyze_gap(seed_estimate(), cpu_measurement(), M3_PRO).to_dict()))
    (tmp_path / "v2.json").write_text(json.dumps(data))
    for key in ("unmodeled_work", "unmodeled_flops", "unmodeled_bytes"):  # what a version-1 writer left out
        data["estimate"]["coverage"].pop(key)
    (tmp_path / "v1.json").write_text(json.dumps(data | {"schema_version": 1}))
    assert main(["diff", str(tmp_path / "v1.json"), str(tmp_path / "v2.json")]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[1].startswith("  NOTE: schema version 1 → 2: version 1 recorded no unmodeled sizes")
    assert main(["diff", str(tmp_path / "v2.json"), str(tmp_path / "v2.json")]) == 0
    assert "schema version" not in capsys.readouterr().out
