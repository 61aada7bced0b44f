"""Drive a program in a private tmux server the way a person would: type, read the screen."""

from __future__ import annotations

import os
import shlex
import uuid
from collections.abc import Callable

import libtmux

from relay_repl.system.polling import poll_until_sync


class Screen:
    def __init__(self, command: list[str], env: dict[str, str], width: int = 200, height: int = 50) -> None:
        self.server = libtmux.Server(socket_name=f"relay-test-{uuid.uuid4().hex[:8]}")
        full_env = " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items())
        cmd = f"env {full_env} {shlex.join(command)}"
        self.session = self.server.new_session(session_name="t", x=width, y=height, window_command=cmd)
        self.pane = self.session.active_window.active_pane

    def text(self) -> str:
        return "\n".join(self.pane.capture_pane(start=-500, end="-", join_wrapped=True))

    def wait_for(self, predicate: Callable[[str], bool] | str, timeout: float = 20.0) -> str:
        check = (lambda s: predicate in s) if isinstance(predicate, str) else predicate

        def shown() -> str | None:
            screen = self.text()
            return screen if check(screen) else None

        got = poll_until_sync(shown, timeout=timeout, interval=0.1)
        if got is None:
            raise AssertionError(f"timed out waiting for {predicate!r}; screen was:\n{self.text()}")
        return got

    def type_line(self, text: str, timeout: float = 20.0) -> None:
        """Type `text`, and press Enter once the program has drawn it (one more copy of its tail on
        the screen): an Enter that overtakes the text's echo can be taken before the text."""
        tail = text[-30:]
        before = self.text().count(tail)
        self.pane.send_keys(text, enter=False, literal=True)
        self.wait_for(lambda s: s.count(tail) > before, timeout=timeout)
        self.pane.send_keys("Enter", enter=False)

    def keys(self, *keys: str) -> None:
        for k in keys:
            self.pane.send_keys(k, enter=False)

    def close(self) -> None:
        try:
            self.server.kill()
        except Exception:
            pass


def python_env(**extra: str) -> dict[str, str]:
    keep = {k: os.environ[k] for k in ("PATH", "HOME", "LANG", "LC_ALL", "RELAY_HOME") if k in os.environ}
    keep.setdefault("LANG", "C.UTF-8")
    keep["TERM"] = "xterm-256color"
    keep.update(extra)
    return keep
