"""The models: encoders, attention energies and parametrizations, RNN decoders, the Transformer, the factory.

Imports nmt.config and nmt.util only; decoding and training build on it.
"""
