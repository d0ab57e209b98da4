"""The reading side of exported models: folders that ``nmt export`` wrote; never imports torch."""
