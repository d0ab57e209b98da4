"""Comparing variants: ``nmt compare`` trains each arm of a plan for the same updates over several seeds, then tests it.

In the order a comparison runs: :mod:`~nmt.comparison.plan` (the arms, seeds, updates and split,
checked before anything trains; :mod:`~nmt.comparison.match` resizes arms to one parameter
budget), :mod:`~nmt.comparison.runs` (each run folder: reuse, resume or train),
:mod:`~nmt.comparison.jobs` (runs trained side by side, ``--jobs``), :mod:`~nmt.comparison.scores`
(each best checkpoint translates the split; means and tests over seeds),
:mod:`~nmt.comparison.timing` (each arm's seconds per update alone, ``--time-updates``),
:mod:`~nmt.comparison.record` and :mod:`~nmt.comparison.record_runs` (the reproducibility record)
and :mod:`~nmt.comparison.command` (the whole command, which ``nmt.compare`` runs too); then
:mod:`~nmt.comparison.groups` (several comparisons of the same arms pooled: ``nmt compare-groups``),
which reads what the comparisons wrote through :mod:`~nmt.comparison.read_back` (each field checked).

Imports nmt.evaluation (runs translate and are scored as ``nmt eval`` does; the report's files and
record are ``nmt report``'s), nmt.training (runs train) and everything below them; only nmt.labs,
nmt.api and nmt.cli import it (and docs_build/pairs_table.py, outside the package).
"""
