"""The agent's state machines, each declared as a table (see `fsm.machine`).

Tables are plain data, run by one evaluator (`MachineSpec.step`) on the startup path and at
run time alike, held in the tests to the same tables built as `transitions` machines, and
drawn into `diagrams/`.
"""

if __name__ != "acp_fsm.fsm":  # one name per module (docs/architecture.md, "Layers")
    raise ImportError(f"import acp_fsm.fsm, not {__name__}", name=__name__)
