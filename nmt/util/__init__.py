"""Stage 0, utilities every stage shares: errors, atomic file io, the runtime (device, threads, seeds), plots.

Imports nothing of nmt; every other package may import it.
"""
