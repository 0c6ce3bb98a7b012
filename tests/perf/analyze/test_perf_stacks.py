"""Source lines of host ops: the innermost frame of the user's code in an op's ``Call
stack`` (torch_npu's form: frames separated by ";\\r\\n", innermost first) or in the Python
frames around it; library frames of torch, torch_npu and the standard library passed over."""

from __future__ import annotations

import json

import pytest

from migrate.perf.analyze.stacks import is_user_frame
from migrate.perf.run import PerfRequest, analyze


@pytest.mark.parametrize(
    "frame, user",
    [
        ("train.py(88): train_step", True),
        ("/home/me/proj/model.py(12): forward", True),
        ("transformers/models/llama/modeling_llama.py(310): forward", True),
        ("torch/nn/modules/module.py(1782): _call_impl", False),
        ("/usr/lib/python3.11/site-packages/torch/_tensor.py(40): wrapped", False),
        ("/usr/lib/python3.11/site-packages/torch_npu/utils/_x.py(3): f", False),
        ("threading.py(1045): _bootstrap_inner", False),
        ("<built-in method item of Tensor object at 0x7f>", False),
        ("nn.Module: Linear_0", False),
    ],
)
def test_user_frames(frame, user):
    assert is_user_frame(frame) is user


def _trace(tmp_path, stack: str):
    out = tmp_path / "run_ascend_pt" / "ASCEND_PROFILER_OUTPUT"
    out.mkdir(parents=True)
    events = [
        {"ph": "M", "name": "process_name", "pid": 1, "tid": 0, "args": {"name": "Python"}},
        {"ph": "M", "name": "process_name", "pid": 2, "tid": 0, "args": {"name": "Ascend Hardware"}},
        {"ph": "X", "name": "ProfilerStep#3", "pid": 1, "tid": 1, "ts": "1000", "dur": 1000, "cat": "cpu_op"},
        {
            "ph": "X",
            "name": "aten::item",
            "pid": 1,
            "tid": 1,
            "ts": "1100.000",
            "dur": 50,
            "cat": "cpu_op",
            "args": {"Call stack": stack},
        },
        {"ph": "X", "name": "aclnnMm_MatMulV2", "pid": 2, "tid": 3, "ts": "1050.000", "dur": 20, "args": {}},
    ]
    (out / "trace_view.json").write_text(json.dumps(events))
    return out.parent


def test_an_ascend_call_stack_gives_the_innermost_user_line(tmp_path):
    stack = "torch/_tensor.py(40): item;\r\ntrain.py(88): train_step;\r\ntrain.py(120): <module>"
    report = analyze(PerfRequest([_trace(tmp_path, stack)]))
    (f,) = [f for f in report.findings if f.id == "PERF202"]
    assert f.locations == ["train.py:88"]


def test_a_stack_of_library_frames_only_gives_no_line(tmp_path):
    report = analyze(PerfRequest([_trace(tmp_path, "torch/_tensor.py(40): item;\r\nthreading.py(1): run")]))
    (f,) = [f for f in report.findings if f.id == "PERF202"]
    assert f.locations == [] and "with_stack=True" in f.message
