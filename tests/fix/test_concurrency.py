"""Two applies on one tree at once, and a file edited while apply runs: no file may end up
different from what a single clean run makes of the tree's final content (issue 13)."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from pathlib import Path

from hostile import env

SAMPLES = Path(__file__).resolve().parents[2] / "samples"


def _tree(root: Path, copies: int = 6) -> Path:
    for i in range(copies):
        for name in ("train_amp", "ddp_launcher", "hf_flash_attention"):
            shutil.copytree(SAMPLES / name, root / f"{name}_{i}")
    return root


def _apply(tree: Path) -> subprocess.Popen:
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "migrate",
            "apply",
            str(tree),
            "--target",
            "npu",
            "--unsafe-fixes",
            "--no-cache",
            "--jobs",
            "2",
        ],
        env=env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )


def _contents(tree: Path) -> dict[str, bytes]:
    return {str(p.relative_to(tree)): p.read_bytes() for p in sorted(tree.rglob("*")) if p.is_file()}


def test_two_applies_at_once_and_an_edit_mid_run_equal_one_clean_run(tmp_path):
    tree = _tree(tmp_path / "tree")
    edited = tree / "train_amp_0" / "train.py"
    extra = "# an edit made while migrate runs, moving every offset below\n" * 3
    procs = [_apply(tree), _apply(tree)]
    time.sleep(0.3)
    edited.write_text(extra + edited.read_text())
    for p in procs:
        _, err = p.communicate(timeout=300)
        assert p.returncode in (0, 1) and "Traceback" not in err, err
    # reference: the final sources (the edit included), applied once, cleanly
    ref = _tree(tmp_path / "ref")
    ref_edited = ref / "train_amp_0" / "train.py"
    ref_edited.write_text(extra + ref_edited.read_text())
    clean = _apply(ref)
    assert clean.communicate(timeout=300) and clean.returncode in (0, 1)
    got, want = _contents(tree), _contents(ref)
    name = str(edited.relative_to(tree))
    assert {k: v for k, v in got.items() if k != name} == {k: v for k, v in want.items() if k != name}
    # the edited file is either done, or refused because it changed under the rewrite (and
    # then still holds the user's bytes): one more run finishes it
    assert got[name] in (want[name], (extra + (SAMPLES / "train_amp" / "train.py").read_text()).encode())
    again = _apply(tree)
    again.communicate(timeout=300)
    assert _contents(tree) == _contents(ref)


def test_interleaved_applies_never_splice_stale_offsets(tmp_path):
    """The interleaving that broke files: run B scans, run A rewrites, run B applies its
    (now stale) scan. B must notice the bytes changed and re-scan."""
    from migrate.core.rules import default_rules
    from migrate.fix.rewrite import Options
    from migrate.fix.run import apply_scan
    from migrate.scan.engine import ScanOptions, scan_paths

    tree = _tree(tmp_path / "tree", copies=1)
    ref = _tree(tmp_path / "ref", copies=1)
    rules, options = default_rules(), Options(unsafe=True)
    scan_b = scan_paths([tree], ScanOptions(jobs=1))
    apply_scan(scan_paths([tree], ScanOptions(jobs=1)), tree, rules, options)  # run A
    run_b = apply_scan(scan_b, tree, rules, options)
    assert not [e for e in run_b.errors if "not written" in e.message]
    apply_scan(scan_paths([ref], ScanOptions(jobs=1)), ref, rules, options)
    assert _contents(tree) == _contents(ref)


def _wait_for_first_write(tree: Path, originals: dict[str, bytes], proc) -> None:
    """Return once apply has rewritten a file (or ended): signals then land mid-rewrite,
    not during interpreter start-up (where no program can react to them)."""
    deadline = time.monotonic() + 120
    while proc.poll() is None and time.monotonic() < deadline:
        if any(p.read_bytes() != originals[str(p.relative_to(tree))] for p in tree.rglob("*.py")):
            return
        time.sleep(0.01)


def test_interrupted_apply_leaves_no_temp_file_and_no_half_file(tmp_path):
    """SIGINT / SIGTERM while apply rewrites: exit 130/143 (or done), no traceback from a
    worker, no temporary file, every Python file either untouched or fully rewritten."""
    import signal

    ref = _tree(tmp_path / "ref", copies=2)
    originals = _contents(ref)
    for sig, delay in ((signal.SIGINT, 0.0), (signal.SIGTERM, 0.05), (signal.SIGINT, 0.2)):
        tree = tmp_path / f"t{delay}"
        shutil.copytree(ref, tree)
        proc = _apply(tree)
        _wait_for_first_write(tree, originals, proc)
        time.sleep(delay)
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=900)
        assert proc.returncode in (0, 1, 130, 143) and "Traceback" not in err, err
        assert not list(tree.rglob(".mig-*"))
        for rel, data in _contents(tree).items():
            if rel.endswith(".py"):
                compile(data, rel, "exec")
                assert data == originals[rel] or b"torch_npu" in data or b"torch.npu" in data, rel
