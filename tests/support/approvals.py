"""Approvals for tests that drive a transport directly: package code (relay_repl.lab.approvals),
because `relay fidelity` runs the same checks from an installed wheel."""

from relay_repl.lab.approvals import approval_for, approved_send, file_approval, plan_for

__all__ = ["approval_for", "approved_send", "file_approval", "plan_for"]
