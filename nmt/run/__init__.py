"""The run folder and what it holds: paths and the writer lock, checkpoints, metrics.jsonl events, the train state.

Imports nmt.config and nmt.util; the trainer, the decoders and the reports read runs through it.
"""
