"""`session.save_notebook(name)` writes ./NAME.py as a file of its own: a symbolic link in its place
(dangling or not) is refused, and nothing is written where it points (the attack pass found a
dangling `x.py` link written through, the notebook landing elsewhere)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from relay_repl.core.errors import UsageError
from relay_repl.session.runs.notebook import save_notebook


@pytest.mark.parametrize("overwrite", [False, True])
@pytest.mark.parametrize("dangling", [True, False])
def test_a_link_in_the_notebooks_place_is_refused_and_nothing_is_written_through_it(tmp_path, overwrite, dangling):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    aim = elsewhere / "target.py"
    if not dangling:
        aim.write_text("# the operator's own file\n", encoding="utf-8")
    link = tmp_path / "x.py"
    link.symlink_to(aim)
    session = SimpleNamespace(repl_inputs=[{"text": "x = 1 + 1", "ok": True, "result": None}])
    with pytest.raises(UsageError, match="is a symbolic link"):
        save_notebook(session, str(link), overwrite=overwrite)
    assert aim.exists() is (not dangling)
    if not dangling:
        assert aim.read_text(encoding="utf-8") == "# the operator's own file\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["elsewhere", "x.py"]


def test_a_plain_name_is_still_written(tmp_path):
    session = SimpleNamespace(repl_inputs=[{"text": "x = 1 + 1", "ok": True, "result": None}])
    path = save_notebook(session, str(tmp_path / "fine.py"))
    assert path.is_file() and not path.is_symlink()
