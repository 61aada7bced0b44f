"""What an agent-kind or transport package outside relay_repl imports: the public surface for plugins.

A kind is a distribution that declares, in its pyproject,

    [project.entry-points."relay_repl.agents"]       # AGENTS_GROUP
    my-agent = "my_package.kind:MyAgentKind"          # an AgentKindBase subclass: `facts` and the capabilities it has

and may declare a transport of its own (`TRANSPORTS_GROUP`: a factory taking a `TransportContext`
and returning a `Transport`) and a standard-library-only listing module started before the heavy
imports (`PREFETCH_GROUP`, system/prefetch.py). Everything such a package needs is named here, so
it never reaches into relay_repl's folders (which may move); tests/test_public_surface.py pins the
list. Nothing is imported until a name is asked for, as in `relay_repl/__init__.py`.
"""

from relay_repl import _lazy

_HOMES = {
    # the entry-point groups
    "AGENTS_GROUP": "relay_repl.agents.registry:GROUP",
    "TRANSPORTS_GROUP": "relay_repl.transports.registry:GROUP",
    "PREFETCH_GROUP": "relay_repl.system.prefetch:GROUP",
    # an agent kind: the protocol, its base, and the values its members return
    "AgentKind": "relay_repl.agents.kind",
    "AgentKindBase": "relay_repl.agents.kind",
    "KindFacts": "relay_repl.agents.capabilities",
    "capability": "relay_repl.agents.capabilities",
    "DiscoveryBase": "relay_repl.agents.capabilities",
    "ProviderDiscovery": "relay_repl.agents.capabilities",
    "ScreenBase": "relay_repl.agents.capabilities",
    "EvidenceBase": "relay_repl.agents.capabilities",
    "RepliesBase": "relay_repl.agents.capabilities",
    "ChecksBase": "relay_repl.agents.capabilities",
    "TransportsBase": "relay_repl.agents.capabilities",
    "LabDriver": "relay_repl.agents.kind",
    "LabDriverBase": "relay_repl.agents.kind",
    "AdapterSpec": "relay_repl.agents.adapter",
    "Provider": "relay_repl.agents.discovery",
    "KindProvider": "relay_repl.agents.discovery",
    "InboxListing": "relay_repl.agents.kind",
    "ScreenReading": "relay_repl.agents.screens.model",
    "Check": "relay_repl.core.check",
    "ClientPin": "relay_repl.agents.kind",
    "LabSpec": "relay_repl.agents.kind",
    "LabContext": "relay_repl.agents.kind",
    "LabLaunch": "relay_repl.agents.kind",
    "LabPane": "relay_repl.agents.kind",
    "LabReady": "relay_repl.agents.kind",
    # a transport: its base, what it is built from, and what its stages read and write
    "Transport": "relay_repl.transports.base",
    "TransportContext": "relay_repl.transports.registry",
    "Capabilities": "relay_repl.transports.base",
    "Look": "relay_repl.transports.base",
    "StageLog": "relay_repl.transports.base",
    "Approval": "relay_repl.core.approval",
    "Delivery": "relay_repl.core.delivery",
    "DeliveryState": "relay_repl.core.delivery",
    "Evidence": "relay_repl.core.delivery",
    "Envelope": "relay_repl.core.envelope",
    "Plan": "relay_repl.core.plan",
    "Target": "relay_repl.core.target",
}
"""Each name -> the module that holds it (`module:attribute` where the name differs)."""

__all__ = [
    "AGENTS_GROUP", "TRANSPORTS_GROUP", "PREFETCH_GROUP", "AgentKind", "AgentKindBase", "KindFacts", "capability",
    "DiscoveryBase", "ProviderDiscovery", "ScreenBase", "EvidenceBase", "RepliesBase", "ChecksBase", "TransportsBase",
    "LabDriver", "LabDriverBase", "AdapterSpec", "Provider",
    "KindProvider", "InboxListing", "ScreenReading", "Check", "ClientPin", "LabSpec", "LabContext", "LabLaunch",
    "LabPane", "LabReady", "Transport", "TransportContext", "Capabilities", "Look", "StageLog", "Approval",
    "Delivery", "DeliveryState", "Evidence", "Envelope", "Plan", "Target"
]  # each name of _HOMES (tests/test_public_surface.py checks they agree)

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (mypy reads the name alike)
if TYPE_CHECKING:
    from relay_repl.agents.adapter import AdapterSpec
    from relay_repl.agents.discovery import KindProvider, Provider
    from relay_repl.agents.capabilities import (ChecksBase, DiscoveryBase, EvidenceBase, KindFacts, ProviderDiscovery,
                                                RepliesBase, ScreenBase, TransportsBase, capability)
    from relay_repl.agents.kind import (AgentKind, AgentKindBase, ClientPin, InboxListing, LabContext, LabDriver,
                                        LabDriverBase, LabLaunch, LabPane, LabReady, LabSpec)
    from relay_repl.agents.registry import GROUP as AGENTS_GROUP
    from relay_repl.agents.screens.model import ScreenReading
    from relay_repl.core.approval import Approval
    from relay_repl.core.check import Check
    from relay_repl.core.delivery import Delivery, DeliveryState, Evidence
    from relay_repl.core.envelope import Envelope
    from relay_repl.core.plan import Plan
    from relay_repl.core.target import Target
    from relay_repl.system.prefetch import GROUP as PREFETCH_GROUP
    from relay_repl.transports.base import Capabilities, Look, StageLog, Transport
    from relay_repl.transports.registry import GROUP as TRANSPORTS_GROUP
    from relay_repl.transports.registry import TransportContext


def __getattr__(name: str) -> object:
    return _lazy(__name__, _HOMES, name)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_HOMES))
