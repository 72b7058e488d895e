"""Tools the whole core stands on: arrays in/out, memory, threads, versions, the
collection hook, moments, samples, the self-check's cases and the solver names.
"""
