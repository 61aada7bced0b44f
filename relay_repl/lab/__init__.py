"""Beside the product, reusing it (system/, the agents): the pinned-client installer, the stub
model servers (stubs/), the launcher (`relay lab up|status|down`) and the helpers tests use to
stage states. Only the front ends import the lab; the lab never imports them.
"""
