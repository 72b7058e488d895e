"""spectra on Dask: the same batched core mapped over the blocks of Dask arrays.

Needs the ``distributed`` extra (``pip install torch-spectra[distributed]``); Dask is
imported only when a function here is called.

>>> import dask.array as da, numpy as np
>>> import spectra.distributed as sd
>>> x = da.from_array(np.stack([np.eye(3)] * 6), chunks=(4, 3, 3))
>>> sd.eigvalsh(x).compute().shape
(6, 3)
"""

from ..core.domain import register_collection_op
from ._bench import format_rows, run_dask_bench
from ._domains import bands, fit_pca, moments
from ._eigh import eigh, eigvalsh

# the lower layers reach this one only through these (spectra.core's collection ops)
for _name, _fn in (
    ("eigh", eigh),
    ("eigvalsh", eigvalsh),
    ("pca.fit", fit_pca),
    ("tightbinding.bands", bands),
):
    register_collection_op(_name, _fn)

__all__ = ["bands", "eigh", "eigvalsh", "fit_pca", "format_rows", "moments", "run_dask_bench"]
