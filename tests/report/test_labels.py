"""Row labels and the inputs line: rows sharing a name carry their loop and source, the scope
table says what its count counts, and the batch is never a parameter's leading dim.

Hand derivations (spec: 1 TFLOP/s, 1 GB/s, so every row is memory-bound at bytes / 1 GB/s):
  dot_general (4×8 @ 8×8): 2·4·8·8 = 512 FLOPs; read 4·(32 + 64) = 384 B, write 4·32 = 128 B → 512 B
     ×1 at model.py:3; ×8 in while_0 at model.py:7: 4,096 FLOPs, 4,096 B
  add (4×8 + 4×8), ×8: 8·32 = 256 FLOPs; 8·(4·64 read + 4·32 written) = 8·384 = 3,072 B
  head (4×8 @ 8×2): 2·4·8·2 = 128 FLOPs; read 4·(32 + 16) = 192 B, write 4·8 = 32 B → 224 B
  bytes 4,096 + 3,072 + 512 + 224 = 7,904 → bound 7.904 µs; shares 4,096/7,904 = 51.8%,
  3,072/7,904 = 38.9%, 512/7,904 = 6.5%, 224/7,904 = 2.8%
  scope net: ops executed 1 + 8 + 8 = 17; FLOPs 512 + 4,096 + 256 = 4,864; bytes 512 + 4,096 + 3,072
  = 7,680 (97.2%), intensity 4,864/7,680 = 0.63
"""

import json

from neural_cost import HardwareSpec, Operation, TensorSpec, analyze_gap, estimate_operations, load_report
from tests.helpers import cpu_measurement

UNIT = HardwareSpec("unit", peak_flops=1e12, memory_bandwidth=1e9)
IN_LOOP = {"loop": "while_0", "source": "model.py:7"}
OPS = [
    Operation("dot_general", "matmul", ((4, 8), (8, 8)), (4, 8), scope="net", attrs={"source": "model.py:3"}),
    Operation("dot_general", "matmul", ((4, 8), (8, 8)), (4, 8), scope="net", attrs=IN_LOOP, count=8),
    Operation("add", "elementwise", ((4, 8), (4, 8)), (4, 8), scope="net", attrs={"op": "add"}, count=8),
    Operation("head", "matmul", ((4, 8), (8, 2)), (4, 2)),
]

OPERATIONS = """\
  top 4 of 4 operations by share of bound:
  #  operation                                  kind         runs       FLOPs    bytes  FLOP/B  share
  1  net/dot_general @ while_0 ×8 (model.py:7)  matmul         ×8  4.10 kFLOP  4.10 kB    1.00  51.8%
  2  net/add                                    elementwise    ×8    256 FLOP  3.07 kB    0.08  38.9%
  3  net/dot_general (model.py:3)               matmul         ×1    512 FLOP    512 B    1.00   6.5%
  4  head                                       matmul         ×1    128 FLOP    224 B    0.57   2.8%
"""

SCOPES = """\
  top 2 of 2 scopes by share of bound:
  #  scope       kind    executed ops       FLOPs    bytes  FLOP/B  share
  1  net         mixed             17  4.86 kFLOP  7.68 kB    0.63  97.2%
  2  (no scope)  matmul             1    128 FLOP    224 B    0.57   2.8%
"""


def _report(ops=OPS, input_shapes=(("x", (4, 8)),), boundary=()):
    estimate = estimate_operations(ops, input_shapes=input_shapes, boundary=boundary)
    return analyze_gap(estimate, cpu_measurement(), UNIT)


def _table(text):
    return text[text.index("  top ") :]


def test_rows_sharing_a_name_show_their_loop_and_source():
    assert _table(_report().render()) == OPERATIONS


def test_scope_table_counts_executed_operations_and_says_so():
    assert _table(_report().render(group_by_scope=True)) == SCOPES


def test_a_unique_name_is_shown_without_context():
    # Only one dot_general: its attrs say where it came from, but its name alone is unambiguous.
    text = _report(OPS[1:]).render()
    assert "  1  net/dot_general  " in text and "model.py" not in text


def _inputs_line(report):
    return next(line.strip() for line in report.render().splitlines() if line.strip().startswith("inputs:"))


W = TensorSpec("w", (1024, 64), "float32", "parameter")
X = TensorSpec("x", (8, 1024), "float32", "input")
MM = [Operation("mm", "matmul", ((8, 1024), (1024, 64)), (8, 64))]


def test_batch_never_comes_from_a_parameter():
    # w is listed first, but the boundary marks it a parameter: the batch is x's leading dim, 8.
    report = _report(MM, input_shapes=(("w", (1024, 64)), ("x", (8, 1024))), boundary=(W, X))
    assert _inputs_line(report) == "inputs: w (1024, 64), x (8, 1024) · batch 8 (leading dim of x)"


def test_unmarked_weight_is_passed_over_for_the_input_whose_leading_dim_the_output_keeps():
    # fn(w, x) traced without param_argnums: nothing is a parameter; the output (8, 64) keeps x's 8.
    unmarked = (
        TensorSpec("w", (1024, 64), "float32", "input"),
        X,
        TensorSpec("out0", (8, 64), "float32", "output"),
    )
    report = _report(MM, input_shapes=(("w", (1024, 64)), ("x", (8, 1024))), boundary=unmarked)
    assert _inputs_line(report) == "inputs: w (1024, 64), x (8, 1024) · batch 8 (leading dim of x)"


def test_batch_from_the_first_input_when_nothing_tells_them_apart():
    report = _report(MM, input_shapes=(("a", (8, 1024)), ("b", (1024, 64))))
    assert _inputs_line(report) == "inputs: a (8, 1024), b (1024, 64) · batch 8 (leading dim of a)"


def test_no_batch_is_claimed_when_no_input_keeps_the_outputs_leading_dim():
    # a time-major scan, fn(b, wh, xs), nothing marked a parameter: its output (16, 512) keeps no
    # input's leading dim — xs is (64 steps, 16, 256) — so no batch is claimed (it read b's 512)
    boundary = (
        TensorSpec("b", (512,), "float32", "input"),
        TensorSpec("wh", (512, 512), "float32", "input"),
        TensorSpec("xs", (64, 16, 256), "float32", "input"),
        TensorSpec("out0", (16, 512), "float32", "output"),
    )
    shapes = (("b", (512,)), ("wh", (512, 512)), ("xs", (64, 16, 256)))
    report = _report(MM, input_shapes=shapes, boundary=boundary)
    assert _inputs_line(report) == "inputs: b (512,), wh (512, 512), xs (64, 16, 256)"


def test_a_pytree_of_many_parameters_is_counted_not_listed():
    # 7 parameter leaves then the batch x: five named, x first, then the 3 others counted
    weights = [TensorSpec(f"w{i}", (64, 64), "float32", "parameter") for i in range(7)]
    shapes = (*((w.name, w.shape) for w in weights), ("x", (8, 1024)))
    report = _report(MM, input_shapes=shapes, boundary=(*weights, X))
    assert _inputs_line(report) == (
        "inputs: x (8, 1024), w0 (64, 64), w1 (64, 64), w2 (64, 64), w3 (64, 64) and 3 more arrays "
        "(--json lists every input) · batch 8 (leading dim of x)"
    )


def test_labels_survive_a_json_round_trip(tmp_path):
    report = _report()
    path = tmp_path / "report.json"
    path.write_text(json.dumps(report.to_dict()), encoding="utf-8")
    assert _table(load_report(path).render()) == OPERATIONS
