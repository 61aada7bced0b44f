"""hosts.toml against bad input (issue 32): whatever `relay hosts add` stores it can read back;
what it cannot store is refused with the reason (never pydantic's URL); every echo is neutralised."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from relay_repl.core.errors import FileProblem, UsageError
from relay_repl.store import hosts as H

RELAY = [sys.executable, "-m", "relay_repl"]

ACCEPTED = [("build-box", "me@build.example"), ("gpu", "gpu-alias"), ("a", "é@hôte"), ("x.y_z-1", 'q"uote'),
            ("b", "back\\slash"), ("c", "user@[::1]"), ("d", "日本@例え"), ("e", "a'b"), ("f" * 63, "g#h")]
REFUSED = [
    ("t", "a\x7fb", "U+007F DEL"), ("t", "a\u202eb", "U+202E RIGHT-TO-LEFT OVERRIDE"), ("t", "a\x9bb", "U+009B CSI"),
    ("t", "a\u200bb", "U+200B ZERO WIDTH SPACE"), ("t", "a\u2066b", "U+2066"), ("t", "a\x1bb", "U+001B ESC"),
    ("t", "a\nb", "U+000A LF"), ("t", "a\tb", "U+0009 HT"), ("t", "a b", "U+0020 SPACE"), ("t", "a\u00a0b", "NO-BREAK"),
    ("t", "a\u2028b", "U+2028"), ("t", "a\udcffb", "lone surrogate"), ("t", "a\ue000b", "private-use"),
    ("t", "a\u0378b", "unassigned"), ("t", "-oProxyCommand=sh", "starts with"), ("t", "", "empty"),
    ("t\n", "x", "U+000A"), ("a/b", "x", "'/'"), ("", "x", "is empty"), ("-x", "x", "starts with '-'"),
    ("é", "x", "'é'"), ("f" * 64, "x", "64 characters"), ("a\u202e", "x", "U+202E"), ("a\x7f", "x", "U+007F"),
]


def test_every_accepted_value_reads_back_and_every_refused_one_leaves_the_file_as_it_was(relay_home):
    """The round trip: each value written by add_host reads back exactly; a refused one is refused
    with its reason (what is wrong, what to type) before anything is written."""
    for name, dest in ACCEPTED:
        H.add_host(name, dest)
        assert {h.name: h.destination for h in H.load_hosts()}[name] == dest
        tomllib.loads((relay_home / "hosts.toml").read_text(encoding="utf-8"))  # a file any TOML reader reads
    before = (relay_home / "hosts.toml").read_bytes()
    for name, dest, reason in REFUSED:
        with pytest.raises(UsageError) as err:
            H.add_host(name, dest)
        msg = str(err.value)
        assert reason in msg and "\n" not in msg, msg
        assert "errors.pydantic.dev" not in msg and "For further information" not in msg and "Input should" not in msg
        assert ": use 1-63" in msg or "as ssh takes it" in msg, msg  # what to type instead
        assert (relay_home / "hosts.toml").read_bytes() == before
    assert [(h.name, h.destination) for h in H.load_hosts()] == ACCEPTED


@settings(max_examples=300, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=st.one_of(st.from_regex(r"[A-Za-z0-9][A-Za-z0-9._-]{0,8}", fullmatch=True), st.text(max_size=12)),
       dest=st.one_of(st.text(max_size=24), st.lists(st.sampled_from(
           ["me", "@", "h", "\x7f", "\x9b", "\u202e", "\u200b", "\n", "\\", '"', "é", " ", "\t", "\x00", "-", "\udcff"]),
           min_size=1, max_size=8).map("".join)))
def test_any_name_and_destination_is_refused_or_reads_back_exactly(relay_home, name, dest):
    """The property: for ANY text, add_host either refuses it (UsageError, nothing written) or
    stores it so that load_hosts returns exactly it. Before, one DEL made the file unreadable."""
    path = relay_home / "hosts.toml"
    if path.exists():
        path.unlink()
    try:
        H.add_host(name, dest)
    except UsageError:
        assert not path.exists()
        return
    assert [(h.name, h.destination) for h in H.load_hosts()] == [(name, dest)]


@settings(max_examples=300, deadline=None, derandomize=True)
@given(st.text().filter(lambda s: not any(0xD800 <= ord(c) <= 0xDFFF for c in s)))
def test_the_writers_escaping_is_a_second_wall(value):
    """Even a value that skipped validation is written as TOML that reads back exactly."""
    from relay_repl.core.file_shape import toml_string  # what save_hosts writes each value with

    assert tomllib.loads(f"v = {toml_string(value)}")["v"] == value


def test_a_hand_edited_refused_value_is_one_line_with_its_line(relay_home):
    from relay_repl.core.errors import FileProblem

    relay_home.mkdir()
    (relay_home / "hosts.toml").write_text('[hosts.ok]\ndestination = "me@ok"\n\n[hosts.bad]\n'
                                           'destination = "a\u202eb"\n', encoding="utf-8")
    with pytest.raises(FileProblem) as err:
        H.load_hosts()
    msg = str(err.value)
    assert msg.startswith(f"{relay_home / 'hosts.toml'}: destination \"a⟨U+202E⟩b\" holds U+202E") and "(line 5)" in msg
    assert "\u202e" not in msg and err.value.exit_code == 2


def _relay(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([*RELAY, *argv], capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
                          env=os.environ)


def test_hosts_add_of_a_del_is_refused_and_the_file_stays_readable(relay_home):
    """Issue 32: `relay hosts add t $'a\\x7fb'` exited 0 and stored it; every later command that read
    hosts failed ("Illegal character '\\x7f'"). Now: refused with the reason, exit 2, nothing stored."""
    assert _relay("hosts", "add", "ok", "me@ok").returncode == 0
    res = _relay("hosts", "add", "t", "a\x7fb")
    assert res.returncode == 2 and res.stdout == "", res
    assert res.stderr.startswith('relay: destination "a\\x7fb" holds U+007F DEL (delete), a control character'), res.stderr
    assert res.stderr.count("\n") == 1 and "\x7f" not in res.stderr
    listed = _relay("hosts")
    assert listed.returncode == 0 and "ok  me@ok" in listed.stdout and "t " not in listed.stdout, listed


@pytest.mark.parametrize("dest, shown", [("a\u202eb", "U+202E RIGHT-TO-LEFT OVERRIDE"), ("a\x9bb", "U+009B CSI")])
def test_bidi_and_c1_destinations_are_refused_and_never_printed_raw(relay_home, dest, shown):
    """Issue 32: a destination holding U+202E or U+009B was accepted, and `relay hosts` printed it raw."""
    res = _relay("hosts", "add", "t", dest)
    assert res.returncode == 2 and shown in res.stderr, res
    assert dest[1] not in res.stderr + res.stdout
    assert not (relay_home / "hosts.toml").exists()
    # a hand-edited file holding it: refused on read, named visibly, never echoed raw
    relay_home.mkdir(exist_ok=True)
    (relay_home / "hosts.toml").write_text(f'[hosts.t]\ndestination = "{dest}"\n', encoding="utf-8")
    for argv in (["hosts"], ["hosts", "--json"]):
        res = _relay(*argv)
        assert res.returncode == 2 and dest[1] not in res.stderr + res.stdout and shown in res.stderr, res


@pytest.mark.parametrize("name, dest", [("a/b", "x"), ("ok", "-oProxyCommand=sh"), ("ok", "a b"), ("ok", ""),
                                        ("é", "x"), ("ok", "a\x7fb")])
def test_a_refusal_says_what_was_wrong_and_what_to_type_never_the_pydantic_url(relay_home, name, dest):
    """Issue 32: every refused destination or host name said only `relay: For further information visit
    https://errors.pydantic.dev/2.14/v/value_error`."""
    res = _relay("hosts", "add", "--", name, dest)
    assert res.returncode == 2
    line = res.stderr.strip()
    assert "\n" not in line and "pydantic" not in line and "For further information" not in line, line
    assert ("use 1-63 letters" in line) or ("as ssh takes it" in line), line


def test_hosts_add_keeps_the_operators_file_and_refuses_keys_it_does_not_know(relay_home):
    """Nothing lost: `relay hosts add` rewrote hosts.toml from the hosts it understood, so a comment,
    a mistyped table (`[host.h]`: the host silently missing, `relay hosts` said "no hosts") and a
    key relay does not read (`port = 2222`) vanished without a word (old code: both parts fail)."""
    path = relay_home / "hosts.toml"
    relay_home.mkdir(parents=True, exist_ok=True)
    unknown = '# build boxes\n[host.h]\ndestination = "a"\n[hosts.g]\ndestination = "b"\nport = 2222\n'
    path.write_text(unknown, encoding="utf-8")
    with pytest.raises(FileProblem) as err:
        H.load_hosts()
    assert "is not a key relay knows here" in str(err.value) and "\n" not in str(err.value), str(err.value)
    with pytest.raises(FileProblem):
        H.add_host("k", "c")
    assert path.read_text(encoding="utf-8") == unknown
    path.write_text('# build boxes\n[hosts.g]\ndestination = "b"\n', encoding="utf-8")
    H.add_host("k", "c")
    assert path.read_text(encoding="utf-8").startswith('# build boxes\n[hosts.g]\ndestination = "b"\n')
    assert [(h.name, h.destination) for h in H.load_hosts()] == [("g", "b"), ("k", "c")]


def test_replacing_a_host_keeps_the_operators_file_or_refuses(relay_home):
    """`relay hosts add` for a host already there rewrote the whole file: the operator's comments
    went (attack pass). A file exactly as relay writes it is still rewritten; one with more in it is
    refused in one line that says where to change it, byte for byte as it was (old code fails)."""
    H.add_host("h1", "me@one")
    H.add_host("h2", "me@two")
    path = H.hosts_file()
    H.add_host("h1", "me@uno")  # relay's own file: replaced
    assert {h.name: h.destination for h in H.load_hosts(path)} == {"h1": "me@uno", "h2": "me@two"}
    edited = path.read_text(encoding="utf-8") + "# the build box, ask Sam before changing\n"
    path.write_text(edited, encoding="utf-8")
    with pytest.raises(UsageError, match="change its destination there by hand; nothing was changed"):
        H.add_host("h2", "me@dos")
    assert path.read_text(encoding="utf-8") == edited


def test_a_symlinked_hosts_file_stays_a_link(relay_home, tmp_path):
    """A hosts.toml kept in a dotfiles checkout is a link: adding (or replacing) writes the file it
    points at and leaves the link (old code replaced the link with a plain file)."""
    real = tmp_path / "dotfiles" / "hosts.toml"
    real.parent.mkdir()
    path = H.hosts_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    H.add_host("h1", "me@one")
    real.write_bytes(path.read_bytes())
    path.unlink()
    path.symlink_to(real)
    H.add_host("h2", "me@two")
    H.add_host("h1", "me@uno")
    assert path.is_symlink() and os.readlink(path) == str(real)
    assert {h.name: h.destination for h in H.load_hosts(path)} == {"h1": "me@uno", "h2": "me@two"}
    assert sorted(p.name for p in real.parent.iterdir()) == ["hosts.toml"]
