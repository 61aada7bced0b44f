"""`python -m relay_repl` is `relay` (the same entry, so `-m relay_repl mcp` takes the same fast path)."""

import sys

from relay_repl.frontends.entry import main

sys.exit(main())
