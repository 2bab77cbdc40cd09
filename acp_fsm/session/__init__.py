"""Sessions along their seams: `core.Session` keeps the conversation and the turn it runs;
`journal` its writes to the store, `lease` its turn lease across processes, `options` what
the user steers in it, `replay` a stored session brought back, `record` a new one's record,
and `registry.Sessions` the sessions of one connection. Nothing is imported here: the
startup path imports `record` alone."""
