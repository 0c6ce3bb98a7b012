"""A package module that is also run by path (pytorch/examples fast_neural_style:
``python neural_style/neural_style.py``, importing its siblings as ``import utils``) keeps
starting after the port, and so do the siblings it imports by bare name: none of them
imports a helper through the package, which is not importable there
(migrate/scan/project/context.py)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

from fix.goldens import migrate_cli

FILES = {
    "neural_style/__init__.py": "",
    "neural_style/utils.py": """\
        import torch


        def load_image(n):
            return torch.ones(n, 3, device="cuda" if torch.cuda.is_available() else "cpu")
        """,
    "neural_style/transformer_net.py": """\
        import torch


        class TransformerNet(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = torch.nn.Linear(3, 3)

            def forward(self, x):
                torch.cuda.empty_cache()
                return self.fc(x)
        """,
    "neural_style/vgg.py": """\
        import torch


        def features(x):
            return x.cuda() if torch.cuda.is_available() else x
        """,
    "neural_style/neural_style.py": """\
        import argparse

        import torch

        import utils
        from transformer_net import TransformerNet


        def main():
            parser = argparse.ArgumentParser()
            parser.add_argument("--cuda", type=int, default=0)
            args = parser.parse_args()
            device = torch.device("cuda" if args.cuda else "cpu")
            model = TransformerNet().to(device)
            out = model(utils.load_image(2).to(device))
            print("STYLED", out.device.type)


        if __name__ == "__main__":
            main()
        """,
    "tests/test_vgg.py": "from neural_style.vgg import features\n",
}


def _run(code: list[str], cwd: Path, path: str) -> str:
    env = {**os.environ, "PYTHONPATH": path}
    proc = subprocess.run(
        [sys.executable, *code], cwd=cwd, env=env, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout


def test_the_module_run_by_path_and_the_siblings_it_imports_by_name_still_start(tmp_path):
    for rel, text in FILES.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(textwrap.dedent(text))
    r = migrate_cli(["apply", str(tmp_path), "--no-cache", "--no-progress"])
    assert r.exit_code == 0, r.output
    texts = {p.name: p.read_text() for p in (tmp_path / "neural_style").glob("*.py")}
    for name in ("neural_style.py", "utils.py", "transformer_net.py"):
        assert "neural_style._device" not in texts[name], name
        assert "is_npu_available()" in texts[name], name  # the one short check, defined in it
    # a module no runner imports by name is a package module as before
    assert "from neural_style._device import" in texts["vgg.py"]
    assert "STYLED cpu" in _run(["neural_style/neural_style.py"], tmp_path, "")  # by path
    both = os.pathsep.join([str(tmp_path), str(tmp_path / "neural_style")])
    code = "import neural_style.neural_style, neural_style.utils as u; print(u.load_image(1).device)"
    assert "cpu" in _run(["-c", code], tmp_path, both)  # imported as modules
    assert "cpu" in _run(
        ["-c", "import utils; print(utils.load_image(1).device)"], tmp_path / "neural_style", ""
    )
