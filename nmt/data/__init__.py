"""Corpora: sources (Multi30k, the hub, local files, synthetic), cleaning, SentencePiece, cached ids, batching.

Imports nmt.config and nmt.util only.
"""
