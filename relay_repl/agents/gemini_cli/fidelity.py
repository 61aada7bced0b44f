"""The facts about Gemini CLI that `relay fidelity` checks live (lab/fidelity runs the checks), its
own discovery checks and the screen states the recorder stages in it (adapters/gemini-cli.md).

Their home is the kind's package: a fact about the client changes with the client, and the lab
iterates every kind's table rather than naming the kinds. Facts shared with another kind carry the
same text there, and are reported once for all.
"""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path
from typing import Any

from relay_repl.agents.fidelity import (BUSY_WHILE_A_TURN_RUNS, LISTED, TMUX_IDLE_DELIVERY, TMUX_REFUSALS, Expect,
                                       FidelityLab, Marks, ScreenStage, TmuxLab)
from relay_repl.agents.gemini_cli.chats import CHAT_RE, project_id
from relay_repl.agents.gemini_cli.detail import GeminiDetail
from relay_repl.agents.gemini_cli.provider import BINARY, HEADLESS_ENV, KIND, PREFIX
from relay_repl.agents.kind import FidelityFact
from relay_repl.core.delivery import DeliveryState
from relay_repl.core.envelope import Envelope
from relay_repl.core.target import Target

_D, _T = "discovery:", "tmux:"
TMUX_NAME = "gamma"
"""Its session in the tmux checks' lab (one session of each kind: alpha, beta, then gamma)."""

FACTS: tuple[FidelityFact, ...] = (
    LISTED,
    BUSY_WHILE_A_TURN_RUNS,
    FidelityFact(fact="gemini chat file tmp/<project id>/chats/session-*.jsonl, header sessionId (GM §2)",
                 paths="discovery, tmux", checks=(_D + "gemini_chat_file_names_the_session",)),
    FidelityFact(fact="gemini headless under CI=true or without a terminal: no TUI, never listed (GM §1)",
                 paths="discovery", checks=(_D + "gemini_headless_under_ci_or_without_a_terminal",)),
    TMUX_IDLE_DELIVERY,
    FidelityFact(fact="gemini chat file records a typed line as a user record of exactly its text, `?` and `!` "
                      "included (first two characters typed one at a time)", paths="tmux",
                 checks=(_T + f"idle_delivery_with_receiver_evidence[{TMUX_NAME}]",)),
    FidelityFact(fact="busy submit: gemini Enter queues the line for the next turn (GM §5)", paths="tmux",
                 checks=(_T + "busy_gemini_enter_queues_then_delivers",)),
    TMUX_REFUSALS,
)

LAB_COUNTS = {"discovery": 1, "tmux": 1, "screens": 1}
"""Gemini sessions each check group's lab starts (none for `native`: typing is its only way in)."""

COMPOSER_END_KEY = "End"
"""The tmux key that moves the cursor to the end of Gemini's composer (the lab clears a draft with it and C-u)."""


# built at import, so a fast test that imports this module fails on an envelope the builder refuses
BUSY_PAYLOAD = Envelope.make(sender="operator:relay@t", to="peer", id="t-busy-gemini-1", body="typed while gemini is busy?").compose()


def tmux_unconfirmed(confirm: dict[str, Any], payload: str) -> str | None:
    """Why the tmux transport's confirm-stage data is not Gemini's own evidence of `payload` typed (its chat
    file's record of that id, read here afresh: `type` user and `content` exactly `[{"text": payload}]`),
    or None when it is."""
    rec, chat = confirm.get("record") or {}, confirm.get("chat")
    if not chat or not rec.get("id"):
        return f"no chat file record in the confirm data: {confirm}"
    last: dict[str, Any] | None = None
    for line in Path(chat).read_text(encoding="utf-8").splitlines():
        try:
            obj = json.loads(line)
        except ValueError:
            continue
        if isinstance(obj, dict) and obj.get("id") == rec["id"]:
            last = obj  # a record written again with the same id: the last line wins (GM §2)
    if last is None:
        return f"record {rec['id']} is not in {chat}"
    if last.get("type") == "user" and last.get("content") == [{"text": payload}]:
        return None
    return f"chat record {rec['id']} is not a user record of exactly the typed line: {str(last)[:300]}"


# -- discovery ----------------------------------------------------------------------------------------


def listed(t: Target, s: Any, version: str) -> None:
    """What discovery reports for idle lab session `s` (lab.state.LabSession) beyond pane, state and version:
    the wrapper's pid, the chat header's session id as its address, its chat file as evidence."""
    assert (t.pid, t.address) == (s.pid, s.session_id), t
    assert t.transports == ("tmux",), t.transports
    assert t.evidence_file == s.transcript, (t.evidence_file, s.transcript)


def busy_detail(t: Target) -> None:
    return None  # it keeps no status record: busy is read from its screen


def idle_detail(t: Target) -> None:
    assert t.evidence_file and Path(t.evidence_file).is_file(), t


async def gemini_chat_file_names_the_session(lab: FidelityLab) -> None:
    """GM §2: projects.json maps the working directory to a short id; the chat file is
    `.gemini/tmp/<short id>/chats/session-<date>-<8 hex>.jsonl`, its first line the header whose
    `sessionId` starts with those 8 hex; discovery names the session after the short id."""
    ts = await lab.discover()
    for s in lab.status().of_kind(KIND):
        t = lab.one(ts, f"{PREFIX}:{s.name}")
        gdir = Path(GeminiDetail.of(t).gemini_dir or "")
        assert gdir == lab.home() / ".gemini", (gdir, lab.home())
        short = project_id(gdir, s.cwd)
        assert short == Path(s.cwd).name == s.name, (short, s.cwd)
        chat = Path(t.evidence_file or "")
        assert chat.parent == gdir / "tmp" / short / "chats", chat
        m = CHAT_RE.match(chat.name)
        assert m, chat.name
        header = json.loads(chat.read_text(encoding="utf-8").splitlines()[0])
        assert header.get("sessionId") == t.address and str(t.address).startswith(m.group(2)), (header, t.address)


async def gemini_headless_under_ci_or_without_a_terminal(lab: FidelityLab) -> None:
    """GM §1: in a terminal with CI=true it starts no TUI (prints why, exits 42); with stdin not a
    terminal it is headless, the same, and discovery does not list it while it runs. (Not "no other
    Gemini listed": discovery sees every Gemini process of this user, other labs' included.)"""
    import subprocess

    s = lab.status().of_kind(KIND)[0]
    own = lab.launch_env(s.name)  # its home, the lab's API key and stub: all a TUI would need
    env = {k: v for k, v in {**lab.client_env(), **own}.items() if k not in HEADLESS_ENV}
    exe = str(lab.bin_dir() / BINARY)
    piped = subprocess.Popen([exe], cwd=s.cwd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT)
    script = ("env CI=true " + " ".join(f"{k}={shlex.quote(v)}" for k, v in own.items()) + f" {shlex.quote(exe)}; "
              "echo relay-exit=$?; sleep 60")
    lab.tmux("new-session", "-d", "-s", "headless", "-x", "160", "-y", "45", "-c", s.cwd, "--", "sh", "-c", script)
    try:
        # while the piped client runs (it reads stdin to its end) discovery must not list it
        ts = await lab.discover()
        assert piped.pid not in {t.pid for t in ts}, [t for t in ts if t.pid == piped.pid]
        assert piped.stdin is not None
        piped.stdin.close()
        out = piped.stdout.read().decode(errors="replace") if piped.stdout else ""
        assert piped.wait(timeout=60) == 42 and "No input provided via stdin" in out, (piped.returncode, out[-400:])

        async def exited() -> str | None:
            screen = lab.tmux("capture-pane", "-p", "-t", "=headless:").stdout
            return screen if "relay-exit=" in screen else None

        screen = await lab.until(exited, timeout=60)
        assert "No input provided via stdin" in screen and "relay-exit=42" in screen, screen.strip()[-400:]
    finally:
        lab.tmux("kill-session", "-t", "=headless")
        if piped.poll() is None:
            piped.kill()
            piped.wait(timeout=10)


DISCOVERY_CHECKS = {
    "gemini_chat_file_names_the_session": gemini_chat_file_names_the_session,
    "gemini_headless_under_ci_or_without_a_terminal": gemini_headless_under_ci_or_without_a_terminal,
}


# -- its screens ----------------------------------------------------------------------------------------

MARKS = Marks(
    fresh="the lab configuration (YOLO, true colour), focused, nothing typed", done="✦ ",
    after_turn="idle after a finished turn, empty composer", after_turn_hints=(),
    slash="(1/", slash_menu="`/` typed: the command list `(1/N)` under the composer",
    shell="shell mode enabled", shell_mode="`!` typed into an empty composer: shell mode, prompt `!`",
    shell_close="!",
    shortcuts="See /help for more", shortcuts_close="?")  # the second `?` closes it and is typed too
"""What Gemini CLI shows in the states the recorder stages in every client. No placeholder-like draft
with the cursor home: its classifier cannot tell that from the placeholder (adapters, Gaps)."""


def screens(rec: ScreenStage, n: str) -> None:
    """The screen states only Gemini CLI is staged in (after the common ones), captured by `rec`."""
    K = KIND
    rec.focus(n, False)  # tmux's focus-out, as to a pane nobody looks at: no cursor cell, no terminal cursor
    rec.wait(n, lambda s: rec.classify(K, s).composer == "unknown", "unfocused composer")
    rec.settle(0.3)
    rec.record(K, n, "unfocused_empty", "focus-out (ESC [ O): the placeholder without Gemini's cursor cell, the "
               "terminal cursor off the composer: read unknown, fail closed (adapters/gemini-cli.md, Focus)",
               Expect("idle", "unknown", ["composer-unknown"]))
    rec.focus(n, True)
    rec.wait(n, lambda s: rec.classify(K, s).composer == "empty", "focused again")
    rec.settle(0.3)
    rec.record(K, n, "refocused", "focus-in (ESC [ I) after focus-out: the cursor cell is back, an empty composer",
               Expect("idle", "empty"))

    rec.type(n, "SLOW10 recorder keeps gemini busy")
    rec.enter(n)
    s = rec.wait(n, lambda s: rec.classify(K, s).kind == "busy", "spinner", 15)
    rec.record(K, n, "busy", "a turn running: `⠹ Thinking... (esc to cancel, Ns)` above the rule",
               Expect("busy", "empty"), s)
    staged = "[relay/1 test] typed while it works"
    rec.type(n, staged)
    rec.wait(n, rec.has("typed while it works"), "staged")
    rec.settle(0.3)
    rec.record(K, n, "busy_staged", "busy, text typed into the composer (not yet Enter)",
               Expect("busy", "draft", ["draft"], payload=staged))
    rec.enter(n)
    rec.wait(n, lambda s: any(re.match(r"^\s+Queued \(press", ln) for ln in s.lines), "queued")
    rec.settle(0.3)
    rec.record(K, n, "busy_queued", "busy, Enter queued the text: `Queued (press ↑ to edit):` above the spinner",
               Expect("busy", "empty", hints=["queued"]))
    rec.wait(n, lambda s: rec.classify(K, s).kind == "idle" and not any("Queued (press" in ln for ln in s.lines),
             "queue drained", 40)
    rec.idle(n)


# -- its own tmux checks (lab/fidelity/tmux.py runs these) ---------------------------------------------

async def busy_gemini_enter_queues_then_delivers(lab: TmuxLab) -> None:
    """Gemini CLI (GM §5): Enter while busy queues the line (`Queued (press ↑ to edit):`); its chat file
    records it, as an ordinary user record, only when the busy turn ends and it is sent."""
    await lab.idle(TMUX_NAME)
    await lab.make_busy(TMUX_NAME, 6)
    payload = BUSY_PAYLOAD
    try:
        d, keys, target = await lab.live_send(TMUX_NAME, payload, timeout=40)
    finally:
        await lab.idle(TMUX_NAME)
        await lab.clear_composer(TMUX_NAME)  # a send left pending leaves its payload staged: not for the next check
    assert d.state is DeliveryState.IN_TURN, d.summary() + "\n" + "\n".join(e.detail for e in d.evidence)
    assert lab.typed_once(keys, payload, target), "busy Gemini: the payload once, one Enter"
    assert d.evidence[0].data["reading"]["kind"] == "busy", d.evidence[0].data["reading"]
    assert (d.extra.tmux or {})["kind_at_submit"] == "busy", d.extra.tmux
    why = tmux_unconfirmed(d.evidence[-1].data, payload)
    assert why is None, why
    await lab.idle(TMUX_NAME)


TMUX_CHECKS = {"busy_gemini_enter_queues_then_delivers": busy_gemini_enter_queues_then_delivers}
# no `open_dialog`: its lab sessions run in YOLO mode, so no approval box can be staged
