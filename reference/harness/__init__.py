"""The promise harness: the seven promises checked on any subject, and the findings built on it."""
