"""End-to-end tests of sessions and turns: the real agent process against the scripted provider."""
