"""An NPU-native training script as Ascend ModelZoo writes them, unported, run inside
``migrate run --emulate npu`` (test_modelzoo.py): ``torch.distributed.is_hccl_available``,
``torch_npu.utils.profiler.Profile`` around each step, and a label-smoothing loss made of
``torch_npu.npu_one_hot`` and ``torch_npu.npu_softmax_cross_entropy_with_logits`` (as
torch_npu.contrib's LabelSmoothingCrossEntropy makes it); then the ops on their own. With
``PROFILE_TYPE=TORCH`` (ModelZoo's switch) the profile's end of step ``PROFILE_START_STEP``
ends the program, as torch_npu's does once it has written the trace.

python modelzoo_checks.py OUT_DIR  -> OUT_DIR/results.json, OUT_DIR/start.pt, OUT_DIR/steps.txt
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import torch
import torch.distributed as dist
import torch_npu
from torch_npu.utils.profiler import Profile

OUT = Path(sys.argv[1])
CLASSES, SMOOTH, STEPS = 5, 0.1, 3


def smoothed_loss(pred, target):
    on, off = 1.0 - SMOOTH, SMOOTH / (CLASSES - 1)
    one_hot = torch_npu.npu_one_hot(target.int(), -1, pred.size(1), on, off)
    loss = torch_npu.npu_softmax_cross_entropy_with_logits(pred, one_hot)
    return torch.mean(loss, [0], keepdim=False, dtype=torch.float32)


def train() -> list[float]:
    torch.manual_seed(0)
    model = torch.nn.Linear(6, CLASSES).npu()
    x, y = torch.randn(8, 6), torch.randint(0, CLASSES, (8,))
    params = {k: v.cpu() for k, v in model.state_dict().items()}
    torch.save({"params": params, "x": x, "y": y}, OUT / "start.pt")
    opt = torch.optim.SGD(model.parameters(), lr=0.5)
    start_step = int(os.getenv("PROFILE_START_STEP", 10))
    profile = Profile(start_step=start_step, profile_type=os.getenv("PROFILE_TYPE"))
    losses = []
    with open(OUT / "steps.txt", "w") as log:
        for step in range(STEPS):
            profile.start()
            log.write(f"{step}\n")
            log.flush()
            loss = smoothed_loss(model(x.npu()), y.npu())
            opt.zero_grad()
            loss.backward()
            opt.step()
            profile.end()
            losses.append(loss.item())
    return losses


def ops() -> dict:
    hot = torch_npu.npu_one_hot(torch.IntTensor([[5, 3], [0, -1]]).npu(), depth=4, on_value=7, off_value=-2)
    g = torch.Generator().manual_seed(3)
    features = torch.randn(3, 4, generator=g).npu().requires_grad_()
    labels = torch.rand(3, 4, generator=g).npu()  # rows that do not sum to 1
    loss = torch_npu.npu_softmax_cross_entropy_with_logits(features, labels)
    loss.backward(torch.tensor([1.0, 2.0, 3.0]).npu())
    return {
        "one_hot": hot.cpu().tolist(),
        "one_hot_dtype": str(hot.dtype),
        "one_hot_device": str(hot.device),
        "features": features.detach().cpu().tolist(),
        "labels": labels.cpu().tolist(),
        "loss": loss.detach().cpu().tolist(),
        "loss_dtype": str(loss.dtype),
        "grad": features.grad.cpu().tolist(),
    }


def profile_rules() -> dict:
    profile = Profile()
    profile.start()  # the training loop left it ended
    try:
        profile.start()
        twice = "no error"
    except RuntimeError as exc:
        twice = str(exc)
    profile.end()
    return {"singleton": Profile(start_step=99) is profile, "start_twice": twice}


def next_ops() -> None:
    """The next most used ops (docs/emulate.md) on NPU tensors, a BERT-style block and the
    box coder; inputs and outputs saved (on the CPU) for the test's formulas."""
    g = torch.Generator().manual_seed(4)
    x, w, b = (
        torch.randn(2, 8, 16, generator=g),
        torch.randn(16, 16, generator=g),
        torch.randn(16, generator=g),
    )
    mask = torch.rand(2, 1, 8, 8, generator=g) > 0.6
    h = torch_npu.npu_format_cast(x.npu(), 29)
    h = torch_npu.fast_gelu(torch_npu.npu_linear(h.view(-1, 16), w.npu(), b.npu())).view(2, 8, 16)
    scores = torch_npu.npu_bmmV2(h, h.transpose(1, 2), [])
    probs = torch_npu.npu_scaled_masked_softmax(scores.unsqueeze(1), mask.npu(), 0.25)
    anchors = torch.tensor([[1.0, 2.0, 3.0, 4.0], [3.0, 4.0, 5.0, 6.0]])
    gt = torch.tensor([[5.0, 6.0, 7.0, 8.0], [7.0, 8.0, 9.5, 9.0]])
    stds = (0.1, 0.1, 0.2, 0.2)
    enc = torch_npu.npu_bounding_box_encode(anchors.npu(), gt.npu(), 0, 0, 0, 0, *stds)
    dec = torch_npu.npu_bounding_box_decode(anchors.npu(), enc, 0, 0, 0, 0, *stds, (20, 20), 16 / 1000)
    overflow = [
        torch.npu.utils.npu_check_overflow(0.0),
        torch.npu.utils.npu_check_overflow(scores * float("inf")),
    ]
    out = {"x": x, "w": w, "b": b, "mask": mask, "gt": gt, "overflow": overflow}
    out.update(
        devices=[str(t.device) for t in (h, scores, probs, enc, dec)],
        inf_nan=torch.npu.utils.is_support_inf_nan(),
    )
    out.update(h=h.cpu(), scores=scores.cpu(), probs=probs.cpu(), enc=enc.cpu(), dec=dec.cpu())
    torch.save(out, OUT / "next_ops.pt")


def detection_ops() -> None:
    """The detection ops ModelZoo's detectron2, R-FCN and DCN ports call, on NPU tensors:
    NMS with a mask, batched multi-class NMS, a trained step of a modulated deformable conv
    (contrib's layout: all x offsets, all y offsets, the sigmoid masks)."""
    g = torch.Generator().manual_seed(5)
    corner = torch.rand(12, 2, generator=g) * 20
    boxes = torch.cat([corner, corner + 4 + torch.rand(12, 2, generator=g) * 8], 1)
    scores = torch.rand(12, generator=g)
    rows, idx, keep = torch_npu.npu_nms_with_mask(torch.cat([boxes, scores[:, None]], 1).npu(), 0.3)
    batch = torch_npu.npu_batch_nms(
        boxes.view(2, 6, 1, 4).npu(), torch.rand(2, 6, 3, generator=g).npu(), 0.2, 0.5, 2, 4
    )
    x = torch.randn(1, 4, 6, 6, generator=g)
    weight = torch.randn(4, 4, 3, 3, generator=g, requires_grad=True)
    offset = torch.randn(1, 27, 6, 6, generator=g) * 0.5
    offset[:, 18:] = torch.sigmoid(offset[:, 18:])
    npu_weight = weight.detach().npu().requires_grad_()
    out, _ = torch_npu.npu_deformable_conv2d(
        x.npu(), npu_weight, offset.npu(), None, [3, 3], [1, 1, 1, 1], [1, 1, 1, 1]
    )
    out.square().sum().backward()
    saved = {"boxes": boxes, "scores": scores, "x": x, "weight": weight.detach(), "offset": offset}
    saved.update(rows=rows.cpu(), idx=idx.cpu(), keep=keep.cpu(), batch=[t.cpu() for t in batch])
    saved.update(out=out.detach().cpu(), grad=npu_weight.grad.cpu())
    saved.update(devices=[str(t.device) for t in (rows, idx, keep, batch[0], out, npu_weight.grad)])
    torch.save(saved, OUT / "detection_ops.pt")


def legacy_types() -> dict:
    """ModelZoo's spellings: ``Tensor = torch.npu.FloatTensor if cuda else torch.FloatTensor``,
    ``torch.npu.LongTensor([1])`` as an index, ``x.type(torch.npu.HalfTensor)``, isinstance."""
    found_inf = torch.npu.FloatTensor([0.0])
    buf = torch.npu.FloatTensor(3)
    idx = torch.npu.LongTensor([2, 0])
    picked = torch.arange(6.0).view(2, 3).npu().index_select(1, idx)
    half = torch.ones(2).type(torch.npu.HalfTensor)
    return {
        "found_inf": [found_inf.cpu().tolist(), str(found_inf.dtype), found_inf.type()],
        "buf": [list(buf.shape), str(buf.device)],
        "picked": picked.cpu().tolist(),
        "half": [str(half.dtype), str(half.device), half.type()],
        "isinstance": [
            isinstance(found_inf, torch.npu.FloatTensor),
            isinstance(found_inf, torch.npu.HalfTensor),
            isinstance(found_inf.cpu(), torch.npu.FloatTensor),
            isinstance(half, torch.npu.HalfTensor),
        ],
    }


def main() -> None:
    next_ops()
    detection_ops()
    results = {"hccl": [dist.is_hccl_available(), torch_npu.distributed.is_hccl_available()]}
    results.update(losses=train(), ops=ops(), profile=profile_rules(), legacy=legacy_types())
    (OUT / "results.json").write_text(json.dumps(results))


if __name__ == "__main__":
    main()
