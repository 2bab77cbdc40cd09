"""What the agent asks of the operating system, below the tools and the MCP servers that use
it: process groups (`groups`), the watcher that stops them if the agent dies (`reaper`),
files replaced whole (`files`), and sets of file changes made all or none across a kill
(`changes`)."""
