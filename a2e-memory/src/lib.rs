//! Namespaced long-term memory for A2E hosts: a MemoryStore trait and an embedded SQLite + FTS5 store with optional embeddings.
