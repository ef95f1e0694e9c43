"""The reference engine: a deterministic simulator whose decisions all come from core.

It calls a retention policy through the ``Policy`` protocol (``policy.py``) and
never imports a concrete policy: the caller chooses one.
"""
