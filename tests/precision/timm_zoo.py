"""timm models (random init, no downloads) for the precision sweep: convolutional,
squeeze-excite, hybrid and transformer designs the transformers zoo lacks.

timm needs torchvision, which cannot sit beside the CPU torch 2.13 wheel here: run these in
the torch 2.14 venv (``PYTHONPATH=. /work/venv214/bin/python benchmarks/precision_sweep.py
--timm``). ``build(name)`` returns ``(model, args, kwargs)`` in eval mode, fp32, on a batch
of 2 images of 64x64.
"""

from __future__ import annotations

import torch

ZOO = (
    "mobilenetv3_small_050",
    "mobilenetv4_conv_small",
    "efficientnet_b0",
    "ghostnet_050",
    "regnety_002",
    "convnext_atto",
    "levit_128s",
    "mobilevit_xxs",
    "edgenext_xx_small",
    "eva02_tiny_patch14_224",
    "xcit_nano_12_p16_224",
    "poolformerv2_s12",
)
SIZE = 64


def build(name: str):
    import timm

    torch.manual_seed(0)
    try:
        model = timm.create_model(name, pretrained=False, num_classes=10, img_size=SIZE)
    except TypeError:  # convolutional models take any size and no img_size argument
        model = timm.create_model(name, pretrained=False, num_classes=10)
    pixels = torch.randn(2, 3, SIZE, SIZE, generator=torch.Generator().manual_seed(1))
    return model.eval(), (pixels,), {}
