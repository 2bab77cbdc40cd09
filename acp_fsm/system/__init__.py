"""What the agent asks of the operating system, below the tools and the MCP servers that use
it: the keeper every command runs under and the agent's side of it (`keeper`, `kept`), process
groups of the agent's own helpers (`groups`), the watcher that stops them if the agent dies
(`reaper`), files replaced whole (`atomic_write`), and sets of file changes made all or none
across a kill (`changes`, over `nofollow`: files reached without following links)."""
