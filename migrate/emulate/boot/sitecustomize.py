"""Activates the NPU emulation in every Python process that ``migrate run --emulate npu``
starts (this folder is put first on PYTHONPATH). Chains to any other sitecustomize."""

import importlib.util
import os
import sys

_here = os.path.dirname(os.path.abspath(__file__))
_me = sys.modules.pop("sitecustomize", None)
_path = sys.path[:]
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _here]
try:
    if importlib.util.find_spec("sitecustomize") is not None:
        importlib.import_module("sitecustomize")
except Exception:  # noqa: BLE001 - a broken user sitecustomize must not hide ours
    pass
finally:
    sys.path[:] = _path
    if _me is not None:
        sys.modules["sitecustomize"] = _me

from migrate.emulate.activate import from_environment  # noqa: E402

from_environment()
