"""The stub server's fixtures (`sockdir`, `stub`) for the stub tests of every API."""

from tests.support.stubs import sockdir, stub

__all__ = ["sockdir", "stub"]
