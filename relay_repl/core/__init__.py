"""Layer 1 (bottom): pure values — envelopes, plans, deliveries, targets, the one error tree.

Nothing here does I/O; every other layer may import it.
"""
