"""``python -m txnq.cli``: the ``txnq`` command, where no console script is installed."""

from txnq.cli.app import main

main()
