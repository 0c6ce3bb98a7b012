"""The one exception of device spelling: no clean way to name the device at a node."""


class Unspellable(Exception):
    """No clean way to name the device here (e.g. the helper's name is taken)."""
