"""Fast tests of the lab's pure parts: naming, env layout, transcript munging, versions."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from relay_repl.core.errors import LabError, PolicyRefusal
import relay_repl.lab.install as install
import relay_repl.lab.layout as layout
from relay_repl.agents.claude_code.provider import _java_hash as java_string_hash, munge_cwd
from relay_repl.agents.claude_code import transcript_path as claude_transcript_path
import relay_repl.agents.claude_code.lab as claude_lab
import relay_repl.agents.codex.lab as codex_lab
from relay_repl.agents.claude_code.agent import KIND as CLAUDE
from relay_repl.agents.codex.agent import KIND as CODEX
from relay_repl.agents.kind import LabContext
from relay_repl.lab.layout import (
    LAB_API_KEY,
    Layout,
    session_names,
    tmux_socket_name,
)
from relay_repl.agents.versions import parse_version
from relay_repl.lab.state import LabSession, LabState, StubInfo, load, save


def test_session_names_claude_first_then_codex():
    assert session_names({CLAUDE: 1, CODEX: 1}) == [("alpha", CLAUDE), ("beta", CODEX)]
    assert session_names({CODEX: 3, CLAUDE: 2}) == [("alpha", CLAUDE), ("beta", CLAUDE), ("gamma", CODEX),
                                    ("delta", CODEX), ("epsilon", CODEX)]
    assert session_names({CLAUDE: 0, CODEX: 2}) == [("alpha", CODEX), ("beta", CODEX)]
    assert session_names({CLAUDE: 0, CODEX: 0}) == []


def test_session_names_past_omega_get_a_suffix():
    names = [n for n, _ in session_names({CLAUDE: 26})]
    assert names[23] == "omega" and names[24:] == ["alpha2", "beta2"]
    assert len(set(names)) == 26


def test_session_names_reject_negative():
    with pytest.raises(ValueError):
        session_names({CLAUDE: -1, CODEX: 1})


def test_tmux_socket_name_is_stable_and_unique_per_lab(tmp_path):
    a, b = tmp_path / "a" / "lab", tmp_path / "b" / "lab"
    assert tmux_socket_name(a) == tmux_socket_name(a)
    assert tmux_socket_name(a) != tmux_socket_name(b)
    assert tmux_socket_name(a).startswith("relay-lab-") and len(tmux_socket_name(a)) == len("relay-lab-") + 10
    assert Layout.at(a).tmux_socket == tmux_socket_name(a)


def test_tmux_socket_path_follows_tmux_tmpdir():
    assert layout.tmux_socket_path("x", env={}, uid=7) == Path("/tmp/tmux-7/x")
    assert layout.tmux_socket_path("x", env={"TMUX_TMPDIR": "/run/t"}, uid=7) == Path("/run/t/tmux-7/x")


@pytest.mark.parametrize(
    ("cwd", "munged"),
    [
        ("/home/user/proj", "-home-user-proj"),
        ("/tmp/rl1/lab/work/alpha", "-tmp-rl1-lab-work-alpha"),
        ("/a b/c_d.e", "-a-b-c-d-e"),
        ("/é", "--"),  # one UTF-16 unit outside [A-Za-z0-9]
        ("/😀", "---"),  # a surrogate pair is two units
    ],
)
def test_munge_cwd(cwd, munged):
    assert munge_cwd(cwd) == munged


def test_java_string_hash_matches_java():
    # Values of java.lang.String#hashCode.
    assert java_string_hash("") == 0
    assert java_string_hash("hello") == 99162322
    assert java_string_hash("polygenelubricants") == -2147483648
    assert java_string_hash("Aa") == java_string_hash("BB") == 2112


def test_munge_long_cwd_is_cut_and_hashed():
    cwd = "/" + "x" * 300
    m = munge_cwd(cwd)
    assert m.startswith("-" + "x" * 199 + "-")
    suffix = m[201:]
    assert m[200] == "-" and suffix
    n = abs(java_string_hash(cwd))
    assert int(suffix, 36) == n
    assert munge_cwd("/" + "y" * 199) == "-" + "y" * 199  # exactly 200: untouched


def test_claude_transcript_path():
    p = claude_transcript_path("/cfg", "/home/user/proj", "c37a40e5-f601")
    assert p == Path("/cfg/projects/-home-user-proj/c37a40e5-f601.jsonl")


def test_layout_paths_and_runtime_dirs(tmp_path):
    lay = Layout.at(tmp_path / "lab")
    assert claude_lab.config_dir(lay.root) == tmp_path / "lab" / "claude"
    assert codex_lab.home(lay.root) == tmp_path / "lab" / "codex"
    assert lay.client_homes == {"CLAUDE_CONFIG_DIR": tmp_path / "lab" / "claude", "CODEX_HOME": tmp_path / "lab" / "codex",
                                "GEMINI_CLI_HOME": lay.home}  # Gemini CLI's home is the lab's $HOME (LAB_HOME)
    assert set(lay.client_homes.values()) <= set(lay.runtime_dirs)
    assert lay.runtime_dir == tmp_path / "lab" / "run"
    assert lay.workdir("beta") == tmp_path / "lab" / "work" / "beta"
    assert lay.cache not in lay.runtime_dirs  # survives down
    assert codex_lab.packages_cache(lay.root).parent == lay.cache


def test_base_env_is_built_from_scratch(tmp_path):
    lay = Layout.at(tmp_path / "lab")
    outer = {"ANTHROPIC_API_KEY": "sk-real", "OPENAI_API_KEY": "sk-real", "HTTPS_PROXY": "http://p:1",
             "PATH": "/home/me/bin:/usr/bin", "USER": "me", "LANG": "de_DE.UTF-8", "TMUX": "/tmp/x,1,0"}
    env = lay.base_env("/clients/node_modules/.bin", ["/opt/node/bin", "/usr/bin"], outer=outer)
    assert env["ANTHROPIC_API_KEY"] == LAB_API_KEY and "OPENAI_API_KEY" not in env
    assert "HTTPS_PROXY" not in env and "TMUX" not in env
    assert env["PATH"].split(":")[:2] == ["/clients/node_modules/.bin", "/opt/node/bin"]
    assert env["PATH"].count("/usr/bin") == 1
    assert env["HOME"] == str(lay.home)
    assert env["CLAUDE_CONFIG_DIR"] == str(claude_lab.config_dir(lay.root))
    assert env["CODEX_HOME"] == str(codex_lab.home(lay.root))
    assert env["FAKE_API_KEY"] == LAB_API_KEY and env["DISABLE_AUTOUPDATER"] == "1"
    assert env["XDG_RUNTIME_DIR"] == str(lay.runtime_dir)
    assert env["TMPDIR"] == str(lay.tmpdir)
    assert env["USER"] == "me" and env["LANG"] == "de_DE.UTF-8"
    assert lay.base_env("/b", outer={"LANG": "C"})["LANG"] == "C.UTF-8"


def test_client_env_points_tools_at_the_lab(tmp_path):
    lay = Layout.at(tmp_path / "lab")
    env = lay.client_env("/clients/node_modules/.bin", outer={"PATH": "/usr/bin"})
    assert set(env) == {"CLAUDE_CONFIG_DIR", "CODEX_HOME", "XDG_RUNTIME_DIR", "TMPDIR", "RELAY_LAB_DIR",
                        "RELAY_TMUX_SOCKET", "PATH", "GEMINI_CLI_HOME"}
    assert env["GEMINI_CLI_HOME"] == str(lay.home)  # the Gemini kind's LabSpec homes: its sessions' home
    assert env["PATH"] == "/clients/node_modules/.bin:/usr/bin"
    assert env["RELAY_LAB_DIR"] == str(lay.root)
    assert env["RELAY_TMUX_SOCKET"] == lay.tmux_socket
    assert "HOME" not in env  # a shell that sources it is never mistaken for a lab process


def test_lab_doctor_reads_the_labs_own_gemini_home(tmp_path):
    """`relay --lab doctor` runs with what `relay lab env` exports: the Gemini rows must read the lab's
    own $GEMINI_CLI_HOME/.gemini (where its sessions keep their chats), not the operator's ~/.gemini
    (before, they said the operator's home "does not exist yet" beside a running lab Gemini session)."""
    import json

    import anyio

    from relay_repl.agents import registry

    lay = Layout.at(tmp_path / "lab")
    (lay.home / ".gemini").mkdir(parents=True)
    (lay.home / ".gemini" / "settings.json").write_text(json.dumps({"ui": {"footer": {"items": ["session-id"]}}}))
    env = {"HOME": str(tmp_path / "operator"), **lay.client_env("/clients/node_modules/.bin", outer={"PATH": "/usr/bin"})}
    kind = registry.kind_for("gemini-cli")
    assert kind is not None
    rows = anyio.run(kind.checks.doctor, env)
    home, settings = rows[0], rows[1]
    assert home.ok and home.detail == f"found {lay.home / '.gemini'} (from $GEMINI_CLI_HOME)", home.detail
    assert "footer shows the session id" in settings.detail, settings.detail


def test_claude_global_config_trusts_each_cwd_and_the_key(tmp_path):
    cfg = claude_lab.global_config(["/w/alpha", "/w/beta"], LAB_API_KEY)
    assert cfg["hasCompletedOnboarding"] is True
    assert set(cfg["projects"]) == {"/w/alpha", "/w/beta"}
    assert all(p["hasTrustDialogAccepted"] for p in cfg["projects"].values())
    assert cfg["customApiKeyResponses"]["approved"] == [LAB_API_KEY[-20:]]


def test_codex_config_is_valid_toml_with_one_provider_per_session(tmp_path):
    text = codex_lab.config({"beta": "http://127.0.0.1:4001/v1", "gamma": "http://127.0.0.1:4002/v1"},
                            ["/w/beta", '/w/odd "dir"'])
    cfg = tomllib.loads(text)
    assert cfg["model_provider"] == "lab-beta"
    assert cfg["approval_policy"] == "never"
    assert cfg["sandbox_mode"] == "danger-full-access"
    assert cfg["model_providers"]["lab-gamma"]["base_url"] == "http://127.0.0.1:4002/v1"
    assert cfg["model_providers"]["lab-beta"]["env_key"] == "FAKE_API_KEY"
    assert cfg["projects"]['/w/odd "dir"']["trust_level"] == "trusted"
    assert cfg["analytics"]["enabled"] is False
    assert tomllib.loads(codex_lab.config({"b": "http://x/v1"}, [], sandbox="workspace-write"))["sandbox_mode"] \
        == "workspace-write"


def test_codex_unload_delay_only_when_the_lab_asks(tmp_path, monkeypatch):
    """RELAY_LAB_CODEX_UNLOAD_DELAY sets the daemon's `thread_unload_delay_secs` (a private lab that
    waits for a detached thread to unload); unset, Codex keeps its default (40-60 s)."""
    monkeypatch.delenv("RELAY_LAB_CODEX_UNLOAD_DELAY", raising=False)
    ctx = _ctx(tmp_path)
    path = codex_lab.home(tmp_path) / "config.toml"
    assert "thread_unload_delay_secs" not in tomllib.loads(codex_lab.files(ctx, ["beta"])[path])
    monkeypatch.setenv("RELAY_LAB_CODEX_UNLOAD_DELAY", "5")
    assert tomllib.loads(codex_lab.files(ctx, ["beta"])[path])["thread_unload_delay_secs"] == 5


def _ctx(tmp_path: Path) -> LabContext:
    return LabContext(root=tmp_path, home=tmp_path / "home", bin_dir=Path("/bin"), logs=tmp_path / "logs",
                      api_key=LAB_API_KEY, mcp_command=("/venv/bin/relay", "mcp"), mcp_env={"RELAY_HOME": "/state"},
                      base_urls={"alpha": "http://127.0.0.1:4000", "beta": "http://127.0.0.1:4001/v1"},
                      env={"PATH": "/lab/bin:/usr/bin"})


def test_relay_mcp_server_in_both_client_configs(tmp_path):
    mcp = ("/venv/bin/relay", ("mcp",), {"RELAY_HOME": "/state"})
    cfg = tomllib.loads(codex_lab.config({"b": "http://x/v1"}, [], sandbox="workspace-write", mcp=mcp))
    server = cfg["mcp_servers"]["relay"]
    assert server["command"] == "/venv/bin/relay" and server["args"] == ["mcp"]
    assert server["env"] == {"RELAY_HOME": "/state"}
    assert server["default_tools_approval_mode"] == "approve"  # the lab's approval_policy is never
    assert "mcp_servers" not in tomllib.loads(codex_lab.config({"b": "http://x/v1"}, []))
    claude = claude_lab.mcp_config(_ctx(tmp_path))["mcpServers"]["relay"]
    assert claude == {"type": "stdio", "command": "/venv/bin/relay", "args": ["mcp"], "env": {"RELAY_HOME": "/state"}}


def test_client_commands(tmp_path):
    lay = Layout.at(tmp_path)
    c = claude_lab.command(_ctx(tmp_path), "alpha")
    assert c[:3] == ["/bin/claude", "-n", "alpha"]
    assert c[c.index("--permission-mode") + 1] == "acceptEdits"
    allowed = c[c.index("--allowedTools") + 1].split()
    assert allowed[:4] == ["Bash", "SendMessage", "ListAgents", "ToolSearch"]
    assert {"mcp__relay__relay_reply", "mcp__relay__relay_requests"} <= set(allowed)
    assert "--dangerously-skip-permissions" not in c and "--mcp-config" not in c
    with_mcp = claude_lab.command(_ctx(tmp_path), "alpha", mcp=claude_lab.mcp_config_path(lay.root))
    assert with_mcp[with_mcp.index("--mcp-config") + 1] == str(claude_lab.mcp_config_path(lay.root))
    assert codex_lab.command("/bin", lay.root, "beta", first=True) == ["/bin/codex"]
    later = codex_lab.command("/bin", lay.root, "gamma", first=False)
    assert later[1:3] == ["--remote", f"unix://{codex_lab.control_socket(lay.root)}"]
    assert later[-2:] == ["-c", 'model_provider="lab-gamma"']


def test_codex_daemon_targets_are_sha256_of_the_link_path(tmp_path):
    import hashlib

    lay = Layout.at(tmp_path)
    targets = codex_lab.daemon_targets(lay.root, uid=5)
    assert targets[0] == Path("/tmp/codex-daemon-5") / hashlib.sha256(
        str(codex_lab.control_socket(lay.root)).encode()).hexdigest()
    assert len(targets) == 2


def test_socket_path_problem():
    # a path, not a directory: pytest's tmp_path is deeper under xdist (popen-gwN) and on other machines
    assert Layout.at("/tmp/pytest-of-root/pytest-999/test_socket_path_problem0/lab").socket_path_problem() is None
    deep = Layout.at("/" + "d" * 90 + "/lab")
    problem = deep.socket_path_problem()
    assert problem and "RELAY_HOME" in problem


@pytest.mark.parametrize(("text", "version"), [("2.1.328 (Claude Code)\n", "2.1.328"),
                                                ("codex-cli 0.169.0\n", "0.169.0"), ("nope", None)])
def test_parse_version(text, version):
    assert parse_version(text) == version


def test_lab_pins_the_verified_versions():
    """The lab's npm manifest is built from each kind's pin, not kept as a second policy, and
    so is its lockfile: the kinds' own lock entries lock exactly that set (so `npm ci` installs it)."""
    from importlib import resources

    assert not resources.files("relay_repl.lab").joinpath("clients").is_dir()  # no second list of kinds
    pins = install.manifest(install.VERIFIED_VERSIONS)["dependencies"]
    assert pins["@anthropic-ai/claude-code"] == install.VERIFIED_VERSIONS[CLAUDE] == "2.1.332"
    assert pins["@openai/codex"] == install.VERIFIED_VERSIONS[CODEX] == "0.171.0"
    assert pins["@google/gemini-cli"] == install.VERIFIED_VERSIONS["gemini-cli"] == "0.61.0"
    assert install.merged_lock(install.VERIFIED_VERSIONS) is not None
    assert install.merged_lock({**install.VERIFIED_VERSIONS, CODEX: "0.0.1"}) is None


def test_install_without_node_says_what_to_do(tmp_path, monkeypatch):
    monkeypatch.setenv("RELAY_LAB_CLIENTS", str(tmp_path / "clients"))
    monkeypatch.setattr(install.shutil, "which", lambda name: None)
    with pytest.raises(LabError) as exc:
        install.install(progress=lambda m: None)
    assert "install Node.js >= 20 and npm, e.g. apt-get install nodejs npm" in str(exc.value)
    assert "\n" not in str(exc.value)


def test_the_merged_lockfile_pins_every_client_and_names_no_registry():
    import json

    lock = install.merged_lock(install.VERIFIED_VERSIONS)
    assert lock is not None and lock["lockfileVersion"] == 3
    pkgs = lock["packages"]
    for kind, version in install.VERIFIED_VERSIONS.items():
        assert pkgs[f"node_modules/{install.pin(kind).npm_package}"]["version"] == version
    assert pkgs["node_modules/@anthropic-ai/claude-code"]["version"] == "2.1.332"
    assert pkgs["node_modules/@openai/codex"]["version"] == "0.171.0"
    raw = json.dumps(lock)
    assert "resolved" not in raw and "http" not in raw


def test_each_kind_locks_only_its_own_client_and_a_disagreement_drops_the_lock(monkeypatch):
    """Each kind's `npm-lock.json` holds its client's entries (none of another kind's client), and two
    kinds locking one path differently leave the set to `npm install` rather than pick one."""
    from relay_repl.agents import registry

    own = {k.facts.kind: k.facts.npm_lock() for k in registry.kinds() if k.lab_driver() is not None}
    for kind, lock in own.items():
        assert lock is not None, f"{kind} ships no npm-lock.json"
        others = {install.pin(o).npm_package for o in own if o != kind}
        assert [p for p in lock["packages"] if p.removeprefix("node_modules/") in others] == []
    clash = {**own[CODEX]["packages"], "node_modules/@anthropic-ai/claude-code": {"version": "2.1.332", "x": 1}}
    real = install.check_kind

    def patched(kind):
        k = real(kind)
        if kind != CODEX:
            return k
        return type("K", (), {"facts": type("F", (), {"npm_lock": lambda self: {"packages": clash}})()})()
    monkeypatch.setattr(install, "check_kind", patched)
    assert install.merged_lock(install.VERIFIED_VERSIONS) is None


def test_clients_root_override(tmp_path, monkeypatch):
    monkeypatch.setenv("RELAY_LAB_CLIENTS", str(tmp_path / "c"))
    assert install.bin_dir() == tmp_path / "c" / "node_modules" / ".bin"
    monkeypatch.delenv("RELAY_LAB_CLIENTS")
    assert install.clients_root().name == "clients"


def test_lab_state_round_trip(tmp_path):
    st = LabState(lab_dir=str(tmp_path), tmux_socket="relay-lab-x", tmux_socket_path="/tmp/tmux-0/relay-lab-x",
                  stub=StubInfo(control="/c.sock", ready_file="/r.json", log="/l"),
                  sessions=[LabSession(kind=CLAUDE, name="alpha", tmux_session="alpha", cwd="/w/alpha", pid=5),
                            LabSession(kind=CODEX, name="beta", tmux_session="beta", cwd="/w/beta",
                                       session_id="t-1", facts={"daemon_pid": 7, "provider": "lab-beta"})])
    path = tmp_path / "lab.json"
    save(st, path)
    back = load(path)
    assert back == st
    assert back.session("beta").session_id == "t-1" and back.of_kind(CLAUDE)[0].pid == 5
    assert codex_lab.lab_facts(back.session("beta")) == codex_lab.CodexLabFacts(daemon_pid=7, provider="lab-beta")
    path.write_text("{torn")
    assert load(path) is None
    assert load(tmp_path / "absent.json") is None


def test_install_builds_the_manifest_from_the_kinds_pins_and_uses_the_lock_only_when_it_covers_them(tmp_path, monkeypatch):
    """The installer asks each kind for its pin: a set the kinds' lock entries cover is `npm ci`-ed with their merge;
    another set (a kind added since) gets `npm install` from the manifest alone, and no stale lock."""
    import json
    import stat

    calls = tmp_path / "calls"
    npm = tmp_path / "npm"
    versions = {install.versions.pin(k).binary: v for k, v in install.VERIFIED_VERSIONS.items()}
    # a stand-in npm: records its argv and the manifest, then puts one executable per client in
    # node_modules/.bin answering --version with the version the manifest asked for
    npm.write_text("#!/bin/sh\n"
                   f"echo \"$@\" >> {calls}\n"
                   f"cp package.json {tmp_path}/seen-$1.json\n"
                   "mkdir -p node_modules/.bin\n"
                   + "".join(f"printf '#!/bin/sh\\necho {v}\\n' > node_modules/.bin/{b}; chmod +x node_modules/.bin/{b}\n"
                             for b, v in versions.items()))
    npm.chmod(npm.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setattr(install, "node_tools", lambda: ("node", str(npm)))
    monkeypatch.setenv("RELAY_LAB_CLIENTS", str(tmp_path / "clients"))
    install.versions.clear_cache()
    assert install.install(progress=lambda m: None) == install.VERIFIED_VERSIONS
    assert calls.read_text().split()[0] == "ci" and (tmp_path / "clients" / "package-lock.json").exists()
    assert json.loads((tmp_path / "seen-ci.json").read_text()) == install.manifest(install.VERIFIED_VERSIONS)

    monkeypatch.setattr(install, "merged_lock", lambda want: None)  # a set the kinds' lock entries do not cover
    (tmp_path / "clients" / "node_modules" / ".bin" / next(iter(versions))).unlink()
    install.versions.clear_cache()
    assert install.install(progress=lambda m: None) == install.VERIFIED_VERSIONS
    assert calls.read_text().split("\n")[1].split()[0] == "install"
    assert not (tmp_path / "clients" / "package-lock.json").exists()


def test_each_kind_starts_in_the_lab_through_its_own_hooks(tmp_path):
    """The lab names no kind: Claude's and Codex's config files, commands and restarts come from
    their packages' lab hooks (agents/<kind>/lab.py), which the lab iterates through the registry."""
    from relay_repl.agents.kind import LabReady
    from relay_repl.agents.registry import kind_for

    ctx = _ctx(tmp_path)
    claude_kind, codex_kind = kind_for(CLAUDE), kind_for(CODEX)
    assert claude_kind is not None and codex_kind is not None
    claude, codex = claude_kind.lab_driver(), codex_kind.lab_driver()
    assert claude is not None and codex is not None
    files = claude.files(ctx, ["alpha"])
    assert set(files) == {tmp_path / "claude" / "relay-mcp.json", tmp_path / "claude" / ".claude.json",
                          tmp_path / "home" / ".claude.json"}
    assert '"/venv/bin/relay"' in files[tmp_path / "claude" / "relay-mcp.json"]
    start = claude.launch(ctx, "alpha", first=True)
    assert start.env == {"ANTHROPIC_BASE_URL": "http://127.0.0.1:4000"}
    assert start.command[start.command.index("--mcp-config") + 1] == str(tmp_path / "claude" / "relay-mcp.json")
    assert claude.resume(ctx, "alpha", first=True, prior=LabReady(address="s-1")) == start  # a fresh claude again

    cfg = tomllib.loads(codex.files(ctx, ["beta"])[tmp_path / "codex" / "config.toml"])
    assert cfg["model_providers"]["lab-beta"]["base_url"] == "http://127.0.0.1:4001/v1"
    assert cfg["shell_environment_policy"]["set"]["PATH"] == "/lab/bin:/usr/bin"
    assert cfg["mcp_servers"]["relay"]["env"] == {"RELAY_HOME": "/state"}
    assert codex.files(ctx, []) == {}
    assert codex.launch(ctx, "beta", first=True).command == ("/bin/codex",)
    again = codex.resume(ctx, "beta", first=True, prior=LabReady(address="t-1"))
    assert again.command[-2:] == ("resume", "t-1") and again.resumes == "t-1"
    assert codex.outlives_panes(["codex", "app-server", "daemon"]) and not claude.outlives_panes(["app-server"])


def test_layout_socket_depth_comes_from_the_kinds(tmp_path):
    deep = Layout.at(tmp_path / ("d" * 60) / ("e" * 10))
    problem = deep.socket_path_problem()
    assert problem is not None and "Claude messaging sockets" in problem
