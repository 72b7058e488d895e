"""The benchmark behind ``spectra bench`` (not part of the core; never imported by it).

Modules: :mod:`.timing` (interleaved repeats, spread, re-runs, busy checks), :mod:`.peers`
(what spectra.eigh is compared with, the plain thread fan-out among them), :mod:`.suite`
(the core rows), :mod:`.domains` (PCA, tight-binding, graph, Stiefel tables), :mod:`.table`
(columns, legend, verdict), :mod:`.plot` (``--plot``), :mod:`.progress` (the stderr line).
"""
