"""Train for one epoch and report where the weights ended up."""

import torch
from torch_npu.contrib import transfer_to_npu  # noqa: F401

from trainkit.train import build_model, train_epoch

if __name__ == "__main__":
    model = build_model()
    print(f"loss {train_epoch(model):.4f}")
    print("device", next(model.parameters()).device)
    print("gpus", torch.cuda.device_count())
