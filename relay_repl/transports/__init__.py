"""Ways to deliver one line into another session. See `base.Transport`."""

from .base import Capabilities, StageLog, Transport

__all__ = ["Capabilities", "StageLog", "Transport"]
