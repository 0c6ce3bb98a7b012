"""What a portable port needs to know about the project around a file, found once per scan.

* **Device helpers** — per top-level package, the functions the project already uses to name
  its device (migrate/scan/helper_finder.py decides from the code what each one is),
  one per kind, the most imported one where there are several; a project may name the
  module with ``device-helper = "pkg.utils.device"`` in ``[tool.migrate]``.
* **Where the port's own helper goes** where the project has none: ``<package>/_device.py``
  (migrate/core/device_helpers), or, for a script outside any package, the file itself.
* **The declared minimum torch** (pyproject, setup.py, setup.cfg, requirements files next to
  the package or script, the lowest of the nearest folder that has any): forms a port writes
  must exist in it.
* **NPU arms** — names of classes and functions that name NPU (``NPU_Accelerator``): a CUDA
  class with an NPU sibling is one arm of a real dispatch and stays as written.

Reading is bounded: at most ``MAX_PACKAGE_FILES`` files of at most ``MAX_READ`` bytes per
package, regular files only; nothing read is executed. ``FileDevices`` (per file, frozen,
picklable) travels with each scan work item and is part of the cache key.

Its parts, one concern each: ``file_devices`` (HelperRef, FileDevices), ``context``
(ProjectContext, PackageInfo), ``discovery`` (discover, Discovery), ``packages`` (package_of),
``facts`` (file facts, their cache data), ``helpers`` (finding and choosing device helpers),
``own_module`` (where the port's helper goes), ``min_torch``, ``reading``.
"""

from __future__ import annotations

from migrate.scan.project.context import ProjectContext
from migrate.scan.project.discovery import Discovery, discover
from migrate.scan.project.facts import _facts_from_data, file_facts, script_imports
from migrate.scan.project.file_devices import EXAMPLE, SCRIPT, FileDevices
from migrate.scan.project.helpers import _candidate, _npu_arm_names
from migrate.scan.project.min_torch import declared_min_torch
from migrate.scan.project.packages import package_of

__all__ = [
    "EXAMPLE",
    "SCRIPT",
    "Discovery",
    "FileDevices",
    "ProjectContext",
    "_candidate",
    "_facts_from_data",
    "_npu_arm_names",
    "declared_min_torch",
    "discover",
    "file_facts",
    "package_of",
    "script_imports",
]
