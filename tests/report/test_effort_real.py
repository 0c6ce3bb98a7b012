"""The effort table on a real project: timm 1.0.9's sdist (downloaded once into
.cache/sdists), a vision library that uses apex and bitsandbytes only behind
`try: import ... except ImportError` and has CUDA calls in a handful of files."""

from __future__ import annotations

import json
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
from typer.testing import CliRunner

from migrate.cli import app

pytestmark = pytest.mark.slow  # downloads a 2 MB sdist on the first run

REPO = Path(__file__).resolve().parents[2]
CACHE = REPO / ".cache" / "sdists"
NAME, VERSION = "timm", "1.0.9"


@pytest.fixture(scope="module")
def timm_tree() -> Path:
    tree = CACHE / f"{NAME}-{VERSION}"
    if not tree.is_dir():
        CACHE.mkdir(parents=True, exist_ok=True)
        sdist = CACHE / f"{NAME}-{VERSION}.tar.gz"
        if not sdist.exists():
            done = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "pip",
                    "download",
                    "--no-deps",
                    "--no-binary",
                    ":all:",
                    f"{NAME}=={VERSION}",
                    "-d",
                    str(CACHE),
                ],
                capture_output=True,
                text=True,
            )
            if done.returncode != 0 or not sdist.exists():
                pytest.skip(f"cannot download {NAME}=={VERSION}: {done.stderr[-300:]}")
        with tarfile.open(sdist) as tar:
            tar.extractall(CACHE, filter="data")
    return tree


@pytest.fixture(scope="module")
def report(timm_tree: Path) -> dict:
    out = CliRunner().invoke(
        app,
        [
            "scan",
            "--target",
            "npu",
            str(timm_tree),
            "--format",
            "json",
            "--no-cache",
            "--exit-zero",
            "--no-progress",
            "--extend-select",
            "MIG9",
        ],
    )
    assert out.exit_code == 0, out.output
    return json.loads(out.output)


def test_packages_group_libraries_not_occurrences(report):
    effort = report["summary"]["effort"]
    packages = {p["name"]: p for p in effort["packages"]}
    # bitsandbytes: 15 uses in optim_factory.py, one library package, guarded and discounted
    bnb = packages["bitsandbytes (library), guarded import"]
    assert bnb["findings"] >= 10 and bnb["paths"] == ["timm/optim/optim_factory.py"]
    assert bnb["minutes"] == 240 * 0.25 and "try/except ImportError" in bnb["why"]
    # apex (amp API and CUDA-only modules): one package over its files, guarded
    apex = packages["apex (library), guarded import"]
    assert len(apex["paths"]) >= 2 and "timm/utils/cuda.py" in apex["paths"]
    assert apex["minutes"] == pytest.approx((120 + 30 * (len(apex["paths"]) - 1)) * 0.25)
    # every safe rewrite is one package for the project
    mech = packages["mechanical rewrites (`migrate apply`)"]
    assert mech["minutes"] == 5 + 2 * (len(mech["paths"]) - 1)
    assert len(effort["packages"]) < report["summary"]["findings"] / 3
    assert effort["minutes"] == pytest.approx(sum(p["minutes"] for p in effort["packages"]))


def test_perf_advice_is_optional_and_not_summed(report):
    effort = report["summary"]["effort"]
    perf = [f for f in report["findings"] if f["category"] == "perf"]
    assert perf and all(f["impact"] == "perf" for f in perf)
    assert effort["optional"]["packages"]
    assert not any(set(p["rules"]) & {"MIG901", "MIG902", "MIG905"} for p in effort["packages"])
    assert sum(p["findings"] for p in effort["optional"]["packages"]) == len(perf)


def test_every_finding_is_in_one_package(report):
    effort = report["summary"]["effort"]
    packaged = sum(p["findings"] for p in effort["packages"] + effort["optional"]["packages"])
    assert packaged == report["summary"]["findings"]


def test_text_table_names_what_where_how_long_why(timm_tree: Path):
    out = CliRunner().invoke(
        app,
        [
            "scan",
            "--target",
            "npu",
            str(timm_tree),
            "--no-cache",
            "--exit-zero",
            "--no-progress",
            "--extend-select",
            "MIG9",
        ],
    )
    text = out.output
    assert "Effort: ~" in text and "work packages, a planning figure" in text
    assert "bitsandbytes (library), guarded import: 15 findings in timm/optim/optim_factory.py" in text
    assert "why: replace bitsandbytes quantization" in text
    assert "Optional perf advice:" in text and "The figure rests on planning assumptions" in text
