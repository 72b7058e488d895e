"""Band-structure figures (matplotlib, imported lazily)."""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from ..core.domain import InputError


def _pyplot() -> Any:
    try:
        import matplotlib

        if not os.environ.get("DISPLAY") and not os.environ.get("MPLBACKEND"):
            matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError("plotting needs matplotlib: pip install torch-spectra[plot]") from exc
    return plt


def _np(x: Any) -> np.ndarray:
    if hasattr(x, "detach"):
        x = x.detach().cpu().numpy()
    return np.asarray(x, dtype=float)


def plot_bands(
    path: Any,
    energies: Any,
    *,
    dos: tuple[Any, Any] | None = None,
    fermi: float | None = None,
    out: Any = None,
    title: str | None = None,
    ylabel: str | None = None,
    ylim: tuple[float, float] | None = None,
    color: str = "C0",
    units: str | None = None,
    ax: Any = None,
) -> Any:
    """Plot a band structure along a :class:`KPath` with ticks, optionally with a DOS panel.

    Parameters
    ----------
    path : a :class:`KPath` (its ``distance``, ``ticks``, ``labels``).
    energies : ``(nk, nbands)`` band energies along the path.
    dos : optional ``(energy_grid, dos_values)`` drawn in a side panel sharing the energy
        axis.
    fermi : draw a dashed line at this energy, labelled ``E_F``.
    out : save the figure here (the suffix picks PNG/SVG/PDF).
    units : the energy unit (e.g. ``"eV"``), written on the energy axis and the DOS axis
        (states per unit per cell); default: none.
    ylabel : the energy axis label (default ``"E (units)"``).
    ax : draw into this matplotlib Axes (with ``dos``: a pair ``(bands_ax, dos_ax)``) to
        compose figures; default: a new figure.

    Returns
    -------
    the matplotlib Figure.

    Examples
    --------
    >>> from spectra.tightbinding import graphene, kpath, plot_bands
    >>> m = graphene(); p = kpath(m, "G,K,M,G", 60)
    >>> fig = plot_bands(p, m.bands(p))
    >>> import matplotlib.pyplot as plt
    >>> fig, (a, b) = plt.subplots(1, 2)
    >>> _ = plot_bands(p, m.bands(p), ax=a, units="eV"); a.get_ylabel()
    'E (eV)'
    """
    plt = _pyplot()
    e = _np(energies)
    x = _np(path.distance)
    if e.ndim != 2 or e.shape[0] != x.shape[0]:
        raise InputError("energies", f"must be (nk={x.shape[0]}, nbands), got {e.shape}")
    if ylabel is None:
        ylabel = f"E ({units})" if units else "E"
    side = None
    if ax is not None:
        if dos is not None:
            if not (isinstance(ax, (tuple, list)) and len(ax) == 2):
                raise InputError("plot_bands:", "with dos=, ax must be a pair (bands_ax, dos_ax)")
            ax, side = ax
        fig = ax.figure
    elif dos is None:
        fig, ax = plt.subplots(figsize=(5, 4), layout="constrained")
    else:
        fig, (ax, side) = plt.subplots(
            1,
            2,
            figsize=(6.5, 4),
            sharey=True,
            layout="constrained",
            gridspec_kw={"width_ratios": [3, 1]},
        )
    visible = e < 1e29  # PySCF's dropped orbitals sit at 1e30
    # break the lines at path discontinuities (repeated distances)
    breaks = np.flatnonzero(np.diff(x) == 0) + 1
    for part_x, part_e, part_v in zip(
        np.split(x, breaks), np.split(e, breaks), np.split(visible, breaks), strict=True
    ):
        ax.plot(part_x, np.where(part_v, part_e, np.nan), color=color, lw=1.2)
    ticks = _np(path.ticks)
    ax.set_xticks(ticks)
    ax.set_xticklabels(list(path.labels))
    for t in ticks:
        ax.axvline(t, color="0.7", lw=0.6)
    ax.set_xlim(x.min(), x.max())
    ax.set_ylabel(ylabel)
    if ylim is not None:
        ax.set_ylim(*ylim)
    if fermi is not None:
        ax.axhline(fermi, color="k", ls="--", lw=0.8)
        ax.annotate(
            "$E_F$",
            (1.0, fermi),
            xycoords=("axes fraction", "data"),
            xytext=(-3, 2),
            textcoords="offset points",
            ha="right",
            va="bottom",
            fontsize=9,
        )
    if side is not None and dos is not None:
        grid, values = _np(dos[0]), _np(dos[1])
        side.plot(values, grid, color=color, lw=1.0)
        side.fill_betweenx(grid, 0, values, color=color, alpha=0.25)
        side.set_xlabel(f"DOS (1/{units}/cell)" if units else "DOS (per cell)")
        side.set_xlim(left=0)
        side.xaxis.set_major_locator(plt.MaxNLocator(2))
        side.tick_params(axis="y", left=False)
        if fermi is not None:
            side.axhline(fermi, color="k", ls="--", lw=0.8)
    if title:
        ax.set_title(title)
    if out is not None:
        fig.savefig(out, dpi=150)
    return fig


__all__ = ["plot_bands"]
