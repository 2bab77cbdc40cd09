"""The agent's state machines, each declared as a table (see `fsm.machine`).

Tables are plain data: the runtime builds `transitions` machines from them, the startup path
consults them without importing anything heavy, and `diagrams/` is generated from them.
"""

if __name__ != "acp_fsm.fsm":  # one name per module (docs/architecture.md, "Layers")
    raise ImportError(f"import acp_fsm.fsm, not {__name__}", name=__name__)
