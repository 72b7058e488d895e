"""Building a :class:`~spectra.tightbinding.Model`: on-site terms, hoppings, overlaps, blocks.

A mixin so that ``_model.py`` keeps the model's sizes, arrays and k-space methods. Every
hopping ``(i, j, R)`` (with its implied partner ``(j, i, -R)``) is recorded under one
canonical key, so giving it twice is refused; models derived from another (``with_spin``,
``supercell``, ``cut``, ``set_blocks``) rebuild these keys from their blocks and keep
refusing duplicates.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ..core.domain import InputError

Key = tuple[int, int, tuple[int, ...]]
Blocks = dict[tuple[int, ...], np.ndarray]


def keys_of(blocks: Blocks, norb: int, nspin: int) -> set[Key]:
    """Canonical keys ``min((i, j, R), (j, i, -R))`` of the non-zero inter-orbital blocks
    (on-site terms ``(i, i, 0)`` excluded)."""
    keys: set[Key] = set()
    for vec, blk in blocks.items():
        sub = np.abs(blk).reshape(norb, nspin, norb, nspin).max(axis=(1, 3))
        neg = tuple(-x for x in vec)
        for i, j in zip(*np.nonzero(sub), strict=True):
            i, j = int(i), int(j)
            if i == j and not any(vec):
                continue
            keys.add(min((i, j, vec), (j, i, neg)))
    return keys


class Terms:
    """On-site energies, hoppings and overlaps of a model (mixed into ``Model``)."""

    nspin: int
    periodic: tuple[int, ...]
    _blocks: Blocks
    _overlap: Blocks | None
    _hop_keys: set[Key]
    _ovl_keys: set[Key]
    _data: Any

    if TYPE_CHECKING:  # provided by Model

        @property
        def dim(self) -> int: ...

        @property
        def dim_k(self) -> int: ...

        @property
        def norb(self) -> int: ...

        @property
        def nstates(self) -> int: ...

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
            raise InputError("R", f"must have {self.dim} integer components, got {r!r}")
        if arr.dtype.kind not in "iu" and (
            arr.dtype.kind != "f" or not np.all(arr == np.round(arr))
        ):
            raise InputError("R", f"must be integer lattice vectors, got {r!r}")
        vec = tuple(int(x) for x in np.round(arr).astype(int))
        for d in range(self.dim):
            if d not in self.periodic and vec[d] != 0:
                raise InputError(
                    "lattice_vector:",
                    f"R={vec} has a component along the non-periodic direction {d}",
                )
        return vec

    def _amplitude(self, t: Any, name: str) -> np.ndarray:
        arr = np.asarray(t, dtype=complex)
        if arr.ndim == 0 or (self.nspin == 2 and arr.shape == (2, 2)):
            if not np.all(np.isfinite(arr)):
                raise InputError(name, f"is not finite (NaN/Inf), got {t!r}")
            return arr * np.eye(self.nspin) if arr.ndim == 0 else arr
        want = "a scalar or a (2, 2) spin matrix" if self.nspin == 2 else "a scalar"
        raise InputError(name, f"must be {want}, got shape {arr.shape}")

    def _slice(self, i: int) -> slice:
        return slice(i * self.nspin, (i + 1) * self.nspin)

    def _adopt(self, blocks: Blocks, overlap: Blocks | None) -> None:
        """Take over derived blocks (and overlap); duplicates stay refused afterwards."""
        self._blocks = blocks
        self._overlap = overlap
        self._hop_keys = keys_of(blocks, self.norb, self.nspin)
        self._ovl_keys = set() if overlap is None else keys_of(overlap, self.norb, self.nspin)
        self._data = None

    # ---------------------------------------------------------------- building
    def set_onsite(self, value: Any, i: int | None = None) -> None:
        """Set on-site energies: one value for orbital ``i``, or one per orbital.

        For ``nspin=2`` a value may be a Hermitian ``(2, 2)`` matrix (a scalar means
        ``value * I``). NaN/Inf are refused ("not finite").

        >>> from spectra.tightbinding import Model
        >>> m = Model([[1.0]], 2); m.set_onsite([0.5, -0.5])
        >>> m.hamiltonian([[0.0]]).real
        array([[[ 0.5,  0. ],
                [ 0. , -0.5]]])
        """
        if i is None:
            shape = np.shape(value)
            if shape == () or (self.nspin == 2 and shape == (2, 2)):
                values = [value] * self.norb
            else:
                values = list(value)
            if len(values) != self.norb:
                raise InputError(
                    "set_onsite", f"needs {self.norb} values (one per orbital), got {len(values)}"
                )
            for idx, v in enumerate(values):
                self.set_onsite(v, idx)
            return
        i = self._orbital_index(i, "i")
        amp = self._amplitude(value, f"onsite energy of orbital {i}")
        if not np.allclose(amp, amp.conj().T, atol=1e-12, rtol=0):
            raise InputError(
                "set_onsite:",
                f"onsite energy of orbital {i} must be real (Hermitian), got {value!r}",
            )
        zero = (0,) * self.dim
        self._blocks[zero][self._slice(i), self._slice(i)] = 0.5 * (amp + amp.conj().T)
        self._data = None

    def _add_term(
        self,
        store: Blocks,
        keys: set[Key],
        t: Any,
        i: Any,
        j: Any,
        r: Any,
        what: str,
        replace: bool,
    ) -> None:
        i = self._orbital_index(i, "i")
        j = self._orbital_index(j, "j")
        vec = self._lattice_vector(r)
        neg = tuple(-x for x in vec)
        amp = self._amplitude(t, f"{what} ({i}, {j}, R={vec})")
        key = min((i, j, vec), (j, i, neg))
        if i == j and not any(vec):
            raise InputError(
                what,
                f"({i}, {i}, R=0) is an on-site term, not a {what}: "
                f"use set_onsite" + (" / set_overlap_onsite" if what == "overlap" else ""),
            )
        if key in keys and not replace:
            raise InputError(
                what,
                f"({i}, {j}, R={vec}) was already given (its Hermitian "
                f"partner ({j}, {i}, R={neg}) is implied); use replace=True to "
                f"overwrite it",
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
        ``replace=True``, also on models derived by ``with_spin``, ``supercell``, ``cut`` or
        filled by ``set_blocks``. For ``nspin=2``, ``t`` may be a ``(2, 2)`` spin matrix.
        PythTB's ``set_hop(t, i, j, R)`` is ``add_hopping(t, i, j, R)``.

        >>> from spectra.tightbinding import Model
        >>> m = Model([[1.0]], 1); m.add_hopping(-1.0, 0, 0, [1])
        >>> try:
        ...     m.add_hopping(-1.0, 0, 0, [-1])  # the partner of the hopping above
        ... except ValueError as err:
        ...     print(str(err)[:41])
        hopping (0, 0, R=(-1,)) was already given
        """
        self._add_term(self._blocks, self._hop_keys, t, i, j, R, "hopping", replace)

    def add_overlap(self, s: Any, i: int, j: int, R: Any = None, *, replace: bool = False) -> None:
        """Add the overlap ``<i, 0 | j, R> = s`` (non-orthogonal model; ``S(0)`` diagonal is 1
        unless changed with :meth:`set_overlap_onsite`)."""
        overlap = self._ensure_overlap()
        self._add_term(overlap, self._ovl_keys, s, i, j, R, "overlap", replace)

    def set_overlap_onsite(self, value: Any, i: int) -> None:
        """Set the on-site overlap ``<i|i>`` (default 1) of orbital ``i``."""
        overlap = self._ensure_overlap()
        i = self._orbital_index(i, "i")
        amp = self._amplitude(value, f"onsite overlap of orbital {i}")
        if not np.allclose(amp, amp.conj().T, atol=1e-12, rtol=0):
            raise InputError(
                "set_overlap_onsite:",
                f"onsite overlap of orbital {i} must be Hermitian, got {value!r}",
            )
        overlap[(0,) * self.dim][self._slice(i), self._slice(i)] = amp
        self._data = None

    def _ensure_overlap(self) -> Blocks:
        if self._overlap is None:
            self._overlap = {(0,) * self.dim: np.eye(self.nstates, dtype=complex)}
        return self._overlap

    def set_blocks(self, rvecs: Any, hr: Any, sr: Any = None, *, tol: float = 1e-6) -> None:
        """Replace ``H(R)`` (and ``S(R)``) by full blocks ``(nR, nstates, nstates)``.

        The blocks must satisfy ``H(-R) = H(R)^H`` within ``tol`` (absolute, relative to the
        largest entry); they are then symmetrized exactly. Missing partners ``-R`` are an error.
        Hoppings present in the blocks count as given (:meth:`add_hopping` refuses them
        again unless ``replace=True``).
        """
        blocks = self._check_blocks(rvecs, hr, "H(R)", tol)
        overlap = self._overlap if sr is None else self._check_blocks(rvecs, sr, "S(R)", tol)
        ovl_keys = self._ovl_keys
        self._adopt(blocks, overlap)
        if sr is None:
            self._ovl_keys = ovl_keys

    def _check_blocks(self, rvecs: Any, blocks: Any, name: str, tol: float) -> Blocks:
        r = np.asarray(rvecs)
        b = np.asarray(blocks, dtype=complex)
        n = self.nstates
        if r.ndim != 2 or r.shape[1] != self.dim:
            raise InputError("R", f"vectors must have shape (nR, {self.dim}), got {r.shape}")
        if b.shape != (r.shape[0], n, n):
            raise InputError(name, f"must have shape ({r.shape[0]}, {n}, {n}), got {b.shape}")
        if not np.all(np.isfinite(b)):
            raise InputError(name, "is not finite (contains NaN/Inf)")
        out: Blocks = {}
        for vec, blk in zip(map(self._lattice_vector, r), b, strict=True):
            if vec in out:
                out[vec] = out[vec] + blk
            else:
                out[vec] = blk.copy()
        out.setdefault((0,) * self.dim, np.zeros((n, n), complex))
        scale = max(1.0, max(float(np.abs(v).max()) for v in out.values()))
        sym: Blocks = {}
        for vec, blk in out.items():
            neg = tuple(-x for x in vec)
            if neg not in out:
                raise InputError(
                    name,
                    f"R={vec} is given but its partner -R={neg} is not (H(-R) = H(R)^H must hold)",
                )
            err = float(np.abs(out[neg] - blk.conj().T).max())
            if err > tol * scale:
                raise InputError(
                    name,
                    f"is not Hermitian: |{name[0]}(-R) - {name[0]}(R)^H| = "
                    f"{err:.3g} at R={vec} (tol {tol * scale:.3g})",
                )
            sym[vec] = 0.5 * (blk + out[neg].conj().T)
        return sym


__all__ = ["Terms", "keys_of"]
