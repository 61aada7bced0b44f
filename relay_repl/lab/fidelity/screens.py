"""Re-record the golden screen captures from the REAL clients in a private lab.

    python -m relay_repl.lab.fidelity.screens --out DIR [--only claude-code|codex]
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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

LONG = ("[relay/1 from=operator:relay@rec to=peer id=rec-7 hop=0 want=none] a long line that the composer has "
        "to wrap: " + " ".join(f"word{i}" for i in range(40)))


@dataclass
class Expect:
    kind: str
    composer: str
    blockers: list[str] = field(default_factory=list)
    hints: list[str] = field(default_factory=list)
    payload: str | None = None  # payload_visible(snapshot, payload) must be True


@dataclass(frozen=True)
class Marks:
    """What one client shows in the states `Recorder.common` stages in every client: the
    text each wait looks for and each capture's description (the rest is the same)."""

    fresh: str  # the fresh capture's description
    done: str  # on screen once a turn finished
    after_turn: str
    home_text: str  # a draft that reads like the placeholder
    home_shown_by_text: bool  # False: wait for the classifier to read a draft (the text is the placeholder's)
    cursor_home: str
    slash: str  # on screen while the `/` menu is open
    slash_menu: str
    shell: str  # on screen in shell mode
    shell_mode: str
    shortcuts: str  # on screen while the `?` panel is open
    shortcuts_close: str  # the key that closes it ("?" is typed literally)


CLAUDE_MARKS = Marks(
    fresh="fresh session, nothing typed yet", done="· done ",
    after_turn="idle after a finished turn (✻ … · done)", home_text="Press up to edit", home_shown_by_text=True,
    cursor_home="draft whose text resembles a placeholder, cursor moved home (cursor_x==2 but not empty)",
    slash="/add-dir", slash_menu="`/` typed: the command menu above the composer",
    shell="! for shell mode", shell_mode="`!` typed: bash mode (prompt `!`)",
    shortcuts="/ for commands", shortcuts_close="BSpace")
CODEX_MARKS = Marks(
    fresh="fresh session (after the lab's /rename), nothing typed", done="Worked for",
    after_turn="idle after a finished turn (`Worked for`)", home_text="Ask Codex to do anything",
    home_shown_by_text=False, cursor_home="a draft that reads like the placeholder, cursor home",
    slash="/model", slash_menu="`/` typed: the command popup",
    shell="Shell mode", shell_mode="`!` typed: shell mode (prompt `!`)",
    shortcuts="Keyboard shortcuts", shortcuts_close="?")


class Recorder:
    def __init__(self, out: Path, only: str | None) -> None:
        from relay_repl.transports.tmux import PaneIO

        self.out = out
        self.only = only
        self.io = PaneIO()
        self.mismatches: list[str] = []
        self.written: list[Path] = []

    # -- lab plumbing --------------------------------------------------------------------
    def start(self) -> None:
        import relay_repl.lab.launcher as launcher

        self.state = launcher.ensure_lab(claude=1, codex=1, progress=lambda m: print("  lab:", m))
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
            self.key(name, "End" if kind == "claude-code" else "C-e")
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
        self.record(K, n, "after_turn", m.after_turn, Expect("idle", "empty", hints=["done-line"]))

        self.type(n, m.home_text)
        self.wait(n, self.has(m.home_text) if m.home_shown_by_text
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

        for typed, shown, what, scenario, description, expect in (
                ("/", m.slash, "slash menu", "slash_menu", m.slash_menu, Expect("idle", "draft", ["slash-menu", "draft"])),
                ("!", m.shell, "shell mode", "shell_mode", m.shell_mode, Expect("idle", "empty", ["shell-mode"]))):
            self.type(n, typed)
            self.wait(n, self.has(shown), what)
            self.record(K, n, scenario, description, expect)
            self.key(n, "BSpace")
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

        import relay_repl.lab.helpers as helpers

        helpers.copy_mode(n)
        self.record(K, n, "copy_mode", "tmux copy mode (capture unchanged; only pane_in_mode tells)",
                    Expect("idle", "empty", ["copy-mode"]))
        self.pane(n).cmd("send-keys", "-X", "cancel")
        self.wait(n, lambda s: not s.pane_in_mode, "copy mode left")

    def claude(self, n: str = "alpha") -> None:
        K = "claude-code"
        self.common(K, n, CLAUDE_MARKS)

        self.type(n, "SLOW8 recorder keeps claude busy")
        self.enter(n)
        s = self.wait(n, lambda s: self.cls(K).classify(s).kind == "busy", "spinner", 15)
        self.record(K, n, "busy", "a turn running: spinner row, footer `esc to interrupt`", Expect("busy", "empty"), s)
        self.type(n, "[relay/1 test] typed while busy")
        self.wait(n, self.has("typed while busy"), "staged")
        time.sleep(0.3)
        self.record(K, n, "busy_staged", "text staged while busy (footer loses `esc to interrupt`)",
                    Expect("busy", "draft", ["draft"], payload="[relay/1 test] typed while busy"))
        self.enter(n)
        s = self.wait(n, self.has("Press up to edit queued messages"), "queued")
        time.sleep(0.3)
        self.record(K, n, "busy_queued", "Enter while busy: `⎿  Queued`, dim placeholder in the composer",
                    Expect("busy", "empty", hints=["queued"]))
        self.wait(n, lambda s: not any("Queued ·" in ln for ln in s.lines), "queue drained", 30)
        self.idle(n)
        self.record(K, n, "after_queued_turn", "idle after the queued message ran as the next turn",
                    Expect("idle", "empty", hints=["done-line"]))

        self.stub.tool_call(n, "Bash", {"command": "sleep 5", "description": "recorder holds a tool"},
                            then_text="tool done", match="RECORDER-TOOL")
        self.type(n, "RECORDER-TOOL run a slow tool")
        self.enter(n)
        s = self.wait(n, lambda s: self.has("sleep 5")(s) and self.cls(K).classify(s).kind == "busy", "tool running")
        time.sleep(0.5)
        self.record(K, n, "busy_tool", "a Bash tool running inside a turn", Expect("busy", "empty"))
        self.wait(n, self.has("tool done"), "tool turn done", 30)
        self.idle(n)

        self.stub.tool_call(n, "WebFetch", {"url": "http://127.0.0.1:9/relay-recorder", "prompt": "summarise"},
                            then_text="fetch done", match="RECORDER-DIALOG")
        self.type(n, "RECORDER-DIALOG please fetch")
        self.enter(n)
        self.wait(n, self.has("Do you want to"), "permission dialog")
        time.sleep(0.3)
        self.record(K, n, "permission_dialog", "WebFetch (not allow-listed) asks permission; the composer is gone",
                    Expect("unknown", "absent", ["dialog"]))
        self.type(n, "3")  # "No, and tell Claude what to do differently"
        self.wait(n, self.has("Interrupted"), "dialog declined")
        self.stub.set_script(n, {"rules": []})
        self.idle(n)
        self.record(K, n, "after_interrupt", "idle after a declined permission (`⎿  Interrupted`)",
                    Expect("idle", "empty", hints=["interrupted"]))

    def codex(self, n: str = "beta") -> None:
        K = "codex"
        self.common(K, n, CODEX_MARKS)

        self.type(n, "SLOW12 recorder keeps codex busy")
        self.enter(n)
        s = self.wait(n, lambda s: self.cls(K).classify(s).kind == "busy", "Working", 15)
        self.record(K, n, "busy", "a turn running: `• Working (… • esc to interrupt)`", Expect("busy", "empty"), s)
        staged = "[relay/1 test] staged while busy"
        self.type(n, staged)
        self.wait(n, self.has("tab to queue message"), "staged")
        time.sleep(0.3)
        self.record(K, n, "busy_staged", "text staged while busy: hint `tab to queue message`",
                    Expect("busy", "draft", ["draft"], ["tab-to-queue"], payload=staged))
        self.key(n, "Tab")
        self.wait(n, self.has("Queued follow-up inputs"), "tab queue")
        time.sleep(0.3)
        self.record(K, n, "busy_tab_queued", "after Tab while busy: `• Queued follow-up inputs`",
                    Expect("busy", "empty", hints=["queued"]))
        steer = "[relay/1 test] steered SLOW6"
        self.type(n, steer)
        self.wait(n, self.has("steered SLOW6"), "staged steer")
        self.enter(n)
        s = self.wait(n, lambda s: self.cls(K).submitted(s, s, steer).composer_emptied and any(
            ln.startswith("› [relay/1 test] steered") for ln in s.lines), "steer shown")
        time.sleep(0.3)
        self.record(K, n, "busy_steered", "Enter while busy steers: `› <payload>` in history, composer empty, still Working",
                    Expect("busy", "empty"))
        self.wait(n, lambda s: self.cls(K).classify(s).kind == "idle" and not any(
            "Queued follow-up" in ln for ln in s.lines), "all turns done", 40)
        self.idle(n)
        self.record(K, n, "after_busy_turns", "idle after the steered turn and the queued follow-up ran",
                    Expect("idle", "empty", hints=["done-line"]))

        self.stub.tool_call(n, "exec_command", {"cmd": "sleep 5", "yield_time_ms": 20000},
                            then_text="tool done", match="RECORDER-TOOL")
        self.type(n, "RECORDER-TOOL run a slow tool")
        self.enter(n)
        self.wait(n, lambda s: self.has("background terminal running")(s) and self.cls(K).classify(s).kind == "busy",
                  "tool running")
        time.sleep(0.3)
        self.record(K, n, "busy_tool", "an exec_command running inside a turn (`· 1 background terminal running`)",
                    Expect("busy", "empty"))
        during = "[relay/1 test] typed during a tool"
        self.type(n, during)
        self.wait(n, self.has("typed during a tool"), "staged during tool")
        self.enter(n)
        self.wait(n, self.has("Messages to be submitted after next tool call"), "pending steer")
        time.sleep(0.3)
        self.record(K, n, "busy_tool_pending", "Enter while a tool runs: `• Messages to be submitted after next tool call`",
                    Expect("busy", "empty", hints=["steer-pending"]))
        self.wait(n, self.has("tool done"), "tool turn done", 30)
        self.idle(n)

        # an approval dialog needs an approval policy: switch this thread to "Ask for approval"
        self.type(n, "/permissions")
        self.wait(n, self.has("/permissions  choose"), "popup")
        self.enter(n)
        self.wait(n, self.has("Update Model Permissions"), "permissions view")
        time.sleep(0.3)
        self.record(K, n, "selection_view", "/permissions selection view (`enter select · esc back`)",
                    Expect("unknown", "absent", ["dialog"]))
        self.type(n, "1")
        self.wait(n, self.has("Permission selection requested"), "permission set")
        self.idle(n)
        self.stub.tool_call(n, "exec_command", {"cmd": "true", "sandbox_permissions": "require_escalated",
                                                "justification": "the relay recorder wants an approval dialog",
                                                "yield_time_ms": 10000},
                            then_text="approval done", match="RECORDER-DIALOG")
        self.type(n, "RECORDER-DIALOG please run")
        self.enter(n)
        self.wait(n, self.has("Would you like to run the following command?"), "approval")
        time.sleep(0.3)
        self.record(K, n, "approval_dialog", "exec_command with require_escalated under `Ask for approval`",
                    Expect("unknown", "absent", ["dialog"]))
        self.type(n, "y")
        self.wait(n, self.has("approval done"), "approved run")
        self.idle(n)

    def dead(self) -> None:
        """Last: SIGKILL both clients; remain-on-exit keeps the dead panes to capture."""
        import relay_repl.lab.helpers as helpers

        for kind, n in (("claude-code", "alpha"), ("codex", "beta")):
            if self.only and self.only != kind:
                continue
            helpers.kill9(n)
            s = self.wait(n, lambda s: s.pane_dead, "dead pane", 10)
            self.record(kind, n, "dead", "the client was SIGKILLed; tmux keeps the dead pane",
                        Expect("unknown", "absent", ["dead"]), s)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--out", type=Path, required=True, help="where the <kind>-<version>/ capture folders go")
    ap.add_argument("--only", choices=["claude-code", "codex"])
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
        if a.only in (None, "claude-code"):
            rec.claude()
        if a.only in (None, "codex"):
            rec.codex()
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
