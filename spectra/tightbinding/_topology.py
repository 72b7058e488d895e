"""Berry phases, Wilson loops and Chern numbers from the states of all k at once."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from ..core import eigvalsh, matrix_function
from ..core.domain import InputError, LinAlgError, as_tensor, restore
from ._bloch import BlochData, solve_chunk
from ._model import Model


def _band_index(bands: int | Sequence[int], n: int) -> list[int]:
    if isinstance(bands, bool):
        raise TypeError(f"bands must be a count or a list of band indices, got {bands!r}")
    if isinstance(bands, (int, np.integer)):
        if not 0 < int(bands) <= n:
            raise InputError("band_index:", f"bands={bands}: need between 1 and {n} occupied bands")
        return list(range(int(bands)))
    idx = [int(b) for b in bands]
    if not idx or any(b < 0 or b >= n for b in idx) or len(set(idx)) != len(idx):
        raise InputError("bands", f"must be distinct indices in [0, {n}), got {list(bands)}")
    return sorted(idx)


def _check_model(model: Model, what: str) -> BlochData:
    if not model.is_orthogonal:
        raise NotImplementedError(f"{what} needs an orthogonal model (no overlap S(R))")
    return model.data()


def _states(k: torch.Tensor, data: BlochData, idx: list[int]) -> torch.Tensor:
    """Cell-periodic states ``u_n(k)`` (orbital convention) of bands ``idx`` at all k."""
    _, v = solve_chunk(k.reshape(-1, k.shape[-1]), data, "orbital", vectors=True)
    assert v is not None
    return v[..., idx].reshape(*k.shape[:-1], v.shape[-2], len(idx))


def _shift_phase(g: torch.Tensor, data: BlochData) -> torch.Tensor:
    """``exp(-2 pi i G.tau)`` per state: ``u(k + G) = exp(-2 pi i G.tau) u(k)``."""
    tau = torch.as_tensor(data.positions, dtype=g.dtype, device=g.device)
    return torch.polar(torch.ones((), dtype=g.dtype, device=g.device), -(2 * math.pi) * (g @ tau.T))


def _ordered_product(m: torch.Tensor) -> torch.Tensor:
    """``m[..., 0, :, :] @ m[..., 1, :, :] @ ...`` by pairwise (tree) reduction."""
    while m.shape[-3] > 1:
        if m.shape[-3] % 2:
            tail = m[..., -1:, :, :]
            m = torch.cat([m[..., :-1:2, :, :] @ m[..., 1::2, :, :], tail], dim=-3)
        else:
            m = m[..., ::2, :, :] @ m[..., 1::2, :, :]
    return m[..., 0, :, :]


def _loop_matrix(model: Model, kloop: Any, bands: int | Sequence[int]) -> tuple[torch.Tensor, Any]:
    data = _check_model(model, "a Berry phase")
    kt, origin = as_tensor(kloop, "kloop")
    if kt.ndim == 1 and model.dim_k == 1:
        kt = kt[:, None]
    if kt.ndim < 2 or kt.shape[-1] != model.dim_k or kt.shape[-2] < 3:
        raise InputError(
            "kloop",
            f"must have shape (..., npoints >= 3, {model.dim_k}) with the "
            f"end point equal to the start plus a reciprocal lattice vector; got "
            f"{tuple(kt.shape)}",
        )
    g = kt[..., -1, :] - kt[..., 0, :]
    if not bool(torch.all(torch.abs(g - torch.round(g)) < 1e-8)):
        raise InputError(
            "kloop",
            "is not closed: its last point must equal the first plus an "
            "integer reciprocal lattice vector (reduced coordinates)",
        )
    g = torch.round(g)
    idx = _band_index(bands, data.nstates)
    u = _states(kt[..., :-1, :], data, idx)  # (..., N, n, m)
    u_end = u[..., 0, :, :] * _shift_phase(g, data).unsqueeze(-1)
    nxt = torch.cat([u[..., 1:, :, :], u_end.unsqueeze(-3)], dim=-3)
    links = _polar(u.mH @ nxt)  # (..., N, m, m), each made unitary as PythTB does
    return _ordered_product(links), origin


def _checked_rsqrt(w: torch.Tensor) -> torch.Tensor:
    """``w^(-1/2)`` of the eigenvalues of ``M^H M``, refusing (numerically) singular ``M``."""
    eps = torch.finfo(w.dtype).eps
    top = w[..., -1:].clamp_min(torch.finfo(w.dtype).tiny)
    bad = ~(w[..., :1] > 10 * w.shape[-1] * eps * top).squeeze(-1)
    if bool(bad.any()):
        raise LinAlgError(
            "the overlap <u(k)|u(k')> of neighbouring k-points",
            "is singular (the chosen bands' subspaces are orthogonal along some direction)",
            [tuple(i) for i in bad.nonzero().tolist()],
            hint="refine the k mesh, or choose bands separated by a gap from the others",
        )
    return w.rsqrt()


def _polar(m: torch.Tensor) -> torch.Tensor:
    """The unitary polar factor ``M (M^H M)^-1/2`` of every matrix (one core
    :func:`spectra.matrix_function` call); singular ``M`` is refused, never clamped."""
    if m.shape[-1] == 0:
        return m
    gram = m.mH @ m
    return m @ matrix_function(0.5 * (gram + gram.mH), _checked_rsqrt, check=False)


def berry_phase(model: Model, kloop: Any, bands: int | Sequence[int]) -> Any:
    """Berry phase ``-Im ln det prod_i <u(k_i)|u(k_i+1)>`` of the bands along closed loops.

    The convention is PythTB's; the phase is ``2 pi`` times the Wannier (charge) centre in
    reduced coordinates along the loop, mod ``2 pi``.

    Parameters
    ----------
    model : an orthogonal :class:`Model`.
    kloop : reduced k ``(..., npoints, dim_k)``; the last point is the first plus a
        reciprocal lattice vector (e.g. ``[[0, y], ..., [1, y]]``). Several loops may be
        stacked in leading dimensions; all their states come from one core call.
    bands : the number of lowest bands, or a list of band indices.

    Returns
    -------
    phases in ``(-pi, pi]``, shape ``kloop.shape[:-2]`` (same array type as ``kloop``).

    Examples
    --------
    >>> import numpy as np
    >>> from spectra.tightbinding import Model, berry_phase
    >>> ssh = Model([[1.0]], [[0.0], [0.5]])
    >>> ssh.add_hopping(0.5, 0, 1, [0]); ssh.add_hopping(1.0, 1, 0, [1])
    >>> loop = np.linspace(0, 1, 41)[:, None]
    >>> round(float(berry_phase(ssh, loop, 1)) / np.pi, 6)  # 2 pi x 3/4 (Wannier centre)
    -0.5
    """
    w, origin = _loop_matrix(model, kloop, bands)
    return restore(-torch.angle(torch.linalg.det(w)), origin)


def wilson_loop(model: Model, kloop: Any, bands: int | Sequence[int]) -> Any:
    """Eigenphases of the Wilson loop (hybrid Wannier centres ``x 2 pi``), ascending in
    ``(-pi, pi]``, shape ``(..., nbands)``; their sum is :func:`berry_phase` (mod 2 pi).

    Each link matrix ``<u(k_i)|u(k_i+1)>`` is replaced by its unitary polar factor (as
    PythTB does, through the core's eigh of ``M^H M``) and the product's phases are read
    from the Hermitian Cayley transform ``i (1 - V)(1 + V)^-1`` of a rotated
    ``V = exp(-i phi) U``: one more core call.

    >>> import numpy as np
    >>> from spectra.tightbinding import Model, wilson_loop
    >>> ssh = Model([[1.0]], [[0.0], [0.5]])
    >>> ssh.add_hopping(0.5, 0, 1, [0]); ssh.add_hopping(1.0, 1, 0, [1])
    >>> w = wilson_loop(ssh, np.linspace(0, 1, 41)[:, None], 1)
    >>> round(float(w[0]) / np.pi, 6)
    -0.5
    """
    w, origin = _loop_matrix(model, kloop, bands)
    return restore(unitary_phases(w), origin)


def unitary_phases(w: torch.Tensor) -> torch.Tensor:
    """``-angle`` of the eigenvalues of the unitary polar factor of each ``w`` (ascending)."""
    m = w.shape[-1]
    u = _polar(w)
    eye = torch.eye(m, dtype=u.dtype, device=u.device)
    ncand = 2 * (m + 1)
    phis = torch.arange(ncand, dtype=u.real.dtype, device=u.device) * (2 * math.pi / ncand)
    rot = torch.polar(torch.ones_like(phis), -phis)  # (ncand,)
    cand = eye + rot[:, None, None] * u.unsqueeze(-3)  # (..., ncand, m, m)
    best = torch.argmax(torch.abs(torch.linalg.det(cand)), dim=-1)  # (...)
    phi = phis[best]
    v = torch.polar(torch.ones_like(phi), -phi)[..., None, None] * u
    cayley = 1j * torch.linalg.solve((eye + v).mT, (eye - v).mT).mT  # i (1 - V)(1 + V)^-1
    lam = eigvalsh(0.5 * (cayley + cayley.mH))
    theta = phi.unsqueeze(-1) + 2 * torch.atan(lam)
    phases = -torch.remainder(theta + math.pi, 2 * math.pi) + math.pi  # -theta in (-pi, pi]
    return torch.sort(phases, dim=-1).values


def chern_number(
    model: Model,
    bands: int | Sequence[int],
    grid: Sequence[int] = (24, 24),
    *,
    plane: Sequence[int] = (0, 1),
    k0: Any = None,
) -> float:
    """Chern number of the given bands by the Fukui-Hatsugai-Suzuki lattice method.

    The states on the ``grid[0] x grid[1]`` mesh of the ``plane`` of k (the other reduced k
    components fixed at ``k0``) come from one core call; the result is an integer up to
    rounding once the mesh resolves the Berry curvature (it is exactly an integer for
    ``bands`` separated by a gap from the rest). Sign: ``C = (1/2 pi) sum`` of the plaquettes'
    Berry phases (:func:`berry_phase`'s convention ``-Im ln prod <u|u'>``, as PythTB), i.e.
    the flux of ``curl A`` with ``A = i <u|grad u>``.

    Examples
    --------
    >>> from spectra.tightbinding import haldane, chern_number
    >>> round(chern_number(haldane(t2=0.15, phi=1.5708, mass=0.1), 1))
    -1
    """
    curvature = berry_flux(model, bands, grid, plane=plane, k0=k0)
    return float(curvature.sum() / (2 * np.pi))


def berry_flux(
    model: Model,
    bands: int | Sequence[int],
    grid: Sequence[int] = (24, 24),
    *,
    plane: Sequence[int] = (0, 1),
    k0: Any = None,
) -> np.ndarray:
    """Berry flux through each plaquette of the FHS mesh, ``(grid[0], grid[1])`` in
    ``(-pi, pi]``; ``sum / 2 pi`` is :func:`chern_number`."""
    data = _check_model(model, "a Chern number")
    n1, n2 = (int(g) for g in grid)
    if n1 < 2 or n2 < 2:
        raise InputError("grid", f"must be at least 2 x 2, got {tuple(grid)}")
    p1, p2 = (int(p) for p in plane)
    if p1 == p2 or not (0 <= p1 < model.dim_k and 0 <= p2 < model.dim_k):
        raise InputError("plane", f"must be two distinct k directions in [0, {model.dim_k})")
    base = np.zeros(model.dim_k) if k0 is None else np.asarray(k0, float).reshape(model.dim_k)
    idx = _band_index(bands, data.nstates)
    k = np.broadcast_to(base, (n1, n2, model.dim_k)).copy()
    k[..., p1] = (np.arange(n1) / n1)[:, None]
    k[..., p2] = (np.arange(n2) / n2)[None, :]
    kt = torch.from_numpy(k)
    u = _states(kt, data, idx)  # (n1, n2, n, m)
    e1 = torch.zeros(model.dim_k, dtype=torch.float64)
    e1[p1] = 1
    e2 = torch.zeros(model.dim_k, dtype=torch.float64)
    e2[p2] = 1
    u1 = torch.cat([u[1:], (u[:1] * _shift_phase(e1, data).unsqueeze(-1))], dim=0)
    u2 = torch.cat([u[:, 1:], (u[:, :1] * _shift_phase(e2, data).unsqueeze(-1))], dim=1)
    link1 = torch.linalg.det(u.mH @ u1)
    link2 = torch.linalg.det(u.mH @ u2)
    link1 = link1 / link1.abs()
    link2 = link2 / link2.abs()
    plaquette = link1 * torch.roll(link2, -1, 0) * torch.roll(link1, -1, 1).conj() * link2.conj()
    return (-torch.angle(plaquette)).numpy()  # Berry phase of each plaquette (counter-clockwise)


__all__ = ["berry_flux", "berry_phase", "chern_number", "unitary_phases", "wilson_loop"]
