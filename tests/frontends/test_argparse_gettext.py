"""Building `relay`'s parser looked up argparse's message translations once per use (~90 locale
directory walks, half the parser's cost on every command, `relay targets` included); they are now
looked up once per message, and what argparse prints is unchanged."""

from __future__ import annotations

import argparse
import gettext

import pytest

from relay_repl.frontends import argparse_gettext
from relay_repl.frontends.cli import build_parser


def test_a_second_parser_walks_no_locale_directory(monkeypatch):
    build_parser()
    walks = []
    real_find = gettext.find
    monkeypatch.setattr(gettext, "find", lambda *a, **k: walks.append(a) or real_find(*a, **k))
    build_parser().parse_args(["targets", "--json"])
    assert walks == []


def test_help_and_usage_errors_read_as_without_the_cache(monkeypatch, capsys):
    def texts() -> tuple[str, str, str]:
        p = build_parser()
        sub = next(a for a in p._actions if isinstance(a, argparse._SubParsersAction)).choices["targets"]
        with pytest.raises(SystemExit):
            p.parse_args(["targets", "--nope"])
        return p.format_help(), sub.format_help(), capsys.readouterr().err

    cached = texts()
    monkeypatch.setattr(argparse_gettext, "install", lambda: None)
    monkeypatch.setattr(argparse, "_", gettext.gettext)
    assert texts() == cached
