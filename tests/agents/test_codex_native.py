"""The native `codex` behind the npm wrapper (agents/codex/native.py): found as the wrapper
finds it, or not at all; and run by codex-queue instead of the wrapper."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from relay_repl.agents.codex import codex_command_env, native_codex
from relay_repl.agents.codex.native import PLATFORMS
from relay_repl.lab.install import clients_root

LINUX_X64 = ("Linux", "x86_64")
PINNED = clients_root()
"""Where `relay lab install` (scripts/test) put the pinned clients, read at import: each test runs
with a private RELAY_HOME, which would hide the real state directory."""


def npm_layout(root: Path, *, platform_package: bool = True, binary: str = "#!/bin/sh\necho native\n") -> Path:
    """node_modules/.bin/codex -> @openai/codex/bin/codex.js (a wrapper that must not run), with the
    platform package's binary beside it (or, without `platform_package`, under the package's vendor/)."""
    nm = root / "node_modules"
    pkg = nm / "@openai" / "codex"
    (pkg / "bin").mkdir(parents=True)
    (pkg / "package.json").write_text(json.dumps({"name": "@openai/codex", "version": "0.171.0"}))
    (pkg / "bin" / "codex.js").write_text("#!/bin/sh\necho the wrapper ran >&2\nexit 3\n")
    (pkg / "bin" / "codex.js").chmod(0o755)
    vendor = (nm / "@openai" / "codex-linux-x64" / "vendor") if platform_package else (pkg / "vendor")
    if platform_package:
        (vendor.parent).mkdir(parents=True)
        (vendor.parent / "package.json").write_text(json.dumps({"name": "@openai/codex", "version": "0.171.0-linux-x64"}))
    exe = vendor / "x86_64-unknown-linux-musl" / "bin" / "codex"
    exe.parent.mkdir(parents=True)
    exe.write_text(binary)
    exe.chmod(0o755)
    (nm / ".bin").mkdir()
    (nm / ".bin" / "codex").symlink_to("../@openai/codex/bin/codex.js")
    return nm / ".bin" / "codex"


@pytest.mark.parametrize("platform_package", [True, False])
def test_the_wrappers_binary_is_found_where_the_wrapper_looks(tmp_path, platform_package):
    wrapper = npm_layout(tmp_path, platform_package=platform_package)
    exe, extra = native_codex(str(wrapper), platform=LINUX_X64)
    where = "codex-linux-x64/vendor" if platform_package else "codex/vendor"
    assert exe.endswith(f"@openai/{where}/x86_64-unknown-linux-musl/bin/codex")
    assert extra == {"CODEX_MANAGED_PACKAGE_ROOT": str(tmp_path / "node_modules" / "@openai" / "codex"),
                     "CODEX_MANAGED_BY_NPM": "1"}


def test_anything_else_runs_as_given(tmp_path):
    wrapper = npm_layout(tmp_path)
    assert native_codex(str(wrapper), platform=("Plan9", "mips")) is None  # a platform the wrapper does not know
    assert native_codex("/bin/sh") is None  # not the wrapper
    (tmp_path / "node_modules" / "@openai" / "codex-linux-x64" / "vendor" / "x86_64-unknown-linux-musl" / "bin"
     / "codex").unlink()
    assert native_codex(str(wrapper), platform=LINUX_X64) is None  # the binary is not there
    env = {"PATH": "/bin", "CODEX_MANAGED_BY_BUN": "1"}
    assert codex_command_env("/bin/sh", env) == ("/bin/sh", env)


def test_the_environment_is_the_wrappers(tmp_path):
    if (os.uname().sysname, os.uname().machine) != LINUX_X64:
        pytest.skip("the layout below is the linux-x64 one")
    wrapper = npm_layout(tmp_path)
    exe, env = codex_command_env(str(wrapper), {"PATH": "/bin", "CODEX_MANAGED_BY_BUN": "1", "CODEX_HOME": "/h"})
    assert exe != str(wrapper) and env == {"PATH": "/bin", "CODEX_HOME": "/h", "CODEX_MANAGED_BY_NPM": "1",
                                           "CODEX_MANAGED_PACKAGE_ROOT": str(tmp_path / "node_modules/@openai/codex")}


def test_on_the_pinned_install_the_native_binary_is_the_same_codex():
    wrapper = PINNED / "node_modules" / ".bin" / "codex"
    if not wrapper.exists() or (os.uname().sysname, os.uname().machine) not in PLATFORMS:
        pytest.skip(f"no pinned Codex installed in {PINNED} (run `relay lab install`)")
    exe, env = codex_command_env(str(wrapper), {**os.environ, "CODEX_HOME": "/dev/null/relay-version"})
    assert exe != str(wrapper)
    native = subprocess.run([exe, "--version"], capture_output=True, text=True, env=env, timeout=30)
    wrapped = subprocess.run([str(wrapper), "--version"], capture_output=True, text=True, env=env, timeout=30)
    assert native.returncode == wrapped.returncode == 0 and native.stdout == wrapped.stdout
    assert native.stdout.startswith("codex-cli ")
