//! The store trait and its object-safe twin.

use std::future::Future;
use std::sync::Arc;

use futures::future::BoxFuture;

use crate::error::StoreError;
use crate::types::{Hit, Memory, NamespaceInfo, NewMemory, SearchQuery};

/// A store of namespaced memories.
///
/// Async because a write or a search may call an embeddings provider over
/// the network, and a backend may be remote; the embedded SQLite store does
/// its blocking file work on tokio's blocking pool, never on a runtime
/// worker. Implementations validate their input themselves (namespaces,
/// sizes): the tools check them earlier only to refuse before running.
/// Authorization is not the store's business: see [`crate::NamespacePolicy`].
pub trait MemoryStore: Send + Sync {
    /// Stores a memory and returns it with its id once it is durable.
    fn write(&self, memory: NewMemory) -> impl Future<Output = Result<Memory, StoreError>> + Send;

    /// Stores several memories in one transaction, all or none.
    fn write_batch(
        &self,
        memories: Vec<NewMemory>,
    ) -> impl Future<Output = Result<Vec<Memory>, StoreError>> + Send;

    /// The best `top_k` hits for a query, best first.
    fn search(
        &self,
        query: SearchQuery,
    ) -> impl Future<Output = Result<Vec<Hit>, StoreError>> + Send;

    /// One memory by id.
    fn get(&self, id: &str) -> impl Future<Output = Result<Option<Memory>, StoreError>> + Send;

    /// Deletes a memory; `false` when there was none with that id.
    fn delete(&self, id: &str) -> impl Future<Output = Result<bool, StoreError>> + Send;

    /// Every namespace that holds memories, sorted by name.
    fn namespaces(&self) -> impl Future<Output = Result<Vec<NamespaceInfo>, StoreError>> + Send;

    /// The newest memories of a namespace, newest first, at most `limit`.
    fn recent(
        &self,
        namespace: &str,
        limit: usize,
    ) -> impl Future<Output = Result<Vec<Memory>, StoreError>> + Send;
}

/// [`MemoryStore`] with boxed futures, for `Arc<dyn DynMemoryStore>`.
/// Every `MemoryStore` is one; `dyn DynMemoryStore` is a `MemoryStore` again.
#[allow(missing_docs)]
pub trait DynMemoryStore: Send + Sync {
    fn write_dyn(&self, memory: NewMemory) -> BoxFuture<'_, Result<Memory, StoreError>>;
    fn write_batch_dyn(
        &self,
        memories: Vec<NewMemory>,
    ) -> BoxFuture<'_, Result<Vec<Memory>, StoreError>>;
    fn search_dyn(&self, query: SearchQuery) -> BoxFuture<'_, Result<Vec<Hit>, StoreError>>;
    fn get_dyn<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Option<Memory>, StoreError>>;
    fn delete_dyn<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<bool, StoreError>>;
    fn namespaces_dyn(&self) -> BoxFuture<'_, Result<Vec<NamespaceInfo>, StoreError>>;
    fn recent_dyn<'a>(
        &'a self,
        namespace: &'a str,
        limit: usize,
    ) -> BoxFuture<'a, Result<Vec<Memory>, StoreError>>;
}

impl<T: MemoryStore> DynMemoryStore for T {
    fn write_dyn(&self, memory: NewMemory) -> BoxFuture<'_, Result<Memory, StoreError>> {
        Box::pin(self.write(memory))
    }
    fn write_batch_dyn(
        &self,
        memories: Vec<NewMemory>,
    ) -> BoxFuture<'_, Result<Vec<Memory>, StoreError>> {
        Box::pin(self.write_batch(memories))
    }
    fn search_dyn(&self, query: SearchQuery) -> BoxFuture<'_, Result<Vec<Hit>, StoreError>> {
        Box::pin(self.search(query))
    }
    fn get_dyn<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Option<Memory>, StoreError>> {
        Box::pin(self.get(id))
    }
    fn delete_dyn<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<bool, StoreError>> {
        Box::pin(self.delete(id))
    }
    fn namespaces_dyn(&self) -> BoxFuture<'_, Result<Vec<NamespaceInfo>, StoreError>> {
        Box::pin(self.namespaces())
    }
    fn recent_dyn<'a>(
        &'a self,
        namespace: &'a str,
        limit: usize,
    ) -> BoxFuture<'a, Result<Vec<Memory>, StoreError>> {
        Box::pin(self.recent(namespace, limit))
    }
}

macro_rules! forward_store {
    ($ty:ty) => {
        impl MemoryStore for $ty {
            fn write(
                &self,
                memory: NewMemory,
            ) -> impl Future<Output = Result<Memory, StoreError>> + Send {
                self.write_dyn(memory)
            }
            fn write_batch(
                &self,
                memories: Vec<NewMemory>,
            ) -> impl Future<Output = Result<Vec<Memory>, StoreError>> + Send {
                self.write_batch_dyn(memories)
            }
            fn search(
                &self,
                query: SearchQuery,
            ) -> impl Future<Output = Result<Vec<Hit>, StoreError>> + Send {
                self.search_dyn(query)
            }
            fn get(
                &self,
                id: &str,
            ) -> impl Future<Output = Result<Option<Memory>, StoreError>> + Send {
                async move { self.get_dyn(id).await }
            }
            fn delete(&self, id: &str) -> impl Future<Output = Result<bool, StoreError>> + Send {
                async move { self.delete_dyn(id).await }
            }
            fn namespaces(
                &self,
            ) -> impl Future<Output = Result<Vec<NamespaceInfo>, StoreError>> + Send {
                self.namespaces_dyn()
            }
            fn recent(
                &self,
                namespace: &str,
                limit: usize,
            ) -> impl Future<Output = Result<Vec<Memory>, StoreError>> + Send {
                async move { self.recent_dyn(namespace, limit).await }
            }
        }
    };
}

forward_store!(dyn DynMemoryStore);

impl<T: MemoryStore + ?Sized> MemoryStore for Arc<T> {
    fn write(&self, memory: NewMemory) -> impl Future<Output = Result<Memory, StoreError>> + Send {
        (**self).write(memory)
    }
    fn write_batch(
        &self,
        memories: Vec<NewMemory>,
    ) -> impl Future<Output = Result<Vec<Memory>, StoreError>> + Send {
        (**self).write_batch(memories)
    }
    fn search(
        &self,
        query: SearchQuery,
    ) -> impl Future<Output = Result<Vec<Hit>, StoreError>> + Send {
        (**self).search(query)
    }
    fn get(&self, id: &str) -> impl Future<Output = Result<Option<Memory>, StoreError>> + Send {
        (**self).get(id)
    }
    fn delete(&self, id: &str) -> impl Future<Output = Result<bool, StoreError>> + Send {
        (**self).delete(id)
    }
    fn namespaces(&self) -> impl Future<Output = Result<Vec<NamespaceInfo>, StoreError>> + Send {
        (**self).namespaces()
    }
    fn recent(
        &self,
        namespace: &str,
        limit: usize,
    ) -> impl Future<Output = Result<Vec<Memory>, StoreError>> + Send {
        (**self).recent(namespace, limit)
    }
}
