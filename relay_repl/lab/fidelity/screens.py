"""Re-record the golden screen captures from the REAL clients in a private lab.

    python -m relay_repl.lab.fidelity.screens --out DIR [--only KIND]
    .venv/bin/python -m bench.record_screens [--out tests/agents/screens/captures] ...   (from a checkout)

Package code (not a bench script) so `relay fidelity` runs it from an installed wheel; the
checkout's `bench/record_screens.py` calls this same main with the goldens folder as --out.

Why: screen scrapers break on every TUI release. The classifiers in
relay_repl/agents/screens are tested against captures recorded here, one directory per
client version (`claude-code-2.1.328/`, `codex-0.169.0/`). When a client is bumped,
run this against the new version, read the `MISMATCH` lines (the classifier's
reading vs the state the recorder staged), and fix the marks — or the expectation,
if the state really reads differently now.

Each scenario stages one state in a lab session (typing into the lab pane is setup,
not the code under test), captures it with the transport's own `PaneIO.snapshot`
(plain rows, `-e` rows and tmux formats in one tmux call), and writes:

    <name>.txt      plain rows (row i = screen row i)
    <name>.e.txt    the same rows with SGR escapes (dim placeholders, reverse cursor)
    <name>.json     formats (cursor_x/cursor_y/pane_in_mode/alternate_on/...), the
                    expected reading, and for draft scenarios the payload to find

The lab runs under a throwaway RELAY_HOME and is torn down at the end. Escape is
never sent; menus and modes are left with BackSpace, `?`, C-u or a selection key.

The states every client is staged in are `Recorder.common`; what each client shows in them
(`MARKS`) and the states only it has (`screens(rec, name)`) are its own, in its package
(agents/<kind>/fidelity.py): the recorder iterates the registered kinds and names none.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

from relay_repl.agents import registry
from relay_repl.agents.fidelity import Expect, Marks
from relay_repl.core.envelope import Envelope
from relay_repl.lab.fidelity.checks import lab_counts

LONG = Envelope.make(sender="operator:relay@rec", to="peer", id="rec-7",
                     body="a long line that the composer has to wrap: " + " ".join(f"word{i}" for i in range(40))).compose()


class Recorder:
    def __init__(self, out: Path, only: str | None) -> None:
        from relay_repl.transports.tmux import PaneIO

        self.out = out
        self.only = only
        # the kinds recorded: each registered kind whose fidelity module says what its screens show
        self.kinds: dict[str, ModuleType] = {}
        for k in registry.kinds():
            mod = k.checks.fidelity()
            if mod is not None and hasattr(mod, "MARKS") and k.lab_driver() is not None and only in (None, k.facts.kind):
                self.kinds[k.facts.kind] = mod
        self.io = PaneIO()
        self.mismatches: list[str] = []
        self.written: list[Path] = []

    # -- lab plumbing --------------------------------------------------------------------
    def start(self) -> None:
        import relay_repl.lab.launcher as launcher

        counts = {kind: n for kind, n in lab_counts("screens").items() if kind in self.kinds}
        self.state = launcher.ensure_lab_counts(counts, progress=lambda m: print("  lab:", m))
        self.env = launcher.env()
        os.environ["RELAY_TMUX_SOCKET"] = self.env["RELAY_TMUX_SOCKET"]
        from relay_repl.lab.stubs.client import SyncStubClient

        self.stub = SyncStubClient(self.state.stub.control)

    def ref(self, name: str) -> Any:
        from relay_repl.transports.tmux import PaneRef

        s = self.state.session(name)
        return PaneRef(socket_path=self.state.tmux_socket_path, pane_id=s.pane_id or "")

    def pane(self, name: str) -> Any:
        import relay_repl.lab.helpers as helpers

        return helpers.pane(name)

    def type(self, name: str, text: str) -> None:
        self.pane(name).send_keys(text, enter=False, literal=True)

    def key(self, name: str, *keys: str) -> None:
        for k in keys:
            assert k not in ("Escape", "Esc", "C-["), "the recorder never sends Escape"
            self.pane(name).send_keys(k, enter=False)
            time.sleep(0.08)

    def enter(self, name: str) -> None:
        time.sleep(0.15)  # Codex swallows an Enter inside a paste burst
        self.key(name, "Enter")

    def focus(self, name: str, on: bool) -> None:
        """The focus report a terminal sends (ESC [ I in, ESC [ O out), as tmux forwards it."""
        self.pane(name).cmd("send-keys", "-H", "1b", "5b", "49" if on else "4f")

    def settle(self, seconds: float) -> None:
        time.sleep(seconds)

    def classify(self, kind: str, snap: Any) -> Any:
        return self.cls(kind).classify(snap)

    def stub_tool_call(self, name: str, tool: str, args: dict[str, Any], then_text: str, match: str) -> None:
        self.stub.tool_call(name, tool, args, then_text=then_text, match=match)

    def stub_reset(self, name: str) -> None:
        self.stub.set_script(name, {"rules": []})

    def snap(self, name: str) -> Any:
        return self.io.snapshot(self.ref(name))

    def wait(self, name: str, pred: Callable[[Any], bool], what: str, timeout: float = 20.0) -> Any:
        from relay_repl.system.polling import poll_until_sync

        last: list[Any] = []

        def check() -> Any:
            s = self.snap(name)
            last[:] = [s]
            return s if pred(s) else None

        got = poll_until_sync(check, timeout=timeout, interval=0.1)
        if got is None:
            raise RuntimeError(f"{name}: timed out waiting for {what}; screen:\n{last[0].excerpt()}")
        return got

    def has(self, text: str) -> Callable[[Any], bool]:
        return lambda s: any(text in ln for ln in s.lines)

    def idle(self, name: str, timeout: float = 30.0) -> None:
        import relay_repl.lab.helpers as helpers

        helpers.wait_idle(name, timeout)
        time.sleep(0.4)

    def clear(self, name: str, kind: str) -> None:
        """Empty the composer without Escape: C-u (Claude deletes one visual row per C-u)."""
        cls = self.cls(kind)
        for _ in range(12):
            s = self.snap(name)
            r = cls.classify(s)
            if r.composer == "empty" and not r.blockers:
                return
            self.key(name, self.kinds[kind].COMPOSER_END_KEY)
            self.key(name, "C-u")
            time.sleep(0.2)
        raise RuntimeError(f"{name}: could not clear the composer:\n{self.snap(name).excerpt()}")

    @staticmethod
    def cls(kind: str) -> Any:
        import relay_repl.agents.screens as screens

        return screens.for_kind(kind)

    # -- writing ----------------------------------------------------------------------------
    def record(self, kind: str, name: str, scenario: str, description: str, expect: Expect,
               snap: Any | None = None) -> None:
        snap = snap or self.snap(name)
        version = self.state.versions.get(kind) or "unknown"
        d = self.out / f"{kind}-{version}"
        d.mkdir(parents=True, exist_ok=True)
        (d / f"{scenario}.txt").write_text("\n".join(snap.lines) + "\n", encoding="utf-8")
        (d / f"{scenario}.e.txt").write_text("\n".join(snap.esc_lines or []) + "\n", encoding="utf-8")
        meta = {"client": kind, "version": version, "scenario": scenario, "description": description,
                **snap.meta(), "expected": {k: v for k, v in expect.__dict__.items() if v is not None}}
        (d / f"{scenario}.json").write_text(json.dumps(meta, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        self.written.append(d / f"{scenario}.txt")
        r = self.cls(kind).classify(snap)
        got = (r.kind, r.composer, sorted(r.blockers))
        want = (expect.kind, expect.composer, sorted(expect.blockers))
        ok = got == want and set(expect.hints) <= set(r.hints)
        if expect.payload is not None:
            ok = ok and self.cls(kind).payload_visible(snap, expect.payload)
        line = f"{kind}/{scenario}: {r.summary()} hints={r.hints}"
        print(("  ok        " if ok else "  MISMATCH  ") + line + ("" if ok else f"  (expected {want} hints {expect.hints})"))
        if not ok:
            self.mismatches.append(line)
            for why in r.reasons:
                print("              -", why)

    # -- scenarios ----------------------------------------------------------------------------
    def common(self, K: str, n: str, m: Marks) -> None:
        """The states every client is staged in, in one order; `m` holds what this client shows."""
        self.idle(n)
        self.record(K, n, "fresh", m.fresh, Expect("idle", "empty", hints=["fresh"]))

        self.type(n, "an operator draft, not sent")
        self.wait(n, self.has("an operator draft, not sent"), "draft")
        self.record(K, n, "idle_draft_fresh", "fresh session with an unsent draft", Expect("idle", "draft", ["draft"]))
        self.clear(n, K)

        self.type(n, "hello from the recorder")
        self.enter(n)
        self.wait(n, self.has(m.done), "finished turn")
        self.idle(n)
        self.record(K, n, "after_turn", m.after_turn, Expect("idle", "empty", hints=list(m.after_turn_hints)))

        if m.home_text is not None:
            home = m.home_text
            self.type(n, home)
            self.wait(n, self.has(home) if m.home_shown_by_text
                      else lambda s: self.cls(K).classify(s).composer == "draft", "draft")
            self.key(n, "Home")
            self.wait(n, lambda s: s.cursor_x == 2, "cursor home")
            self.record(K, n, "idle_draft_cursor_home", m.cursor_home, Expect("idle", "draft", ["draft"]))
            self.clear(n, K)

        self.type(n, LONG)
        self.wait(n, self.has("word39"), "long draft")
        time.sleep(0.3)
        self.record(K, n, "idle_draft_wrapped", "a long staged line wrapped over three composer rows",
                    Expect("idle", "draft", ["draft"], payload=LONG))
        self.clear(n, K)

        for typed, shown, what, scenario, description, expect, close in (
                ("/", m.slash, "slash menu", "slash_menu", m.slash_menu, Expect("idle", "draft", ["slash-menu", "draft"]),
                 "BSpace"),
                ("!", m.shell, "shell mode", "shell_mode", m.shell_mode, Expect("idle", "empty", ["shell-mode"]),
                 m.shell_close)):
            self.type(n, typed)
            self.wait(n, self.has(shown), what)
            self.record(K, n, scenario, description, expect)
            if close in ("!", "?"):
                self.type(n, close)
            else:
                self.key(n, close)
            self.clear(n, K)

        self.type(n, "?")
        self.wait(n, self.has(m.shortcuts), "shortcuts")
        self.record(K, n, "shortcuts_overlay", "`?` on an empty composer: the shortcuts panel",
                    Expect("idle", "empty", ["overlay"]))
        if m.shortcuts_close == "?":
            self.type(n, "?")
        else:
            self.key(n, m.shortcuts_close)
        self.wait(n, lambda s: not any(m.shortcuts in ln for ln in s.lines), "shortcuts closed")
        self.clear(n, K)  # a `?` that closes the panel may also be typed (Gemini CLI)

        import relay_repl.lab.helpers as helpers

        helpers.copy_mode(n)
        self.record(K, n, "copy_mode", "tmux copy mode (capture unchanged; only pane_in_mode tells)",
                    Expect("idle", "empty", ["copy-mode"]))
        self.pane(n).cmd("send-keys", "-X", "cancel")
        self.wait(n, lambda s: not s.pane_in_mode, "copy mode left")

    def sessions(self) -> list[tuple[str, str, ModuleType]]:
        """(kind, its first lab session's name, its fidelity module) for each kind recorded."""
        return [(kind, self.state.of_kind(kind)[0].name, mod) for kind, mod in self.kinds.items()
                if self.state.of_kind(kind)]

    def each_kind(self) -> None:
        """The states every client is staged in, then the states only it has (its `screens`)."""
        for kind, n, mod in self.sessions():
            self.common(kind, n, mod.MARKS)
            mod.screens(self, n)

    def dead(self) -> None:
        """Last: SIGKILL every client; remain-on-exit keeps the dead panes to capture."""
        import relay_repl.lab.helpers as helpers

        for kind, n, _ in self.sessions():
            helpers.kill9(n)
            s = self.wait(n, lambda s: s.pane_dead, "dead pane", 10)
            self.record(kind, n, "dead", "the client was SIGKILLed; tmux keeps the dead pane",
                        Expect("unknown", "absent", ["dead"]), s)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--out", type=Path, required=True, help="where the <kind>-<version>/ capture folders go")
    ap.add_argument("--only", choices=list(registry.kind_names()), help="record one kind only")
    ap.add_argument("--keep-lab", action="store_true", help="leave the lab running (prints its RELAY_HOME)")
    a = ap.parse_args(argv)
    if not os.environ.get("RELAY_LAB_CLIENTS"):
        import relay_repl.store.paths as paths

        # before RELAY_HOME moves: reuse the operator's client cache, never reinstall
        os.environ["RELAY_LAB_CLIENTS"] = str(paths.clients_dir())
    home = tempfile.mkdtemp(prefix="relay-rec-")
    os.environ["RELAY_HOME"] = home
    import relay_repl.lab.launcher as launcher

    rec = Recorder(a.out, a.only)
    try:
        rec.start()
        rec.each_kind()
        rec.dead()
    finally:
        if a.keep_lab:
            print(f"lab left running: RELAY_HOME={home}")
        else:
            launcher.down(progress=lambda m: None)
            shutil.rmtree(home, ignore_errors=True)
    print(f"{len(rec.written)} captures written under {a.out}; {len(rec.mismatches)} mismatch(es)")
    return 1 if rec.mismatches else 0


if __name__ == "__main__":
    sys.exit(main())
