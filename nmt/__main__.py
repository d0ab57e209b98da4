"""``python -m nmt`` (also what ``torchrun -m nmt`` runs): the same CLI as the ``nmt`` script."""

from nmt.cli import main

main()
