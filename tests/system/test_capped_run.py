"""system/capped_run.py: a subprocess whose output is a peer's (ssh to a host) is never read whole."""

from __future__ import annotations

import subprocess

import pytest

from relay_repl.system.capped_run import run_capped


def test_input_and_output_are_pumped_together_and_both_streams_kept():
    body = b"line\n" * 200_000  # more than a pipe holds: `cat` writes before it has read it all
    res = run_capped(["sh", "-c", "cat; echo said >&2; exit 3"], body, timeout=30, limit=len(body))
    assert (res.returncode, res.stdout == body, res.stderr, res.cut) == (3, True, b"said\n", False)


def test_a_flood_is_cut_at_the_limit_and_the_process_killed():
    res = run_capped(["sh", "-c", "yes"], b"", timeout=30, limit=1000)
    assert res.cut and len(res.stdout) == 1000 and res.returncode is not None and res.returncode < 0


def test_a_process_that_never_ends_is_a_timeout():
    with pytest.raises(subprocess.TimeoutExpired):
        run_capped(["sleep", "30"], b"", timeout=0.3, limit=10)


class _FloodingHost:
    """A channel whose `relay serve --stdio` answers one call with more than a frame (MAX_LINE)."""

    name = "standin"
    remote_command: list[str] = []

    def argv(self, *extra: str) -> list[str]:
        return ["sh", "-c", "yes | head -c 9000000"]


def test_a_host_that_answers_with_more_than_a_frame_is_cut_off_with_why():
    """Old code read all of it (capture_output) and then failed on its last line as JSON."""
    from relay_repl.core.errors import HostError
    from relay_repl.session.remote.remote_send import call_once

    with pytest.raises(HostError, match=r"host standin answered request_state with more than 8,388,608 bytes"):
        call_once(_FloodingHost(), "request_state", {"id": "beta-1"}, what="request_state", timeout=30)
