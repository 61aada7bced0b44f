"""`relay doctor`'s checks that need no client: state, ledger, halts, the Codex sandbox rule."""

from __future__ import annotations

from relay_repl.frontends.cli import main
from relay_repl.agents.codex.doctor import check_codex_sandbox
from relay_repl.session.core.doctor import check_state
from relay_repl.store.ledger import Ledger


def by_name(checks):
    return {c.name: c for c in checks}


def test_state_ledger_and_halts(relay_home):
    c = by_name(check_state())
    assert c["state directory"].ok and c["ledger integrity"].skipped and c["relay-halts"].ok  # no ledger: nothing to check
    assert not (relay_home / "ledger.sqlite").exists(), "a read-only check must create nothing"
    led = Ledger(relay_home / "ledger.sqlite")
    led.halt("loop suspected", by="operator:relay@me")
    c = by_name(check_state())
    assert c["ledger integrity"].ok and "integrity_check on" in c["ledger integrity"].detail and c["ledger integrity"].detail.endswith(": ok")
    assert not c["relay-halts"].ok and "loop suspected" in c["relay-halts"].detail
    assert "relay unhalt" in (c["relay-halts"].fix or "")


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
    from relay_repl.session.core.doctor import check_hosts_file
    from relay_repl.store.hosts import add_host

    assert check_hosts_file().ok
    add_host("build", "me@build")
    got = check_hosts_file()
    assert got.ok and "1 host(s)" in got.detail and "build" in got.detail
    (relay_home / "hosts.toml").write_text('[hosts.build]\ndestination = "a\u202eb"\n', encoding="utf-8")
    got = check_hosts_file()
    assert not got.ok and "U+202E" in got.detail and "(line 2)" in got.detail and "relay hosts add" in (got.fix or "")
    assert "\u202e" not in got.render()


NOT_CLIENT_ROWS = {"tmux", "state directory", "ledger integrity", "relay-halts", "hosts.toml"}


def test_with_only_relay_and_tmux_on_path_and_an_empty_home_no_client_row_passes(tmp_path):
    """Issue 39: `claude agents --json` passed with "0 live session(s)" and `Gemini CLI home` passed
    on a directory that does not exist. Each row now says what it ran or read, and a client row
    with nothing to look at is skipped, never passed."""
    import json
    import os
    import shutil
    import subprocess
    import sys

    bin_dir, home = tmp_path / "bin", tmp_path / "home"
    bin_dir.mkdir()
    home.mkdir()
    (bin_dir / "relay").write_text(f"#!/bin/sh\nexec {sys.executable} -m relay_repl \"$@\"\n")
    (bin_dir / "relay").chmod(0o755)
    tmux = shutil.which("tmux")
    if tmux:
        os.symlink(tmux, bin_dir / "tmux")
    env = {"PATH": str(bin_dir), "HOME": str(home), "LANG": "C.UTF-8"}
    res = subprocess.run([str(bin_dir / "relay"), "doctor", "--json"], capture_output=True, text=True, env=env,
                         timeout=120, cwd=tmp_path)
    assert res.returncode == 1, res.stderr
    checks = json.loads(res.stdout)["checks"]
    client_rows = [c for c in checks if c["name"] not in NOT_CLIENT_ROWS]
    assert len(client_rows) >= 7, [c["name"] for c in checks]  # each kind's client row and its own rows
    assert [c["name"] for c in client_rows if c["ok"]] == []
    rows = {c["name"]: c for c in checks}
    assert rows["claude agents --json"]["skipped"] and "skipped: claude not found" in rows["claude agents --json"]["detail"]
    assert rows["Gemini CLI home"]["skipped"] and rows["CODEX_HOME"]["skipped"]
    assert rows["claude-code client"]["detail"] == "looked on PATH: `claude` not found"
    if tmux:
        assert rows["tmux"]["ok"] and rows["tmux"]["detail"].startswith(f"ran `{bin_dir / 'tmux'} -V`: tmux ")
    # every row names what it ran, read or looked for
    verbs = ("ran ", "read ", "looked ", "found ", "asked ", "access(2) ", "skipped: ", "opened ")
    assert [c["detail"] for c in checks if not c["detail"].startswith(verbs)] == []
    text = subprocess.run([str(bin_dir / "relay"), "doctor"], capture_output=True, text=True, env=env, timeout=120,
                          cwd=tmp_path).stdout
    assert "– claude agents --json: skipped: claude not found" in text
    assert "✔ claude agents" not in text and "✔ Gemini" not in text and "skipped: nothing there to check" in text


def test_a_gemini_home_without_the_client_or_a_session_skips_its_listing_row(tmp_path):
    """The Gemini CLI sessions row is its listing: with no `gemini` on PATH and none running it is
    skipped, not passed with "0 live session(s)"."""
    import anyio

    from relay_repl.agents.gemini_cli.doctor import check_gemini

    (tmp_path / ".gemini").mkdir()
    rows = {c.name: c for c in anyio.run(check_gemini, {"HOME": str(tmp_path), "PATH": str(tmp_path / "bin")})}
    assert rows["Gemini CLI home"].ok and rows["Gemini CLI home"].detail.startswith("found ")
    assert rows["Gemini CLI sessions"].skipped and "gemini not found" in rows["Gemini CLI sessions"].detail
