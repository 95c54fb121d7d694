//! Embeddings: the [`Embedder`] trait and an OpenAI-compatible client.

mod http;
mod openai;

use std::future::Future;
use std::sync::Arc;

use futures::future::BoxFuture;

pub use openai::{EmbedderConfig, OpenAiEmbedder};

use crate::error::EmbedError;

/// Turns texts into vectors.
pub trait Embedder: Send + Sync {
    /// The model name, stored with each vector.
    fn model(&self) -> &str;

    /// One vector per text, in order, all of one length.
    fn embed(
        &self,
        texts: Vec<String>,
    ) -> impl Future<Output = Result<Vec<Vec<f32>>, EmbedError>> + Send;
}

/// [`Embedder`] with a boxed future, for `Arc<dyn DynEmbedder>`.
pub trait DynEmbedder: Send + Sync {
    /// See [`Embedder::model`].
    fn model_dyn(&self) -> &str;
    /// See [`Embedder::embed`].
    fn embed_dyn(&self, texts: Vec<String>) -> BoxFuture<'_, Result<Vec<Vec<f32>>, EmbedError>>;
}

impl<T: Embedder> DynEmbedder for T {
    fn model_dyn(&self) -> &str {
        self.model()
    }
    fn embed_dyn(&self, texts: Vec<String>) -> BoxFuture<'_, Result<Vec<Vec<f32>>, EmbedError>> {
        Box::pin(self.embed(texts))
    }
}

impl Embedder for dyn DynEmbedder {
    fn model(&self) -> &str {
        self.model_dyn()
    }
    fn embed(
        &self,
        texts: Vec<String>,
    ) -> impl Future<Output = Result<Vec<Vec<f32>>, EmbedError>> + Send {
        self.embed_dyn(texts)
    }
}

impl<T: Embedder + ?Sized> Embedder for Arc<T> {
    fn model(&self) -> &str {
        (**self).model()
    }
    fn embed(
        &self,
        texts: Vec<String>,
    ) -> impl Future<Output = Result<Vec<Vec<f32>>, EmbedError>> + Send {
        (**self).embed(texts)
    }
}
