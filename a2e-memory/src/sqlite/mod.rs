//! The embedded store: one SQLite file, WAL, FTS5, optional vectors.

mod rows;
pub use self::schema::Durability;
mod schema;
mod search;
mod vectors;

use std::fmt;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use rusqlite::Connection;

use self::rows::Prepared;
use self::search::{Plan, fts_terms};
use self::vectors::{VectorCache, to_blob};
use crate::embed::{DynEmbedder, Embedder};
use crate::error::StoreError;
use crate::fusion::normalized;
use crate::limits::{Limits, MAX_TOP_K};
use crate::namespace::{MAX_SEGMENT_LEN, is_segment, validate_namespace};
use crate::store::MemoryStore;
use crate::types::{Hit, Memory, Metadata, NamespaceInfo, NewMemory, SearchQuery};

/// How to open a [`SqliteStore`].
#[derive(Clone, Default)]
pub struct StoreOptions {
    /// Size limits enforced on every write and search.
    pub limits: Limits,
    /// Embeddings provider; `None` for BM25 alone.
    pub embedder: Option<Arc<dyn DynEmbedder>>,
    /// How long to wait for another writer's lock (default 10 s).
    pub busy_timeout: Option<Duration>,
    /// What an acknowledged write survives (default: a power cut).
    pub durability: Durability,
}

impl StoreOptions {
    /// The same options with an embeddings provider.
    pub fn embedder(mut self, embedder: impl Embedder + 'static) -> Self {
        self.embedder = Some(Arc::new(embedder));
        self
    }

    /// The same options with other limits.
    pub fn limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }
}

impl fmt::Debug for StoreOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StoreOptions")
            .field("limits", &self.limits)
            .field(
                "embedder",
                &self.embedder.as_ref().map(|e| e.model_dyn().to_owned()),
            )
            .field("busy_timeout", &self.busy_timeout)
            .field("durability", &self.durability)
            .finish()
    }
}

struct Inner {
    conn: Mutex<Connection>,
    cache: Mutex<VectorCache>,
    embedder: Option<Arc<dyn DynEmbedder>>,
    limits: Limits,
    path: PathBuf,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The embedded default [`MemoryStore`]: one SQLite file.
///
/// - **Durability**: WAL with `synchronous=FULL` by default; a write returns
///   only after its transaction is committed and the WAL synced, so an
///   acknowledged memory survives a killed process and a power cut
///   ([`Durability::ProcessCrash`] trades the power cut for speed).
/// - **Concurrency**: each handle owns one connection; writes take SQLite's
///   write lock up front (`BEGIN IMMEDIATE`) and wait up to the busy timeout
///   for it, so handles and processes sharing a file never lose a write.
///   Clones of a handle share its connection.
/// - **Blocking**: every file operation and the vector scan run on tokio's
///   blocking pool (`spawn_blocking`); a runtime is required.
/// - **Ranking**: FTS5 BM25 (porter stemming, unicode, diacritics folded);
///   with an embedder, exact cosine similarity over the namespaces' vectors
///   (kept in memory per handle, refreshed incrementally), fused with BM25
///   by reciprocal rank.
#[derive(Clone)]
pub struct SqliteStore {
    inner: Arc<Inner>,
}

impl fmt::Debug for SqliteStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SqliteStore")
            .field("path", &self.inner.path)
            .field(
                "embedder",
                &self
                    .inner
                    .embedder
                    .as_ref()
                    .map(|e| e.model_dyn().to_owned()),
            )
            .finish()
    }
}

impl SqliteStore {
    /// Opens or creates the store at `path` (parent directories included).
    pub async fn open(path: impl AsRef<Path>, options: StoreOptions) -> Result<Self, StoreError> {
        let path = path.as_ref().to_path_buf();
        let busy = options.busy_timeout.unwrap_or(Duration::from_secs(10));
        let p = path.clone();
        let durability = options.durability;
        let conn = tokio::task::spawn_blocking(move || schema::open(&p, busy, durability))
            .await
            .map_err(|e| StoreError::Worker(e.to_string()))??;
        Ok(Self {
            inner: Arc::new(Inner {
                conn: Mutex::new(conn),
                cache: Mutex::new(VectorCache::default()),
                embedder: options.embedder,
                limits: options.limits,
                path,
            }),
        })
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.inner.path
    }

    /// The limits this store enforces.
    pub fn limits(&self) -> &Limits {
        &self.inner.limits
    }

    /// The embedding model, when an embedder is configured.
    pub fn embedding_model(&self) -> Option<&str> {
        self.inner.embedder.as_ref().map(|e| e.model_dyn())
    }

    async fn blocking<T, F>(&self, f: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&Inner) -> Result<T, StoreError> + Send + 'static,
    {
        let inner = Arc::clone(&self.inner);
        tokio::task::spawn_blocking(move || f(&inner))
            .await
            .map_err(|e| StoreError::Worker(e.to_string()))?
    }

    fn check_namespace(namespace: &str) -> Result<(), StoreError> {
        validate_namespace(namespace).map_err(|e| StoreError::namespace(namespace, e))
    }

    fn prepare(&self, m: &NewMemory) -> Result<(String, String), StoreError> {
        Self::check_namespace(&m.namespace)?;
        check_content(&m.content, &self.inner.limits)?;
        let metadata = serde_json::to_string(&m.metadata)
            .map_err(|e| StoreError::Invalid(format!("metadata: {e}")))?;
        if metadata.len() > self.inner.limits.max_metadata_bytes {
            return Err(StoreError::Invalid(format!(
                "metadata is {} bytes of JSON (at most {})",
                metadata.len(),
                self.inner.limits.max_metadata_bytes
            )));
        }
        Ok((m.namespace.clone(), metadata))
    }

    async fn write_all(&self, memories: Vec<NewMemory>) -> Result<Vec<Memory>, StoreError> {
        let mut prepared = Vec::with_capacity(memories.len());
        for m in &memories {
            let (namespace, metadata) = self.prepare(m)?;
            prepared.push(Prepared {
                namespace,
                content: m.content.clone(),
                metadata,
                vector: None,
            });
        }
        if let Some(embedder) = &self.inner.embedder
            && !memories.is_empty()
        {
            let texts = memories.into_iter().map(|m| m.content).collect();
            let vectors = embedder.embed(texts).await?;
            if vectors.len() != prepared.len() {
                return Err(crate::error::EmbedError::Decode(format!(
                    "{} vectors for {} texts",
                    vectors.len(),
                    prepared.len()
                ))
                .into());
            }
            for (p, v) in prepared.iter_mut().zip(vectors) {
                p.vector = normalized(&v).map(|u| (embedder.model_dyn().to_owned(), to_blob(&u)));
            }
        }
        self.blocking(move |inner| rows::insert(&mut lock(&inner.conn), prepared))
            .await
    }

    async fn plan(&self, query: SearchQuery) -> Result<Plan, StoreError> {
        let limits = &self.inner.limits;
        if query.namespaces.is_empty() {
            return Err(StoreError::Invalid("namespaces is empty".into()));
        }
        if query.namespaces.len() > limits.max_search_namespaces {
            return Err(StoreError::Invalid(format!(
                "{} namespaces (at most {})",
                query.namespaces.len(),
                limits.max_search_namespaces
            )));
        }
        let mut namespaces = Vec::with_capacity(query.namespaces.len());
        for ns in query.namespaces {
            Self::check_namespace(&ns)?;
            if !namespaces.contains(&ns) {
                namespaces.push(ns);
            }
        }
        if query.top_k == 0 {
            return Err(StoreError::Invalid("top_k is 0".into()));
        }
        if query.query.len() > limits.max_query_bytes {
            return Err(StoreError::Invalid(format!(
                "query is {} bytes (at most {})",
                query.query.len(),
                limits.max_query_bytes
            )));
        }
        let filter = filter_pairs(query.filter.as_ref(), limits)?;
        let text = query.query.trim();
        let recent = text.is_empty();
        let mut vector = None;
        if let Some(embedder) = self.inner.embedder.as_ref().filter(|_| !recent) {
            match embedder.embed(vec![text.to_owned()]).await {
                Ok(mut vs) => {
                    vector = vs
                        .pop()
                        .and_then(|v| normalized(&v))
                        .map(|u| (embedder.model_dyn().to_owned(), u));
                }
                Err(e) => {
                    tracing::warn!(error = %e, "query embedding failed; searching with BM25 alone")
                }
            }
        }
        Ok(Plan {
            namespaces,
            terms: fts_terms(text),
            filter,
            top_k: query.top_k.min(MAX_TOP_K),
            vector,
            recent,
        })
    }
}

/// Checks content against the limits.
pub(crate) fn check_content(content: &str, limits: &Limits) -> Result<(), StoreError> {
    if content.trim().is_empty() {
        return Err(StoreError::Invalid("content is empty".into()));
    }
    if content.len() > limits.max_content_bytes {
        return Err(StoreError::Invalid(format!(
            "content is {} bytes (at most {})",
            content.len(),
            limits.max_content_bytes
        )));
    }
    Ok(())
}

/// The filter as `(json path, json value)` pairs; keys are single segments
/// of the namespace alphabet, so a key can never be read as a path.
fn filter_pairs(
    filter: Option<&Metadata>,
    limits: &Limits,
) -> Result<Vec<(String, String)>, StoreError> {
    let Some(filter) = filter else {
        return Ok(Vec::new());
    };
    if filter.len() > limits.max_filter_keys {
        return Err(StoreError::Invalid(format!(
            "filter has {} keys (at most {})",
            filter.len(),
            limits.max_filter_keys
        )));
    }
    filter
        .iter()
        .map(|(key, value)| {
            if !is_segment(key) {
                return Err(StoreError::Invalid(format!(
                    "filter key {:?}: use 1 to {MAX_SEGMENT_LEN} letters, digits, `_` or `-`",
                    key.chars().take(80).collect::<String>()
                )));
            }
            let json = serde_json::to_string(value)
                .map_err(|e| StoreError::Invalid(format!("filter {key}: {e}")))?;
            Ok((format!("$.\"{key}\""), json))
        })
        .collect()
}

impl MemoryStore for SqliteStore {
    async fn write(&self, memory: NewMemory) -> Result<Memory, StoreError> {
        let mut written = self.write_all(vec![memory]).await?;
        written
            .pop()
            .ok_or_else(|| StoreError::Worker("insert returned nothing".into()))
    }

    fn write_batch(
        &self,
        memories: Vec<NewMemory>,
    ) -> impl Future<Output = Result<Vec<Memory>, StoreError>> + Send {
        self.write_all(memories)
    }

    async fn search(&self, query: SearchQuery) -> Result<Vec<Hit>, StoreError> {
        let plan = self.plan(query).await?;
        self.blocking(move |inner| {
            let mut conn = lock(&inner.conn);
            let mut cache = lock(&inner.cache);
            search::run(&mut conn, &mut cache, &plan)
        })
        .await
    }

    fn get(&self, id: &str) -> impl Future<Output = Result<Option<Memory>, StoreError>> + Send {
        let id = id.to_owned();
        self.blocking(move |inner| rows::get(&lock(&inner.conn), &id))
    }

    fn delete(&self, id: &str) -> impl Future<Output = Result<bool, StoreError>> + Send {
        let id = id.to_owned();
        self.blocking(move |inner| rows::delete(&mut lock(&inner.conn), &id))
    }

    fn namespaces(&self) -> impl Future<Output = Result<Vec<NamespaceInfo>, StoreError>> + Send {
        self.blocking(|inner| rows::namespaces(&lock(&inner.conn)))
    }

    fn recent(
        &self,
        namespace: &str,
        limit: usize,
    ) -> impl Future<Output = Result<Vec<Memory>, StoreError>> + Send {
        let namespace = namespace.to_owned();
        async move {
            Self::check_namespace(&namespace)?;
            self.blocking(move |inner| rows::recent(&lock(&inner.conn), &namespace, limit))
                .await
        }
    }
}
