"""The lab holds no kind's facts under generic names (issue 35): a lab session's messaging socket, its
thread, the daemon hosting it, its client's tool names and argument shapes are its kind's (its lab driver,
agents/<kind>/lab.py), kept in lab.json as the session's `facts` and asked of the driver. Checked on
the syntax tree of relay_repl/lab/, beside tests/test_kind_boundary.py (which pins the kinds' *names*):

- no string constant holds one of a lab kind's tool names as a word (`"SendMessage"`, `"select:ToolSearch"`,
  `"exec_command"`), its rename command or its `relay lab up|install` flag (`--claude`);
- no identifier (attribute, field, keyword, variable) is one of the keys a kind's driver keeps in `facts`,
  or one of the flat fields lab.json held before (`messaging_socket`, `thread_id`, `daemon_pid`).

The vocabulary is asked of the registered kinds' drivers, so a new kind's facts are covered too.
Docstrings may mention them, as in the kind-name test.
"""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest

import relay_repl.agents.claude_code.lab as claude_lab
import relay_repl.agents.codex.lab as codex_lab
from relay_repl.agents import registry
from relay_repl.agents.claude_code.agent import KIND as CLAUDE
from relay_repl.agents.codex.agent import KIND as CODEX
from relay_repl.agents.kind import LabReady
from relay_repl.lab.state import LabSession, LabState, StubInfo, load, save
from tests.test_kind_boundary import _exempt_strings, _identifiers

LAB = Path(__file__).resolve().parents[2] / "relay_repl" / "lab"
FORMER = {"messaging_socket", "thread_id", "daemon_pid"}
"""lab.json's flat kind fields before `facts`: no lab module may name them again."""


def vocabulary() -> tuple[set[str], set[str]]:
    """(words a string constant may not hold, identifiers no lab module may use), from the drivers."""
    words: set[str] = set()
    idents = set(FORMER)
    for k in registry.kinds():
        d = k.lab_driver()
        if d is None:
            continue
        calls = [d.message_call("peer", "line", "why"), d.load_call("some_tool", ()), d.shell_call("true", "why")]
        words |= {c.name for c in calls if c is not None}
        line = d.rename_line("x")
        if line:
            words.add(line.split()[0])
        words.add(f"--{d.spec.count_flag}")
        idents |= set(d.adopt({}).get("facts", {}))
    return words, idents


def offences(path: Path, words: set[str], idents: set[str]) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    exempt = _exempt_strings(tree)
    word = re.compile(r"(?<![\w/])(?:" + "|".join(sorted(map(re.escape, words))) + r")(?!\w)")
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in exempt:
            if word.search(node.value):
                out.append(f"line {node.lineno}: a kind's tool {node.value!r}")
        out += [f"line {getattr(node, 'lineno', 0)}: a kind's fact {i!r}" for i in _identifiers(node) if i in idents]
    return out


def test_the_drivers_name_what_the_lab_must_not():
    words, idents = vocabulary()
    assert {"SendMessage", "ToolSearch", "exec_command", "run_shell_command", "/rename", "--claude"} <= words, words
    assert {"messaging_socket", "daemon_pid", "provider", "thread_id"} <= idents, idents


def test_no_lab_module_holds_a_kind_fact():
    words, idents = vocabulary()
    found = {p.relative_to(LAB).as_posix(): hits for p in sorted(LAB.rglob("*.py"))
             if (hits := offences(p, words, idents))}
    assert not found, "kind facts in the lab (ask the kind's lab driver):\n" + "\n".join(
        f"{m}: {h}" for m, h in found.items())


def test_the_rule_catches_what_it_should(tmp_path):
    sample = tmp_path / "m.py"
    sample.write_text(
        'steps = [ToolCall(name="ToolSearch", input={"query": "select:SendMessage"})]\n'  # 1 two tools
        's.messaging_socket = r.socket\n'                                                # 2 former field
        'x = LabReady(thread_id="t")\n'                                                  # 3 former keyword
        'cmd = f"/rename {name}"\n'                                                      # 4 rename command
        'def f(): """a docstring may say SendMessage and thread_id"""\n'                 # 5 fine
        'ok = "exec_commands and my_exec_command_x and relay reply"\n')                  # 6 fine
    hits = offences(sample, *vocabulary())
    assert sorted({int(h.split()[1].rstrip(":")) for h in hits}) == [1, 2, 3, 4], hits


# -- lab.json: the shape now, and one written before `facts` -------------------------------------------


def _state(tmp_path: Path, *sessions: LabSession) -> LabState:
    return LabState(lab_dir=str(tmp_path), tmux_socket="relay-lab-x", tmux_socket_path="/tmp/tmux-0/relay-lab-x",
                    stub=StubInfo(control="/c.sock", ready_file="/r.json", log="/l"), sessions=list(sessions))


def test_lab_json_keeps_kind_facts_under_facts(tmp_path):
    claude = LabSession(kind=CLAUDE, name="alpha", tmux_session="alpha", cwd="/w/alpha", pid=5, session_id="s-1",
                        facts={"messaging_socket": "/run/cc-socks/5.sock"})
    path = tmp_path / "lab.json"
    save(_state(tmp_path, claude), path)
    raw = json.loads(path.read_text())["sessions"][0]
    assert raw["session_id"] == "s-1" and raw["facts"] == {"messaging_socket": "/run/cc-socks/5.sock"}
    assert not FORMER & set(raw)
    assert claude_lab.lab_facts(load(path).sessions[0]).messaging_socket == "/run/cc-socks/5.sock"


OLD_LAB_JSON = {
    "lab_dir": "/l", "tmux_socket": "relay-lab-x", "tmux_socket_path": "/tmp/tmux-0/relay-lab-x",
    "stub": {"control": "/c.sock", "ready_file": "/r.json", "log": "/l"},
    "sessions": [
        {"kind": "claude-code", "name": "alpha", "tmux_session": "alpha", "pane_id": "%1", "pid": 5, "cwd": "/w/a",
         "alive": True, "session_id": "s-1", "messaging_socket": "/run/cc-socks/5.sock", "thread_id": None,
         "daemon_pid": None, "provider": None, "pane": "%1"},
        {"kind": "codex", "name": "beta", "tmux_session": "beta", "pane_id": "%2", "pid": 7, "cwd": "/w/b",
         "alive": True, "session_id": None, "messaging_socket": None, "thread_id": "t-1", "daemon_pid": 9,
         "provider": "lab-beta", "pane": "%2"},
        {"kind": "gemini-cli", "name": "epsilon", "tmux_session": "epsilon", "pane_id": "%3", "pid": 11,
         "cwd": "/w/e", "alive": False, "session_id": "g-1", "messaging_socket": None, "thread_id": None,
         "daemon_pid": None, "provider": None, "pane": "%3"},
    ],
}
"""lab.json as the relay before `facts` wrote it (a lab left running across the upgrade)."""


def test_a_lab_json_written_before_facts_reads_into_the_new_shape(tmp_path):
    path = tmp_path / "lab.json"
    path.write_text(json.dumps(OLD_LAB_JSON))
    st = load(path)
    assert st is not None
    alpha, beta, eps = st.sessions
    assert (alpha.session_id, claude_lab.lab_facts(alpha).messaging_socket) == ("s-1", "/run/cc-socks/5.sock")
    assert beta.session_id == "t-1"
    assert codex_lab.lab_facts(beta) == codex_lab.CodexLabFacts(daemon_pid=9, provider="lab-beta")
    assert (eps.session_id, eps.facts) == ("g-1", {})
    # `relay lab status` reads it as it read it before the upgrade
    assert st.targets() == [
        "alpha    claude-code pane %1   pid 5 sock /run/cc-socks/5.sock [alive]",
        "beta     codex       pane %2   thread t-1 (tui pid 7, daemon 9) [alive]",
        "epsilon  gemini-cli  pane %3   pid 11 session g-1 [DEAD]",
    ]
    # and saved again, it is the new shape
    save(st, path)
    assert load(path) == st and "facts" in json.loads(path.read_text())["sessions"][1]


@pytest.mark.parametrize(("kind", "address", "facts", "words"), [
    (CLAUDE, "s-1", {}, "pid 5 session s-1"),  # no socket recorded yet: the common words
    (CODEX, None, {"daemon_pid": 9}, "pid 5 session -"),
    (CODEX, "t-1", {}, "thread t-1 (tui pid 5, daemon None)"),
])
def test_status_words_are_the_drivers(kind, address, facts, words):
    d = registry.kind_for(kind).lab_driver()
    assert d.describe(LabReady(pid=5, address=address, facts=facts)) == words


# -- the stub's calls are the drivers' ------------------------------------------------------------------


def test_send_message_rule_is_the_messaging_kinds_calls_as_before():
    from relay_repl.lab.stubs.client import send_message_rule

    rule = send_message_rule("beta", "m", summary="s", match="ping")
    assert [(st.tool.name, st.tool.input) if st.tool else st.text for st in rule.steps] == [
        ("ToolSearch", {"query": "select:SendMessage", "max_results": 1}),
        ("SendMessage", {"to": "beta", "message": "m", "summary": "s"}), "sent"]
    assert send_message_rule("beta", "m", api="anthropic").steps[1].tool.name == "SendMessage"


def test_a_stub_api_no_lab_kind_talks_has_no_messaging_driver():
    from relay_repl.core.errors import LabError
    from relay_repl.lab.stubs.client import messaging_driver, send_message_rule

    with pytest.raises(LabError, match="no lab kind talks stub API 'nope'"):
        messaging_driver("nope")
    with pytest.raises(LabError, match="have no message tool"):
        send_message_rule("beta", "m", api="openai")  # Codex's lab agents answer through relay, not natively


@pytest.mark.parametrize(("api", "given", "sent"), [
    ("openai", {"cmd": "x"}, {"cmd": "x", "yield_time_ms": 30000}),  # Codex's shell tool, as the stub always sent it
    ("openai", {"cmd": "x", "yield_time_ms": 5}, {"cmd": "x", "yield_time_ms": 5}),
    ("anthropic", {"cmd": "x"}, {"cmd": "x"}),
])
def test_a_scripted_call_is_completed_by_its_kind(api, given, sent):
    from relay_repl.lab.stubs.converse import Converser
    from relay_repl.lab.stubs.script import ToolCall

    assert Converser(name="n", api=api).completed(ToolCall(name="exec_command", input=given)).input == sent


def test_a_bare_clients_prefix_names_each_lab_kinds_install_flag(tmp_path):
    from relay_repl.core.errors import LabError
    from relay_repl.lab.install import resolve_clients

    flags = [f"--{d.spec.count_flag} VERSION" for k in registry.kinds() if (d := k.lab_driver()) is not None]
    with pytest.raises(LabError) as e:
        resolve_clients(str(tmp_path))
    assert f"made by `relay lab install {' '.join(flags)}`" in str(e.value) and "--claude VERSION" in str(e.value)
