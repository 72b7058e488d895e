"""The eigensolver algorithms the strategies run: torch's LAPACK (the one adapter),
the torch-ops Jacobi, and the numba small-matrix kernels with their measured choice table.
"""
