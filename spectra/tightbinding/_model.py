"""The tight-binding :class:`Model`: lattice, orbitals, on-site terms, hoppings, overlaps."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..core.domain import InputError, collection_op, is_dask_collection, restore
from ._bloch import (
    CONVENTIONS,
    BlochData,
    _check_convention,
    as_kpoints,
    hamiltonian_chunk,
    solve,
)
from ._kpoints import KPath
from ._terms import Key, Terms


def _as_lattice(lattice: Any) -> np.ndarray:
    lat = np.atleast_2d(np.asarray(lattice, dtype=float))
    if lat.ndim != 2 or lat.shape[0] != lat.shape[1]:
        raise InputError(
            "lattice",
            f"must be a square (dim, dim) array of lattice vectors (rows), got shape {lat.shape}",
        )
    if not np.all(np.isfinite(lat)):
        raise InputError("lattice", "contains NaN/Inf")
    if lat.shape[0] and abs(np.linalg.det(lat)) < 1e-12 * max(1.0, np.abs(lat).max()) ** 3:
        raise InputError("lattice", "vectors are linearly dependent (zero cell volume)")
    return lat


def _points(k: Any) -> Any:
    """The reduced k-points of ``k``: a :class:`KPath`'s ``k``, anything else as given."""
    return k.k if isinstance(k, KPath) else k


class Model(Terms):
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
    units : the energy unit of the terms (``"eV"`` for Wannier90 files, ``"Hartree"`` for
        PySCF), or ``None``; :func:`plot_bands` writes it on the energy axis.

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
        units: str | None = None,
    ) -> None:
        self.lattice = _as_lattice(lattice)
        dim = self.lattice.shape[0]
        if isinstance(orbitals, (int, np.integer)) and not isinstance(orbitals, bool):
            orbitals = np.zeros((int(orbitals), dim))
        orb = np.asarray(orbitals, dtype=float)
        if orb.ndim == 1 and dim == 1:
            orb = orb[:, None]
        if orb.ndim != 2 or orb.shape[1] != dim:
            raise InputError(
                "orbitals", f"must have shape (norb, {dim}) (reduced coordinates), got {orb.shape}"
            )
        if not np.all(np.isfinite(orb)):
            raise InputError("orbitals", "positions contain NaN/Inf")
        if nspin not in (1, 2):
            raise InputError("nspin", f"must be 1 or 2, got {nspin!r}")
        per = list(range(dim)) if periodic is None else sorted({int(p) for p in periodic})
        if any(p < 0 or p >= dim for p in per):
            raise InputError("periodic", f"directions must be in [0, {dim}), got {per}")
        self.orbitals = orb
        self.nspin = nspin
        self.periodic = tuple(per)
        self.convention = _check_convention(convention)
        self.units = units
        n = self.nstates
        self._blocks: dict[tuple[int, ...], np.ndarray] = {(0,) * dim: np.zeros((n, n), complex)}
        self._overlap: dict[tuple[int, ...], np.ndarray] | None = None
        self._hop_keys: set[Key] = set()
        self._ovl_keys: set[Key] = set()
        self._data: BlochData | None = None
        #: Spinor basis (Wannier90 ``spinors = .true.``): every state is a spinor and each
        #: band holds one electron (see :attr:`electrons_per_band`).
        self.spinors = False
        #: The Fermi level the model's source states (Wannier90 ``fermi_energy``), or None.
        self.fermi_energy: float | None = None
        #: A default band path ``(path, {name: reduced k})`` (Wannier90 ``kpoint_path``).
        self.path_spec: tuple[str, dict[str, np.ndarray]] | None = None
        #: The position matrix ``(R (nR, dim_k), r(R) (nR, 3, n, n))`` (Cartesian, in the
        #: source's frame) when the source gave one (Wannier90 ``_tb.dat``), or None.
        self.position_matrix: tuple[np.ndarray, np.ndarray] | None = None
        #: Where the model came from (file names), for messages.
        self.source: str | None = None

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
    def electrons_per_band(self) -> float:
        """Electrons each band holds per cell: 1 for spinful (``nspin=2``) and spinor models
        (Wannier90 ``spinors = .true.``), 2 for a spinless model (spin-degenerate)."""
        return 1.0 if (self.spinors or self.nspin == 2) else 2.0

    @property
    def counting(self) -> str:
        """One line saying how electrons are counted, and why (for messages)."""
        if self.spinors:
            why = "spinor Wannier functions (spinors = .true.)"
        elif self.nspin == 2:
            why = "spinful model (nspin=2)"
        else:
            why = "spinless model, spin-degenerate bands"
        return f"{self.electrons_per_band:g} electron(s) per band: {why}"

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
            f"orthogonal={self.is_orthogonal}"
            + ("" if self.units is None else f", units={self.units!r}")
            + (", spinors=True" if self.spinors else "")
            + ")"
        )

    # ---------------------------------------------------------------- arrays
    def blocks(self) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        """``(R, H(R), S(R) or None)`` with full-dimensional integer ``R`` ``(nR, dim)``,
        sorted; ``S(R)`` is zero where only ``H(R)`` was given (and vice versa)."""
        keys = sorted(set(self._blocks) | set(self._overlap or {}))
        n = self.nstates
        zero = np.zeros((n, n), complex)
        rv = np.array(keys, dtype=np.int64).reshape(len(keys), self.dim)
        hr = np.stack([self._blocks.get(key, zero) for key in keys])
        sr = None
        if self._overlap is not None:
            sr = np.stack([self._overlap.get(key, zero) for key in keys])
        return rv, hr, sr

    def data(self) -> BlochData:
        """:meth:`blocks` restricted to the periodic directions, with the states' positions:
        the arrays (cached) that the Bloch sums read."""
        if self._data is None:
            rv, hr, sr = self.blocks()
            per = list(self.periodic)
            pos = np.repeat(self.orbitals[:, per], self.nspin, axis=0)
            self._data = BlochData(rv[:, per], hr, pos, sr)
        return self._data

    def _like(self, **changes: Any) -> Model:
        """An empty model with this one's lattice, orbitals, spin, periodicity, convention
        and units, except for ``changes``."""
        kw: dict[str, Any] = {
            "lattice": self.lattice,
            "orbitals": self.orbitals,
            "nspin": self.nspin,
            "periodic": self.periodic,
            "convention": self.convention,
            "units": self.units,
        }
        kw.update(changes)
        lattice, orbitals = kw.pop("lattice"), kw.pop("orbitals")
        new = Model(lattice, orbitals, **kw)
        new.spinors, new.fermi_energy, new.source = self.spinors, self.fermi_energy, self.source
        return new

    def copy(self) -> Model:
        """An independent copy."""
        new = self._like()
        new._blocks = {k: v.copy() for k, v in self._blocks.items()}
        new._overlap = (
            None if self._overlap is None else {k: v.copy() for k, v in self._overlap.items()}
        )
        new._hop_keys = set(self._hop_keys)
        new._ovl_keys = set(self._ovl_keys)
        new.path_spec, new.position_matrix = self.path_spec, self.position_matrix
        return new

    def with_spin(self) -> Model:
        """Explicit spin doubling: every orbital gets two spin states, ``H(R) (x) I_2``.

        The hoppings of ``self`` stay given: adding one again is refused.
        """
        if self.nspin != 1:
            raise InputError("with_spin:", "the model is already spinful (nspin=2)")
        new = self._like(nspin=2)
        eye = np.eye(2)
        overlap = None
        if self._overlap is not None:
            overlap = {k: np.kron(v, eye) for k, v in self._overlap.items()}
        new._adopt({k: np.kron(v, eye) for k, v in self._blocks.items()}, overlap)
        new._hop_keys |= self._hop_keys  # hoppings given as 0 stay given
        new._ovl_keys |= self._ovl_keys
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
        kt, origin, batch = as_kpoints(_points(k), self.dim_k)
        h, _ = hamiltonian_chunk(kt, self.data(), self._convention(convention))
        return restore(h.reshape(*batch, *h.shape[-2:]), origin)

    def overlap(self, k: Any, convention: str | None = None) -> Any:
        """``S(k)`` (identity for an orthogonal model), same shapes as :meth:`hamiltonian`."""
        kt, origin, batch = as_kpoints(_points(k), self.dim_k)
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
            _, s_k = hamiltonian_chunk(kt, data, self._convention(convention))
            assert s_k is not None  # data.sr is not None
            s = s_k
        return restore(s.reshape(*batch, self.nstates, self.nstates), origin)

    def bands(
        self,
        k: Any,
        *,
        convention: str | None = None,
        max_memory: int | None = None,
        **eigh_kw: Any,
    ) -> Any:
        """Band energies ``(nk, nstates)`` (ascending) at reduced ``k`` (or along a
        :class:`KPath`).

        k is processed in chunks that fit ``max_memory`` bytes (the core's option; default
        half the free memory), each chunk
        one batched core call; extra keywords go to :func:`spectra.eigvalsh`. A Dask array
        of k-points gives a lazy Dask array of energies, block by block on the workers
        (:func:`spectra.distributed.bands`).
        """
        k = _points(k)
        if is_dask_collection(k):
            distributed_bands = collection_op("tightbinding.bands")  # spectra.distributed's
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
        for non-orthogonal models, in the given phase convention. ``k``: reduced k-points
        or a :class:`KPath`. PythTB's ``solve_all(k, eig_vectors=True)`` is
        ``eigh(k, convention="orbital")`` with states as columns (PythTB: rows)."""
        return solve(
            _points(k),
            self.data(),
            self._convention(convention),
            vectors=True,
            max_memory=max_memory,
            **eigh_kw,
        )

    def kpath(self, path: Any = None, npoints: int = 100, **kw: Any) -> KPath:
        """A band path (see :func:`spectra.tightbinding.kpath`); without ``path``, the
        model's own (:attr:`path_spec`, a Wannier90 ``kpoint_path``) when it has one, else
        the standard path of its lattice.

        >>> from spectra.tightbinding import graphene
        >>> graphene().kpath(npoints=31).labels
        ['Γ', 'K', 'M', 'Γ']
        """
        from ._kpoints import kpath

        if path is None and self.path_spec is not None:
            path, named = self.path_spec
            kw["points"] = {**named, **(kw.get("points") or {})}
            p = kpath(self, path, npoints, **kw)
            labels = [re.sub(r"@\d+", "", label) for label in p.labels]  # X@2 is an X too
            return p._replace(labels=labels)
        return kpath(self, path, npoints, **kw)

    def fermi_level(self, nelectrons: float, kgrid: Any = None, **kw: Any) -> float:
        """The Fermi level for ``nelectrons`` per cell on a Gamma-centred ``kgrid`` (default
        ``[24] * dim_k``), counting :attr:`electrons_per_band` per band unless
        ``degeneracy=`` is given (see :func:`spectra.tightbinding.fermi_level`).

        >>> from spectra.tightbinding import graphene
        >>> abs(graphene().fermi_level(2, [12, 12])) < 1e-12  # half filling: Dirac point
        True
        """
        from ._dos import fermi_level
        from ._kpoints import monkhorst_pack

        grid = [24] * self.dim_k if kgrid is None else list(kgrid)
        energies = self.bands(monkhorst_pack(grid, gamma_centered=True))
        kw.setdefault("degeneracy", self.electrons_per_band)
        return fermi_level(energies, nelectrons, **kw)

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
        """Read a Wannier90 run: a folder, ``seedname_hr.dat`` or ``seedname_tb.dat``, with
        the ``.win`` next to it (see :func:`spectra.tightbinding.read_wannier90`)."""
        from ._wannier90 import read_wannier90

        return read_wannier90(path, **kw)

    def to_wannier90(self, path: Any, **kw: Any) -> None:
        """Write ``seedname_hr.dat`` (see :func:`spectra.tightbinding.write_wannier90`)."""
        from ._w90write import write_wannier90

        write_wannier90(self, path, **kw)


__all__ = ["CONVENTIONS", "Model"]
