"""Corpora: sources (Multi30k, the hub, local files, synthetic), cleaning, SentencePiece, cached ids, batching.

Imports nmt.config and nmt.util only.

Every function here that takes ``progress`` draws its bars exactly when it is True: whether a
terminal wants them is decided once, by the caller (``nmt.cli.options.progress_shown`` for the
``--progress/--no-progress`` flag), never again here.
"""
