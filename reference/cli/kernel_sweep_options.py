"""``junction kernel-sweep``: every input up to a bound, batched path against core.

Walks the same enumerations as ``junction.reference.oracle.exhaustive`` (every split input;
every mask input, batched per group configuration), answers each batch with
the chosen backend and each input with ``core``, and compares them element
by element. Prints the bound reached and inputs per second; exits 1 on any
disagreement. ``--seconds`` stops after the bound whose sweep ends past it.
A progress line on standard error counts the inputs checked, batch by batch
(the walk's size is not known up front: counting it would enumerate twice).
Needs the ``kernels`` extra (torch); these options do not, so help works without it.
"""

from __future__ import annotations

import argparse

from junction.reference.cli import options

__all__ = ["add_options"]


def add_options(parser: argparse.ArgumentParser) -> None:
    """Declare ``kernel-sweep``'s options; the device and backend are checked when it runs
    (``cli.kernel_sweep``: what this machine has is torch's to say)."""
    parser.description = __doc__
    options.add_bound(parser, note="; every bound up to it is swept")
    parser.add_argument(
        "--device",
        default=None,
        help="a torch device this machine has (default cuda if available, else cpu)",
    )
    parser.add_argument(
        "--backend",
        default="auto",
        metavar="NAME",
        help="auto (Triton for CUDA tensors, torch elsewhere), torch or triton (default auto)",
    )
    options.add_seconds(
        parser, default=None, bounds="the sweep: it stops after the bound that ends past it"
    )
