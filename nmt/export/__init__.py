"""Writing exported models: folders that translate without the training code's checkpoints.

Imports nmt.decode, nmt.model, nmt.run, nmt.engine, nmt.data, nmt.config and nmt.util.
"""
