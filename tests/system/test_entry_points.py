"""The entry-point reader (system/entry_points.py) reads each sys.path folder's entry_points.txt
files once per process while the folder is unchanged: `relay targets` asks for four groups
(prefetch, agents, transports, pydantic's plugins), and each was a pass over every installed
distribution on a cold start measured against `claude agents --json` (issue 20 item 4)."""

from __future__ import annotations

import builtins
import os
import sys

from relay_repl.system import entry_points


def _dist(site, name: str, text: str | None) -> None:
    d = site / f"{name}-1.0.dist-info"
    d.mkdir(parents=True)
    if text is not None:
        (d / "entry_points.txt").write_text(text)


def test_a_second_group_reads_no_file_and_a_new_distribution_is_seen(tmp_path, monkeypatch):
    site = tmp_path / "site"
    _dist(site, "alpha", "[relay_repl.test_a]\none = alpha.mod:One\n[relay_repl.test_b]\ntwo = alpha.mod:Two\n")
    monkeypatch.setattr(sys, "path", [str(site)])
    opened = []
    real_open = builtins.open
    monkeypatch.setattr(builtins, "open", lambda f, *a, **k: opened.append(f) or real_open(f, *a, **k))
    assert [ep.value for ep in entry_points.scan_entry_points("relay_repl.test_a")] == ["alpha.mod:One"]
    assert len(opened) == 1
    assert [ep.value for ep in entry_points.scan_entry_points("relay_repl.test_b")] == ["alpha.mod:Two"]
    assert len(opened) == 1  # the second group: no file read again
    _dist(site, "beta", "[relay_repl.test_a]\nthree = beta.mod:Three\n")
    os.utime(site, ns=(os.stat(site).st_atime_ns, os.stat(site).st_mtime_ns + 1_000_000))  # coarse clocks
    assert sorted(ep.name for ep in entry_points.scan_entry_points("relay_repl.test_a")) == ["one", "three"]


def test_the_first_distribution_of_a_name_on_the_path_wins_even_without_entry_points(tmp_path, monkeypatch):
    first, second = tmp_path / "first", tmp_path / "second"
    _dist(first, "gamma", None)
    _dist(second, "gamma", "[relay_repl.test_c]\nx = gamma:X\n")
    _dist(second, "delta", "[relay_repl.test_c]\ny = delta:Y\n")
    monkeypatch.setattr(sys, "path", [str(first), str(second)])
    assert [ep.name for ep in entry_points.scan_entry_points("relay_repl.test_c")] == ["y"]
