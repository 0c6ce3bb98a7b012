"""scan/engine: one read per file where it can, and a cache bound to the project it saw."""

from __future__ import annotations

import collections
import os
from pathlib import Path
from types import SimpleNamespace

import pytest

import migrate.scan.project.reading as project_reading
import migrate.scan.worker as worker
from migrate.core.fileio import read_bytes
from migrate.scan.cache import Entry, ScanCache
from migrate.scan.engine import ScanOptions, scan_paths
from migrate.scan.python.prefilter import Prefilter

FILES = {
    "pkg/__init__.py": "",
    "pkg/model.py": "import torch\n\ndef f(x):\n    return x.cuda()\n",
    "pkg/plain.py": "def g(x):\n    return x + 1\n",
    "pkg/sub/__init__.py": "from .util import h\n",
    "pkg/sub/util.py": "import os\n\ndef h():\n    return os.getcwd()\n",
    "train.py": "import torch\nmodel = torch.nn.Linear(2, 2).cuda()\n",
    "notes.py": "# torch.cuda is not used here\nx = 1\n",
}


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    for rel, text in FILES.items():
        (tmp_path / "tree" / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "tree" / rel).write_text(text)
    return tmp_path / "tree"


@pytest.fixture
def opened(monkeypatch) -> collections.Counter:
    """How often each file is read, by the scan's workers and by discovery."""
    counts: collections.Counter = collections.Counter()

    def counting(path, *args, **kwargs):
        counts[os.path.basename(os.fspath(path)) if "tree" in os.fspath(path) else "-"] += 1
        return read_bytes(path, *args, **kwargs)

    monkeypatch.setattr(worker, "read_bytes", counting)
    monkeypatch.setattr(project_reading, "read_bytes", counting)
    monkeypatch.setenv("MIGRATE_CACHE_KEY", "k" * 32)
    return counts


def test_a_cold_scan_reads_each_file_once_and_the_files_it_parses_twice(tree, tmp_path, opened, monkeypatch):
    searched = []
    search = Prefilter.search
    monkeypatch.setattr(
        Prefilter, "search", lambda self, data, code=False: searched.append(data) or search(self, data, code)
    )
    result = scan_paths([tree], ScanOptions(cache_dir=tmp_path / "cache", jobs=1))
    assert len(searched) == len(FILES)  # the prefilter once per file, in the first pass
    assert {f.path.rsplit("/", 1)[-1] for f in result.findings} == {"model.py", "train.py"}
    # a package file is read once for discovery and the prefilter; the two with a token
    # again, once the project is known, to be matched
    assert opened["plain.py"] == opened["util.py"] == opened["notes.py"] == 1
    assert opened["model.py"] == opened["train.py"] == 2


def test_an_edit_reads_the_edited_file_and_its_package_once(tree, tmp_path, opened):
    options = ScanOptions(cache_dir=tmp_path / "cache", jobs=1)
    first = scan_paths([tree], options)
    (tree / "pkg" / "plain.py").write_text("def g(x):\n    return x + 2\n")
    opened.clear()
    again = scan_paths([tree], options)
    assert again.findings == first.findings
    # the package's facts are read again (one file changed), the scripts' imports too (they
    # are not cached); only the edited file is scanned
    assert opened["plain.py"] == opened["model.py"] == opened["train.py"] == opened["notes.py"] == 1
    assert [rel for rel, f in again.files.items() if not f.cached] == ["pkg/plain.py"]


def test_cache_entries_hold_only_for_the_project_context_they_were_made_in(tmp_path, monkeypatch):
    monkeypatch.setenv("MIGRATE_CACHE_KEY", "k" * 32)
    cache = ScanCache.load(tmp_path, tmp_path, ["MIG101"]).bind("devices=a")
    cache.store("m.py", Entry(3, 7, "d" * 16, [], None))
    cache.save({"m.py"})
    st = SimpleNamespace(st_size=3, st_mtime_ns=7)
    hint = ScanCache.load(tmp_path, tmp_path, ["MIG101"])
    assert hint.seen("m.py", st) and not hint.seen("other.py", st)
    assert "m.py" in ScanCache.load(tmp_path, tmp_path, ["MIG101"]).bind("devices=a").entries
    assert ScanCache.load(tmp_path, tmp_path, ["MIG101"]).bind("devices=b").entries == {}
