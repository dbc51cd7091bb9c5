"""The fuzz suite: every input path of every command, driven with hostile and careless inputs.

Each input is a :class:`tests.fuzz.harness.Case` (the command line, the files it needs, whether
the input is valid, what an error must name); strategies build cases by mutating real valid
inputs (the bundled snapshots and scenarios, the checks' own settings) and a catalogue holds the
known bad inputs as explicit regression cases. Every case is run as the user runs it and judged
by one contract (:func:`tests.fuzz.harness.assert_contract`): exit 0/1 only for valid input,
exit 2 with one ``error:`` line naming the thing at fault for invalid input, never exit 3, never a
traceback, never over the time bound.

The bounded run is this package (``KUBEMEDIC_FUZZ_EXAMPLES`` raises its budget); the long run is
``bench/fuzz.py``.

May import: kubemedic (the CLI and what builds valid inputs), tests.sim and tests.store helpers,
hypothesis.
"""
