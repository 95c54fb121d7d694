//! MCP resources: what a provider offers, and the workspace's files.
//!
//! [`WorkspaceResources`] offers every file under the workspace root as a
//! `file://` resource (listed in pages of [`PAGE_SIZE`], skipping hidden
//! names), a URI template for any path (`file:///ROOT/{+path}`), reads text
//! files as text and everything else as base64 bytes (up to the host's
//! `files.read_max_bytes`), and tells a subscriber when a file's size or
//! modification time changes. A URI is confined to the root exactly as the
//! file tools' paths are (`builtins::paths::resolve`: `..` and symbolic links
//! may not lead out); one that escapes is an `invalid params` error naming
//! `params.uri`.

use std::path::{Path, PathBuf};
use std::time::UNIX_EPOCH;

use a2e_mcp::rmcp;
use base64::Engine;
use futures::future::BoxFuture;
use rmcp::model::{ErrorData, Resource, ResourceContents, ResourceTemplate};

use crate::builtins::paths;

/// Resources listed per page.
pub const PAGE_SIZE: usize = 100;

/// Most files a listing walks (the rest is not offered).
pub const MAX_LISTED: usize = 10_000;

/// A source of MCP resources. A provider answers only for the URIs it owns
/// ([`ResourceProvider::owns`]); the first provider that owns a URI serves it.
pub trait ResourceProvider: Send + Sync + 'static {
    /// Its direct resources, all of them (the backend pages them).
    fn list(&self) -> BoxFuture<'_, Vec<Resource>>;

    /// Its URI templates.
    fn templates(&self) -> Vec<ResourceTemplate> {
        Vec::new()
    }

    /// Whether `uri` is one of its URIs (existing or not).
    fn owns(&self, uri: &str) -> bool;

    /// Reads `uri` (one it owns).
    fn read<'a>(&'a self, uri: &'a str) -> BoxFuture<'a, Result<Vec<ResourceContents>, ErrorData>>;

    /// A fingerprint of `uri`'s current state, compared to tell a subscriber
    /// of a change (`None`: it does not exist now). Providers whose resources
    /// never change keep the default.
    fn fingerprint<'a>(&'a self, uri: &'a str) -> BoxFuture<'a, Option<String>> {
        let _ = uri;
        Box::pin(async { Some(String::new()) })
    }

    /// Paths completing `prefix` in its URI template's `name` variable.
    fn complete<'a>(&'a self, name: &'a str, prefix: &'a str) -> BoxFuture<'a, Vec<String>> {
        let _ = (name, prefix);
        Box::pin(async { Vec::new() })
    }
}

/// The workspace's files as resources.
pub struct WorkspaceResources {
    root: PathBuf,
    prefix: String,
    max_bytes: usize,
}

impl WorkspaceResources {
    /// The files under `root` (made canonical), read up to `max_bytes` each.
    pub fn new(root: &Path, max_bytes: usize) -> std::io::Result<Self> {
        let root = root.canonicalize()?;
        let prefix = format!("file://{}/", root.to_string_lossy().trim_end_matches('/'));
        Ok(Self {
            root,
            prefix,
            max_bytes,
        })
    }

    /// The URI of a path relative to the root.
    pub fn uri_of(&self, relative: &str) -> String {
        format!("{}{}", self.prefix, relative)
    }

    /// The confined path of `uri` (an error naming `params.uri` when it
    /// escapes the root or is no file URI of this workspace).
    pub fn path_of(&self, uri: &str) -> Result<PathBuf, ErrorData> {
        let escapes = || {
            ErrorData::invalid_params(
                format!("resource URI `{uri}` (params.uri) is outside the workspace root"),
                None,
            )
        };
        let rest = uri.strip_prefix("file://").ok_or_else(escapes)?;
        let decoded = percent_decode(rest).ok_or_else(|| {
            ErrorData::invalid_params(
                format!("resource URI `{uri}` (params.uri) has a bad percent escape"),
                None,
            )
        })?;
        if !Path::new(&decoded).starts_with(&self.root) {
            return Err(escapes());
        }
        paths::resolve(&self.root, &decoded)
            .map(|r| r.path)
            .map_err(|e| {
                ErrorData::invalid_params(format!("resource URI `{uri}` (params.uri): {e}"), None)
            })
    }

    fn walk(&self) -> Vec<(String, u64)> {
        let mut out = Vec::new();
        let mut stack = vec![self.root.clone()];
        while let Some(dir) = stack.pop() {
            let Ok(entries) = std::fs::read_dir(&dir) else {
                continue;
            };
            let mut entries: Vec<_> = entries.filter_map(Result::ok).collect();
            entries.sort_by_key(|e| e.file_name());
            for entry in entries.into_iter().rev() {
                if entry.file_name().to_string_lossy().starts_with('.') {
                    continue;
                }
                let Ok(kind) = entry.file_type() else {
                    continue;
                };
                let path = entry.path();
                if kind.is_dir() {
                    stack.push(path);
                } else if kind.is_file() {
                    let size = entry.metadata().map(|m| m.len()).unwrap_or(0);
                    out.push((paths::relative_to(&self.root, &path), size));
                    if out.len() >= MAX_LISTED {
                        return out;
                    }
                }
            }
        }
        out.sort();
        out
    }
}

/// Media type by extension (the common ones; `application/octet-stream` else).
pub fn mime_of(path: &Path) -> &'static str {
    let ext = path
        .extension()
        .map(|e| e.to_string_lossy().to_ascii_lowercase())
        .unwrap_or_default();
    match ext.as_str() {
        "md" | "markdown" => "text/markdown",
        "txt" | "log" | "toml" | "yaml" | "yml" | "rs" | "py" | "sh" | "ini" | "cfg" => {
            "text/plain"
        }
        "json" => "application/json",
        "csv" => "text/csv",
        "html" | "htm" => "text/html",
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "webp" => "image/webp",
        "svg" => "image/svg+xml",
        "wav" => "audio/wav",
        "mp3" => "audio/mpeg",
        "ogg" => "audio/ogg",
        "pdf" => "application/pdf",
        _ => "application/octet-stream",
    }
}

fn percent_decode(s: &str) -> Option<String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        if b == b'%' {
            let hex = std::str::from_utf8(bytes.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(b);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

impl ResourceProvider for WorkspaceResources {
    fn list(&self) -> BoxFuture<'_, Vec<Resource>> {
        Box::pin(async move {
            let me = self;
            let files = tokio::task::block_in_place(|| me.walk());
            files
                .into_iter()
                .map(|(rel, size)| {
                    let name = rel.rsplit('/').next().unwrap_or(&rel).to_owned();
                    Resource::new(self.uri_of(&rel), name)
                        .with_description(format!("workspace file {rel}"))
                        .with_mime_type(mime_of(Path::new(&rel)))
                        .with_size(size)
                })
                .collect()
        })
    }

    fn templates(&self) -> Vec<ResourceTemplate> {
        vec![
            ResourceTemplate::new(format!("{}{{+path}}", self.prefix), "workspace file")
                .with_description("Any file of the workspace, by its path relative to the root"),
        ]
    }

    fn owns(&self, uri: &str) -> bool {
        uri.starts_with("file://")
    }

    fn read<'a>(&'a self, uri: &'a str) -> BoxFuture<'a, Result<Vec<ResourceContents>, ErrorData>> {
        Box::pin(async move {
            let path = self.path_of(uri)?;
            let meta = tokio::fs::metadata(&path)
                .await
                .map_err(|_| a2e_mcp::server::resource_not_found(uri))?;
            if !meta.is_file() {
                return Err(a2e_mcp::server::resource_not_found(uri));
            }
            if usize::try_from(meta.len()).map_or(true, |n| n > self.max_bytes) {
                return Err(ErrorData::invalid_params(
                    format!(
                        "resource `{uri}` (params.uri) has {} bytes, more than the {} a read returns",
                        meta.len(),
                        self.max_bytes
                    ),
                    None,
                ));
            }
            let bytes = tokio::fs::read(&path).await.map_err(|e| {
                ErrorData::internal_error(format!("cannot read `{uri}`: {e}"), None)
            })?;
            let mime = mime_of(&path);
            let textual = mime.starts_with("text/") || mime == "application/json";
            // A file of no known type that is UTF-8 is read as plain text.
            let contents = match std::str::from_utf8(&bytes) {
                Ok(text) if textual || mime == "application/octet-stream" => {
                    let mime = if textual { mime } else { "text/plain" };
                    ResourceContents::text(text, uri).with_mime_type(mime)
                }
                _ => ResourceContents::blob(
                    base64::engine::general_purpose::STANDARD.encode(&bytes),
                    uri,
                )
                .with_mime_type(mime),
            };
            Ok(vec![contents])
        })
    }

    fn fingerprint<'a>(&'a self, uri: &'a str) -> BoxFuture<'a, Option<String>> {
        Box::pin(async move {
            let path = self.path_of(uri).ok()?;
            let meta = tokio::fs::metadata(&path).await.ok()?;
            let modified = meta
                .modified()
                .ok()
                .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
                .map(|d| d.as_nanos())
                .unwrap_or(0);
            Some(format!("{}:{modified}", meta.len()))
        })
    }

    fn complete<'a>(&'a self, name: &'a str, prefix: &'a str) -> BoxFuture<'a, Vec<String>> {
        Box::pin(async move {
            if name != "path" {
                return Vec::new();
            }
            let me = self;
            let files = tokio::task::block_in_place(|| me.walk());
            files
                .into_iter()
                .map(|(rel, _)| rel)
                .filter(|rel| rel.starts_with(prefix))
                .take(rmcp::model::CompletionInfo::MAX_VALUES)
                .collect()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn workspace() -> (tempfile::TempDir, WorkspaceResources) {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("notes")).unwrap();
        std::fs::write(dir.path().join("notes/a.md"), "# A\n").unwrap();
        std::fs::write(dir.path().join("pixel.png"), [0x89, b'P', b'N', b'G', 0xff]).unwrap();
        std::fs::write(dir.path().join(".hidden"), "x").unwrap();
        let res = WorkspaceResources::new(dir.path(), 1024).unwrap();
        (dir, res)
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 1)]
    async fn files_list_and_read_as_text_or_bytes() {
        let (_dir, res) = workspace();
        let listed = res.list().await;
        let names: Vec<&str> = listed.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(names, ["a.md", "pixel.png"]);
        let text = res.read(&res.uri_of("notes/a.md")).await.unwrap();
        let v = serde_json::to_value(&text[0]).unwrap();
        assert_eq!(
            (v["text"].as_str(), v["mimeType"].as_str()),
            (Some("# A\n"), Some("text/markdown"))
        );
        let blob = res.read(&res.uri_of("pixel.png")).await.unwrap();
        let v = serde_json::to_value(&blob[0]).unwrap();
        let b64 = base64::engine::general_purpose::STANDARD.encode([0x89, b'P', b'N', b'G', 0xff]);
        assert_eq!(v["blob"], b64.as_str());
        assert_eq!(v["mimeType"], "image/png");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 1)]
    async fn escaping_uris_are_refused_with_the_field() {
        let (_dir, res) = workspace();
        for uri in [
            res.uri_of("../etc/passwd"),
            res.uri_of("notes/../../x"),
            "file:///etc/passwd".to_owned(),
            "http://example.com/".to_owned(),
            res.uri_of("%2e%2e/x"),
        ] {
            let err = res.read(&uri).await.unwrap_err();
            assert_eq!(err.code, rmcp::model::ErrorCode::INVALID_PARAMS, "{uri}");
            assert!(err.message.contains("params.uri"), "{}", err.message);
        }
        let missing = res.read(&res.uri_of("nope.md")).await.unwrap_err();
        assert_eq!(missing.code, rmcp::model::ErrorCode::RESOURCE_NOT_FOUND);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 1)]
    async fn a_change_changes_the_fingerprint_and_paths_complete() {
        let (dir, res) = workspace();
        let uri = res.uri_of("notes/a.md");
        let before = res.fingerprint(&uri).await.unwrap();
        std::fs::write(dir.path().join("notes/a.md"), "# A, longer\n").unwrap();
        assert_ne!(res.fingerprint(&uri).await.unwrap(), before);
        assert_eq!(res.complete("path", "no").await, ["notes/a.md"]);
    }
}
