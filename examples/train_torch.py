"""A PyTorch training step — forward, backward and optimizer — analyzed from the command line.

``build()`` returns the model with ``"training": True``, its loss and its optimizer: every
timed run is one step with grad enabled, the report's scopes are ``forward``, ``backward``
and ``optimizer``, and the model, its gradients and the optimizer state are put back
afterwards.

    neural-cost analyze examples/train_torch.py:build --group-by-scope
"""

from __future__ import annotations

import torch

BATCH, FEATURES, HIDDEN, CLASSES = 32, 64, 128, 10


def build() -> dict[str, object]:
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(FEATURES, HIDDEN), torch.nn.ReLU(), torch.nn.Linear(HIDDEN, CLASSES))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    x = torch.randn(BATCH, FEATURES)
    labels = torch.randint(0, CLASSES, (BATCH,))
    return {
        "model": model,
        "args": (x,),
        "training": True,
        "loss_fn": lambda logits: torch.nn.functional.cross_entropy(logits, labels),
        "optimizer": optimizer,
    }
