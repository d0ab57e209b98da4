"""Evaluating runs: ``nmt eval`` and its page, ``nmt report`` (run files, summaries, figures), the runs' record.

Imports nmt.decode and everything below it; it reads what training wrote through nmt.run, never
through nmt.training.  nmt.comparison (which scores its runs as ``nmt eval`` does), nmt.api and
nmt.cli import it.
"""
