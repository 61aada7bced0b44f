"""pydantic's plugin lookup imported `importlib.metadata` (email, zipfile, csv, importlib.resources)
and parsed every installed distribution, 60-100 ms of CPU on the cold `relay targets` path at load 6.
The console script stands in for it with a reader of `entry_points.txt` (system/pydantic_plugins.py);
a real pydantic plugin must still be found and used, as pydantic itself would."""

from __future__ import annotations

import subprocess
import sys

from tests.support.probes import run_cold_probe

TARGETS_PROBE = """
import os, sys
real_exit = os._exit
def probe(code):  # relay targets leaves by os._exit: look at what was imported just before
    print("PYDANTIC", "pydantic" in sys.modules, "METADATA", "importlib.metadata" in sys.modules, file=sys.stderr, flush=True)
    real_exit(code)
os._exit = probe
sys.argv = ["relay", "targets", "--json"]
from relay_repl.frontends.entry import main
main()
"""


def test_relay_targets_builds_its_models_without_importing_importlib_metadata(tmp_path, relay_home):
    r = run_cold_probe(tmp_path, relay_home, TARGETS_PROBE)
    assert "PYDANTIC True METADATA False" in r.stderr, (r.stdout, r.stderr[-2000:])
    assert r.stdout.lstrip().startswith("["), r.stdout


PLUGIN = """
seen = []
class Plugin:
    def new_schema_validator(self, schema, schema_type, schema_type_path, schema_kind, config, plugin_settings):
        seen.append(schema_type.__name__)
        return None, None, None
plugin = Plugin()
"""

MODEL_PROBE = """
import relay_repl.system.pydantic_plugins as pp
pp.install()
from pydantic import BaseModel
class Probe(BaseModel):
    x: int
import myplug
print("PLUGIN SAW", myplug.seen)
"""


def test_an_installed_pydantic_plugin_is_still_loaded_and_called(tmp_path):
    site = tmp_path / "site"
    (site / "myplug-1.0.dist-info").mkdir(parents=True)
    (site / "myplug-1.0.dist-info" / "entry_points.txt").write_text("[pydantic]\nmine = myplug:plugin\n")
    (site / "myplug.py").write_text(PLUGIN)
    r = subprocess.run([sys.executable, "-c", MODEL_PROBE], cwd=tmp_path, env={"PYTHONPATH": str(site), "LANG": "C.UTF-8"},
                       capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert "PLUGIN SAW ['Probe']" in r.stdout, (r.stdout, r.stderr[-2000:])
