"""Shift-invert preconditioning by a sparse factorization (the ``"factor"`` preconditioner).

For ``B = sign * A`` with a lower bound ``lo`` of its spectrum, ``T = (B - sigma I)^-1``
with ``sigma = lo - delta`` is the ideal LOBPCG preconditioner: ``B - sigma I`` is positive
definite, and ``span{X, T R} = span{X, T X}`` makes every iteration a step of (locally
optimal) inverse subspace iteration, whose rate is set by ``(w_i - sigma) / (w_m+1 - sigma)``
instead of the condition number. On the normalized Laplacians of random geometric graphs
(k = 8, tol 1e-8) it takes 8-9 iterations where the AMG V-cycle takes 20-28.

The factorization is SciPy's SuperLU (``scipy.sparse.linalg.splu``) in its symmetric mode
with diagonal pivots (the shifted matrix is positive definite), on the matrix permuted by
:func:`ordering`: SuperLU's own multiple minimum degree ordering of ``A + A^T``
(``permc_spec="MMD_AT_PLUS_A"``), computed once and handed to ``splu`` as the natural
order; matrices of at most :data:`DIRECT_MAX_N` rows are handed over as they are, with that
``permc_spec``, since even their dense fill is small. Above that it is only planned where
its fill is known to be small: :func:`estimate` counts the
factor's entries exactly in that ordering (the column counts of the Cholesky factor of the
pattern, :mod:`._symbolic`), which is what SuperLU stores (``L.nnz == U.nnz == fill``,
tested). The previous estimate, the profile of the reverse Cuthill-McKee ordering,
over-estimated SuperLU's fill 16x-40x on random geometric graphs (20,000 to 1,000,000
nodes: 105 nnz per matrix entry predicted at 1,000,000 nodes, 2.6 real) and refused the
factor there.

Minimum degree costs time in proportion to the fill it finds: on graphs that fill densely
(Barabasi-Albert, expanders: fill ~ n^2) the ordering alone of a 20,000-node graph took
10-17 s. :func:`estimate` therefore first takes the cheap profile (the previous estimate)
and refuses without ordering when it is over :func:`screen_factor` times the caller's cap
(the profile only ever refuses: a factorization is planned on the exact count alone).
Induced samples (BFS balls) were tried as the screen and failed: a ball of an expander is
tree-like and fills nothing.
"""

from __future__ import annotations

import hashlib
import math
import threading
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from .._solvers._native import native_column_counts, native_column_counts_available

#: the shift below the spectrum's lower bound, relative to ``||A||``
SHIFT = 1e-5
#: bytes per stored factor entry (value and row index, L and U both stored by SuperLU)
_ENTRY_BYTES = 2 * (8 + 4)
#: SuperLU grows its arrays by 1.5x, copying (the old and the new array live at once), and
#: the inertia test copies ``U`` once more: the peak is taken as this many times the factor
#: (measured: 1.15x at 20,000 and 200,000 nodes)
PEAK = 1.5
#: bytes per matrix entry besides the factor: the permuted copy and SuperLU's CSC copy
_COPY_BYTES = 2 * (8 + 4)
_CACHE_SIZE = 2
#: without the compiled helper, :func:`estimate` reads the fill off a factorization of the
#: pattern up to this many pattern entries, and counts it symbolically (numba) above
SMALL_NNZ = 65_536
#: ... when the profile (which bounds the trial's fill in practice: minimum degree filled 2x
#: to 40x less on every graph measured) is at most this many times the pattern's entries:
#: a dense-filling small graph (an expander of 6,000 nodes: ~10^7 entries, seconds) is
#: counted symbolically instead, in O(nnz) time and O(n) memory
TRIAL_PROFILE = 32


@dataclass(frozen=True)
class FillEstimate:
    """Entries of one triangular factor (``fill``, the diagonal included) and the
    factorization's work (``flops``, the sum of the squared column counts); ``exact`` when
    counted in the ordering the factorization uses, else the profile that refused it (then
    ``flops`` is ``fill^2 / n``)."""

    fill: int
    flops: float
    exact: bool


#: an ordering and, once counted, its fill
_Entry = tuple[np.ndarray, FillEstimate | None]


class _Ordered:
    """The last few orderings and their counts, keyed by the pattern's digest: the plan
    estimates, the preconditioner factors, and the ordering is computed once. A call
    solving ``G`` matrices holds room for all of them while it runs (:meth:`holding`):
    with room for two only, the plan's orderings of a list of five were gone by the time
    their factors were made, and three were computed again (D&D-like batch, 800-1,000
    nodes: ~2 ms each)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.items: OrderedDict[tuple[Any, ...], _Entry] = OrderedDict()
        self.held = 0

    @contextmanager
    def holding(self, count: int) -> Iterator[None]:
        with self.lock:
            self.held += count
        try:
            yield
        finally:
            with self.lock:
                self.held -= count
                self._evict()

    def _evict(self) -> None:
        while len(self.items) > _CACHE_SIZE + self.held:
            self.items.popitem(last=False)

    def get(self, key: tuple[Any, ...]) -> _Entry | None:
        with self.lock:
            hit = self.items.get(key)
            if hit is not None:
                self.items.move_to_end(key)
            return hit

    def put(self, key: tuple[Any, ...], value: _Entry) -> None:
        with self.lock:
            self.items[key] = value
            self._evict()


_ORDERED = _Ordered()


def holding(count: int) -> Any:
    """Keep the orderings of ``count`` more matrices while inside (one call's plan and
    factors)."""
    return _ORDERED.holding(count)


def _key(csr: Any) -> tuple[Any, ...]:
    digest = hashlib.blake2b(digest_size=16)
    digest.update(np.ascontiguousarray(csr.indptr).data)
    digest.update(np.ascontiguousarray(csr.indices).data)
    return (csr.shape, int(csr.nnz), str(csr.indices.dtype), digest.hexdigest())


def _pattern(csr: Any) -> Any:
    """The structure of ``A + A^T + I`` as a strictly diagonally dominant float CSR matrix
    (off-diagonal values drawn from [0.5, 1) with a fixed seed, ``2 n`` on the diagonal):
    SuperLU's ordering sees the pattern only, an incomplete factorization of it meets no
    zero pivot, and a trial factorization no exact cancellation (SciPy's ``L`` and ``U``
    leave exact zeros out: a grid's pattern with unit values lost 1.2% of its entries)."""
    import scipy.sparse as sp

    n = csr.shape[0]
    ones = sp.csr_matrix((np.ones(csr.indices.size), csr.indices, csr.indptr), shape=csr.shape)
    sym = (ones + ones.T).tocsr()
    sym.data[:] = np.random.default_rng(0).uniform(0.5, 1.0, sym.data.size)
    out = (sym + sp.diags(np.full(n, 2.0 * n), format="csr")).tocsr()
    out.sort_indices()
    return out


def _mmd_order(pattern: Any) -> np.ndarray:
    """``p`` such that ``A[p][:, p]`` is in SuperLU's ``MMD_AT_PLUS_A`` order (postordered),
    read from a cheap incomplete factorization (every fill entry dropped): ``spilu`` orders
    as ``splu`` does, and SciPy exposes no ordering alone (``perm_c`` tested equal)."""
    import scipy.sparse.linalg as sla

    ilu = sla.spilu(
        pattern.tocsc(),
        permc_spec="MMD_AT_PLUS_A",
        diag_pivot_thresh=0.0,
        drop_tol=1e300,
        fill_factor=1,
        options={"SymmetricMode": True, "RowPerm": "NOROWPERM"},
    )
    return np.argsort(np.asarray(ilu.perm_c))


def _count(pattern: Any, p: np.ndarray | None) -> tuple[np.ndarray, FillEstimate]:
    """The order (``p``, or :func:`_mmd_order`'s when ``None``) and the exact fill and work
    of ``pattern`` in it, counted symbolically (O(nnz)): by the compiled helper where it is
    built, else by numba's loops (:mod:`._symbolic`). Without the helper, patterns of up to
    :data:`SMALL_NNZ` entries (and a profile of at most :data:`TRIAL_PROFILE` times that)
    read both off one trial factorization of the pattern matrix instead (SuperLU orders it
    as it orders the shifted matrix: the ordering sees the pattern only), so that no numba
    is loaded (its import and cache cost ~0.8 s on a process's first call, where a
    3,000-node graph's call takes 0.1 s). With the helper the ordering (an incomplete
    factorization that keeps no fill) and the count cost less than that trial, with the same
    order and fill: the estimate alone 1.9 against 2.5 ms at 600 nodes, 6.8 against 9.9 ms
    at 3,000 (random geometric graphs); a whole call on a graph new to it 42.6 against
    43.8 ms at 3,000 nodes, level on the D&D-like graphs of 513-1,100 nodes
    (``benchmarks/results/fill-count-ab-2026-12-05.json``)."""
    counts = None
    if (
        not native_column_counts_available()
        and pattern.nnz <= SMALL_NNZ
        and profile(pattern) <= TRIAL_PROFILE * pattern.nnz
    ):
        if p is None:
            lu = _factorize(pattern, "MMD_AT_PLUS_A")
            p = np.argsort(np.asarray(lu.perm_c))
        else:
            lu = _factorize(pattern[p][:, p])
        counts = np.diff(lu.L.indptr)
        if 2 * int(counts.sum()) != int(lu.nnz):  # an exact zero after all: count it
            counts = None
    if p is None:
        p = _mmd_order(pattern)
    if counts is None:
        ordered = pattern[p][:, p].tocsr()
        counts = native_column_counts(ordered.indptr, ordered.indices, ordered.shape[0])
        if counts is None:  # no compiled helper: numba's loops (the same counts)
            from ._symbolic import column_counts

            counts = column_counts(ordered)
    flops = float(np.square(counts, dtype=np.float64).sum())
    return p, FillEstimate(int(counts.sum()), flops, True)


def profile(pattern: Any) -> int:
    """The profile (envelope) of the reverse Cuthill-McKee ordering of the symmetric
    ``pattern``, ``sum_i (i - min_j<=i j) + n``: an upper bound of that ordering's fill, cheap
    (O(nnz)), and 2x to 40x above the minimum degree fill (:func:`screen_factor`).

    >>> import scipy.sparse as sp
    >>> profile(sp.diags([1.0, 2.0, 1.0], [-1, 0, 1], shape=(5, 5), format="csr"))
    9
    """
    from scipy.sparse.csgraph import reverse_cuthill_mckee

    n = pattern.shape[0]
    pattern = pattern.tocsr()
    order = reverse_cuthill_mckee(pattern, symmetric_mode=True)
    pos = np.empty(n, dtype=np.int64)
    pos[order] = np.arange(n)
    cols = pos[pattern.indices]
    starts = pattern.indptr[:-1]
    first = np.full(n, np.iinfo(np.int64).max)
    rows = np.flatnonzero(np.diff(pattern.indptr) > 0)
    if rows.size:
        first[rows] = np.minimum.reduceat(cols, starts[rows])
    first = np.minimum(first, pos)  # the diagonal is in the pattern of the shifted matrix
    return int((pos - first).sum()) + n


def screen_factor(n: int) -> float:
    """How far above the caller's cap the profile must be for :func:`estimate` to refuse
    without ordering: ``max(2, sqrt(n) / 250)``. The profile over-estimates the minimum
    degree fill by a factor that grows with ``n`` on graphs with small separators (random
    geometric graphs: 16x at 20,000 nodes, 22x at 200,000, 40x at 1,000,000, ~ sqrt(n); a
    300 x 300 grid 7x; a square grid's profile is ~ sqrt(n) / 5 nnz, always under the
    threshold) and stays small on graphs that fill densely (a random 8-regular graph 2.2x,
    Barabasi-Albert 6x), where minimum degree costs seconds (2.3 s for a 6,000-node
    8-regular graph whose profile is 217 nnz: refused unordered now).

    >>> screen_factor(20_000), screen_factor(4_000_000)
    (2.0, 8.0)
    """
    return max(2.0, math.sqrt(n) / 250)


def _screen(pattern: Any, refuse_above: float) -> FillEstimate | None:
    """The profile when it is over ``screen_factor(n) * refuse_above`` entries per pattern
    entry (refused without ordering), else ``None`` (order and count)."""
    n = pattern.shape[0]
    if not math.isfinite(refuse_above):
        return None
    fill = profile(pattern)
    if fill <= screen_factor(n) * refuse_above * pattern.nnz:
        return None
    return FillEstimate(fill, fill * (fill / n), False)


def ordering(csr: Any) -> np.ndarray:
    """``p`` such that the factorization of ``csr[p][:, p]`` has the fill :func:`estimate`
    counts (SuperLU's minimum degree ordering of the pattern of ``csr + csr^T``)."""
    key = _key(csr)
    hit = _ORDERED.get(key)
    if hit is not None:
        return hit[0]
    p = _mmd_order(_pattern(csr))
    _ORDERED.put(key, (p, None))
    return p


def estimate(csr: Any, refuse_above: float = math.inf) -> FillEstimate:
    """The fill and work of the shift-invert factorization of the symmetric ``csr`` (any
    diagonal shift: the diagonal is taken as present), counted in the ordering it uses;
    ``refuse_above`` (entries per pattern entry) lets graphs whose profile is over
    :func:`screen_factor` times that be refused without ordering them (``exact=False``,
    ``fill`` the profile).

    Examples
    --------
    >>> import scipy.sparse as sp
    >>> path = sp.diags([1.0, 2.0, 1.0], [-1, 0, 1], shape=(5, 5), format="csr")
    >>> estimate(path)  # a path fills nothing: 5 diagonal + 4 off-diagonal entries
    FillEstimate(fill=9, flops=17.0, exact=True)
    """
    if csr.shape[0] == 0:
        return FillEstimate(0, 0.0, True)
    csr = csr.tocsr()
    key = _key(csr)
    hit = _ORDERED.get(key)
    if hit is not None and hit[1] is not None:
        return hit[1]
    pattern = _pattern(csr)
    if hit is None:
        screened = _screen(pattern, refuse_above)
        if screened is not None:
            return screened
    p, est = _count(pattern, hit[0] if hit is not None else None)
    _ORDERED.put(key, (p, est))
    return est


def fill_estimate(csr: Any) -> int:
    """The entries of one triangular factor of the symmetric ``csr``, the diagonal
    included: :func:`estimate`'s exact count.

    >>> import scipy.sparse as sp
    >>> fill_estimate(sp.diags([1.0, 2.0, 1.0], [-1, 0, 1], shape=(5, 5), format="csr"))
    9
    """
    return estimate(csr).fill


def factor_bytes(fill: int, nnz: int = 0) -> int:
    """Peak bytes of the factorization with ``fill`` entries per triangle: SuperLU's ``L``
    and ``U`` (:data:`PEAK` times, for its reallocations) plus two copies of the ``nnz``
    matrix entries (the permuted matrix and SuperLU's CSC input).

    >>> factor_bytes(1000, 300)
    43200
    """
    return int(fill * _ENTRY_BYTES * PEAK) + nnz * _COPY_BYTES


def shifts(gershgorin: float, given: float | None, scale: float) -> list[float]:
    """The shifts tried in turn, the last a proven lower bound minus ``delta``: the caller's
    ``spectrum_bound`` (``given``) when there is one, else ``-delta`` when Gershgorin's bound
    is below 0 (positive semidefinite matrices such as Laplacians: Gershgorin's bound of a
    normalized Laplacian is well below 0, which would make the shift-invert slow), then
    Gershgorin's bound.

    >>> shifts(-0.5, None, 2.0), shifts(-0.5, 0.0, 2.0), shifts(0.25, None, 2.0)
    ([-2e-05, -0.50002], [-2e-05, -0.50002], [0.24998])
    """
    delta = SHIFT * max(scale, 1e-300)
    first = given if given is not None else (0.0 if gershgorin < 0 else None)
    out = [] if first is None or first <= gershgorin else [first - delta]
    return [*out, gershgorin - delta]


def _factorize(mat: Any, order: str = "NATURAL") -> Any:
    """SuperLU of ``mat`` as it is ordered (call it on ``mat[p][:, p]``, ``p`` from
    :func:`ordering`), or in SuperLU's ordering ``order``; symmetric mode, diagonal
    pivots."""
    import scipy.sparse.linalg as sla

    csc = mat.tocsc()
    del mat  # a CSR temporary of the caller's goes now, not after the factorization
    return sla.splu(
        csc,
        permc_spec=order,
        diag_pivot_thresh=0.0,
        options={"SymmetricMode": True},
    )


def _definite(lu: Any) -> bool:
    """Whether the factored matrix is positive definite: diagonal pivots only (the
    factorization is ``P A P^T = L D L^H``) and no pivot <= 0 (Sylvester's inertia)."""
    if not np.array_equal(lu.perm_r, lu.perm_c):
        return False
    return bool((lu.U.diagonal().real > 0).all())


#: matrices of at most this many rows are factored in SuperLU's own ordering, without the
#: ordering and the fill count first: even a dense fill is small (n^2 / 2 entries, 12 MiB
#: for L and U at 1,024 rows; n^3 / 3 flops, ~0.36 GFLOP), and the separate ordering (a
#: pattern matrix and an incomplete factorization) and the permutations around every solve
#: were ~2.5 ms of a 550-node graph's ~16 ms call (one ``Data`` of 513-600 nodes at a time:
#: 16.6 -> 14.2 ms a graph, PyG's transform 14.8 ms). :func:`.._plan.choose_preconditioner`
#: takes the factor for them where that dense bound fits ``max_memory``.
DIRECT_MAX_N = 1024


def direct_bytes(n: int, nnz: int) -> int:
    """:func:`factor_bytes` of a dense fill (``n (n + 1) / 2`` entries per triangle): the
    most a matrix of ``n <= DIRECT_MAX_N`` rows factored in SuperLU's own ordering holds.

    >>> direct_bytes(1024, 5000) == factor_bytes(1024 * 1025 // 2, 5000)
    True
    """
    return factor_bytes(n * (n + 1) // 2, nnz)


class ShiftInvert:
    """``apply(R) = (B - sigma I)^-1 R`` for ``B = sign * A`` (a SciPy CSR ``A``), ``sigma``
    the first of :func:`shifts` below which ``B``'s spectrum lies (checked by the inertia
    of the factorization; the last is a proven bound and taken as it is). Up to
    :data:`DIRECT_MAX_N` rows SuperLU orders the matrix itself (``order`` is ``None``);
    above, the matrix is permuted by :func:`ordering` (the order the plan counted the fill
    in) and factored as it stands."""

    def __init__(self, csr: Any, sign: float, gershgorin: float, given: float | None, scale: float):
        import scipy.sparse as sp

        csr = csr.tocsr()
        n = csr.shape[0]
        self.order: np.ndarray | None = None
        if n <= DIRECT_MAX_N:
            b, permc = csr, "MMD_AT_PLUS_A"
        else:
            self.order = ordering(csr)
            b, permc = csr[self.order][:, self.order].tocsr(), "NATURAL"
        if sign < 0:
            b = -b
        eye = sp.identity(n, dtype=b.dtype, format="csr")
        candidates = shifts(gershgorin, given, scale)
        lu: Any = None
        for i, sigma in enumerate(candidates):
            lu = None  # a refused factor goes before the next is built
            lu = _factorize((b - sigma * eye).tocsc(), permc)  # one shifted copy at a time
            if i == len(candidates) - 1 or _definite(lu):
                break
        del b
        self.sigma, self.lu = sigma, lu
        #: the factor's dtype (its solves return it)
        self.dtype = eye.dtype
        #: entries of ``L`` and ``U`` together, as SuperLU stores them
        self.fill = int(lu.nnz)

    @property
    def bytes(self) -> int:
        return self.fill * (_ENTRY_BYTES // 2)

    def apply(self, r: torch.Tensor) -> torch.Tensor:
        """The solve on a block ``r`` (``(n, c)``, CPU), returned as a tensor of ``r``'s dtype."""
        x = np.empty(tuple(r.shape), dtype=self.dtype)
        self.solve_into(r.numpy(), x)
        return torch.from_numpy(x).to(dtype=r.dtype)

    def solve_into(self, r: np.ndarray, out: np.ndarray) -> None:
        """The solve on the NumPy block ``r`` (``(n, c)``), written into ``out`` (the same
        shape, cast to its dtype): no tensor round trips (the batched Lanczos path solves
        ~10 graphs a step this way)."""
        if self.order is None:  # SuperLU's own permutations, inside its solve
            out[...] = self.lu.solve(np.asfortranarray(r))
        else:
            out[self.order] = self.lu.solve(np.asfortranarray(r[self.order]))
