"""Live: `relay --lab doctor` passes on the lab; without the Claude client it names that check and the fix."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.live


def doctor(env: dict[str, str], *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "relay_repl", "--lab", "doctor", *extra], capture_output=True,
                          text=True, timeout=180, env=env)


def expected_rows(env: dict[str, str]) -> list[str]:
    """The rows `relay doctor` owes, from the registry: tmux, each kind's client, each kind's own checks
    (read here with the same environment), then the state rows. A kind added through the entry point
    adds its rows here without an edit (a hard-coded 13 broke when Gemini CLI joined)."""
    import anyio

    from relay_repl.agents.registry import kinds

    async def own() -> list[str]:
        return [c.name for k in kinds() for c in await k.checks.doctor(env)]

    return ["tmux", *(f"{k.facts.kind} client" for k in kinds()), *anyio.run(own),
            "state directory", "ledger integrity", "relay-halts", "hosts.toml"]


def test_lab_doctor_passes(lab):
    res = doctor(dict(os.environ))
    assert res.returncode == 0, res.stdout + res.stderr
    lines = res.stdout.splitlines()
    assert lines[-1].startswith("all checks pass") and all(ln.startswith(("✔", "– ")) for ln in lines[:-1]), res.stdout
    want = expected_rows(dict(os.environ))
    assert {"claude-code client", "codex client", "gemini-cli client"} <= set(want), want
    for name in want:  # passed on evidence, or skipped with nothing there to check (a ledger not made yet)
        assert f"✔ {name}: " in res.stdout or f"– {name}: skipped: " in res.stdout, name
    for name in ("claude-code client", "codex client", "claude agents --json", "Codex daemon"):
        assert f"✔ {name}: ran " in res.stdout or f"✔ {name}: asked " in res.stdout, name  # the lab's clients answer
    assert "verified" in res.stdout and "Traceback" not in res.stderr

    res = doctor(dict(os.environ), "--json")
    out = json.loads(res.stdout)
    assert res.returncode == 0 and out["ok"] is True, out
    assert [c["name"] for c in out["checks"]] == want, out["checks"]


def test_lab_doctor_without_claude_names_the_check_and_the_fix(lab, tmp_path):
    import relay_repl.lab.install as install

    # a client cache holding only codex, and a PATH with no directory that holds `claude`
    only_codex = tmp_path / "clients" / "node_modules" / ".bin"
    only_codex.mkdir(parents=True)
    (only_codex / "codex").symlink_to(install.lab_binary("codex").resolve())
    path = ":".join(d for d in os.environ["PATH"].split(":") if d and not os.path.exists(os.path.join(d, "claude")))
    env = dict(os.environ, PATH=path, RELAY_LAB_CLIENTS=str(tmp_path / "clients"))
    res = doctor(env)
    assert res.returncode == 1, res.stdout + res.stderr
    assert "✘ claude-code client: looked on PATH: `claude` not found" in res.stdout
    assert "– claude agents --json: skipped: claude not found" in res.stdout and "✔ claude agents" not in res.stdout
    assert "next: install it (npm i -g @anthropic-ai/claude-code@" in res.stdout
    assert "✔ codex client: " in res.stdout and "Traceback" not in res.stderr
