"""Junction reference: the exhaustive oracle (and, later, the engine, policies and CLI)."""
