"""Bloch sums and band solves as pure functions of one chunk of k-points.

Everything here takes the model's arrays explicitly (a :class:`BlochData`), so the same
functions can be mapped over blocks of a k-point array (threads, Dask) without a model.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from ..core import eigh, eigvalsh, plan
from ..core.domain import InputError, as_tensor, memory_budget, restore, rows_within

CONVENTIONS = ("lattice", "orbital")


@dataclass(frozen=True)
class BlochData:
    """The arrays that define ``H(k)`` (and ``S(k)``) of a tight-binding model.

    ``rvecs``: ``(nR, d)`` integer lattice vectors in the periodic directions;
    ``hr``: ``(nR, n, n)`` complex ``H(R)`` with ``H(-R) = H(R)^H``; ``sr``: optional overlap
    ``S(R)`` of the same shape; ``positions``: ``(n, d)`` reduced positions of the states
    (periodic components), used by the orbital-position phase convention.
    """

    rvecs: np.ndarray
    hr: np.ndarray
    positions: np.ndarray
    sr: np.ndarray | None = None

    def __post_init__(self) -> None:
        # the arrays as tensors, per (k dtype, device): not a field (equality, repr and
        # pickling ignore it), filled by :meth:`tensors`
        object.__setattr__(self, "_tensors", {})

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_tensors"] = {}  # (a worker converts its own)
        return state

    def tensors(self, dtype: torch.dtype, device: torch.device) -> _Tensors:
        """The arrays as the Bloch sums of real ``dtype`` k-points on ``device`` read
        them, converted once per ``(dtype, device)`` (a loop over single k-points
        converted them on every call: 26 of its 40 us per Bloch sum, measured)."""
        cache: dict[tuple[torch.dtype, torch.device], _Tensors] = self.__dict__["_tensors"]
        key = (dtype, torch.device(device))
        got = cache.get(key)
        if got is None:
            got = _Tensors.of(self.rvecs, self.hr, self.sr, self.positions, dtype, key[1])
            cache[key] = got
        return got

    def arrays(self, dtype: np.dtype[Any]) -> _Arrays:
        """The arrays as NumPy's Bloch sums of real ``dtype`` k-points read them (the
        path of a few k-points, :data:`FEW_ENTRIES`), converted once per dtype."""
        cache: dict[Any, Any] = self.__dict__["_tensors"]
        key = ("numpy", np.dtype(dtype))
        got = cache.get(key)
        if got is None:
            got = _Arrays.of(self, np.dtype(dtype))
            cache[key] = got
        return got  # type: ignore[no-any-return]

    @property
    def dim(self) -> int:
        return int(self.rvecs.shape[1])

    @property
    def nstates(self) -> int:
        return int(self.hr.shape[-1])


@dataclass(frozen=True)
class _Tensors:
    """:class:`BlochData`'s arrays as tensors for k-points of one real dtype and device:
    the lattice vectors in that dtype, the blocks ``(nR, n * n)`` in its complex dtype, the
    positions, and the unit modulus of the phases."""

    rvecs: torch.Tensor
    hr: torch.Tensor
    sr: torch.Tensor | None
    positions: torch.Tensor
    one: torch.Tensor

    @staticmethod
    def of(
        rvecs: np.ndarray,
        blocks: np.ndarray,
        overlap: np.ndarray | None,
        positions: np.ndarray | None,
        dtype: torch.dtype,
        device: torch.device,
    ) -> _Tensors:
        """The conversion itself (``positions`` ``None``: an empty ``(0, d)`` tensor)."""
        ctype = _complex_of(dtype)

        def flat(m: np.ndarray) -> torch.Tensor:
            mt = torch.as_tensor(m, device=device).to(ctype)
            return mt.reshape(mt.shape[0], mt.shape[-1] * mt.shape[-1])

        rt = torch.as_tensor(rvecs, dtype=dtype, device=device)
        tau = (
            rt[:0] if positions is None else torch.as_tensor(positions, dtype=dtype, device=device)
        )
        ones = torch.ones((), dtype=dtype, device=device)
        return _Tensors(rt, flat(blocks), None if overlap is None else flat(overlap), tau, ones)


@dataclass(frozen=True)
class _Arrays:
    """:class:`_Tensors` as NumPy arrays, for the Bloch sums of a few k-points."""

    rvecs: np.ndarray
    hr: np.ndarray
    sr: np.ndarray | None
    positions: np.ndarray

    @staticmethod
    def of(data: BlochData, dtype: np.dtype[Any]) -> _Arrays:
        ctype = np.complex64 if dtype == np.float32 else np.complex128

        def flat(m: np.ndarray) -> np.ndarray:
            return np.ascontiguousarray(m, dtype=ctype).reshape(m.shape[0], -1)

        sr = None if data.sr is None else flat(data.sr)
        positions = np.asarray(data.positions, dtype=dtype)
        return _Arrays(data.rvecs.astype(dtype), flat(data.hr), sr, positions)


def _check_convention(convention: str) -> str:
    if convention not in CONVENTIONS:
        raise InputError("convention", f"must be one of {CONVENTIONS}, got {convention!r}")
    return convention


def as_kpoints(k: Any, dim: int) -> tuple[torch.Tensor, Any, tuple[int, ...]]:
    """``k`` as a real ``(nk, dim)`` tensor, its origin (for :func:`restore`), batch shape."""
    kt, origin = as_tensor(k, "k")
    if kt.is_complex():
        raise TypeError(f"k must be real reduced coordinates, got dtype {kt.dtype}")
    if kt.ndim == 1 and dim == 1 and kt.shape[0] != 1:
        kt = kt[:, None]  # a 1D model: a flat list of k
    if kt.ndim == 1:
        kt = kt[None, :]
    if kt.shape[-1] != dim:
        raise InputError(
            "k",
            f"must have shape (nk, {dim}) (reduced coordinates of the "
            f"{dim} periodic directions), got {tuple(kt.shape)}",
        )
    if not _all_finite(kt):
        bad = torch.nonzero(~torch.isfinite(kt).all(-1)).flatten()[:10].tolist()
        raise InputError("k", f"contains NaN/Inf at k-point indices {bad}")
    batch = tuple(kt.shape[:-1])
    return kt.reshape(math.prod(batch), dim), origin, batch


def _all_finite(kt: torch.Tensor) -> bool:
    """Whether every entry of ``kt`` is finite (a NumPy view for CPU tensors: 2 against
    7 us for the few k-points of a single call)."""
    if kt.device.type == "cpu":
        return bool(np.isfinite(kt.detach().numpy()).all())
    return bool(torch.isfinite(kt).all())


def _complex_of(dtype: torch.dtype) -> torch.dtype:
    return torch.complex64 if dtype == torch.float32 else torch.complex128


def bloch_sum(
    k: torch.Tensor,
    rvecs: np.ndarray,
    blocks: np.ndarray,
    positions: np.ndarray | None = None,
    convention: str = "lattice",
) -> torch.Tensor:
    """``M(k) = sum_R exp(2 pi i k.R) M(R)`` for all ``k`` at once (one einsum).

    ``k``: real ``(nk, d)`` tensor; ``blocks``: ``(nR, n, n)``. With
    ``convention="orbital"`` the result is multiplied by ``exp(2 pi i k.(tau_j - tau_i))``
    (PythTB's convention). Result: complex ``(nk, n, n)`` on ``k``'s device.
    """
    _check_convention(convention)
    ts = _Tensors.of(rvecs, blocks, None, positions, k.dtype, k.device)
    return _bloch_sum(k, ts, ts.hr, convention)


def _bloch_sum(k: torch.Tensor, ts: _Tensors, flat: torch.Tensor, convention: str) -> torch.Tensor:
    """:func:`bloch_sum` on the arrays as tensors (``flat``: the blocks ``(nR, n * n)``,
    ``ts.hr`` or ``ts.sr``)."""
    phase = torch.polar(ts.one, (2 * math.pi) * (k @ ts.rvecs.T))  # (nk, nR)
    n = math.isqrt(flat.shape[-1])
    out = (phase @ flat).reshape(k.shape[0], n, n)  # one GEMM
    if convention == "orbital" and ts.positions.numel():
        d = torch.polar(ts.one, (2 * math.pi) * (k @ ts.positions.T))  # (nk, n)
        out = d.conj().unsqueeze(-1) * out * d.unsqueeze(-2)
    return out


def hamiltonian_chunk(
    k: torch.Tensor, data: BlochData, convention: str = "lattice"
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """``(H(k), S(k))`` for one chunk of k-points (``S`` is None for orthogonal models).

    The blocks satisfy ``M(-R) = M(R)^H`` exactly, so the sums are Hermitian to rounding.
    """
    _check_convention(convention)
    ts = data.tensors(k.dtype, k.device)
    h = _bloch_sum(k, ts, ts.hr, convention)
    s = None if ts.sr is None else _bloch_sum(k, ts, ts.sr, convention)
    return h, s


def solve_chunk(
    k: torch.Tensor,
    data: BlochData,
    convention: str = "lattice",
    vectors: bool = True,
    **eigh_kw: Any,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Bands (and states) for one chunk of k-points: build ``H(k)``, one core call.

    A pure function of the chunk and the model's arrays, to be mapped over blocks. ``H(k)``
    is Hermitian and finite by construction, so the core's input checks are skipped unless
    ``check=True`` is passed.
    """
    eigh_kw.setdefault("check", False)
    h, s = hamiltonian_chunk(k, data, convention)
    if vectors:
        w, v = eigh(h, s, **eigh_kw)
        return w, v
    return eigvalsh(h, s, **eigh_kw), None


def chunk_length(
    nk: int,
    nstates: int,
    nr: int,
    vectors: bool,
    overlap: bool,
    itemsize: int,
    max_memory: int | None,
    device: torch.device | str = "cpu",
) -> int:
    """k-points per chunk so the Bloch sums, the solve and its work fit the core's memory
    budget: ``max_memory`` (the core's option, passed on to each core call) or, by
    default, the core's (half the free memory of ``device``).

    >>> chunk_length(1000, 4, 7, True, False, 16, 16 * 4000)  # 1,712 bytes per k-point
    37
    """
    budget = memory_budget(max_memory, device)
    per_k = itemsize * (nr + nstates + nstates * nstates * (4 + 2 * overlap + 2 * vectors))
    return rows_within(budget, per_k, nk)


#: the most entries (k-points x lattice vectors x matrix entries) of a call's Bloch sums
#: that NumPy builds, for k given as a list or a NumPy array (a PythTB user's loop over
#: single k-points): a dozen torch calls on tensors of a few entries cost ~5 us each, NumPy's
#: ~1 us (one k-point of Haldane: 188 us a call before, 96 after, PythTB's 116-122)
FEW_ENTRIES = 1 << 14


def _few_kpoints(k: Any, data: BlochData) -> tuple[np.ndarray, tuple[int, ...]] | None:
    """``k`` as a float ``(nk, d)`` NumPy array and its batch shape, where NumPy builds the
    Bloch sums (:data:`FEW_ENTRIES`): a list, tuple or NumPy array of float32/float64 or
    integer k-points, finite, of the model's dimension; ``None`` for anything else (the
    torch path converts it, or names what is wrong)."""
    if not isinstance(k, (list, tuple, np.ndarray)):
        return None
    try:
        arr = np.asarray(k)
    except ValueError:  # ragged: the torch path's conversion names it
        return None
    if arr.dtype.kind in "iu":
        arr = arr.astype(np.float64)  # (as the core converts integers)
    if arr.dtype not in (np.float32, np.float64) or not arr.dtype.isnative:
        return None
    dim = data.dim
    if arr.ndim == 1 and dim == 1 and arr.shape[0] != 1:
        arr = arr[:, None]  # a 1D model: a flat list of k
    if arr.ndim == 1:
        arr = arr[None, :]
    if arr.shape[-1] != dim or not np.isfinite(arr).all():
        return None
    batch = tuple(arr.shape[:-1])
    nk = math.prod(batch)
    if nk * data.rvecs.shape[0] * data.nstates**2 > FEW_ENTRIES:
        return None
    return np.ascontiguousarray(arr.reshape(nk, dim)), batch


def _bloch_sum_numpy(
    k: np.ndarray, arrays: _Arrays, flat: np.ndarray, convention: str
) -> np.ndarray:
    """:func:`_bloch_sum` in NumPy (the same formula, rounded by NumPy's routines)."""
    n = math.isqrt(flat.shape[-1])
    out = (np.exp((2j * math.pi) * (k @ arrays.rvecs.T)) @ flat).reshape(k.shape[0], n, n)
    if convention == "orbital" and arrays.positions.size:
        d = np.exp((2j * math.pi) * (k @ arrays.positions.T))  # (nk, n)
        out = d.conj()[:, :, None] * out * d[:, None, :]
    return out


def _chunk_step(
    nk: int, data: BlochData, vectors: bool, itemsize: int, max_memory: int | None, device: Any
) -> int:
    """k-points per core call for ``data``'s model (:func:`chunk_length`; ``itemsize``: the
    complex dtype's)."""
    nr, overlap = data.rvecs.shape[0], data.sr is not None
    return chunk_length(nk, data.nstates, nr, vectors, overlap, itemsize, max_memory, device)


def _solve_few(
    kn: np.ndarray,
    batch: tuple[int, ...],
    data: BlochData,
    convention: str,
    vectors: bool,
    **eigh_kw: Any,
) -> tuple[Any, Any]:
    """:func:`solve` for a few k-points given as NumPy (:func:`_few_kpoints`): NumPy's Bloch
    sums, one core call, NumPy out."""
    arrays = data.arrays(kn.dtype)
    h = _bloch_sum_numpy(kn, arrays, arrays.hr, convention)
    s = None if arrays.sr is None else _bloch_sum_numpy(kn, arrays, arrays.sr, convention)
    eigh_kw.setdefault("check", False)
    n = data.nstates
    if not vectors:
        return eigvalsh(h, s, **eigh_kw).reshape(*batch, n), None
    w, v = eigh(h, s, **eigh_kw)
    return w.reshape(*batch, n), v.reshape(*batch, n, n)


def solve(
    k: Any,
    data: BlochData,
    convention: str = "lattice",
    vectors: bool = True,
    max_memory: int | None = None,
    **eigh_kw: Any,
) -> tuple[Any, Any]:
    """Bands (and states) for all ``k``, cut in memory-bounded chunks of one core call each
    (a few k-points given as NumPy: :func:`_solve_few`)."""
    _check_convention(convention)
    few = None if eigh_kw.get("device") is not None else _few_kpoints(k, data)
    # the few k-points' path makes one core call: a budget they do not fit in goes to the
    # chunked torch path
    if few is not None and (
        max_memory is None
        or _chunk_step(len(few[0]), data, vectors, 2 * few[0].itemsize, max_memory, "cpu")
        >= len(few[0])
    ):
        if max_memory is not None:
            eigh_kw["max_memory"] = max_memory
        return _solve_few(*few, data, convention, vectors, **eigh_kw)
    kt, origin, batch = as_kpoints(k, data.dim)
    n = data.nstates
    nk = kt.shape[0]
    rtype = kt.dtype
    itemsize = 2 * torch.finfo(rtype).bits // 8
    step = _chunk_step(nk, data, vectors, itemsize, max_memory, kt.device)
    if max_memory is not None:  # the core's option: it bounds each core call's chunks too
        eigh_kw["max_memory"] = max_memory
    given = eigh_kw.get("strategy") or getattr(eigh_kw.get("options"), "strategy", None)
    if step < nk and given is None:  # every chunk on the whole batch's strategy: bitwise
        dtype = torch.complex128 if rtype == torch.float64 else torch.complex64
        device = eigh_kw.get("device") or kt.device
        whole = plan(n, nk, dtype, device, vectors=vectors, max_memory=max_memory)
        eigh_kw["strategy"] = whole.strategy
    ws: list[torch.Tensor] = []
    vs: list[torch.Tensor] = []
    for start in range(0, max(nk, 1), step):
        part = kt if step >= nk else kt[start : start + step]
        w, v = solve_chunk(part, data, convention, vectors, **eigh_kw)
        ws.append(w)
        if v is not None:
            vs.append(v)
    w = torch.cat(ws).reshape(*batch, n) if len(ws) > 1 else ws[0].reshape(*batch, n)
    w = restore(w, origin)
    if not vectors:
        return w, None
    v = torch.cat(vs) if len(vs) > 1 else vs[0]
    return w, restore(v.reshape(*batch, n, n), origin)
