"""The agent's state machines, each declared as a table (see `fsm.machine`).

Tables are plain data: the runtime builds `transitions` machines from them, the startup path
consults them without importing anything heavy, and `diagrams/` is generated from them.
"""
