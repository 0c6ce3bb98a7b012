"""Train for one epoch and report where the weights ended up."""

from trainkit import get_torch_device
from trainkit.train import build_model, train_epoch

if __name__ == "__main__":
    model = build_model()
    print(f"loss {train_epoch(model):.4f}")
    print("device", next(model.parameters()).device)
    print("gpus", get_torch_device().device_count())
