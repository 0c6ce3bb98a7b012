"""A conditional expression choosing devices gains an NPU arm (scan/python/npu_ternary.py)."""

from __future__ import annotations

from porting import port

# captum's test settings before a port (captum/testing/helpers/influence/common.py), shortened
DEVICE_LISTS = """\
    import torch

    DEVICES = ["cpu", "cuda"] if torch.cuda.is_available() else ["cpu"]
    SETTINGS = ["", "cuda", "cuda_data_parallel"] if torch.cuda.is_available() else [""]
    ROWS = [("cpu",), ("cuda",)] if torch.cuda.is_available() else [("cpu",)]
    if torch.cuda.is_available():
        DEVS = ["cpu", "cuda"]
    else:
        DEVS = ["cpu"]
    """


def test_the_devices_a_cuda_host_has_get_an_npu_list_of_their_own(monkeypatch):
    """ "npu" added to the CUDA arm's list made a CUDA host try an NPU device."""
    out = port(DEVICE_LISTS)
    cuda = '["cpu", "cuda"] if torch.cuda.is_available()'
    npu = 'else ["cpu", "npu"] if is_npu_available() else ["cpu"]'
    assert f"DEVICES = {cuda} {npu}\n" in out
    assert 'if torch.cuda.is_available():\n    DEVS = ["cpu", "cuda"]\nelif is_npu_available():\n' in out
    assert '    DEVS = ["cpu", "npu"]\nelse:\n' in out
    # a CUDA setting with no NPU name, and a table's rows: left to a person, test included
    assert 'SETTINGS = ["", "cuda", "cuda_data_parallel"] if torch.cuda.is_available() else [""]\n' in out
    assert 'ROWS = [("cpu",), ("cuda",)] if torch.cuda.is_available() else [("cpu",)]\n' in out
    assert port(out) == out
    namespace: dict = {}
    exec(compile(out, "t.py", "exec"), namespace)  # this host: no GPU, no NPU
    assert namespace["DEVICES"] == ["cpu"] and namespace["DEVS"] == ["cpu"]
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)  # a CUDA host
    exec(compile(out, "t.py", "exec"), namespace)
    assert namespace["DEVICES"] == ["cpu", "cuda"] and namespace["DEVS"] == ["cpu", "cuda"]
