"""Diagnosis: why a model learns as it does, measured on a checkpoint or on a few updates of a fresh model.

- :mod:`nmt.diagnosis.fit_gap`: a checkpoint's cross-entropy on sampled training pairs beside
  validation (over- or under-fitting), ``nmt diagnose fit-gap``;
- :mod:`nmt.diagnosis.attention_health`: energy scale, entropy, saturation and gradients of each
  variant's attention at init and during training, ``nmt diagnose attention``, with the forward
  hooks it measures through in :mod:`nmt.diagnosis.probes`.

Imports nmt.training (the trainer's loss, optimizer and batches, so what is measured is what
training does) and everything below it; a sibling of nmt.evaluation, which it does not import.
nmt.api and nmt.cli import it.
"""
