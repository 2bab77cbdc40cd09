"""What drives the agent rather than the agent: its development kit.

The scripted provider (`provider/`: a model server speaking both wire formats), the scripted
editor (`editor/`), the schema check (`schema_check/`), the offline demo (`demo`), the diagram
writer (`diagrams`) and the diagnostic methods (`debug`). The serving path never imports it
(tests/test_layers.py holds that); the command line does, for `demo`, `schema-check`,
`diagrams`, and `ACP_FSM_DEBUG_METHODS=1`.
"""
