"""vLLM 0.33.0's own KV-cache and scheduler tests, run with the core swapped in.

``make vllm-suite`` (``junction audit vllm-suite``, :mod:`.cli`): fetch vLLM's
sdist (:mod:`.workspace`), select the tests that call one of the three
decision points and run them against unmodified vLLM, then run them with
:mod:`junction.dropin` installed (:mod:`.suite`, through the pytest
plugin :mod:`.plugin`), and report (:mod:`.report`).
"""
