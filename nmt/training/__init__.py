"""Training: the loop and its set-up, loss, optimizers and schedules, validation, distributed runs, TensorBoard,
averaging, and model selection (best.pt or an average, chosen on validation: its last step).

Imports nmt.decode (validation searches greedily) and everything below it; never evaluation, comparison, serving or
the CLI.
"""
