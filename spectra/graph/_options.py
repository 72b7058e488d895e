"""Grouped options of the graph encodings: which eigenvectors become columns
(:class:`PEColumns`) and which attributes a transform reads and writes (:class:`PEAttrs`),
with the older flat keywords still accepted."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import torch

from ..core.domain import InputError


@dataclass(frozen=True)
class PEColumns:
    """Which eigenvectors of each graph become the ``k`` columns.

    ``drop_trivial``: drop the null eigenvectors (one per component; ``None``: the
    encoding's default, True for Laplacian PEs, False for magnetic ones);
    ``multiplicity_tol``: eigenvalue gap (relative to ``max(1, |w|)``) that separates
    multiplicity groups; ``trivial_tol``: magnetic PEs drop eigenvalues below it.

    >>> PEColumns(drop_trivial=False).multiplicity_tol
    1e-06
    """

    drop_trivial: bool | None = None
    multiplicity_tol: float = 1e-6
    trivial_tol: float = 1e-8

    def __post_init__(self) -> None:
        for name in ("multiplicity_tol", "trivial_tol"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise InputError(name, f"must be a number >= 0, got {value!r}")
            if not math.isfinite(value) or value < 0:
                raise InputError(name, f"must be finite and >= 0, got {value!r}")


@dataclass(frozen=True)
class PEAttrs:
    """Attribute names a transform reads (``weight``, the edge weights) and writes besides
    its encoding: the ``(N, k)`` column ``mask`` (``"default"``: ``f"{attr_name}_mask"``,
    ``None``: not stored), ``eigenvalues`` and multiplicity ``groups`` repeated per node,
    and the ``heat``-kernel features.

    >>> PEAttrs(eigenvalues="laplacian_eigenvalues").mask
    'default'
    """

    mask: str | None = "default"
    eigenvalues: str | None = None
    groups: str | None = None
    heat: str = "heat_kernel_diag"
    weight: str | None = "edge_weight"


#: the flat keywords of earlier releases, and where they live now
LEGACY_COLUMNS = {"drop_trivial": "drop_trivial", "multiplicity_tol": "multiplicity_tol",
                  "trivial_tol": "trivial_tol"}  # fmt: skip
LEGACY_ATTRS = {"mask_attr": "mask", "eigenvalues_attr": "eigenvalues", "groups_attr": "groups",
                "heat_attr": "heat", "weight_attr": "weight"}  # fmt: skip


def take_legacy(
    kwargs: dict[str, Any],
    columns: PEColumns | None,
    attrs: PEAttrs | None,
    allowed: tuple[str, ...],
) -> tuple[PEColumns, PEAttrs]:
    """Pop the flat keywords named in ``allowed`` from ``kwargs`` into the two groups."""
    columns = columns if columns is not None else PEColumns()
    attrs = attrs if attrs is not None else PEAttrs()
    if not isinstance(columns, PEColumns):
        raise TypeError(f"columns must be a PEColumns, got {type(columns).__name__}")
    if not isinstance(attrs, PEAttrs):
        raise TypeError(f"attrs must be a PEAttrs, got {type(attrs).__name__}")
    col_kw = {
        LEGACY_COLUMNS[n]: kwargs.pop(n) for n in allowed if n in LEGACY_COLUMNS and n in kwargs
    }
    attr_kw = {LEGACY_ATTRS[n]: kwargs.pop(n) for n in allowed if n in LEGACY_ATTRS and n in kwargs}
    return dataclasses.replace(columns, **col_kw), dataclasses.replace(attrs, **attr_kw)


def sign_generator(
    random_sign: bool | torch.Generator, kwargs: dict[str, Any]
) -> tuple[bool, torch.Generator | None]:
    """``random_sign`` is a bool or the ``torch.Generator`` to draw from (the older
    ``generator=`` keyword is popped from ``kwargs``)."""
    generator = kwargs.pop("generator", None)
    if isinstance(random_sign, torch.Generator):
        return True, random_sign
    if not isinstance(random_sign, bool):
        raise TypeError(f"random_sign must be a bool or a torch.Generator, got {random_sign!r}")
    return random_sign, generator


def refuse_unknown(kwargs: Mapping[str, Any], where: str) -> None:
    if kwargs:
        raise TypeError(f"{where} got unexpected keyword argument(s) {sorted(kwargs)}")
