"""`python -m relay_repl` is `relay`."""

import sys

from relay_repl.frontends.cli import main

sys.exit(main())
