"""``laplacian_pe`` inside ``torch.compile(fullgraph=True)`` and ``torch.export``: custom ops.

The eager pipeline reads sizes from the data (components, which graphs are large, the
padding rule), calls SciPy and NumPy and keeps Python caches: traced by Dynamo it would
break the graph. Under compilation :func:`spectra.graph.laplacian_pe` calls these
``torch.library.custom_op``s instead, as the core does for ``spectra.eigh``: opaque to the
tracer, with a fake kernel for shapes (the number of graphs, when not given, is a dynamic
size), a backward for the edge weights (the eager pipeline's own gradient, recomputed), and
the eager pipeline as their implementation, so compiled results are the eager ones bitwise.
Random column signs are drawn by a second op from the global generator, as eager draws them.

>>> import torch
>>> from spectra.graph import laplacian_pe
>>> ring = torch.tensor([[0, 1, 2, 3, 1, 2, 3, 0], [1, 2, 3, 0, 0, 1, 2, 3]])
>>> pe = torch.compile(laplacian_pe, backend="eager", fullgraph=True)
>>> torch.equal(pe(ring, 4, k=2).pe, laplacian_pe(ring, 4, k=2).pe)
True
"""

from __future__ import annotations

from typing import Any

import torch

from ..core.domain import InputError

#: the dispatch state of plain eager code (see ``spectra.core``'s compiled ops: compiled
#: graphs call custom ops with the Conjugate and Negative keys excluded)
_EAGER_KEYS = (
    torch._C._dispatch_tls_local_include_set(),
    torch._C._dispatch_tls_local_exclude_set(),
)

Outputs = tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]


def _eager(
    edge_index: torch.Tensor,
    edge_weight: torch.Tensor | None,
    batch: torch.Tensor | None,
    sizes: list[int],
    normalization: str | None,
    drop_trivial: bool,
    multiplicity_tol: float,
    convention: str,
    dtype: torch.dtype,
    device: str | None,
) -> Any:
    from ._pe import pe_outputs

    num_nodes, k, num_graphs = sizes
    with torch._C._ForceDispatchKeyGuard(*_EAGER_KEYS):
        return pe_outputs(
            edge_index,
            (None if num_nodes < 0 else num_nodes, k, None if num_graphs < 0 else num_graphs),
            edge_weight,
            batch,
            normalization,
            drop_trivial,
            multiplicity_tol,
            convention,
            dtype,
            device,
            signs=None,
        )


@torch.library.custom_op("spectra_graph::laplacian_pe", mutates_args=())
def laplacian_pe_op(
    edge_index: torch.Tensor,
    edge_weight: torch.Tensor | None,
    batch: torch.Tensor | None,
    sizes: list[int],
    normalization: str | None,
    drop_trivial: bool,
    multiplicity_tol: float,
    convention: str,
    dtype: torch.dtype,
    device: str | None,
) -> Outputs:
    """The eager ``laplacian_pe`` (no column signs drawn) as one opaque op; ``sizes`` is
    ``(num_nodes, k, num_graphs)``, -1 where eager takes the size from the data."""
    weight = edge_weight.detach() if edge_weight is not None else None
    out = _eager(edge_index, weight, batch, sizes, normalization, drop_trivial,
                 multiplicity_tol, convention, dtype, device)  # fmt: skip
    return tuple(x.clone() for x in out)  # type: ignore[return-value]


@laplacian_pe_op.register_fake
def _(
    edge_index: torch.Tensor,
    edge_weight: torch.Tensor | None,
    batch: torch.Tensor | None,
    sizes: list[int],
    *rest: Any,
) -> Outputs:
    ctx = torch.library.get_ctx()
    num_nodes, k, num_graphs = sizes
    dtype = rest[4]
    n = num_nodes if num_nodes >= 0 else ctx.new_dynamic_size()
    g = num_graphs if num_graphs >= 0 else (1 if batch is None else ctx.new_dynamic_size())
    new = edge_index.new_empty
    return (
        new((n, k), dtype=dtype),
        new((g, k), dtype=torch.bool),
        new((g, k), dtype=dtype),
        new((g, k), dtype=torch.long),
        new((g,), dtype=torch.long),
    )


@torch.library.custom_op("spectra_graph::laplacian_pe_backward", mutates_args=())
def laplacian_pe_backward_op(
    edge_index: torch.Tensor,
    edge_weight: torch.Tensor,
    batch: torch.Tensor | None,
    grad_pe: torch.Tensor,
    grad_values: torch.Tensor,
    sizes: list[int],
    normalization: str | None,
    drop_trivial: bool,
    multiplicity_tol: float,
    convention: str,
    dtype: torch.dtype,
    device: str | None,
) -> torch.Tensor:
    """The gradient of the edge weights: the eager pipeline run again under autograd."""
    with torch.enable_grad():
        weight = edge_weight.detach().requires_grad_(True)
        out = _eager(edge_index, weight, batch, sizes, normalization, drop_trivial,
                     multiplicity_tol, convention, dtype, device)  # fmt: skip
        (grad,) = torch.autograd.grad(
            [out[0], out[2]], [weight], [grad_pe, grad_values], allow_unused=True
        )
    return torch.zeros_like(edge_weight) if grad is None else grad


@laplacian_pe_backward_op.register_fake
def _(edge_index: torch.Tensor, edge_weight: torch.Tensor, *rest: Any) -> torch.Tensor:
    return torch.empty_like(edge_weight)


def _setup(ctx: Any, inputs: tuple[Any, ...], output: Any) -> None:
    edge_index, edge_weight, batch, *rest = inputs
    ctx.save_for_backward(edge_index, edge_weight, batch)
    ctx.rest = rest


def _backward(ctx: Any, g_pe: Any, g_mask: Any, g_vals: Any, g_groups: Any, g_comps: Any) -> Any:
    edge_index, edge_weight, batch = ctx.saved_tensors
    grad = None
    if edge_weight is not None and ctx.needs_input_grad[1]:
        grad = laplacian_pe_backward_op(edge_index, edge_weight, batch, g_pe, g_vals, *ctx.rest)
    return (None, grad, None) + (None,) * len(ctx.rest)


laplacian_pe_op.register_autograd(_backward, setup_context=_setup)


@torch.library.custom_op("spectra_graph::random_signs", mutates_args=())
def random_signs_op(num_graphs: int, k: int) -> torch.Tensor:
    """``(G, k)`` random +-1 (float64) from the global generator, as eager draws them."""
    from ._pe import random_signs

    return random_signs(num_graphs, k)


@random_signs_op.register_fake
def _(num_graphs: int, k: int) -> torch.Tensor:
    return torch.empty((num_graphs, k), dtype=torch.float64)


def compiled_laplacian_pe(
    edge_index: Any,
    sizes: tuple[int | None, int, int | None],
    edge_weight: Any,
    batch: Any,
    normalization: str | None,
    drop_trivial: bool,
    multiplicity_tol: float,
    random_sign: bool | torch.Generator,
    dtype: torch.dtype,
    device: Any,
    convention: str,
) -> Outputs:
    """``laplacian_pe`` under ``torch.compile``/``torch.export``: the custom ops above."""
    if not isinstance(edge_index, torch.Tensor):
        raise InputError("edge_index", "must be a torch.Tensor under torch.compile")
    if isinstance(random_sign, torch.Generator):
        raise InputError(
            "random_sign",
            "a torch.Generator cannot enter a compiled graph: use random_sign=True (the "
            "global generator, as eager) or draw the signs outside the compiled region",
        )
    num_nodes, k, num_graphs = sizes
    if num_nodes is None and batch is not None:
        num_nodes = batch.shape[0]
    dev = None if device is None else str(device)
    packed = [-1 if num_nodes is None else num_nodes, k, -1 if num_graphs is None else num_graphs]
    pe, mask, vals, groups, comps = laplacian_pe_op(
        edge_index, edge_weight, batch, packed, normalization, drop_trivial, multiplicity_tol,
        convention, dtype, dev,
    )  # fmt: skip
    if random_sign or convention == "pyg":
        signs = random_signs_op(comps.shape[0], k).to(device=pe.device, dtype=pe.dtype)
        pe = pe * (signs[batch] if batch is not None else signs)
    return pe, mask, vals, groups, comps
