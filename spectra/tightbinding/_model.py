"""The tight-binding :class:`Model`: lattice, orbitals, on-site terms, hoppings, overlaps."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from spectra.core import is_dask_collection, restore

from ._bloch import (
    CONVENTIONS,
    BlochData,
    _check_convention,
    as_kpoints,
    hamiltonian_chunk,
    solve,
)

Key = tuple[int, int, tuple[int, ...]]


def _as_lattice(lattice: Any) -> np.ndarray:
    lat = np.atleast_2d(np.asarray(lattice, dtype=float))
    if lat.ndim != 2 or lat.shape[0] != lat.shape[1]:
        raise ValueError(
            f"lattice must be a square (dim, dim) array of lattice vectors (rows), "
            f"got shape {lat.shape}"
        )
    if not np.all(np.isfinite(lat)):
        raise ValueError("lattice contains NaN/Inf")
    if lat.shape[0] and abs(np.linalg.det(lat)) < 1e-12 * max(1.0, np.abs(lat).max()) ** 3:
        raise ValueError("lattice vectors are linearly dependent (zero cell volume)")
    return lat


class Model:
    """A tight-binding model ``H(k) = sum_R exp(2 pi i k.R) H(R)``.

    Parameters
    ----------
    lattice : ``(dim, dim)`` lattice vectors as rows (any length unit).
    orbitals : ``(norb, dim)`` orbital positions in reduced coordinates (or an integer:
        that many orbitals at the origin).
    nspin : 1 (spinless) or 2 (spinful: every orbital carries two spin states; on-site
        terms and hoppings may be ``(2, 2)`` matrices, scalars mean ``value * I``).
    periodic : indices of the periodic lattice directions (default: all). k-points have
        one reduced coordinate per periodic direction.
    convention : default phase convention, ``"lattice"`` (``exp(2 pi i k.R)``) or
        ``"orbital"`` (times ``exp(2 pi i k.(tau_j - tau_i))``, PythTB's default).

    Examples
    --------
    >>> import numpy as np
    >>> from spectra.tightbinding import Model
    >>> chain = Model([[1.0]], [[0.0]])
    >>> chain.add_hopping(-1.0, 0, 0, [1])
    >>> np.allclose(chain.bands([[0.0], [0.5]])[:, 0], [-2.0, 2.0])
    True
    """

    def __init__(
        self,
        lattice: Any,
        orbitals: Any,
        *,
        nspin: int = 1,
        periodic: Sequence[int] | None = None,
        convention: str = "lattice",
    ) -> None:
        self.lattice = _as_lattice(lattice)
        dim = self.lattice.shape[0]
        if isinstance(orbitals, (int, np.integer)) and not isinstance(orbitals, bool):
            orbitals = np.zeros((int(orbitals), dim))
        orb = np.asarray(orbitals, dtype=float)
        if orb.ndim == 1 and dim == 1:
            orb = orb[:, None]
        if orb.ndim != 2 or orb.shape[1] != dim:
            raise ValueError(
                f"orbitals must have shape (norb, {dim}) (reduced coordinates), got {orb.shape}"
            )
        if not np.all(np.isfinite(orb)):
            raise ValueError("orbital positions contain NaN/Inf")
        if nspin not in (1, 2):
            raise ValueError(f"nspin must be 1 or 2, got {nspin!r}")
        per = list(range(dim)) if periodic is None else sorted({int(p) for p in periodic})
        if any(p < 0 or p >= dim for p in per):
            raise ValueError(f"periodic directions must be in [0, {dim}), got {list(periodic)}")
        self.orbitals = orb
        self.nspin = nspin
        self.periodic = tuple(per)
        self.convention = _check_convention(convention)
        n = self.nstates
        self._blocks: dict[tuple[int, ...], np.ndarray] = {(0,) * dim: np.zeros((n, n), complex)}
        self._overlap: dict[tuple[int, ...], np.ndarray] | None = None
        self._hop_keys: set[Key] = set()
        self._ovl_keys: set[Key] = set()
        self._data: BlochData | None = None

    # ---------------------------------------------------------------- sizes
    @property
    def dim(self) -> int:
        """Dimension of real space (rows of ``lattice``)."""
        return int(self.lattice.shape[0])

    @property
    def dim_k(self) -> int:
        """Number of periodic directions (reduced k coordinates)."""
        return len(self.periodic)

    @property
    def norb(self) -> int:
        """Number of orbitals (sites)."""
        return int(self.orbitals.shape[0])

    @property
    def nstates(self) -> int:
        """Size of ``H(k)``: ``norb * nspin``."""
        return self.norb * self.nspin

    @property
    def is_orthogonal(self) -> bool:
        """False when an overlap ``S(R)`` was given (generalized problem)."""
        return self._overlap is None

    @property
    def reciprocal(self) -> np.ndarray:
        """Reciprocal lattice vectors (rows), ``2 pi inv(lattice).T``."""
        return 2 * np.pi * np.linalg.inv(self.lattice).T

    def __repr__(self) -> str:
        return (
            f"Model(dim={self.dim}, periodic={list(self.periodic)}, norb={self.norb}, "
            f"nspin={self.nspin}, nR={len(self._blocks)}, "
            f"orthogonal={self.is_orthogonal})"
        )

    # ---------------------------------------------------------------- input checks
    def _orbital_index(self, i: Any, name: str) -> int:
        if isinstance(i, bool) or not isinstance(i, (int, np.integer)):
            raise TypeError(f"{name} must be an orbital index (int), got {i!r}")
        if not 0 <= int(i) < self.norb:
            raise IndexError(f"{name}={i} is out of range for {self.norb} orbitals")
        return int(i)

    def _lattice_vector(self, r: Any) -> tuple[int, ...]:
        if r is None:
            r = [0] * self.dim
        arr = np.atleast_1d(np.asarray(r))
        if arr.shape == (self.dim_k,) and self.dim_k < self.dim:
            full = np.zeros(self.dim, dtype=arr.dtype)
            full[list(self.periodic)] = arr
            arr = full
        if arr.shape != (self.dim,):
            raise ValueError(f"R must have {self.dim} integer components, got {r!r}")
        if arr.dtype.kind not in "iu" and (
            arr.dtype.kind != "f" or not np.all(arr == np.round(arr))
        ):
            raise ValueError(f"R must be integer lattice vectors, got {r!r}")
        vec = tuple(int(x) for x in np.round(arr).astype(int))
        for d in range(self.dim):
            if d not in self.periodic and vec[d] != 0:
                raise ValueError(f"R={vec} has a component along the non-periodic direction {d}")
        return vec

    def _amplitude(self, t: Any, name: str) -> np.ndarray:
        arr = np.asarray(t, dtype=complex)
        if arr.ndim == 0:
            return arr * np.eye(self.nspin)
        if self.nspin == 2 and arr.shape == (2, 2):
            if not np.all(np.isfinite(arr)):
                raise ValueError(f"{name} contains NaN/Inf")
            return arr
        want = "a scalar or a (2, 2) spin matrix" if self.nspin == 2 else "a scalar"
        raise ValueError(f"{name} must be {want}, got shape {arr.shape}")

    def _slice(self, i: int) -> slice:
        return slice(i * self.nspin, (i + 1) * self.nspin)

    # ---------------------------------------------------------------- building
    def set_onsite(self, value: Any, i: int | None = None) -> None:
        """Set on-site energies: one value for orbital ``i``, or one per orbital.

        For ``nspin=2`` a value may be a Hermitian ``(2, 2)`` matrix (a scalar means
        ``value * I``).
        """
        if i is None:
            shape = np.shape(value)
            if shape == () or (self.nspin == 2 and shape == (2, 2)):
                values = [value] * self.norb
            else:
                values = list(value)
            if len(values) != self.norb:
                raise ValueError(
                    f"set_onsite needs {self.norb} values (one per orbital), got {len(values)}"
                )
            for idx, v in enumerate(values):
                self.set_onsite(v, idx)
            return
        i = self._orbital_index(i, "i")
        amp = self._amplitude(value, f"onsite energy of orbital {i}")
        if not np.allclose(amp, amp.conj().T, atol=1e-12, rtol=0):
            raise ValueError(
                f"onsite energy of orbital {i} must be real (Hermitian), got {value!r}"
            )
        if not np.all(np.isfinite(amp)):
            raise ValueError(f"onsite energy of orbital {i} is NaN/Inf")
        zero = (0,) * self.dim
        self._blocks[zero][self._slice(i), self._slice(i)] = 0.5 * (amp + amp.conj().T)
        self._data = None

    def _add_term(
        self, store: dict, keys: set, t: Any, i: Any, j: Any, r: Any, what: str, replace: bool
    ) -> None:
        i = self._orbital_index(i, "i")
        j = self._orbital_index(j, "j")
        vec = self._lattice_vector(r)
        neg = tuple(-x for x in vec)
        amp = self._amplitude(t, what)
        if not np.all(np.isfinite(amp)):
            raise ValueError(f"{what} ({i}, {j}, R={vec}) is NaN/Inf")
        key = min((i, j, vec), (j, i, neg))
        if i == j and not any(vec):
            raise ValueError(
                f"({i}, {i}, R=0) is an on-site term, not a {what}: "
                f"use set_onsite" + (" / set_overlap_onsite" if what == "overlap" else "")
            )
        if key in keys and not replace:
            raise ValueError(
                f"{what} ({i}, {j}, R={vec}) was already given (its Hermitian "
                f"partner ({j}, {i}, R={neg}) is implied); use replace=True to "
                f"overwrite it"
            )
        if (i, j, vec) != key:  # store in the canonical direction
            i, j, vec, neg, amp = j, i, neg, vec, amp.conj().T
        n = self.nstates
        fwd = store.setdefault(vec, np.zeros((n, n), complex))
        bwd = store.setdefault(neg, np.zeros((n, n), complex))
        fwd[self._slice(i), self._slice(j)] = amp
        bwd[self._slice(j), self._slice(i)] = amp.conj().T
        keys.add(key)
        self._data = None

    def add_hopping(self, t: Any, i: int, j: int, R: Any = None, *, replace: bool = False) -> None:
        """Add the hopping ``<i, 0| H |j, R> = t``; the Hermitian partner is implied.

        Giving the same hopping twice (or its partner ``(j, i, -R)``) is an error unless
        ``replace=True``. For ``nspin=2``, ``t`` may be a ``(2, 2)`` spin matrix.
        """
        self._add_term(self._blocks, self._hop_keys, t, i, j, R, "hopping", replace)

    def add_overlap(self, s: Any, i: int, j: int, R: Any = None, *, replace: bool = False) -> None:
        """Add the overlap ``<i, 0 | j, R> = s`` (non-orthogonal model; ``S(0)`` diagonal is 1
        unless changed with :meth:`set_overlap_onsite`)."""
        self._ensure_overlap()
        assert self._overlap is not None
        self._add_term(self._overlap, self._ovl_keys, s, i, j, R, "overlap", replace)

    def set_overlap_onsite(self, value: Any, i: int) -> None:
        """Set the on-site overlap ``<i|i>`` (default 1) of orbital ``i``."""
        self._ensure_overlap()
        assert self._overlap is not None
        i = self._orbital_index(i, "i")
        amp = self._amplitude(value, f"onsite overlap of orbital {i}")
        if not np.allclose(amp, amp.conj().T, atol=1e-12, rtol=0):
            raise ValueError(f"onsite overlap of orbital {i} must be Hermitian, got {value!r}")
        self._overlap[(0,) * self.dim][self._slice(i), self._slice(i)] = amp
        self._data = None

    def _ensure_overlap(self) -> None:
        if self._overlap is None:
            self._overlap = {(0,) * self.dim: np.eye(self.nstates, dtype=complex)}

    def set_blocks(self, rvecs: Any, hr: Any, sr: Any = None, *, tol: float = 1e-6) -> None:
        """Replace ``H(R)`` (and ``S(R)``) by full blocks ``(nR, nstates, nstates)``.

        The blocks must satisfy ``H(-R) = H(R)^H`` within ``tol`` (absolute, relative to the
        largest entry); they are then symmetrized exactly. Missing partners ``-R`` are an error.
        """
        self._blocks = self._check_blocks(rvecs, hr, "H(R)", tol)
        self._hop_keys = set()
        if sr is not None:
            self._overlap = self._check_blocks(rvecs, sr, "S(R)", tol)
            self._ovl_keys = set()
        self._data = None

    def _check_blocks(
        self, rvecs: Any, blocks: Any, name: str, tol: float
    ) -> dict[tuple[int, ...], np.ndarray]:
        r = np.asarray(rvecs)
        b = np.asarray(blocks, dtype=complex)
        n = self.nstates
        if r.ndim != 2 or r.shape[1] != self.dim:
            raise ValueError(f"R vectors must have shape (nR, {self.dim}), got {r.shape}")
        if b.shape != (r.shape[0], n, n):
            raise ValueError(f"{name} must have shape ({r.shape[0]}, {n}, {n}), got {b.shape}")
        if not np.all(np.isfinite(b)):
            raise ValueError(f"{name} contains NaN/Inf")
        out: dict[tuple[int, ...], np.ndarray] = {}
        for vec, blk in zip(map(self._lattice_vector, r), b, strict=True):
            if vec in out:
                out[vec] = out[vec] + blk
            else:
                out[vec] = blk.copy()
        out.setdefault((0,) * self.dim, np.zeros((n, n), complex))
        scale = max(1.0, max(float(np.abs(v).max()) for v in out.values()))
        sym: dict[tuple[int, ...], np.ndarray] = {}
        for vec, blk in out.items():
            neg = tuple(-x for x in vec)
            if neg not in out:
                raise ValueError(
                    f"{name}: R={vec} is given but its partner -R={neg} is not "
                    f"(H(-R) = H(R)^H must hold)"
                )
            err = float(np.abs(out[neg] - blk.conj().T).max())
            if err > tol * scale:
                raise ValueError(
                    f"{name} is not Hermitian: |{name[0]}(-R) - {name[0]}(R)^H| = "
                    f"{err:.3g} at R={vec} (tol {tol * scale:.3g})"
                )
            sym[vec] = 0.5 * (blk + out[neg].conj().T)
        return sym

    # ---------------------------------------------------------------- arrays
    def data(self) -> BlochData:
        """The stacked arrays (``R``, ``H(R)``, positions, ``S(R)``) used by the Bloch sums."""
        if self._data is None:
            keys = sorted(set(self._blocks) | set(self._overlap or {}))
            n = self.nstates
            zero = np.zeros((n, n), complex)
            per = list(self.periodic)
            rv = np.array(keys, dtype=np.int64).reshape(len(keys), self.dim)[:, per]
            hr = np.stack([self._blocks.get(key, zero) for key in keys])
            sr = None
            if self._overlap is not None:
                sr = np.stack([self._overlap.get(key, zero) for key in keys])
            pos = np.repeat(self.orbitals[:, per], self.nspin, axis=0)
            self._data = BlochData(rv, hr, pos, sr)
        return self._data

    def blocks(self) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        """``(R, H(R), S(R) or None)`` with full-dimensional integer ``R`` ``(nR, dim)``."""
        keys = sorted(set(self._blocks) | set(self._overlap or {}))
        n = self.nstates
        zero = np.zeros((n, n), complex)
        rv = np.array(keys, dtype=np.int64).reshape(len(keys), self.dim)
        hr = np.stack([self._blocks.get(key, zero) for key in keys])
        sr = (
            None
            if self._overlap is None
            else np.stack([self._overlap.get(key, zero) for key in keys])
        )
        return rv, hr, sr

    def copy(self) -> Model:
        """An independent copy."""
        new = Model(
            self.lattice,
            self.orbitals,
            nspin=self.nspin,
            periodic=self.periodic,
            convention=self.convention,
        )
        new._blocks = {k: v.copy() for k, v in self._blocks.items()}
        new._overlap = (
            None if self._overlap is None else {k: v.copy() for k, v in self._overlap.items()}
        )
        new._hop_keys = set(self._hop_keys)
        new._ovl_keys = set(self._ovl_keys)
        return new

    def with_spin(self) -> Model:
        """Explicit spin doubling: every orbital gets two spin states, ``H(R) (x) I_2``."""
        if self.nspin != 1:
            raise ValueError("the model is already spinful (nspin=2)")
        new = Model(
            self.lattice, self.orbitals, nspin=2, periodic=self.periodic, convention=self.convention
        )
        eye = np.eye(2)
        new._blocks = {k: np.kron(v, eye) for k, v in self._blocks.items()}
        if self._overlap is not None:
            new._overlap = {k: np.kron(v, eye) for k, v in self._overlap.items()}
        return new

    # ---------------------------------------------------------------- k-space
    def _convention(self, convention: str | None) -> str:
        return self.convention if convention is None else _check_convention(convention)

    def hamiltonian(self, k: Any, convention: str | None = None) -> Any:
        """``H(k)`` for reduced ``k`` ``(nk, dim_k)``: complex ``(nk, nstates, nstates)``.

        One vectorized Bloch sum; NumPy in, NumPy out; a tensor keeps its device and
        precision (float32 k gives complex64).

        >>> import numpy as np
        >>> from spectra.tightbinding import Model
        >>> m = Model([[1.0]], [[0.0]]); m.add_hopping(-1.0, 0, 0, [1])
        >>> m.hamiltonian(np.array([[0.0]])).real
        array([[[-2.]]])
        """
        kt, origin, batch = as_kpoints(k, self.dim_k)
        h, _ = hamiltonian_chunk(kt, self.data(), self._convention(convention))
        return restore(h.reshape(*batch, *h.shape[-2:]), origin)

    def overlap(self, k: Any, convention: str | None = None) -> Any:
        """``S(k)`` (identity for an orthogonal model), same shapes as :meth:`hamiltonian`."""
        kt, origin, batch = as_kpoints(k, self.dim_k)
        data = self.data()
        if data.sr is None:
            import torch

            ctype = torch.complex64 if kt.dtype == torch.float32 else torch.complex128
            s = (
                torch.eye(self.nstates, dtype=ctype, device=kt.device)
                .expand(kt.shape[0], self.nstates, self.nstates)
                .clone()
            )
        else:
            _, s = hamiltonian_chunk(kt, data, self._convention(convention))
        return restore(s.reshape(*batch, self.nstates, self.nstates), origin)

    def bands(
        self,
        k: Any,
        *,
        convention: str | None = None,
        max_memory: int | None = None,
        **eigh_kw: Any,
    ) -> Any:
        """Band energies ``(nk, nstates)`` (ascending) at reduced ``k``.

        k is processed in chunks that fit ``max_memory`` bytes (default 512 MiB), each chunk
        one batched core call; extra keywords go to :func:`spectra.eigvalsh`. A Dask array
        of k-points gives a lazy Dask array of energies, block by block on the workers
        (:func:`spectra.distributed.bands`).
        """
        if is_dask_collection(k):
            from spectra.distributed import bands as distributed_bands

            return distributed_bands(
                self, k, convention=convention, max_memory=max_memory, **eigh_kw
            )
        w, _ = solve(
            k,
            self.data(),
            self._convention(convention),
            vectors=False,
            max_memory=max_memory,
            **eigh_kw,
        )
        return w

    def eigh(
        self,
        k: Any,
        *,
        convention: str | None = None,
        max_memory: int | None = None,
        **eigh_kw: Any,
    ) -> tuple[Any, Any]:
        """``(energies (nk, n), states (nk, n, n))``: states are columns, ``S``-orthonormal
        for non-orthogonal models, in the given phase convention."""
        return solve(
            k,
            self.data(),
            self._convention(convention),
            vectors=True,
            max_memory=max_memory,
            **eigh_kw,
        )

    # ---------------------------------------------------------------- builders / io
    def supercell(self, matrix: Any) -> Model:
        """The supercell with lattice ``matrix @ lattice`` (see :func:`supercell`)."""
        from ._builders import supercell

        return supercell(self, matrix)

    def cut(self, direction: int, ncells: int) -> Model:
        """A ribbon/slab ``ncells`` thick, non-periodic along ``direction`` (see :func:`cut`)."""
        from ._builders import cut

        return cut(self, direction, ncells)

    @classmethod
    def from_wannier90(cls, path: Any, **kw: Any) -> Model:
        """Read ``seedname_hr.dat`` (see :func:`spectra.tightbinding.read_wannier90`)."""
        from ._wannier90 import read_wannier90

        return read_wannier90(path, **kw)

    def to_wannier90(self, path: Any, **kw: Any) -> None:
        """Write ``seedname_hr.dat`` (see :func:`spectra.tightbinding.write_wannier90`)."""
        from ._wannier90 import write_wannier90

        write_wannier90(self, path, **kw)


__all__ = ["CONVENTIONS", "Model"]
