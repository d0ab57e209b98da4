"""Training: the loop and its set-up, loss, optimizers and schedules, validation, distributed runs, TensorBoard, averaging.

Imports nmt.decode (validation searches greedily) and everything below it; never evaluation, comparison, serving or
the CLI.
"""
