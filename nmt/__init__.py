"""nmt: attention-based RNN encoder-decoder translation, from YAML to BLEU."""

__version__ = "0.1.0"
