"""The kernel model's revision, which a calibration records among its versions (``expected.installed_versions``)."""

from __future__ import annotations

#: Raised whenever the kernel classes or a micro-benchmark grid change: a calibration cached by another
#: revision is made again, and one brought from it is flagged. 43: a pointwise class's memory curve on the
#: axis its own points predict better, the level's bandwidth or main memory's (``ClassModel.memory_axis``);
#: its points carry both times. 44: convolutions of fewer than 256 output positions ``conv:thin``
#: (``conv_views.THIN``), and ten such layers in every framework's grid. 45: those on maps of at most 4 × 4
#: ``conv:small_map`` (``conv_views.SMALL_MAP``), and four more in every grid.
KERNEL_MODEL_REVISION = 45
#: A framework's own change raises its own part, after the shared one (PyTorch's 42.6: .1 its convolutions off oneDNN's
#: channel blocks and its 1×1 ones in classes of their own, .2 those it runs without oneDNN kept out of them, .3 three
#: weight-heavy 1×1 layers on 1×1 maps in the pointwise grid, .4 its depthwise layers timed on cold inputs and results,
#: six larger ones added, .5 its products of fewer than 256 rows ``thin_matmul``, .6 linears of 256 and 384 rows in its
#: grid, all in 43; 43.1: each recurrent cell timed at a quarter of its steps too, its per-step curve read without its
#: cost per call, ``Point.call_seconds``; 43.2: attention read per query head, ``kernel_classes.repeats``, and six
#: shapes more in its grid; 43.3: the cost of an evicted operand measured, ``_torch/evicted.py``; TensorFlow's 43.1: its
#: pointwise ops that may write over their input, ``elementwise:forwarded``, timed so; all in 44; TensorFlow's 45.1:
#: Keras models of one batch norm or layer norm layer, ``norm:batch:keras`` and ``norm:layer``; 45.2: its graph's thin
#: 1×1 convolutions ``conv:thin:1x1`` and ``conv:small_map:1x1``, ``conv_views.ONE_BY_ONE``, twelve in its grid; JAX's
#: 45.1: its dots with batch dimensions ``batched_matmul``, ``matmul_views.BATCHED_MATMUL``; 45.2: its kernels of
#: several contractions whose heaviest is thin ``conv:chained``, ``conv_views.CHAINED``, twelve in its grid; 45.3: its
#: strided 3-channel stems ``conv:shallow``, ``conv_views.record_view``, four in its grid, and six small 1×1 layers on
#: few positions; 45.4: its filter gradients ``conv_backward:grad_weight``, ``:deep`` and ``:deeper``,
#: ``conv_views.GRAD_WEIGHT``, 26 in its grid, and a max pool's backward ``pool_backward``, seven; 45.5: pointwise
#: fusions that read across their layout ``elementwise:transposed``, ``pointwise_views``, twelve in its grid, and
#: the products XLA runs as a lone ``dot`` ``matmul:generic``, thirteen; 45.6: a ``jax.nn.softmax`` or ``gelu`` called
#: at the top level of the jitted function mapped to the kernel that runs it, ``hlo_map._scope_holder``, and an
#: attention's scores dot that XLA fused without metadata into the softmax's YNNPACK fusion to that fusion,
#: ``hlo_map._fused_contraction`` — its grid's softmax, gelu and attention programs had read those records unmapped);
#: PyTorch's 45.1: its streamed recurrent layers of one or two rows a step ``rnn:streamed:few``
#: (``rnn_views.FEW_STEP_ROWS``), two such cells in its grid, its GRU cells (per-step ops on the CPU) out; 45.2: each
#: wall-timed point less its timing harness's own time (``analysis/harness.py``); 45.3: its products of fewer than 32
#: rows ``thin_matmul:few`` (``matmul_views.FEW_ROWS``), out of ``thin_matmul``'s curve; JAX's 45.7 and TensorFlow's
#: 45.3: a profiled program of 2 ms or more with few kernel events timed without an unwatched wall, its ratio 1
#: (``profiled_points.WATCHED_ALONE``); raising the shared one still makes every framework's calibration again.
REVISIONS: dict[str, int] = {"tensorflow": 3, "jax": 7, "torch": 3}


def revision(framework: str) -> str:
    """The kernel model's revision for ``framework``: ``"43"``, or ``"43.1"`` with a part of its own."""
    own = REVISIONS.get(framework)
    return f"{KERNEL_MODEL_REVISION}" if own is None else f"{KERNEL_MODEL_REVISION}.{own}"
