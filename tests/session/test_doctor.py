"""`relay doctor`'s checks that need no client: state, ledger, halts, the Codex sandbox rule."""

from __future__ import annotations

from relay_repl.frontends.cli import main
from relay_repl.agents.codex.doctor import check_codex_sandbox
from relay_repl.session.doctor import check_state
from relay_repl.store.ledger import Ledger


def by_name(checks):
    return {c.name: c for c in checks}


def test_state_ledger_and_halts(relay_home):
    c = by_name(check_state())
    assert c["state directory"].ok and c["ledger integrity"].ok and c["relay-halts"].ok
    assert not (relay_home / "ledger.sqlite").exists(), "a read-only check must create nothing"
    led = Ledger(relay_home / "ledger.sqlite")
    led.halt("loop suspected", by="operator:relay@me")
    c = by_name(check_state())
    assert c["ledger integrity"].ok and "integrity_check: ok" in c["ledger integrity"].detail
    assert not c["relay-halts"].ok and "loop suspected" in c["relay-halts"].detail
    assert "session.unhalt()" in (c["relay-halts"].fix or "")


def test_corrupt_ledger_is_named(relay_home):
    relay_home.mkdir(parents=True)
    (relay_home / "ledger.sqlite").write_bytes(b"not a database at all" * 100)
    c = by_name(check_state())
    assert not c["ledger integrity"].ok and "move" in (c["ledger integrity"].fix or "")


def test_codex_sandbox_rule(tmp_path):
    assert not check_codex_sandbox(tmp_path).ok
    (tmp_path / "config.toml").write_text('sandbox_mode = "workspace-write"\n')
    c = check_codex_sandbox(tmp_path)
    assert not c.ok and "Unix sockets" in c.detail and "danger-full-access" in (c.fix or "")
    (tmp_path / "config.toml").write_text('sandbox_mode = "danger-full-access"\n')
    assert check_codex_sandbox(tmp_path).ok


def test_doctor_exit_1_and_json_when_something_fails(monkeypatch, capsys, tmp_path):
    import json

    monkeypatch.setenv("PATH", str(tmp_path))  # no tmux, no clients
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "nope"))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "nope"))
    assert main(["doctor", "--json"]) == 1
    out = json.loads(capsys.readouterr().out)
    names = {c["name"]: c for c in out["checks"]}
    assert out["ok"] is False and names["tmux"]["ok"] is False and "install tmux" in names["tmux"]["fix"]
    assert names["claude-code client"]["ok"] is False and names["CODEX_HOME"]["ok"] is False


def test_a_hosts_toml_relay_cannot_read_is_a_doctor_finding_with_its_line(relay_home):
    """Issue 32: the file every host command reads is checked by `relay doctor` as they read it."""
    from relay_repl.session.doctor import check_hosts_file
    from relay_repl.store.hosts import add_host

    assert check_hosts_file().ok
    add_host("build", "me@build")
    got = check_hosts_file()
    assert got.ok and "1 host(s)" in got.detail and "build" in got.detail
    (relay_home / "hosts.toml").write_text('[hosts.build]\ndestination = "a\u202eb"\n', encoding="utf-8")
    got = check_hosts_file()
    assert not got.ok and "U+202E" in got.detail and "(line 2)" in got.detail and "relay hosts add" in (got.fix or "")
    assert "\u202e" not in got.render()
