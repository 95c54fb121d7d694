//! Host errors: the plugin-facing error of `a2e-plugin`, which maps every error to its wire code.

pub use a2e_plugin::{Cause, HostError, HostResult};
