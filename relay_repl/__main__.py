"""`python -m relay_repl` is `relay`."""

import sys

from .cli import main

sys.exit(main())
