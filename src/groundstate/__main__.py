"""``python -m groundstate``: the same CLI as the ``groundstate`` command."""

from groundstate.cli import main

main()
