"""Ways to deliver one line into another session. See `base.Transport`."""

from relay_repl.transports.base import Capabilities, StageLog, Transport

__all__ = ["Capabilities", "StageLog", "Transport"]
