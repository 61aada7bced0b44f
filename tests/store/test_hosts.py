"""hosts.toml: the operator's hosts, by NAME and ssh DESTINATION."""

from __future__ import annotations

import pytest

from relay_repl.core.errors import UsageError
from relay_repl.store import hosts as H


def test_add_list_replace_round_trip(relay_home):
    H.add_host("build-box", "me@build.example")
    H.add_host("gpu", "gpu-alias")
    H.add_host("build-box", "other@build.example")  # replaces, keeps one entry per name
    assert [(h.name, h.destination) for h in H.load_hosts()] == [("gpu", "gpu-alias"), ("build-box", "other@build.example")]
    assert H.hosts_file() == relay_home / "hosts.toml"
    assert H.find_host("gpu").destination == "gpu-alias"
    with pytest.raises(UsageError, match="relay hosts add nope"):
        H.find_host("nope")


@pytest.mark.parametrize("name,dest", [("a/b", "x"), ("", "x"), ("-x", "x"), ("ok", "-oProxyCommand=sh"),
                                       ("ok", "a b"), ("ok", "")])
def test_bad_names_and_destinations_refused(relay_home, name, dest):
    with pytest.raises(UsageError):
        H.add_host(name, dest)
    assert not (relay_home / "hosts.toml").exists()


def test_lab_mode_uses_the_labs_files(tmp_path, monkeypatch):
    lab = tmp_path / "lab"
    (lab / "ssh").mkdir(parents=True)
    monkeypatch.setenv("RELAY_LAB_DIR", str(lab))
    assert H.hosts_file() == lab / "hosts.toml"
    assert H.ssh_config_file() is None  # no lab ssh config: the user's applies
    (lab / "ssh" / "config").write_text("Host h2\n")
    assert H.ssh_config_file() == lab / "ssh" / "config"
    monkeypatch.delenv("RELAY_LAB_DIR")
    assert H.ssh_config_file() is None
