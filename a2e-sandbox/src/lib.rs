//! Sandboxed child processes for A2E hosts: process groups, parent-death signal, rlimits, minimal environment, no network, Landlock, and outcomes (out of memory, crash by signal, timeout).
