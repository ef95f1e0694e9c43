"""The simulator: retention policies side by side on one workload, with tables, JSON and a plot."""
