"""Which torch ran the capture, and which torch the registry's torch_npu requires."""

from __future__ import annotations


def torch_versions(reg) -> dict:
    """{"used", "registry_requires", "matches"}; ``used`` is the installed torch (None when
    absent), read from package metadata so an ONNX census does not import torch."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        used = version("torch").split("+", 1)[0]
    except PackageNotFoundError:
        used = None
    want = reg.requires_torch
    matches = None
    if used and want and want.startswith("torch=="):
        pin = want[len("torch=="):]
        matches = used == pin or (pin.endswith(".*") and used.startswith(pin[:-1]))
    return {"used": used, "registry_requires": want, "matches": matches}
