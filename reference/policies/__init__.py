"""Built-in retention policies and their registry.

``junction`` (the default of every command), ``dense``, ``interval`` and the vLLM forms.
"""
