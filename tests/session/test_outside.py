"""`surely_outside_every_session`: True only when every registered kind declares a rule and each
excludes the ancestry; a kind without one, a rule that fails or defers, and the full judge decides
(issue 33). The kinds and rules here are real entry points of a distribution made in the test, on
sys.path first, loaded by file as the product loads them."""

from __future__ import annotations

import os
import sys
import textwrap

import pytest

from relay_repl.session.core import asking
from relay_repl.session.core.outside import surely_outside_every_session
from relay_repl.system import entry_points


@pytest.fixture
def dist(tmp_path, monkeypatch):
    """Write kinds and rules as one distribution's entry_points.txt, first on sys.path."""
    pkg = tmp_path / "relay_outside_probe"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "rules.py").write_text(textwrap.dedent("""
        SEEN = []
        def yes(chain, env):
            SEEN.append(list(chain))
            return True
        def no(chain, env):
            return False
        def boom(chain, env):
            raise OSError("unreadable")
        def truthy(chain, env):
            return 1
    """))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(entry_points, "_read", {})

    def forget() -> None:  # the rules loaded by file, under their private names
        for name in list(sys.modules):
            if name.startswith("_relay_repl_surely_outside_"):
                del sys.modules[name]

    def write(kinds: list[str], rules: dict[str, str]) -> None:
        info = tmp_path / "relay_outside_probe-0.dist-info"
        info.mkdir(exist_ok=True)
        text = "[relay_repl.agents]\n" + "".join(f"{k} = relay_outside_probe.kinds:{k}\n" for k in kinds)
        text += "[relay_repl.surely_outside]\n" + "".join(f"{k} = relay_outside_probe.rules:{v}\n"
                                                          for k, v in rules.items())
        (info / "entry_points.txt").write_text(text)
        entry_points._read.clear()
        forget()

    yield write
    forget()  # the real kinds' rules load again for the next test


def kinds_here() -> list[str]:
    return sorted({ep.name for ep in entry_points.scan_entry_points("relay_repl.agents")})


def test_every_kind_excluding_is_outside(dist):
    dist(["claude-code", "codex", "gemini-cli"], {"claude-code": "yes", "codex": "yes", "gemini-cli": "yes"})
    assert kinds_here() == ["claude-code", "codex", "gemini-cli"]
    assert surely_outside_every_session(os.getpid()) is True
    seen = sys.modules["_relay_repl_surely_outside_codex"].SEEN
    assert seen and seen[-1][0] == os.getpid() and os.getppid() in seen[-1]  # the chain: this process and its parents


@pytest.mark.parametrize("codex", ["no", "boom", "truthy"])
def test_one_kind_that_cannot_exclude_sends_it_to_the_judge(dist, codex):
    dist(["claude-code", "codex", "gemini-cli"], {"claude-code": "yes", "codex": codex, "gemini-cli": "yes"})
    assert surely_outside_every_session(os.getpid()) is False


def test_a_kind_that_declares_no_rule_sends_it_to_the_judge(dist):
    rules = {"claude-code": "yes", "codex": "yes", "gemini-cli": "yes"}
    dist(["claude-code", "codex", "gemini-cli"], rules)
    assert surely_outside_every_session(os.getpid()) is True
    dist(["claude-code", "codex", "gemini-cli", "zz-ruleless"], rules)
    assert surely_outside_every_session(os.getpid()) is False


def test_the_judge_is_asked_only_where_a_rule_defers(dist, monkeypatch):
    from relay_repl.agents.origin import OriginJudge

    asked: list[int] = []

    class Judge:
        def identify(self, pid):
            asked.append(pid)
            return None, ()

        def session_of(self, pid, call):
            asked.append(pid)
            return None, "judged"

    monkeypatch.setattr(OriginJudge, "default", classmethod(lambda cls, env=None: Judge()))
    dist(["claude-code", "codex"], {"claude-code": "yes", "codex": "yes"})
    asking.refuse_inside_agent("listing requests")
    assert asking.caller(lambda: pytest.fail("no call is made without the judge")) == (
        None, f"pid {os.getpid()} is no discovered session and was not started by one")
    assert asked == []
    dist(["claude-code", "codex"], {"claude-code": "yes", "codex": "no"})
    asking.refuse_inside_agent("listing requests")
    assert asking.caller(lambda: "the call") == (None, "judged")
    assert asked == [os.getpid(), os.getpid()]
