"""What the agent asks of the operating system, below the tools and the MCP servers that use
it: process groups (`groups`), the watcher that stops them if the agent dies (`reaper`), and
files replaced whole (`files`)."""
