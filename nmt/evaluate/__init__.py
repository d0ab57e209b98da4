"""Evaluating runs: the nmt eval command and its page, run summaries and reports, fixed-update comparisons.

Imports nmt.train (compare trains) and nmt.decode and everything below them; only nmt.cli imports it.
"""
