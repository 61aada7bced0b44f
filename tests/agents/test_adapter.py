"""The adapter files are data the code depends on: they must load, validate and say true things."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import relay_repl.agents.adapter as ad
from relay_repl.agents.adapter import AdapterError, available_adapters, load_adapter, parse_adapter

REPO = Path(__file__).resolve().parents[2]


def test_both_adapters_load_and_match_their_kind():
    assert {"claude-code", "codex"} <= set(available_adapters())
    cc, cx = load_adapter("claude-code"), load_adapter("codex")
    assert (cc.kind, cc.prefix, cx.kind, cx.prefix) == ("claude-code", "claude", "codex", "codex")
    assert cc.verified_versions == ["2.1.328", "2.1.332"] and cx.verified_versions == ["0.169.0", "0.171.0"]
    assert cc.registry.env == "CLAUDE_CONFIG_DIR" and cx.registry.env == "CODEX_HOME"


def test_transport_capabilities_are_the_documented_ones():
    cc, cx = load_adapter("claude-code"), load_adapter("codex")
    sock, msg, tmux = cc.transport("claude-code-socket"), cc.transport("claude-code-message"), cc.transport("tmux")
    assert (sock.receipts, sock.live_only, sock.same_uid_only, sock.native_reply, sock.durable) == (True, True, True, False, False)
    assert (msg.native_reply, msg.receipts, msg.live_only, msg.same_uid_only) == (True, True, True, True)
    assert (tmux.live_only, tmux.needs_pane, tmux.durable) == (True, True, False)
    q = cx.transport("codex-queue")
    assert q.durable and not q.live_only and not q.needs_pane
    assert cx.transport("tmux").needs_pane
    with pytest.raises(KeyError):
        cx.transport("claude-code-socket")


def test_ui_mode_chars_follow_the_facts_not_the_seed():
    # codex.md §4: `#` is literal there, `?` is swallowed; Claude keeps the seed's set plus `?`
    # (its shortcuts panel, adapters/claude-code.md Screen marks).
    assert set(load_adapter("codex").screen.ui_mode_chars) == set("/@!?")
    assert set(load_adapter("claude-code").screen.ui_mode_chars) == set("/!#@?")


# Literal captures from the facts documents (codex.md §4, claude-code.md §6).
CODEX_BUSY = """› SLOW20 busy turn one
◦ Working (7s • esc to interrupt)

› [relay/1 test] typed while busy

  fake-model default · /work · relay-a
  tab to queue message"""

CODEX_IDLE = """› Ask Codex to do anything

  fake-model default · /tmp/disc-probe/work · relay-a
  ← for agents · ? for shortcuts                                     ⚠ 2 warnings · f2 to view"""

CODEX_APPROVAL = """  Would you like to run the following command?
  $ touch /etc/stub-approval-probe
› 1. Yes, proceed (y)
  Press enter to confirm or esc to cancel"""

CLAUDE_BUSY = """✢ Incubating…
───────────────────────────────────────────── alpha ─
❯\u00a0
─────────────────────────────────────────────
  ⏵⏵ auto mode on (shift+tab to cycle) · esc to interrupt"""

CLAUDE_IDLE = """● ack: hello
✻ Brewed for 0s · done 11:51 AM
───────────────────────────────────────────── alpha ─
❯\u00a0
─────────────────────────────────────────────"""


def test_codex_footer_regex_extracts_the_thread_name():
    (pat,) = load_adapter("codex").screen.compiled("footer")
    m = list(pat.finditer(CODEX_IDLE))[-1]
    assert m.group("thread_name") == "relay-a" and m.group("cwd") == "/tmp/disc-probe/work"
    unnamed = pat.search("  fake-model default · /work\n  ← for agents · ? for shortcuts")
    assert unnamed and unnamed.group("thread_name") is None
    # the hint line is never taken for a footer
    assert pat.search("  ← for agents · ? for shortcuts") is None


def test_status_maps_are_total_for_documented_values():
    assert load_adapter("claude-code").status == {"idle": "idle", "busy": "busy", "waiting": "waiting", "shell": "idle"}
    cx = load_adapter("codex").status
    assert cx["idle"] == "idle" and cx["active"] == "busy" and cx["active+waitingOnApproval"] == "waiting"


def test_template_block_validates_as_a_spec():
    spec = parse_adapter((REPO / "adapters" / "_template.md").read_text(), "_template.md")
    assert spec.kind == "<kind>"
    assert spec.screen.classifier


def test_every_adapter_has_the_template_sections():
    heads = re.findall(r"^## (.+)$", (REPO / "adapters" / "_template.md").read_text(), re.M)
    assert len(heads) == 7
    for kind in available_adapters():
        text = (REPO / "adapters" / f"{kind}.md").read_text()
        have = re.findall(r"^## (.+)$", text, re.M)
        assert have == heads, f"{kind}.md sections differ from the template"


MINI = """# x
```toml
kind = "demo"
prefix = "demo"
verified_versions = ["1.0"]
facts = "agents/demo.md"
[registry]
env = "DEMO_HOME"
default = "~/.demo"
[[transports]]
name = "tmux"
needs_pane = true
[screen]
classifier = "demo"
ui_mode_chars = "/"
[screen.marks]
busy = ['x']
idle = []
composer = []
dialog = []
menu = []
```
"""


def test_parse_errors_are_one_line_and_say_what_to_do():
    with pytest.raises(AdapterError, match="exactly one ```toml block, found 0"):
        parse_adapter("# no block", "x.md")
    with pytest.raises(AdapterError, match="found 2"):
        parse_adapter(MINI + MINI, "x.md")
    with pytest.raises(AdapterError, match=r"^x\.md: bogus: is not an adapter key; fix the toml block$"):
        parse_adapter(MINI.replace('facts = "agents/demo.md"', 'facts = "a"\nbogus = 1'), "x.md")
    with pytest.raises(AdapterError, match="bad regex"):
        parse_adapter(MINI.replace("busy = ['x']", "busy = ['(']"), "x.md")
    with pytest.raises(AdapterError, match=r"screen.classifier: Field required"):
        parse_adapter(MINI.replace('classifier = "demo"\n', ""), "x.md")
    with pytest.raises(AdapterError, match="unknown states"):
        parse_adapter(MINI.replace("[screen]", '[status]\nidle = "sleepy"\n[screen]'), "x.md")
    err = None
    try:
        parse_adapter("# no block", "x.md")
    except AdapterError as exc:
        err = str(exc)
    assert err and "\n" not in err


def test_validation_errors_read_like_the_envelopes_and_recipes():
    """The adapter block's line comes from core/validation.first_error like the envelope's and the
    recipe's: pydantic's `Value error, ` prefix dropped, the rest counted as ` (+N more)`."""
    bad_regex = MINI.replace("busy = ['x']", "busy = ['(']")
    with pytest.raises(AdapterError) as one:
        parse_adapter(bad_regex, "x.md")
    assert str(one.value).startswith("x.md: screen.marks.busy.0: bad regex '('") and "Value error" not in str(one.value)
    assert str(one.value).endswith("; fix the toml block") and "more" not in str(one.value)
    with pytest.raises(AdapterError, match=r"^x\.md: screen\.marks\.busy\.0: bad regex .* \(\+1 more\); fix the toml block$"):
        parse_adapter(bad_regex.replace("idle = []", "idle = ['[']"), "x.md")


def test_adapters_dir_override_and_kind_check(tmp_path, monkeypatch):
    (tmp_path / "demo.md").write_text(MINI)
    (tmp_path / "other.md").write_text(MINI)
    monkeypatch.setenv("RELAY_ADAPTERS_DIR", str(tmp_path))
    spec = load_adapter("demo")
    assert spec.prefix == "demo" and spec.registry.base({"HOME": "/h"}) == Path("/h/.demo")
    assert spec.registry.base({"DEMO_HOME": "/x", "HOME": "/h"}) == Path("/x")
    with pytest.raises(AdapterError, match="declares kind 'demo', expected 'other'"):
        load_adapter("other")
    with pytest.raises(AdapterError, match="copy adapters/_template.md"):
        load_adapter("nope")
    assert ad.adapter_dirs()[0] == tmp_path


def test_each_adapter_names_a_classifier_module_that_exists():
    import relay_repl.agents.screens as screens

    from relay_repl.agents import agent_for
    from relay_repl.agents.registry import kinds

    # every registered kind with a screen (Gemini's adapter named a bare module that did not exist)
    typed = [k.facts.kind for k in kinds() if agent_for(k.facts.kind).screen.classifier() is not None]
    assert {"claude-code", "codex", "gemini-cli"} <= set(typed), typed
    for kind in typed:
        module = screens.for_kind(kind)
        assert module is not None and module.__name__ == load_adapter(kind).screen.classifier
        assert agent_for(kind).screen.classifier() is module  # the kind's own screen() and its adapter agree


def test_one_codex_footer_pattern_for_discovery_and_the_classifier():
    """Discovery (footer names the thread) and the tmux preflight (screen classifier) read
    the same pattern from the adapter, so they cannot reach different verdicts on a pane."""
    from relay_repl.agents.codex import footer_thread_name
    from relay_repl.agents.codex import screen
    from relay_repl.agents.screens.model import Snapshot

    pats = load_adapter("codex").screen.compiled("footer")
    assert [screen.FOOTER.pattern] == [p.pattern for p in pats]
    for row, name in (("  gpt-5.5 high · ~/work · relay-a", "relay-a"),
                      ("  lab-model · /tmp/x · beta      Pursuing goal (3s)", "beta"),
                      ("  gpt-5.5 high · ~/work", None)):
        assert footer_thread_name(row, pats) == name
        assert screen.footer_name(Snapshot(lines=["", row])) == name
