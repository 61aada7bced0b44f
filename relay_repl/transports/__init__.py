"""Layer 5: ways to deliver one line into another session. See `base.Transport`.

A transport never branches on an agent's kind: what differs per agent it asks the
target's agent (`relay_repl.agents.agent_for`).
"""

from relay_repl.transports.base import Capabilities, StageLog, Transport

__all__ = ["Capabilities", "StageLog", "Transport"]
