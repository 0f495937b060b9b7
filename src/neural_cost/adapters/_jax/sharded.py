"""A partitioned JAX program's records as one device's share (``jit`` with shardings).

The jaxpr of a sharded ``jit`` has global shapes; the executable XLA's SPMD partitioner makes
from it is one device's program, whose instructions hold one device's part of each value.
``hlo_map.assign`` places each record at the instruction that computes it, tolerating that
(``hlo_map.fits``, ``holds_share``); ``one_device`` rewrites the record to that instruction's
shapes: its output (and extra outputs) from the instruction's result arrays, each input from
the operand at the same position, or — an input without one (a scalar; a mean kept over dims
of 1; a library op's record, placed at an instruction at its scope) — broadcast from the
output's device shape as it was from the global one. Each array's device shape keeps the global
rank, each dim cut by mesh axes of its own (``splits``; ``mesh_of``: the executable's mesh),
laid out as XLA holds it, neighbouring dims merged or transposed (``device_shapes``); an
array the instruction holds with all its elements is whole on every device. Where several cuts
fit, the first combination the record's cost rule accepts is taken (a matmul's operands must
agree); the rule then counts the record per device — a matmul whose contracted dim is sharded
counts its partial product.

A record inside a ``shard_map`` body already has one device's shapes (its own ``op_name``,
of those XLA joined with ``;`` on an instruction, names the ``shard_map``): it is left as it
is. So is a record whose device shapes cannot be read — no instruction computes it (XLA removed
or folded it), or the shapes found do not fit it — and ``program.py`` names it in a note: it
keeps its traced shapes, global outside a ``shard_map``, never silently mixed with the
per-device ones. Nor scaled by a guess: ``program.py`` takes it out of the kernel it was placed
at, so no kernel's per-device FLOPs hold it, and the per-device sums over records — hardware
FLOPs, activation bounds (``analysis.utilization.device_rows``) — leave it out; it is scored
with the records no kernel runs, at its traced shapes, and counts in the model FLOPs
(``Program.global_model_flops``), which are global.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import replace
from functools import lru_cache
from itertools import product
from typing import TYPE_CHECKING, Any

from ...core.errors import NeuralCostError
from ...core.records import Operation

if TYPE_CHECKING:
    from .hlo_map import Mark

__all__ = ["device_shape", "holds_share", "mesh_of", "one_device", "splits"]

Shape = tuple[int, ...]
#: Device shapes tried per array, and combinations per record, before a record is left global.
_OPTIONS = 8
_TRIES = 512
#: Ways of placing mesh axes on a record's dims tried for a layout XLA merged (``device_shapes``).
_PLACINGS = 4096


def one_device(
    operations: Sequence[Operation], placed: Mapping[int, Mark], mesh: Sequence[int]
) -> tuple[tuple[Operation, ...], tuple[int, ...]]:
    """``(records, kept)``: ``operations`` as one device of a mesh of these axis sizes runs them
    (``mesh_of``), and the indices of those whose device shapes could not be read (kept at
    their traced shapes)."""
    records: list[Operation] = []
    kept: list[int] = []
    for index, op in enumerate(operations):
        mark = placed.get(index)
        scalars = not op.output and not any(op.inputs) and not any(op.extra_outputs)
        if op.kind == "collective" or scalars or (mark is not None and mark.per_device):
            records.append(op)  # a shard_map's record: one device's already; a scalar is never split
            continue
        share = _share(op, mark, tuple(mesh)) if mark is not None else None
        if share is None:
            kept.append(index)
        records.append(op if share is None else share)
    return tuple(records), tuple(kept)


def mesh_of(compiled: Any, devices: int) -> tuple[int, ...]:
    """The axis sizes of the one mesh a partitioned executable's arguments and results are laid
    out on (its ``NamedSharding``s'); else ``devices``' prime factors (any cut is possible)."""
    if devices <= 1:
        return ()
    try:
        import jax

        shardings = jax.tree_util.tree_leaves((compiled.input_shardings, compiled.output_shardings))
        meshes = {tuple(int(n) for n in sharding.mesh.axis_sizes) for sharding in shardings}
    except Exception:  # text, or shardings without a mesh: the device count alone
        meshes = set()
    if len(meshes) == 1:
        (mesh,) = meshes
        if _elements(mesh) == devices:
            return mesh
    factors, n, p = [], devices, 2
    while n > 1:
        while n % p == 0:
            factors.append(p)
            n //= p
        p += 1
    return tuple(factors)


def holds_share(mark: Mark, op: Operation, mesh: Sequence[int], inputs: bool = True) -> bool:
    """Whether ``mark``'s instruction holds one device's share of ``op``'s output (each array has
    ``device_shapes`` of the record's), with an operand at each input's position that holds that
    input or a share of it (an input that broadcasts to the output needs none: a scalar, a
    mean kept over dims of 1), unless ``inputs`` is False."""
    outputs = (op.output, *op.extra_outputs)
    axes = tuple(mesh)
    if len(mark.dims) != len(outputs) or not all(
        device_shapes(local, whole, axes) for local, whole in zip(mark.dims, outputs, strict=True)
    ):
        return False
    return not inputs or (
        len(mark.operand_dims) >= len(op.inputs)
        and all(
            not shape or _broadcasts(shape, op.output) or (local is not None and device_shapes(local, shape, axes))
            for shape, local in zip(op.inputs, mark.operand_dims, strict=False)
        )
    )


@lru_cache(maxsize=65_536)
def device_shapes(local: Shape, whole: Shape, mesh: Shape) -> tuple[Shape, ...]:
    """The one-device shapes, of ``whole``'s rank, that an array of global shape ``whole`` may
    have when an instruction of a partitioned module holds it as ``local``, best first:
    ``local`` itself when it is a part the mesh can cut (``splits``); ``whole`` when ``local``
    holds as many elements (XLA laid it out transposed: no device splits it); then each cut of
    ``whole`` (leading dims first) that holds ``local``'s elements laid out as ``local`` once XLA
    merged neighbouring dims (``(4,16,32)`` held as ``(64,32)``; dims of 1 dropped), then those
    laid out with the merged dims in another order (``(32,64)``: transposed)."""
    found: list[Shape] = []
    if splits(local, whole, mesh):
        found.append(local)
    if _elements(local) == _elements(whole):
        return (*found, whole) if whole not in found else tuple(found)
    axes = tuple(size for size in mesh if size > 1)
    if (len(whole) + 1) ** len(axes) > _PLACINGS:
        return tuple(found)  # too many ways to cut: only a part of the same rank is read
    cuts = [cut for cut in _cuts(whole, axes) if _elements(cut) == _elements(local)]
    for in_order in (True, False):  # then laid out with its merged dims in another order (transposed)
        found += [cut for cut in cuts if cut not in found and _merged(cut, local, in_order)]
    return tuple(found[:_OPTIONS])


def device_shape(local: Shape, whole: Shape, mesh: Shape) -> Shape | None:
    """The best of ``device_shapes``, or None when there is none."""
    found = device_shapes(local, whole, mesh)
    return found[0] if found else None


def splits(local: Sequence[int], whole: Sequence[int], mesh: Sequence[int]) -> bool:
    """Whether ``local`` may be one device's part of ``whole`` on a mesh of these axis sizes:
    same rank, each dim dividing the whole's, cut by mesh axes of its own (an axis cuts one dim
    at most: a mesh of one axis of 8 cuts one dim by 8, never one by 4)."""
    if len(local) != len(whole) or not all(a == b or (a > 0 and b % a == 0) for a, b in zip(local, whole, strict=True)):
        return False
    cuts = tuple(sorted(b // a for a, b in zip(local, whole, strict=True) if a != b))
    return _cut_by(cuts, tuple(sorted(size for size in mesh if size > 1)))


@lru_cache(maxsize=4096)
def _cut_by(cuts: tuple[int, ...], axes: tuple[int, ...]) -> bool:
    """Whether disjoint sets of ``axes`` multiply to each of ``cuts``."""
    if not cuts:
        return True
    for mask in range(1, 1 << len(axes)):
        chosen = [size for i, size in enumerate(axes) if mask >> i & 1]
        if _elements(chosen) == cuts[0]:
            rest = tuple(size for i, size in enumerate(axes) if not mask >> i & 1)
            if _cut_by(cuts[1:], rest):
                return True
    return False


def _cuts(whole: Shape, axes: Shape) -> Iterator[Shape]:
    """``whole`` with each mesh axis cutting one dim or none, every way, leading dims first."""
    rank = len(whole)
    for placing in product(range(rank + 1), repeat=len(axes)):  # rank: the axis cuts nothing
        dims = list(whole)
        for axis, dim in zip(axes, placing, strict=True):
            if dim < rank:
                dims[dim] = dims[dim] // axis if dims[dim] % axis == 0 else -1
        if all(d >= 0 for d in dims) and any(dim < rank for dim in placing):
            yield tuple(dims)


def _merged(dims: Shape, layout: Shape, in_order: bool = True) -> bool:
    """Whether merging runs of neighbouring ``dims`` gives ``layout`` (dims of 1 dropped from
    both), or, unless ``in_order``, ``layout``'s dims in some order."""
    parts = [d for d in dims if d != 1]
    target = [d for d in layout if d != 1]
    if len(parts) > 12:
        return False
    for mask in range(1 << max(len(parts) - 1, 0)):  # bit i: a run ends after parts[i]
        runs, run = [], 1
        for i, dim in enumerate(parts):
            run *= dim
            if i == len(parts) - 1 or mask >> i & 1:
                runs.append(run)
                run = 1
        if runs == target or (not in_order and sorted(runs) == sorted(target)):
            return True
    return not parts and not target


def _elements(shape: Sequence[int]) -> int:
    n = 1
    for dim in shape:
        n *= dim
    return n


def _share(op: Operation, mark: Mark, mesh: Shape) -> Operation | None:
    """``op`` at ``mark``'s shapes, or None when none fit it: the first combination of each
    array's ``device_shapes`` — an input without a usable operand broadcasts to the output as it
    did globally (``_broadcast``) — that its cost rule accepts, those giving an input of the
    output's global shape the output's device shape first (the module docstring)."""
    outputs: tuple[Shape, ...] = (op.output, *op.extra_outputs)
    if len(mark.dims) != len(outputs):
        return None
    out_options = [device_shapes(local, whole, mesh) for local, whole in zip(mark.dims, outputs, strict=True)]
    in_options: list[tuple[Shape | None, ...]] = []
    for position, shape in enumerate(op.inputs):
        operand = mark.operand_dims[position] if position < len(mark.operand_dims) else None
        found = device_shapes(operand, shape, mesh) if operand is not None and shape else ()
        in_options.append(found + ((None,) if _broadcasts(shape, op.output) else ()))
    if not all(out_options) or not all(in_options):
        return None
    tries = 0
    for alike in (True, False):
        for outs in product(*out_options):
            for chosen in product(*in_options):
                inputs = tuple(
                    _broadcast(shape, op.output, outs[0]) if d is None else d
                    for shape, d in zip(op.inputs, chosen, strict=True)
                )
                if alike and any(s == op.output and d != outs[0] for s, d in zip(op.inputs, inputs, strict=True)):
                    continue
                tries += 1
                share = _rebuilt(op, inputs, outs) if tries <= _TRIES else None
                if share is not None or tries > _TRIES:
                    return share
    return None


def _rebuilt(op: Operation, inputs: tuple[Shape, ...], outputs: tuple[Shape, ...]) -> Operation | None:
    if inputs == op.inputs and outputs == (op.output, *op.extra_outputs):
        return op  # held whole by every device
    try:
        return replace(op, inputs=inputs, output=outputs[0], extra_outputs=outputs[1:])
    except (NeuralCostError, ValueError, IndexError):  # shapes its rule rejects: not its device shapes
        return None


def _broadcasts(shape: Shape, output: Shape) -> bool:
    """Whether ``shape`` broadcasts to ``output`` (numpy's rule: trailing dims equal or 1)."""
    return len(shape) <= len(output) and all(
        a in (1, b) for a, b in zip(reversed(shape), reversed(output), strict=False)
    )


def _broadcast(shape: Shape, output: Shape, device: Shape) -> Shape:
    """One device's part of an input of global ``shape`` that broadcasts to ``output``: the
    output's device dims where it has the output's dims, 1 where it has 1."""
    rank = len(shape)
    tail = zip(shape, output[len(output) - rank :], device[len(device) - rank :], strict=True)
    return tuple(d if a == b else a for a, b, d in tail)
