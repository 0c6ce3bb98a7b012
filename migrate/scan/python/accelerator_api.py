"""Spelling a portable port's device names through a project's accelerator object
(``get_accelerator().synchronize``): the table and its detection are
migrate/scan/accelerator_apis.py (shared with the project discovery)."""

from __future__ import annotations

import re

from migrate.scan.accelerator_apis import AcceleratorApi, api_of, bound_getter, mirrors_cuda
from migrate.scan.python.unspellable import Unspellable

# spelling through the object, for DeviceNames (``names``: migrate/scan/python/device_names.py)


def _unspellable(why: str) -> Exception:
    return Unspellable(why)


def through_accelerator(names, template: str, node, imports: list[str]) -> str:
    """``{device_module}.name`` as the project's accelerator object's method where it has
    one (``get_accelerator().synchronize``); Unspellable where it has none: the port
    never adds a second abstraction beside it."""
    if "{device_module}" not in template:
        return template
    accel = accelerator_at(names, node)
    if accel is None:
        return template
    call, more, api = accel

    def one(m: re.Match) -> str:
        method = api.methods.get(m.group(1))
        if method is None:
            raise _unspellable(f"the project's accelerator object has no method for torch.cuda.{m.group(1)}")
        return f"{call}.{method}"

    template = re.sub(r"\{device_module\}\.(\w+)", one, template)
    if "{device_module}" in template:
        raise _unspellable("the project's accelerator object stands for no torch device module")
    imports.extend(more)
    return template


def accelerator_at(names, node) -> tuple[str, list[str], AcceleratorApi] | None:
    """(its call, the imports it needs, the API) of the accelerator object the file or its
    package routes devices through (migrate/scan/accelerator_apis.py), or None.
    Unspellable in the object's own code (the module defining its getter or its
    ``device_name``): routed through itself it would call itself."""
    facts = getattr(names, "_accelerator_facts", None)
    if facts is None:  # once per file, not once per finding
        bound, ref = bound_getter(names.f), names.fd.helper("accelerator")
        own = bool(bound or ref) and (
            mirrors_cuda(names.f.text) or bool(ref and ref.module == names.fd.module)
        )
        facts = names._accelerator_facts = (bound, ref, own)
    bound, ref, own = facts
    if own:
        raise _unspellable("the accelerator object's own code: its backends are a person's work")
    if bound is not None and not names._shadowed(bound[0], node):
        return f"{bound[0]}()", [], bound[1]
    api = api_of(ref.module, ref.name) if ref is not None else None
    if ref is None or api is None:
        return None
    for module in (*ref.publics, ref.module):
        local = names.local_for(f"{module}.{ref.name}")
        if local and "." not in local:
            return f"{local}()", [], api
    if names._taken(ref.name) or names._shadowed(ref.name, node):
        return None
    return f"{ref.name}()", [names._import(ref.import_from(names.fd.module), ref.name)], api


def spell_kind(names, kind: str, node, accel) -> tuple[str, list[str]]:
    """``kind`` spelled through the project's accelerator object."""
    call, imports, api = accel
    if kind == "type":
        return f"{call}.{api.type}", imports
    if kind == "backend" and api.backend:
        return f"{call}.{api.backend}", imports
    if kind == "amp":
        local = names.local_device_object(node) if node is not None else None
        if local:
            return f"{local}.type", []
    # autocast's device off the accelerator, a module as a value: no method says it
    raise _unspellable(f"the project's accelerator object names no {kind} of its own")
