//! Choosing the provider of each task.

use std::collections::hash_map::Entry;

use crate::hash::StrMap;

use crate::{Provider, ProviderRef, Task};

/// Picks the provider of a task, typically by its `capability`. `None` fails the task with
/// capability_not_found when it would start.
///
/// The orchestrator routes every task once, when the run starts, so that it can decide which
/// edges stream.
pub trait Router: Send + Sync + 'static {
    /// The provider for `task`.
    fn route(&self, task: &Task) -> Option<ProviderRef>;
}

impl<F> Router for F
where
    F: Fn(&Task) -> Option<ProviderRef> + Send + Sync + 'static,
{
    fn route(&self, task: &Task) -> Option<ProviderRef> {
        self(task)
    }
}

/// A capability already has a provider.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("capability \"{0}\" already has a provider")]
pub struct DuplicateCapability(pub String);

/// Routes by exact `capability`, with an optional fallback provider.
#[derive(Default, Clone)]
pub struct CapabilityRouter {
    providers: StrMap<String, ProviderRef>,
    fallback: Option<ProviderRef>,
}

impl std::fmt::Debug for CapabilityRouter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CapabilityRouter")
            .field("capabilities", &self.providers.keys().collect::<Vec<_>>())
            .field("fallback", &self.fallback.is_some())
            .finish()
    }
}

impl CapabilityRouter {
    /// An empty router.
    pub fn new() -> Self {
        Self::default()
    }

    /// Registers the provider of a capability; a capability has at most one.
    pub fn register(
        &mut self,
        capability: impl Into<String>,
        provider: impl Provider,
    ) -> Result<(), DuplicateCapability> {
        self.register_ref(capability, std::sync::Arc::new(provider))
    }

    /// Registers a shared provider (one provider may serve several capabilities).
    pub fn register_ref(
        &mut self,
        capability: impl Into<String>,
        provider: ProviderRef,
    ) -> Result<(), DuplicateCapability> {
        match self.providers.entry(capability.into()) {
            Entry::Occupied(e) => Err(DuplicateCapability(e.key().clone())),
            Entry::Vacant(e) => {
                e.insert(provider);
                Ok(())
            }
        }
    }

    /// Builder form of [`Self::register`].
    pub fn with(
        mut self,
        capability: impl Into<String>,
        provider: impl Provider,
    ) -> Result<Self, DuplicateCapability> {
        self.register(capability, provider)?;
        Ok(self)
    }

    /// The provider for capabilities without their own.
    #[must_use]
    pub fn with_fallback(mut self, provider: impl Provider) -> Self {
        self.fallback = Some(std::sync::Arc::new(provider));
        self
    }

    /// The registered capabilities.
    pub fn capabilities(&self) -> impl Iterator<Item = &str> {
        self.providers.keys().map(String::as_str)
    }
}

impl Router for CapabilityRouter {
    fn route(&self, task: &Task) -> Option<ProviderRef> {
        self.providers
            .get(&task.capability)
            .or(self.fallback.as_ref())
            .cloned()
    }
}
