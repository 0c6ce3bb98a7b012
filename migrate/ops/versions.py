"""Which torch ran the capture, and which torch the registry's torch_npu requires."""

from __future__ import annotations


def torch_versions(reg, used: str | None = None) -> dict:
    """{"used", "registry_requires", "matches"}; ``used`` is the torch given (the one a
    process ran), else the installed torch (None when absent), read from package metadata
    so an ONNX census does not import torch."""
    from importlib.metadata import PackageNotFoundError, version

    if used is None:
        try:
            used = version("torch")
        except PackageNotFoundError:
            used = None
    used = used.split("+", 1)[0] if used else None
    want = reg.requires_torch
    matches = None
    if used and want and want.startswith("torch=="):
        pin = want[len("torch==") :]
        matches = used == pin or (pin.endswith(".*") and used.startswith(pin[:-1]))
    return {"used": used, "registry_requires": want, "matches": matches}


def mismatch_advice(versions: dict, target: str, did: str = "captured", do: str = "capture") -> str | None:
    """One line when the torch used is not the one the registry's torch_npu requires."""
    if versions["matches"] is not False:
        return None
    return (
        f"{did} with torch {versions['used']}, but {target} requires "
        f"{versions['registry_requires']}: ops new in that torch are not seen here; "
        f"{do} with the torch the NPU machine will run"
    )
