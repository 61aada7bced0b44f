"""The stub server's fixtures (`sockdir`, `stub`) for the stub tests of every API, and the lab
with a second host that test_hosts_live and test_hosts_session_live share."""

import pytest

from relay_repl.testing.labs import private_lab_home
from tests.support.stubs import sockdir, stub

__all__ = ["sockdir", "stub", "hosts_lab_home"]


@pytest.fixture(scope="package")
def hosts_lab_home(tmp_path_factory):
    """One lab (and, through `lab2`, its second host) for both host modules: started once, not
    once per module (a lab with a second host took 22-25 s to start and 5 s to take down)."""
    from relay_repl.lab import second_host

    if second_host.available():
        pytest.skip(second_host.available() or "")
    with private_lab_home(tmp_path_factory, "hosts-lab") as home:
        yield home
