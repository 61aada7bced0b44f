"""Gemini CLI (`@google/gemini-cli`) as a relay agent kind: its screen, its chat files, its lab.

Everything relay_repl knows about Gemini CLI lives in this package and in
adapters/gemini-cli.md; nothing outside names it (issue 19 item 4).
"""
