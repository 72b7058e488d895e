"""The pipeline of one call: prepare, plan, execute, solve (dense, ragged, generalized,
direct), select ``k``, the gauge, the checks and the autograd rules.
"""
