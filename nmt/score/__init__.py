"""Scoring translations: sacreBLEU metrics, BLEU by length and paired significance tests.

Below training, which scores validation with it; imports only nmt.util.
"""
