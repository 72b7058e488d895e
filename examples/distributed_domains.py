"""Band energies and per-dataset PCA on Dask, without gathering the data on one node.

    .venv/bin/python examples/distributed_domains.py

Graphene bands over 20 000 k-points in 8 blocks, and ``BatchPCA`` over 64 datasets whose
samples are split in 5 chunks (only counts, means and 8x8 scatter matrices reach the
client). Prints a small table of results checked against the one-process answers.
"""

from __future__ import annotations

import dask.array as da
import distributed
import numpy as np

import spectra.distributed as sd
from spectra.pca import BatchPCA
from spectra.tightbinding import Model


def graphene() -> Model:
    g = Model([[1.0, 0.0], [0.5, 3**0.5 / 2]], [[1 / 3, 1 / 3], [2 / 3, 2 / 3]])
    for r in ([0, 0], [-1, 0], [0, -1]):
        g.add_hopping(-1.0, 0, 1, r)
    return g


def main() -> None:
    with (
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, host="127.0.0.1", dashboard_address=":0"
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        print(f"dashboard: {client.dashboard_link}")
        g = graphene()
        k = da.random.default_rng(0).uniform(-0.5, 0.5, size=(20000, 2), chunks=(2500, 2))
        energies = sd.bands(g, k)
        e, kk = energies.compute(), k.compute()
        err = np.abs(e - g.bands(kk)).max()
        print(f"{'graphene bands':<28} {e.shape!s:>14}  max |dask - 1 process| = {err:.1e}")

        x = da.random.default_rng(1).standard_normal((64, 5000, 8), chunks=(16, 1000, 8))
        x = x @ da.from_array(np.triu(np.ones((8, 8))))  # correlated features
        pca = sd.fit_pca(BatchPCA(3), x)
        ref = BatchPCA(3).fit(x.compute())
        err = np.abs(pca.components_ - ref.components_).max()
        print(
            f"{'BatchPCA over 64 datasets':<28} {pca.components_.shape!s:>14}  "
            f"max |dask - 1 process| = {err:.1e}"
        )


if __name__ == "__main__":
    from _common import tee_to_out  # examples/_common.py: this script's folder is on sys.path

    tee_to_out(main, "distributed_domains")  # the table, also kept under examples/out/
