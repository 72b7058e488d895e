"""spectra on a laptop's LocalCluster: 2 worker processes, exactly the core's answer.

    .venv/bin/python examples/distributed_local.py [--scheduler tcp://host:8786]

With ``--scheduler`` the same code runs on an existing multi-node cluster. Prints a
table: per block, where it ran and whether it matches the one-process core.
"""

from __future__ import annotations

import argparse

import dask
import dask.array as da
import distributed
import numpy as np

import spectra
import spectra.distributed as sd


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--scheduler", default=None, help="address of a running scheduler")
    args = parser.parse_args()
    if args.scheduler:
        client = distributed.Client(args.scheduler)
        cluster = None
    else:
        cluster = distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, host="127.0.0.1", dashboard_address=":0"
        )
        client = distributed.Client(cluster)
    print(
        f"cluster: {len(client.scheduler_info()['workers'])} workers, "
        f"dashboard {client.dashboard_link}"
    )

    rng = np.random.default_rng(0)
    x = rng.standard_normal((2000, 24, 24))
    x = 0.5 * (x + x.swapaxes(-1, -2))
    xd = da.from_array(x, chunks=((500, 700, 300, 500), 24, 24))  # uneven blocks
    w, v = client.persist(list(sd.eigh(xd, k=4)))  # results stay on the workers
    distributed.wait([w, v])
    where = {key: sorted(addrs) for key, addrs in client.who_has(w).items()}
    w_np, v_np = dask.compute(w, v)
    ref = spectra.eigh(x, k=4)
    print(f"{'block':>6} {'rows':>11} {'worker':>24} {'equal to the core':>18}")
    start = 0
    for i, size in enumerate(w.chunks[0]):
        stop = start + size
        key = next(k for k in where if isinstance(k, tuple) and k[1] == i)
        same = np.array_equal(w_np[start:stop], ref.eigenvalues[start:stop]) and np.array_equal(
            v_np[start:stop], ref.eigenvectors[start:stop]
        )
        print(f"{i:>6} {f'{start}:{stop}':>11} {where[key][0]:>24} {same!s:>18}")
        start = stop
    client.close()
    if cluster is not None:
        cluster.close()


if __name__ == "__main__":
    from _common import tee_to_out  # examples/_common.py: this script's folder is on sys.path

    tee_to_out(main, "distributed_local")  # the table, also kept under examples/out/
