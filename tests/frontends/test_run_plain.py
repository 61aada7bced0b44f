"""`relay run`'s plain pre-plan (frontends/run_plain.py, issue 40): which argv it takes and which recipe file it
reads. The plan itself, the refusals with the branch on and off and the module pin are per kind, over each kind's
fixtures: tests/agents/codex/test_run_plain_plan.py, tests/agents/gemini_cli/test_gemini_run_plain.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from relay_repl.frontends import run_plain
from relay_repl.store import recipe_places


@pytest.mark.parametrize("words, taken", [
    (["run", "ping", "-p", "target=codex:beta"], ("ping", "target", "codex:beta")),
    (["run", "ping", "-p", " target =x"], ("ping", "target ", "x")),
    (["run", "ping", "-p", "target=codex:beta", "--json"], None), (["run", "ping"], None),
    (["run", "ping", "--param", "target=codex:beta"], None), (["run", "ping", "-ptarget=codex:beta"], None),
    (["run", "ping.toml", "-p", "target=codex:beta"], None), (["run", "./ping", "-p", "target=codex:beta"], None),
    (["run", "--resume", "-p", "target=codex:beta"], None), (["run", "ping", "-p", "-target=x"], None),
    (["run", "ping", "-p", "target"], None), (["run", "ping", "-p", "=x"], None),
    (["send", "ping", "-p", "target=codex:beta"], None), (["run", "ping", "--dry-run", "target=codex:beta"], None),
])
def test_only_the_bare_shape_is_taken(words, taken):
    """Exactly `run NAME -p KEY=VALUE`, the key split and stripped as parse_params does; anything else is the CLI's."""
    got = run_plain.shape(words)
    assert got == (None if taken is None else (taken[0], taken[1].strip(), taken[2]))


def test_the_plain_recipe_file_is_the_one_find_recipe_finds_or_none(tmp_path, monkeypatch):
    """NAME.toml before NAME.py in one place; a NAME.py in an earlier place (maybe a notebook, which would win)
    is the models' case; a later place's NAME.toml when the earlier ones hold neither."""
    from relay_repl.session.runs.recipes import find_recipe

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("RELAY_HOME", str(tmp_path / "home"))
    here, shelf = tmp_path / "recipes", tmp_path / "home" / "recipes"
    here.mkdir()
    shelf.mkdir(parents=True)
    (shelf / "mine.toml").write_text((recipe_places.shipped_dir() / "ping.toml").read_text().replace('"ping"', '"mine"'))
    assert recipe_places.plain_toml("mine") == find_recipe("mine") == (shelf / "mine.toml").resolve()
    (here / "mine.py").write_text("# %%\nx = 1\n")  # a notebook here: find_recipe takes it
    assert find_recipe("mine").suffix == ".py" and recipe_places.plain_toml("mine") is None
    (here / "mine.toml").write_text("x")
    assert recipe_places.plain_toml("mine") == find_recipe("mine") == (here / "mine.toml").resolve()
    assert recipe_places.plain_toml("ping") == find_recipe("ping") == recipe_places.shipped_dir() / "ping.toml"
    assert recipe_places.plain_toml("nosuch") is None
    assert isinstance(recipe_places.recipe_dirs()[0], Path)
