//! MCP both ways for A2E hosts: MCP servers mounted as toolkits, and an A2E tool backend served to MCP clients (rmcp).
