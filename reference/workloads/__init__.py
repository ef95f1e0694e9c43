"""Workloads and traces: what requests arrive, and the loops that feed them to an engine."""
