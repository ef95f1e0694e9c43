"""Each decision from first principles, position by position, and the exhaustive walk.

Nothing here imports ``core``: the oracle is a second, independent statement
of the domain, and an implementation is checked by handing it to the walk.
"""
