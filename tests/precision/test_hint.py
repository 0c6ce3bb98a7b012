"""compare's first divergence comes with the exact `migrate replay` command that finds the
module whose own code made the error, and that command runs as printed."""

from __future__ import annotations

import shlex

import faults as F
import hf_models as H
import pytest

from migrate.cli import app

pytest.importorskip("transformers")

SPEC = "zoo_specs:bert_eps"


def _cli(*argv):
    from typer.testing import CliRunner

    return CliRunner().invoke(app, list(argv), catch_exceptions=False)


def _note(output: str) -> str:
    notes = [line for line in output.splitlines() if line.startswith("note: ")]
    assert len(notes) == 1, output
    return notes[0]


def test_the_printed_replay_command_names_the_faulty_norm(tmp_path, monkeypatch):
    monkeypatch.chdir(H.__file__.rsplit("/", 1)[0])
    ref, tgt = str(tmp_path / "ref"), str(tmp_path / "tgt")
    assert _cli("dump", "-m", SPEC, "-o", ref, "--inputs").exit_code == 0
    monkeypatch.setenv("PREC_EPS", "0.1")
    assert _cli("dump", "-m", SPEC, "-o", tgt, "--dtype", "bf16").exit_code == 0
    compared = _cli("compare", ref, tgt)
    assert compared.exit_code == 1
    note = _note(compared.output)
    command = note.partition("run: ")[2]
    assert shlex.split(command) == ["migrate", "replay", "--model", SPEC, "--ref", ref, "--dtype", "bf16"]
    replayed = _cli(*shlex.split(command)[1:])
    site = F.norm_site(H.build("bert")[0])
    assert replayed.exit_code == 1 and f"culprit: {site}#0" in replayed.output


def test_no_note_without_a_divergence_and_a_redump_hint_without_inputs(tmp_path, monkeypatch):
    monkeypatch.chdir(H.__file__.rsplit("/", 1)[0])
    ref, same, bad = (str(tmp_path / n) for n in ("ref", "same", "bad"))
    assert _cli("dump", "-m", SPEC, "-o", ref).exit_code == 0
    assert _cli("dump", "-m", SPEC, "-o", same).exit_code == 0
    honest = _cli("compare", ref, same)
    assert honest.exit_code == 0 and "note:" not in honest.output
    monkeypatch.setenv("PREC_EPS", "0.1")
    assert _cli("dump", "-m", SPEC, "-o", bad).exit_code == 0
    note = _note(_cli("compare", ref, bad).output)
    assert f"--model {SPEC} --ref {ref}" in note and "--dtype" not in note
    assert "with --inputs" in note


def test_the_command_carries_the_target_device_dtype_and_declared_precision():
    from migrate.precision.hint import replay_command

    ref = {"inputs": True}
    npu = {
        "spec": "my pkg.port:build",
        "precision": {"device": "npu", "param_dtype": "float16", "matmul": "hf32", "conv": "hf32"},
    }
    npu["precision"]["source"] = "declared"
    assert shlex.split(replay_command(ref, npu, "ref dir")) == [
        *("migrate", "replay", "--model", "my pkg.port:build", "--ref", "ref dir"),
        *("--device", "npu", "--dtype", "fp16", "--reduced-fp32", "hf32"),
    ]
    no_spec = replay_command(ref, {"precision": {"device": "cpu", "param_dtype": "float32"}}, "r")
    assert no_spec.startswith("migrate replay --model MOD:FN --ref r  (MOD:FN: ")


class _Block(__import__("torch").nn.Module):
    """``scale`` multiplies the block's own code: before its first child (``where`` =
    "before": the child's output diverges first) or after both (the block's own output)."""

    def __init__(self, scale: float = 1.0, where: str = "before") -> None:
        import torch

        super().__init__()
        self.a, self.b = torch.nn.Linear(8, 8), torch.nn.Linear(8, 8)
        self.scale, self.where = scale, where

    def forward(self, x):
        x = x * (self.scale if self.where == "before" else 1.0)
        y = self.b(self.a(x).relu())
        return y * (self.scale if self.where == "after" else 1.0) + 1.0


class _Net(__import__("torch").nn.Module):
    def __init__(self, **kw) -> None:
        import torch

        super().__init__()
        self.stem, self.block = torch.nn.Linear(8, 8), _Block(**kw)

    def forward(self, x):
        return self.block(self.stem(x))


@pytest.mark.parametrize(
    ("where", "says"),
    [
        (
            "before",
            "block.a has no submodules: the error is made in it, or in its inputs by the code of block",
        ),
        (
            "after",
            "block has 2 submodule(s) within the bands (block.a, block.b): the error is made by its own code",
        ),
    ],
)
def test_the_note_says_what_ran_around_the_first_divergence(tmp_path, where, says):
    """An own-code fault of a block: before its first child, the child diverges first and
    the note points at the parent's code; after its children, the block diverges with
    children that pass and the note says its own code or a child below the bands."""
    import torch

    from migrate.precision.compare import compare_dumps
    from migrate.precision.dumper import dump
    from migrate.precision.report.text import render_markdown, render_text

    x = torch.randn(4, 8, generator=torch.Generator().manual_seed(0))
    for out, scale in (("ref", 1.0), ("bad", 1.5)):
        torch.manual_seed(0)
        model = _Net(scale=scale, where=where).eval()
        with torch.no_grad(), dump(model, tmp_path / out, inputs=out == "ref"):
            model(x)
    result = compare_dumps(tmp_path / "ref", tmp_path / "bad")
    assert not result and result.first_divergence["name"] == ("block.a" if where == "before" else "block")
    note = _note(render_text(result))
    assert says in note and "run: migrate replay" in note
    assert note in render_markdown(result)
