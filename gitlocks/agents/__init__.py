"""Coding-agent integration: the guard a harness runs as its hook, the settings that
register it, and the MCP server (docs/design.md, section 6.5)."""
