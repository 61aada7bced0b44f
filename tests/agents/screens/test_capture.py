"""agents/screens/capture.py: the snapshot command line both the tmux transport and a send's plain plan run,
and the listing's capture and the snapshots taken in one tmux process (issue 40), on a real tmux server."""

from __future__ import annotations

import subprocess
import uuid

import pytest

from relay_repl.agents.screens import capture
from relay_repl.system import pane_list
from relay_repl.transports.tmux import PaneIO, PaneRef

SCREENS = {"one": "printf 'first pane\\n\\n> composer'; sleep 600",
           "two": "printf 'second|:|pane\\nwith a line that is long enough to wrap in a narrow pane, really long'; sleep 600"}


@pytest.fixture
def server(tmp_path):
    sock = str(tmp_path / f"t{uuid.uuid4().hex[:6]}")
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    for name, cmd in SCREENS.items():
        verb = "new-session" if name == "one" else "new-window"
        args = ["-d", "-s", "cap", "-x", "60", "-y", "12"] if name == "one" else ["-d", "-t", "cap"]
        subprocess.run(["tmux", "-S", sock, "-f", "/dev/null", verb, *args, cmd], check=True, env=env)
    import time

    for _ in range(100):  # until both panes have drawn
        panes = pane_list.list_panes({**env, "RELAY_TMUX_SOCKET": sock})
        texts = pane_list.capture_panes(panes, env)
        if len(texts) == 2 and all(t.strip() for t in texts.values()):
            break
        time.sleep(0.02)
    yield sock, env, panes
    subprocess.run(["tmux", "-S", sock, "kill-server"], capture_output=True)


def test_one_tmux_process_gives_the_listings_capture_and_each_panes_snapshot(server, monkeypatch):
    """The -J texts are the listing's own (pane_list.capture_panes) and each snapshot is PaneIO.snapshot's,
    from ONE tmux process for the two panes. Old code: no such capture (two separate reads per pane)."""
    sock, env, panes = server
    calls: list[list[str]] = []
    real = pane_list.run_tmux

    def counted(socket_path, args, e):
        calls.append(args)
        return real(socket_path, args, e)

    listed = pane_list.capture_panes(panes, env)
    monkeypatch.setattr(pane_list, "run_tmux", counted)
    texts, snaps = capture.capture_with_snapshots(panes, env)
    assert len(calls) == 1
    assert texts == listed and len(texts) == 2
    io = PaneIO(env)
    for p in panes:
        want = io.snapshot(PaneRef(socket_path=sock, pane_id=p.pane_id)).model_dump()
        fields = snaps[p.key]
        assert {k: v for k, v in want.items() if k != "taken_at"} == fields, p.pane_id


def test_a_vanished_pane_costs_only_its_own_snapshot(server):
    """A pane gone between listing and capture fails the chain; the others are read one by one, as the listing's capture does."""
    sock, env, panes = server
    gone = pane_list.PlainPane(sock, "x", {"pane_id": "%999", "pane_pid": "1", "cursor_x": "0", "cursor_y": "0",
                                           "pane_current_command": "", "session_name": "", "pane_dead": "0"})
    texts, snaps = capture.capture_with_snapshots([*panes, gone], env)
    assert set(texts) == set(snaps) == {p.key for p in panes}


def test_the_snapshot_fields_keep_a_separator_in_the_current_command():
    """The free-text field is last and the split bounded (as PaneIO.snapshot always read it)."""
    mark = capture.new_mark()
    fmt = capture.SEP.join(["%3", "3", "5", "0", "", "0", "42", "0", "80", "2", "odd|:|name"])
    fields = capture.snapshot_fields([f"{mark}F{fmt}", "row one", f"{mark}E", "\x1b[7mrow\x1b[0m one"], mark)
    assert fields is not None
    assert fields["pane_current_command"] == "odd|:|name" and fields["pane_id"] == "%3"
    assert fields["lines"] == ["row one", ""] and fields["esc_lines"] == ["\x1b[7mrow\x1b[0m one", ""]
    assert (fields["cursor_x"], fields["cursor_y"], fields["pane_pid"], fields["pane_height"]) == (3, 5, 42, 2)
    assert capture.snapshot_fields(["no marks"], mark) is None
