//! The `memory_write`, `memory_search` and `memory_delete` tools, run
//! against a store and a namespace policy, returning JSON.

mod args;

use a2e_proto::ErrorCode;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

pub use args::{MemoryDeleteArgs, MemorySearchArgs, MemoryWriteArgs};

use crate::error::StoreError;
use crate::limits::{TopK, resolve_top_k};
use crate::namespace::validate_namespace;
use crate::policy::{NamespacePolicy, Principal};
use crate::store::MemoryStore;
use crate::types::{Hit, Memory, NewMemory, SearchQuery};

/// `memory_write`.
pub const MEMORY_WRITE: &str = "memory_write";
/// `memory_search`.
pub const MEMORY_SEARCH: &str = "memory_search";
/// `memory_delete`.
pub const MEMORY_DELETE: &str = "memory_delete";
/// The three tool names.
pub const TOOL_NAMES: [&str; 3] = [MEMORY_WRITE, MEMORY_SEARCH, MEMORY_DELETE];

/// Longest id accepted by `memory_delete`.
const MAX_ID_LEN: usize = 64;

/// Why a tool call did not succeed: refused before running, or failed.
#[derive(Debug, thiserror::Error)]
pub enum ToolError {
    /// Not one of [`TOOL_NAMES`]. Refused.
    #[error("unknown memory tool `{0}`")]
    UnknownTool(String),
    /// Arguments of the wrong shape or over a limit. Refused.
    #[error("invalid arguments: {0}")]
    Invalid(String),
    /// The session may not touch this namespace. Refused.
    #[error("namespace {namespace:?} is not allowed for this session")]
    Unauthorized {
        /// The namespace asked for.
        namespace: String,
    },
    /// No memory with that id that this session may see. Failed.
    #[error("no memory with id {id:?}")]
    NotFound {
        /// The id asked for.
        id: String,
    },
    /// The store failed. Failed.
    #[error(transparent)]
    Failed(StoreError),
}

impl ToolError {
    /// Whether the call was refused before anything ran (an `error` message
    /// on the wire) rather than run and failed (`success: false`).
    pub fn is_refusal(&self) -> bool {
        matches!(
            self,
            Self::UnknownTool(_) | Self::Invalid(_) | Self::Unauthorized { .. }
        )
    }

    /// The A2E error code: `unknown_tool`, `schema_violation`,
    /// `unauthorized`, or `tool_error`.
    pub fn code(&self) -> ErrorCode {
        match self {
            Self::UnknownTool(_) => ErrorCode::UNKNOWN_TOOL,
            Self::Invalid(_) => ErrorCode::SCHEMA_VIOLATION,
            Self::Unauthorized { .. } => ErrorCode::UNAUTHORIZED,
            Self::NotFound { .. } | Self::Failed(_) => ErrorCode::TOOL_ERROR,
        }
    }
}

impl From<StoreError> for ToolError {
    fn from(e: StoreError) -> Self {
        if e.is_invalid_input() {
            Self::Invalid(e.to_string())
        } else {
            Self::Failed(e)
        }
    }
}

/// A tool's name, description and JSON Schema of its arguments.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolSpec {
    /// `memory_write`, `memory_search` or `memory_delete`.
    pub name: &'static str,
    /// One line for the model.
    pub description: &'static str,
    /// JSON Schema of the arguments.
    pub input_schema: Value,
}

/// The three tools' specs, for registering them.
pub fn tool_specs() -> Vec<ToolSpec> {
    let schema = |s: schemars::Schema| s.to_value();
    vec![
        ToolSpec {
            name: MEMORY_WRITE,
            description: "Store a text in long-term memory under a namespace; returns its id.",
            input_schema: schema(schemars::schema_for!(MemoryWriteArgs)),
        },
        ToolSpec {
            name: MEMORY_SEARCH,
            description: "Search long-term memory in one or more namespaces; returns hits best first.",
            input_schema: schema(schemars::schema_for!(MemorySearchArgs)),
        },
        ToolSpec {
            name: MEMORY_DELETE,
            description: "Delete one memory by id.",
            input_schema: schema(schemars::schema_for!(MemoryDeleteArgs)),
        },
    ]
}

fn parse<T: DeserializeOwned>(args: Value) -> Result<T, ToolError> {
    serde_path_to_error::deserialize(args).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        if path == "." {
            ToolError::Invalid(inner.to_string())
        } else {
            ToolError::Invalid(format!("{path}: {inner}"))
        }
    })
}

/// The memory tools of one host: a store and the policy that guards it.
#[derive(Debug, Clone)]
pub struct MemoryTools<S> {
    store: S,
    policy: NamespacePolicy,
}

impl<S: MemoryStore> MemoryTools<S> {
    /// Tools over `store`, allowing what `policy` allows.
    pub fn new(store: S, policy: NamespacePolicy) -> Self {
        Self { store, policy }
    }

    /// The store.
    pub fn store(&self) -> &S {
        &self.store
    }

    /// The policy.
    pub fn policy(&self) -> &NamespacePolicy {
        &self.policy
    }

    fn authorize(&self, who: &Principal, namespace: &str) -> Result<(), ToolError> {
        validate_namespace(namespace).map_err(|e| {
            ToolError::Invalid(format!(
                "namespace {:?}: {e}",
                namespace.chars().take(80).collect::<String>()
            ))
        })?;
        if self.policy.allows(who, namespace) {
            Ok(())
        } else {
            Err(ToolError::Unauthorized {
                namespace: namespace.to_owned(),
            })
        }
    }

    /// Runs a tool by name with JSON arguments.
    pub async fn call(&self, who: &Principal, name: &str, args: Value) -> Result<Value, ToolError> {
        match name {
            MEMORY_WRITE => self.write(who, parse(args)?).await,
            MEMORY_SEARCH => self.search(who, parse(args)?).await,
            MEMORY_DELETE => self.delete(who, parse(args)?).await,
            other => Err(ToolError::UnknownTool(other.chars().take(80).collect())),
        }
    }

    /// `memory_write` → `{id, namespace, created_at, embedded}`.
    pub async fn write(&self, who: &Principal, args: MemoryWriteArgs) -> Result<Value, ToolError> {
        let m = self.write_memory(who, args).await?;
        Ok(
            json!({"id": m.id, "namespace": m.namespace, "created_at": m.created_at, "embedded": m.embedded}),
        )
    }

    /// `memory_write`, answering the stored [`Memory`].
    pub async fn write_memory(
        &self,
        who: &Principal,
        args: MemoryWriteArgs,
    ) -> Result<Memory, ToolError> {
        self.authorize(who, &args.namespace)?;
        let memory = NewMemory::new(args.namespace, args.content)
            .with_metadata(args.metadata.unwrap_or_default());
        Ok(self.store.write(memory).await?)
    }

    /// `memory_search` → `{hits: [{id, namespace, content, metadata, score:
    /// {kind, value, …}, created_at}], count, top_k}` (plus
    /// `top_k_requested` when it was clamped).
    pub async fn search(
        &self,
        who: &Principal,
        args: MemorySearchArgs,
    ) -> Result<Value, ToolError> {
        let asked = args.top_k;
        let (hits, top_k) = self.search_hits(who, args).await?;
        let mut out = json!({"hits": hits, "count": hits.len(), "top_k": top_k.get()});
        if let (TopK::Clamped(_), Some(asked), Some(obj)) = (top_k, asked, out.as_object_mut()) {
            obj.insert("top_k_requested".into(), json!(asked));
        }
        Ok(out)
    }

    /// `memory_search`, answering the hits and how `top_k` was resolved.
    pub async fn search_hits(
        &self,
        who: &Principal,
        args: MemorySearchArgs,
    ) -> Result<(Vec<Hit>, TopK), ToolError> {
        let top_k = resolve_top_k(args.top_k).ok_or_else(|| {
            ToolError::Invalid(format!(
                "top_k: 0 results asked for (1 to {})",
                crate::limits::MAX_TOP_K
            ))
        })?;
        if args.namespaces.is_empty() {
            return Err(ToolError::Invalid(
                "namespaces: at least one namespace is needed".into(),
            ));
        }
        for ns in &args.namespaces {
            self.authorize(who, ns)?;
        }
        let mut query =
            SearchQuery::new(args.query.unwrap_or_default(), args.namespaces).top_k(top_k.get());
        query.filter = args.filter;
        Ok((self.store.search(query).await?, top_k))
    }

    /// `memory_delete` → `{id, namespace, deleted: true}`. An id that does not
    /// exist, or lives in a namespace this session may not touch, is
    /// [`ToolError::NotFound`] alike, so nothing leaks about other namespaces.
    pub async fn delete(
        &self,
        who: &Principal,
        args: MemoryDeleteArgs,
    ) -> Result<Value, ToolError> {
        let m = self.delete_memory(who, args).await?;
        Ok(json!({"id": m.id, "namespace": m.namespace, "deleted": true}))
    }

    /// `memory_delete`, answering the deleted [`Memory`].
    pub async fn delete_memory(
        &self,
        who: &Principal,
        args: MemoryDeleteArgs,
    ) -> Result<Memory, ToolError> {
        if args.id.is_empty() || args.id.len() > MAX_ID_LEN {
            return Err(ToolError::Invalid(format!(
                "id: 1 to {MAX_ID_LEN} characters"
            )));
        }
        if let Some(ns) = &args.namespace {
            self.authorize(who, ns)?;
        }
        let not_found = || ToolError::NotFound {
            id: args.id.clone(),
        };
        let memory = self.store.get(&args.id).await?.ok_or_else(not_found)?;
        let visible = args
            .namespace
            .as_ref()
            .is_none_or(|ns| *ns == memory.namespace)
            && self.policy.allows(who, &memory.namespace);
        if !visible || !self.store.delete(&args.id).await? {
            return Err(not_found());
        }
        Ok(memory)
    }
}
