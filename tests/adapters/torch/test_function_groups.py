"""Unscoped PyTorch operations are grouped by the user's function that made them.

A record made outside every submodule (the root module's own forward, a plain function, a
loss function) carries a ``function`` label; the per-scope table groups by it, never into
one "(no scope)" row.
"""

import pytest

torch = pytest.importorskip("torch")

from neural_cost import estimate_trace  # noqa: E402
from neural_cost.adapters import TorchAdapter  # noqa: E402


class Root(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(8, 8)

    def forward(self, x):
        return torch.tanh(self.fc(x)).sum()  # tanh and sum run in Root.forward, outside fc


def plain(x, w):
    return torch.relu(x @ w).sum()


def test_root_module_operations_group_under_its_forward():
    estimate = estimate_trace(TorchAdapter().trace(Root(), (torch.ones(4, 8),)))
    groups = {row.scope: row.operations for row in estimate.by_scope}
    # fc: addmm → matmul + bias add (2 records); Root.forward: tanh, sum (2 records)
    assert groups == {"fc": 2, "Root.forward()": 2}


def test_a_plain_function_groups_under_its_name():
    estimate = estimate_trace(TorchAdapter().trace(plain, (torch.ones(4, 8), torch.ones(8, 8))))
    # mm, relu, sum: all made by plain
    assert {row.scope: row.operations for row in estimate.by_scope} == {"plain()": 3}
    assert all(op.attrs["function"] == "plain" for op in estimate.operations)
