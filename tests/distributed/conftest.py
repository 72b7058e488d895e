"""A real dask.distributed LocalCluster: 2 worker processes on loopback, one per module."""

from __future__ import annotations

import logging
import sys

import pytest


@pytest.fixture(scope="module")
def client(request):
    import cloudpickle
    import distributed  # a declared test dependency: never skipped

    # Test-module helpers (data generators, stand-in models) travel by value: the workers
    # need not import the test package.
    cloudpickle.register_pickle_by_value(sys.modules[request.module.__name__])
    cloudpickle.register_pickle_by_value(sys.modules[__package__ + ".helpers"])
    cluster = distributed.LocalCluster(
        n_workers=2,
        threads_per_worker=1,
        processes=True,
        host="127.0.0.1",
        dashboard_address=None,
        silence_logs=logging.CRITICAL,
    )
    cl = distributed.Client(cluster)
    cl.run(__import__, "spectra.distributed")  # import torch once per worker, up front
    try:
        yield cl
    finally:
        cl.close()
        cluster.close()
        cloudpickle.unregister_pickle_by_value(sys.modules[__package__ + ".helpers"])
        cloudpickle.unregister_pickle_by_value(sys.modules[request.module.__name__])
