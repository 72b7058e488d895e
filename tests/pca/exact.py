"""An exact reference for PCA: every output of sklearn's ``PCA(svd_solver="full")`` computed
from the same floating-point data in 50-digit arithmetic (mpmath), independently of any
LAPACK routine, so that both sklearn's rounding and ours can be measured.

The data's entries are exact binary fractions, so the mean, the centred data and the scatter
matrix ``X_c^T X_c`` are formed to 50 digits; its eigenpairs come from mpmath's Jacobi
``eigsy``. Every PCA output is then a function of these numbers, evaluated with sklearn's
formulas but without cancellation: the model covariance and precision in the eigenbasis
(``sum_t v_t v_t^T model_t``, ``sum_t v_t v_t^T / model_t``), the log-likelihood's quadratic
form as ``sum_t (x . v_t)^2 / model_t``, Minka's MLE of the dimension in 50 digits.
"""

from __future__ import annotations

from functools import cached_property
from typing import Any

import numpy as np
import pytest

mpmath = pytest.importorskip("mpmath")


def _f(a: Any) -> np.ndarray:
    return np.array(a, dtype=np.float64)


class ExactPCA:
    """The exact PCA of ``x`` ``(N, D)``, ``N >= D`` (the data as given, float32 or float64).

    ``outputs(n_components, whiten, x_new, z_in)`` gives sklearn's results for those
    parameters: ``components_`` (sklearn's sign rule), ``explained_variance_``,
    ``explained_variance_ratio_``, ``singular_values_``, ``noise_variance_``, ``mean_``,
    ``n_components_``, ``get_covariance``, ``get_precision`` (when the model is positive
    definite), ``score_samples``/``score`` and ``transform`` of ``x_new`` (default ``x``),
    ``inverse_transform`` of ``z_in`` ``(M, k)`` when given.
    """

    def __init__(self, x: np.ndarray, dps: int = 50) -> None:
        self.x = np.asarray(x)
        n, d = self.x.shape
        assert n >= d, "the reference covers N >= D (sklearn's mle needs it too)"
        self.mp = mpmath.mp.clone()
        self.mp.dps = dps

    @cached_property
    def _decomposition(self) -> tuple[list, list, list]:
        mp = self.mp
        n, d = self.x.shape
        cols = [[mp.mpf(float(v)) for v in self.x[:, j]] for j in range(d)]
        mean = [mp.fsum(c) / n for c in cols]
        xc = [[c[i] - mean[j] for j, c in enumerate(cols)] for i in range(n)]
        scatter = mp.matrix(d, d)
        for a in range(d):
            for b in range(a, d):
                scatter[a, b] = scatter[b, a] = mp.fsum(row[a] * row[b] for row in xc)
        w, q = mp.eigsy(scatter)
        order = sorted(range(d), key=lambda i: -w[i])
        lam = [max(w[i], mp.mpf(0)) for i in order]
        vecs = []
        for i in order:
            v = [q[r, i] for r in range(d)]
            pivot = max(range(d), key=lambda r: abs(v[r]))
            vecs.append([-e for e in v] if v[pivot] < 0 else v)
        return mean, lam, vecs

    def _projections(self, rows: np.ndarray) -> list[list]:
        """``(x_i - mean) . v_t`` for each row, in ``mp``."""
        mp = self.mp
        mean, _, vecs = self._decomposition
        d = len(mean)
        out = []
        for r in np.asarray(rows, np.float64):
            xr = [mp.mpf(float(v)) - mean[j] for j, v in enumerate(r)]
            out.append([mp.fsum(xr[j] * v[j] for j in range(d)) for v in vecs])
        return out

    @cached_property
    def _own_projections(self) -> list[list]:
        return self._projections(self.x)

    def minka(self) -> int:
        """sklearn's ``_infer_dimension`` (Minka 2000), in ``mp``'s precision."""
        mp = self.mp
        n = self.x.shape[0]
        ev = [s / (n - 1) for s in self._decomposition[1]]
        f, tiny = len(ev), mp.mpf("1e-15")
        best, arg = None, 0
        for rank in range(1, f):
            if ev[rank - 1] < tiny:
                continue
            pu = -rank * mp.log(2)
            for i in range(1, rank + 1):
                pu += mp.loggamma(mp.mpf(f - i + 1) / 2) - mp.log(mp.pi) * mp.mpf(f - i + 1) / 2
            pl = -mp.fsum(mp.log(s) for s in ev[:rank]) * n / 2
            v = max(tiny, mp.fsum(ev[rank:]) / (f - rank))
            pv = -mp.log(v) * n * (f - rank) / 2
            m = f * rank - mp.mpf(rank * (rank + 1)) / 2
            pp = mp.log(2 * mp.pi) * (m + rank) / 2
            s_ = ev[:rank] + [v] * (f - rank)
            pa = mp.fsum(
                mp.log((ev[i] - ev[j]) * (1 / s_[j] - 1 / s_[i])) + mp.log(n)
                for i in range(rank)
                for j in range(i + 1, f)
            )
            ll = pu + pl + pv + pp - pa / 2 - rank * mp.log(n) / 2
            if best is None or ll > best:
                best, arg = ll, rank
        return arg

    def n_components(self, spec: Any) -> int:
        """The number of components sklearn keeps for ``spec``, exactly."""
        mp = self.mp
        lam = self._decomposition[1]
        d = len(lam)
        if spec is None:
            return d
        if spec == "mle":
            return self.minka()
        if isinstance(spec, float):  # searchsorted(cumsum(ratio), spec, side="right") + 1
            total, cum = mp.fsum(lam), mp.mpf(0)
            for k, s in enumerate(lam, start=1):
                cum += s / total
                if cum > spec:
                    return k
            return d
        return int(spec)

    def outputs(
        self,
        spec: Any,
        whiten: bool = False,
        x_new: np.ndarray | None = None,
        z_in: np.ndarray | None = None,
    ) -> dict[str, Any]:
        mp = self.mp
        mean, lam, vecs = self._decomposition
        n, d = self.x.shape
        k = self.n_components(spec)
        ev = [s / (n - 1) for s in lam]
        total = mp.fsum(ev)
        noise = mp.fsum(ev[k:]) / (d - k) if k < d else mp.mpf(0)
        scale = ev if whiten else [mp.mpf(1)] * d
        model = [scale[t] * max(ev[t] - noise, 0) + noise if t < k else noise for t in range(d)]
        out: dict[str, Any] = {
            "n_components_": k,
            "mean_": _f(mean),
            "components_": _f(vecs[:k]),
            "explained_variance_": _f(ev[:k]),
            "explained_variance_ratio_": _f([e / total for e in ev[:k]]),
            "singular_values_": _f([mp.sqrt(s) for s in lam[:k]]),
            "noise_variance_": float(noise),
        }
        out["get_covariance"] = _f(
            [
                [mp.fsum(vecs[t][a] * vecs[t][b] * model[t] for t in range(d)) for b in range(d)]
                for a in range(d)
            ]
        )
        proj = self._own_projections if x_new is None else self._projections(x_new)
        if all(m > 0 for m in model):
            out["get_precision"] = _f(
                [
                    [
                        mp.fsum(vecs[t][a] * vecs[t][b] / model[t] for t in range(d))
                        for b in range(d)
                    ]
                    for a in range(d)
                ]
            )
            const = (d * mp.log(2 * mp.pi) + mp.fsum(mp.log(m) for m in model)) / 2
            samples = [-mp.fsum(p[t] ** 2 / model[t] for t in range(d)) / 2 - const for p in proj]
            out["score_samples"] = _f(samples)
            out["score"] = float(mp.fsum(samples) / len(samples))
        div = [mp.sqrt(ev[t]) if whiten else mp.mpf(1) for t in range(k)]
        out["transform"] = _f([[p[t] / div[t] for t in range(k)] for p in proj])
        if z_in is not None:
            rows = np.asarray(z_in, np.float64)
            out["inverse_transform"] = _f(
                [
                    [
                        mp.fsum(mp.mpf(float(z[t])) * div[t] * vecs[t][j] for t in range(k))
                        + mean[j]
                        for j in range(d)
                    ]
                    for z in rows
                ]
            )
        return out
