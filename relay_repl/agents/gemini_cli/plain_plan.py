"""A send's plan parts for a Gemini CLI target, with the standard library alone (issue 40).

`relay send gemini:NAME MESSAGE` prints its plan before pydantic and the event loop are loaded
(frontends/send_plain.py, the contract in the entry-point group `relay_repl.plain_plan`): this module
answers for Gemini what `TmuxTransport` would put in the plan (`plan_notes`, `delivered_when`, and the
note `before_asking` makes from preflight's look at the pane), or None wherever that is not certain,
and the command then runs as it always did (its refusals, in their own words, included):

- a transport other than tmux offered, or the adapter naming another screen classifier;
- a client version the policy does not let through, nothing usable (`send.choose` says None);
- the pane not read exactly: gone, another pane id, no snapshot; a screen with no composer (preflight
  looks again a moment later before it refuses: the models do that);
- any refusal preflight would make before asking: a roster mismatch (the pane no longer runs the
  session's gemini.js, the footer shows another session), a blocker, an unrecognised screen, a composer
  that is not empty.

The look is preflight's own: the snapshot command of agents/screens/capture.py, read by the
classifier the adapter names (screen.py), judged by core/tmux_words.py and Gemini's roster rule
(plan_words.py), which `TmuxTransport` and `GeminiScreen` call too. When the send path lists through
`listing` here, the snapshot rides in the listing's own capture (one tmux process identifies the session
and looks at its pane); otherwise `plan_parts` takes it in one more tmux call.

Loaded by file (never by name: the agents package imports pydantic); its siblings through `prefetch.sibling`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from relay_repl.core import tmux_words
from relay_repl.system.prefetch import sibling

KIND = "gemini-cli"
CLASSIFIER = "relay_repl.agents.gemini_cli.screen"
"""The classifier this module reads a pane with: the plan is plain only while the adapter names it."""

_looks: dict[tuple[str, str], dict[str, Any]] = {}
"""Snapshot fields the last `listing` took, by pane key (socket path, pane id): one send per process."""


class LookingRoster:
    """A plain roster (system/pane_list.PlainRoster) whose capture also snapshots each pane it captures,
    in the same tmux process (agents/screens/capture.capture_with_snapshots); the snapshots kept here."""

    def __init__(self, roster: Any) -> None:
        self.roster, self.env = roster, roster.env
        self.snapshots: dict[tuple[str, str], dict[str, Any]] = {}

    def panes(self) -> list[Any]:
        return self.roster.panes()

    def by_pane_pid(self) -> dict[int, list[Any]]:
        return self.roster.by_pane_pid()

    def processes(self) -> dict[int, Any]:
        return self.roster.processes()

    def capture(self, panes: list[Any]) -> dict[tuple[str, str], str]:
        texts, self.snapshots = sibling(__name__, "relay_repl.agents.screens.capture").capture_with_snapshots(
            panes, self.env)
        return texts


def _listing_module() -> Any:
    """plain_listing.py, by file under the name the plain paths load it by (`relay targets`, `relay send`'s
    pre-plan: entry-point group `relay_repl.plain_listing`), so one copy serves the listing and this module."""
    from relay_repl.system.prefetch import load_by_file

    mod = load_by_file(KIND, "relay_repl.agents.gemini_cli.plain_listing", "relay_repl.plain_listing")
    if mod is None:
        raise ImportError("relay_repl.agents.gemini_cli.plain_listing (by file)")
    return mod


def listing(env: Mapping[str, str], roster: Any) -> list[Any] | None:
    """The rows plain_listing.listing gives (the very function), with each Gemini pane's preflight
    snapshot taken in the listing's one capture and kept for `plan_parts`."""
    looking = LookingRoster(roster)
    rows = _listing_module().listing(env, looking)
    _looks.clear()
    _looks.update(looking.snapshots)
    return rows


def _snapshot(row: Any, env: Mapping[str, str]) -> Any:
    """The pane's snapshot: the one `listing` took, else one taken now (PaneIO.snapshot's command); None if unread."""
    capture = sibling(__name__, "relay_repl.agents.screens.capture")
    key = (row.tmux_socket, row.pane)
    fields = _looks.pop(key, None)
    if fields is None:
        from relay_repl.system.pane_list import run_tmux

        if not row.tmux_socket or not row.pane:
            return None
        mark = capture.new_mark()
        out = run_tmux(row.tmux_socket, capture.snapshot_args(row.pane, mark), env)
        fields = capture.snapshot_fields(out.split("\n"), mark) if out is not None else None
        if fields is None:
            return None
    return sibling(__name__, "relay_repl.agents.screens.model").Snapshot(**fields)


def _clients_under(pane_pid: int) -> set[int]:
    """The Gemini processes under the pane now (ScreenBase.pane_processes with GeminiScreen.is_client)."""
    from relay_repl.system.proc import descendants, process_table, read_cmdline

    own = sibling(__name__, "relay_repl.agents.gemini_cli.own")
    return {pid for pid in descendants(pane_pid, process_table()) if own.is_gemini(read_cmdline(pid) or [])}


def plan_parts(row: Any, env: Mapping[str, str], send: Any) -> dict[str, Any] | None:
    """What `TmuxTransport` puts in a plan to this Gemini session (the contract's keys), or None: hand over."""
    if row.kind != KIND or tuple(row.transports) != (tmux_words.NAME,) or not row.pane or not row.tmux_socket:
        return None
    adapter = _listing_module().plain_facts().adapter(KIND)
    screen_spec = adapter.get("screen") if adapter is not None else None
    if not isinstance(screen_spec, dict) or screen_spec.get("classifier") != CLASSIFIER:
        return None  # tmux types only through the classifier the adapter names: the models find it
    chosen = send.choose(row, {tmux_words.NAME: None})  # a classifier exists: tmux's own refusal is None
    if chosen is None or chosen[0] != tmux_words.NAME:
        return None
    transport, fallback, choice_notes = chosen
    snap = _snapshot(row, env)
    if snap is None or snap.pane_id != row.pane:
        return None  # PaneIO.locate would not find it (or the models must say why)
    screen = sibling(__name__, "relay_repl.agents.gemini_cli.screen")
    reading = screen.classify(snap)
    if snap.pane_pid is None:
        return None  # ScreenBase.pane_processes: "pane has no pid", a roster refusal
    words = sibling(__name__, "relay_repl.agents.gemini_cli.plan_words")
    roster_why = words.roster_mismatch(row.pid, (row.detail or {}).get("session_id"), snap,
                                       _clients_under(snap.pane_pid), screen.footer_session(snap))
    if tmux_words.screen_refusal(reading, roster_why) is not None:
        # refused before asking: the models say so with the plan, in their words (a screen with no composer
        # too: preflight looks again a moment later, in case it was captured mid-redraw, before refusing)
        return None
    return {"transport": transport, "fallback": fallback, "choice_notes": tuple(choice_notes), "payload": send.line,
            "delivered_when": words.DELIVERED_WHEN, "now": tmux_words.now_note(row.pane, reading),
            "notes": tmux_words.plan_notes(words.busy_note(row.state)), "files": ()}


def reply_route(row: Any, env: Mapping[str, str], relay_id: str, inbox: str | None) -> str | None:
    """The plan's reply route for a send to `row` that asks for an answer (`relay run ping`'s first step), as
    `GeminiReplies.route` names it (same rules: core/reply_words.configured over plan_words.reply_options,
    from the session's settings.json read by the same loader), or None when it is not an open route."""
    from relay_repl.core import reply_words

    if row.kind != KIND or not isinstance(row.detail, dict):
        return None
    words = sibling(__name__, "relay_repl.agents.gemini_cli.plan_words")
    cfg, path = words.settings_at(row.detail.get("gemini_dir"))
    chat = row.evidence_file
    opts = words.reply_options(cfg, path, str(chat) if chat else None)
    route = reply_words.configured(row.spec, relay_id, inbox, None, opts,
                                   lambda: reply_words.relay_reply(row.spec, relay_id, inbox, reply_words.IDENTIFIED))
    return route["how"] if route["ok"] and not route.get("needs_native_reply") else None
