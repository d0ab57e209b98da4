"""Decoding: greedy, beam and sampled search on tensors, their rules, ensembles, and translating text with a checkpoint.

Imports nmt.model, nmt.data, nmt.run, nmt.config and nmt.util; never training, evaluation or serving.
"""
