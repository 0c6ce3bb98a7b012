"""`migrate doctor`: is this machine ready to run the port on an Ascend NPU, and what does
this CANN error mean?

Data flow: ``Options`` (command line) -> ``Context`` (facts gathered once: the target
interpreter's package metadata and import probe, run as subprocesses in ``probe.py``; the
Ascend install records read by ``install.py``) -> every registered check in ``checks/``
(one module per group: python, cann, environment, devices, libraries) -> ``Report``
(``report.py``: text or JSON, docs/contracts.md §8). ``explain.py`` answers ``--explain``,
``logscan.py`` ``--log``, from ``data/errors.yaml``. All facts about the Ascend stack live in the YAML
tables of ``data/`` (``tables.py`` checks them at load, every row with its public source);
the libraries' NPU floors are the scan's MIG752 rows (``floors.py``).

Nothing here imports torch, torch_npu or CANN, and nothing on the machine is changed.
"""
