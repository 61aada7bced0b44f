"""A corpus of malformed files, for every command that reads a file a person or a peer can edit.

Each entry makes one bad file at a path: wrong types at each level of its shape, bytes that are
not UTF-8, a NUL, a file cut short, a huge one, and "unreadable" made real for a process running
as root (whose reads a file's mode never stops): a directory in the file's place, a FIFO (whose
plain open() blocks until a writer comes: the command must refuse it, not hang) and a symbolic
link to nothing. The mode itself is covered by a privilege-dropped child (tests/frontends/
test_malformed_files.py::test_a_file_the_process_may_not_read_is_one_line).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

Maker = Callable[[Path], None]


def text(content: str) -> Maker:
    return lambda p: p.write_text(content, encoding="utf-8")


def data(content: bytes) -> Maker:
    return lambda p: p.write_bytes(content)


def directory(p: Path) -> None:
    p.mkdir()
    (p / "inside").write_text("x")


def fifo(p: Path) -> None:
    os.mkfifo(p)


def dangling(p: Path) -> None:
    p.symlink_to(p.with_name("nowhere-" + p.name))


def huge(first: bytes) -> Maker:
    return lambda p: p.write_bytes(first + b"# padding, a file no person writes\n" * 150_000)  # ~5.2 MB


UNREADABLE: dict[str, Maker] = {"directory": directory, "fifo": fifo, "dangling-symlink": dangling}

HOSTS: dict[str, Maker] = {
    "hosts-string": text('hosts = "x"\n'),
    "hosts-list": text('hosts = ["a", "b"]\n'),
    "hosts-number": text("hosts = 3\n"),
    "row-string": text('[hosts]\nbuild = "me@build"\n'),
    "row-list": text("[hosts]\nbuild = [1, 2]\n"),
    "destination-number": text("[hosts.build]\ndestination = 5\n"),
    "destination-table": text("[hosts.build.destination]\nuser = 'me'\n"),
    "destination-missing": text("[hosts.build]\nuser = 'me'\n"),
    "name-refused": text('[hosts."a/b"]\ndestination = "me@b"\n'),
    "destination-del": text('[hosts.build]\ndestination = "a\\u007fb"\n'),
    "destination-bidi": text('[hosts.build]\ndestination = "a\u202eb"\n'),
    "destination-c1": text('[hosts.build]\ndestination = "a\\u009bb"\n'),
    "destination-dash": text('[hosts.build]\ndestination = "-oProxyCommand=sh"\n'),
    "not-utf8": data(b'[hosts.build]\ndestination = "caf\xe9"\n'),
    "nul": data(b'[hosts.build]\ndestination = "me@b"\x00\n'),
    "truncated": text('[hosts.build]\ndestination = "me@bu'),
    "bad-toml": text("[hosts.build\ndestination = 1\n"),
    "deep-nesting": text("x = " + "[" * 5000 + "]" * 5000 + "\n"),
    "huge": huge(b'[hosts.build]\ndestination = "me@b"\n'),
    **UNREADABLE,
}

RECIPE_GOOD = ('name = "t"\n[params.a]\ntype = "target"\ndefault = "fake:inbox"\n'
               '[[steps]]\nkind = "tell"\nto = "{a}"\nbody = "hi"\n')

RECIPES: dict[str, Maker] = {
    "steps-string": text('name = "t"\nsteps = "x"\n'),
    "steps-missing": text('name = "t"\n'),
    "step-string": text('name = "t"\nsteps = ["x"]\n'),
    "params-string": text('name = "t"\nparams = "x"\n[[steps]]\nkind = "tell"\nto = "fake:inbox"\nbody = "hi"\n'),
    "param-type-list": text(RECIPE_GOOD.replace('type = "target"', "type = [1]")),
    "rounds-text": text(RECIPE_GOOD.replace('name = "t"\n', 'name = "t"\nrounds = "two"\n')),
    "kind-unknown": text(RECIPE_GOOD.replace('kind = "tell"', 'kind = "shout"')),
    "timeout-table": text(RECIPE_GOOD + "[steps.timeout]\nx = 1\n"),
    "not-utf8": data(RECIPE_GOOD.encode().replace(b'"hi"', b'"h\xffi"')),
    "nul": data(RECIPE_GOOD.encode() + b"\x00"),
    "truncated": text(RECIPE_GOOD[:-8]),
    "deep-nesting": text('name = "t"\nx = ' + "[" * 5000 + "]" * 5000 + "\n"),
    "huge": huge(RECIPE_GOOD.encode()),
    **UNREADABLE,
}

RUN_MAX = 64 * 1024 * 1024  # session/runs/notebook.py RUN_MAX_BYTES: a run's outputs may be large
RUN_GOOD = '{"id": "r1", "notebook": "nb", "path": "nb.py", "state": "done", "cells": []}'

RUNS: dict[str, Maker] = {
    "top-list": text("[1, 2]"),
    "top-string": text('"run"'),
    "cells-string": text(RUN_GOOD.replace('"cells": []', '"cells": "x"')),
    "cell-string": text(RUN_GOOD.replace('"cells": []', '"cells": ["x"]')),
    "cell-index-text": text(RUN_GOOD.replace('"cells": []', '"cells": [{"index": "one"}]')),
    "id-number": text(RUN_GOOD.replace('"id": "r1"', '"id": 1')),
    "id-missing": text(RUN_GOOD.replace('"id": "r1", ', "")),
    "not-utf8": data(RUN_GOOD.encode().replace(b'"nb"', b'"n\xffb"')),
    "nul": data(RUN_GOOD.encode() + b"\x00"),
    "truncated": text(RUN_GOOD[:-10]),
    "deep-nesting": text('{"id": ' + "[" * 100_000 + "]" * 100_000 + "}"),
    "huge": lambda p: os.truncate(p.write_bytes(b"{") and p, RUN_MAX + 1),  # sparse: past the cap, nothing written
    **UNREADABLE,
}
