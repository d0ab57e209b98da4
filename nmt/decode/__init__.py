"""Decoding: greedy, beam and sampled search (on tensors and on numpy arrays), their rules, ensembles,
the engines that run a checkpoint or an export (torch, onnxruntime, CTranslate2), and translating text.

Imports nmt.model, nmt.data, nmt.run, nmt.config, nmt.engine and nmt.util; never training, evaluation
or serving.
"""
