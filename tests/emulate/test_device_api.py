"""The device-generic API, model coverage and the report's verdicts under `migrate run
--emulate npu` (device_api_checks.py runs once; the tests read its results), and the same
fallbacks from `migrate ops --torch --train` on the CPU."""

from __future__ import annotations

import json
from functools import partial
from pathlib import Path

import pytest
from run_migrate import migrate as run_migrate

pytest.importorskip("torch")

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
SCRIPT = "tests/emulate/device_api_checks.py"


migrate = partial(run_migrate, cwd=ROOT)


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    out = tmp_path_factory.mktemp("device_api")
    proc = migrate(
        "run", "--emulate", "npu", "--report", str(out / "report.json"), "--", "python", SCRIPT, str(out)
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return (
        out,
        json.loads((out / "results.json").read_text()),
        json.loads((out / "report.json").read_text()),
    )


@pytest.mark.pinned_torch  # .ci/run's torch 2.14 job
def test_accelerator_api_behaves_as_on_an_npu_host(run):
    acc = run[1]["accelerator"]
    assert acc["accelerator"] == "npu" and acc["count"] == 8
    assert acc["module"] == "torch_npu.npu" and acc["module_npu"]
    assert acc["streams"] == [True, True, True, True]
    assert acc["index"] == [3, 3, 1, 3]
    assert acc["memory"] == [True] * 5
    assert acc["generator"] == ["npu:0", "npu:0", True, True]
    assert acc["autocast"] == "torch.bfloat16"


@pytest.mark.pinned_torch  # .ci/run's torch 2.14 job
def test_an_integer_device_is_the_npus_as_on_an_npu_host(run):
    """`model.to(0)` needs no port: torch maps an integer to the current accelerator."""
    assert run[1]["integers"] == ["npu:0", "npu:0", "npu", "npu:0"]


@pytest.mark.pinned_torch  # .ci/run's torch 2.14 job
def test_npu_tensors_among_the_numbers_of_torch_tensor_are_read_as_values(run):
    assert run[1]["tensors_among_numbers"] == [
        "npu:0",
        [1.0, 1.0, 0.0, 2.0],
        [[1.0, 1.0], [2.0, 1.0]],
        ["cpu", [1.0, 7.0]],
        [[0, 1, 0], [0, 2, 1]],
    ]


@pytest.mark.pinned_torch  # .ci/run's torch 2.14 job
def test_conjugate_and_negative_views_compute_as_on_the_cpu(run):
    assert run[1]["complex_views"] == [True, True, True]  # the conjugate was dropped before


@pytest.mark.pinned_torch  # .ci/run's torch 2.14 job
def test_a_loaded_object_keeps_its_npu_tensors_in_slots_and_module_attributes(run):
    assert run[1]["saved_objects"] == ["npu:0", "npu:0"]  # they came back on the CPU


@pytest.mark.pinned_torch  # .ci/run's torch 2.14 job
def test_what_is_not_emulated_says_so_with_the_call_site(run):
    message = run[1]["accelerator"]["not_emulated"]
    assert message.startswith(
        f"NotEmulated: not emulated: torch.accelerator.get_device_capability (called at {SCRIPT}:"
    ), message
    assert "INTERNAL ASSERT" not in message


@pytest.mark.pinned_torch  # .ci/run's torch 2.14 job
def test_accelerator_synchronize_is_a_host_sync_at_the_users_line(run):
    syncs = [f for f in run[2]["findings"] if f["kind"] == "host_sync"]
    sync = next(f for f in syncs if f["op"] == "torch.accelerator.synchronize()")
    assert sync["site"].startswith(f"{SCRIPT}:")


@pytest.mark.pinned_torch  # .ci/run's torch 2.14 job
def test_models_run_as_on_the_cpu(run):
    models = run[1]["models"]
    assert models["index"] == [
        [[4.0, 5.0], [0.0, 1.0]],
        [5.0, 0.0],
        [[0.0, 1.0], [4.0, 5.0]],
        [0, 2],
        [[-1.0, -1.0], [2.0, 3.0], [-1.0, -1.0]],
        True,  # range and tuple indices inside a tuple index, read and written, as on the CPU
    ]
    assert max(models["rnn"].values()) < 1e-6, models["rnn"]  # gradients equal the CPU's
    assert models["formats"] == [True, "torch.float16", "torch.float16"]


@pytest.mark.pinned_torch  # .ci/run's torch 2.14 job
def test_torchscript_compiles_the_tensor_factories_as_builtins(run):
    assert run[1]["scripted"] == ["ZeroRedundancyOptimizer", [4.0, 4.0], "npu:0"]


@pytest.mark.pinned_torch  # .ci/run's torch 2.14 job
def test_moving_a_model_keeps_its_parameters_and_tied_weights(run):
    tied, same, device, diff, tied_on_cpu = run[1]["tied"]
    assert tied and same and device == "npu:0" and tied_on_cpu
    assert diff < 1e-6  # losses of 3 AdamW steps equal the CPU run's


@pytest.mark.pinned_torch  # .ci/run's torch 2.14 job
def test_a_model_sent_to_a_process_stays_on_the_npu_in_shared_memory(run):
    assert run[1]["shared"] == [["npu:0", "npu:0"], 0, True]


@pytest.mark.pinned_torch  # .ci/run's torch 2.14 job
def test_save_and_load_keep_torch_npu_semantics(run):
    found = run[1]["save_load"]
    assert found["default"] == ["npu:0", "npu:0", True, "cpu"]  # step was saved from the CPU
    for name in ("cpu", "dict", "function"):
        assert found[name] == ["cpu", "cpu", True, "cpu"], name
    assert found["npu"] == ["npu:0", "npu:0", True, "npu:0"]
    assert found["cpu_file_to_npu"] == "npu:0"


@pytest.mark.pinned_torch  # .ci/run's torch 2.14 job
def test_an_npu_checkpoint_needs_map_location_on_a_cpu_host(run):
    """As a checkpoint saved on an Ascend host: the storages say npu:0."""
    import torch

    path = run[0] / "npu_checkpoint.pt"
    with pytest.raises(RuntimeError, match="npu:0"):
        torch.load(path, weights_only=False)
    got = torch.load(path, map_location="cpu", weights_only=False)
    assert got["sd"]["weight"].device.type == "cpu" and got["step"].item() == 3


@pytest.mark.pinned_torch  # .ci/run's torch 2.14 job
def test_host_syncs_and_metadata_queries(run):
    report = run[2]
    here = {(f["kind"], f["op"]) for f in report["findings"] if f["site"].startswith(f"{SCRIPT}:")}
    assert ("host_sync", "Tensor.tolist") in here
    assert ("host_sync", "aten::index.Tensor") in here  # x[mask]
    assert ("host_sync", "aten::where") in here  # torch.where(cond)
    assert ("host_sync", "aten::where.self") not in here
    assert not any("is_strides_like_format" in f["op"] for f in report["findings"])


def _ops_fallbacks() -> set[str]:
    proc = migrate("ops", "--torch", "parity_model:build", "--train", "--format", "json")
    assert proc.returncode in (0, 1), proc.stderr[-2000:]
    rows = json.loads(proc.stdout)["ops"]
    return {r["op"] for r in rows if r["status"] == "cpu-fallback"}


def test_fallbacks_are_those_ops_torch_lists(run):
    """A torch.library op with a CPU kernel only is a fallback in both; the backward of the
    LSTM and of weight_norm belongs to torch_npu's kernels (lstm, _weight_norm), in both."""
    emulated = {f["op"] for f in run[2]["findings"] if f["kind"] == "cpu_fallback"}
    assert emulated == _ops_fallbacks() == {"migrate_test::scale2"}
    assert not any(
        op.startswith("aten::_thnn_fused") or "weight_norm_interface" in op for op in run[2]["ops"]
    )
