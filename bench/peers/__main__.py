import sys

from bench.peers.runner import main

sys.exit(main())
