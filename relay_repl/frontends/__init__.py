"""Layer 7 (top): thin front ends — the `relay` CLI and the ptpython REPL. The CLI is also
the one door into the lab (`relay lab ...`, `relay --lab`).
"""
