"""The Stiefel manifold for batches of frames: retractions through one batched eigh.

``St(n, p) = {X in R^(n x p) (or C^(n x p)) : X^H X = I}``. The polar retraction
``(X + xi) ((X + xi)^H (X + xi))^(-1/2)`` diagonalizes the small ``p x p`` Gram matrices of
the whole batch in ONE :func:`spectra.eigh` call, with a backward that stays finite for tiny
steps. Riemannian SGD and Adam are drop-in ``torch.optim`` optimizers that also train the
ordinary parameters of a model.

>>> import torch
>>> from spectra.stiefel import Stiefel
>>> st = Stiefel()
>>> x = st.random(4096, 64, 8)
>>> y = st.retract(x, st.proj(x, 0.1 * torch.randn_like(x)))
>>> bool(st.check(y))
True
"""

from ._adam import RiemannianAdam
from ._checks import ON_MANIFOLD_TOL, check_frames
from ._manifold import Stiefel
from ._metrics import METRICS, CanonicalMetric, EuclideanMetric, Metric
from ._optim import RiemannianOptimizer
from ._parameter import StiefelParameter
from ._polar import inv_sqrtm, polar
from ._retractions import RETRACTIONS, retract_cayley, retract_polar, retract_qr
from ._sgd import RiemannianSGD

__all__ = [
    "METRICS",
    "ON_MANIFOLD_TOL",
    "RETRACTIONS",
    "CanonicalMetric",
    "EuclideanMetric",
    "Metric",
    "RiemannianAdam",
    "RiemannianOptimizer",
    "RiemannianSGD",
    "Stiefel",
    "StiefelParameter",
    "check_frames",
    "inv_sqrtm",
    "polar",
    "retract_cayley",
    "retract_polar",
    "retract_qr",
]
