//! Model providers for A2E skills: OpenAI-compatible Chat Completions and Anthropic Messages, streaming, retries, and the agentic tool loop.
