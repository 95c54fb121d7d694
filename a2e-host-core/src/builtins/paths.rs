//! Confinement of paths to the workspace root.
//!
//! A path is taken relative to the root, or as an absolute path that must lie
//! under it. `.` and `..` are resolved lexically, and a `..` that would climb
//! above the root is refused. Then every component that exists is followed
//! through symbolic links (`canonicalize`) and must stay under the canonical
//! root; the components that do not exist yet are appended as they are. The
//! result is the path actually used, so a tool never touches a location
//! outside the root through a link. (A link swapped in between the check and
//! the use is not guarded against.)

use std::ffi::OsString;
use std::io;
use std::path::{Component, Path, PathBuf};

use crate::error::{HostError, HostResult};

/// A path inside the workspace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved {
    /// The absolute path to use (existing part canonical).
    pub path: PathBuf,
    /// The canonical root.
    pub root: PathBuf,
}

impl Resolved {
    /// The path relative to the root, with `/` separators (`.` for the root itself).
    pub fn relative(&self) -> String {
        relative_to(&self.root, &self.path)
    }
}

/// `path` relative to `root` as text (`.` for the root itself).
pub fn relative_to(root: &Path, path: &Path) -> String {
    match path.strip_prefix(root) {
        Ok(rel) if rel.as_os_str().is_empty() => ".".to_owned(),
        Ok(rel) => rel.to_string_lossy().into_owned(),
        Err(_) => path.to_string_lossy().into_owned(),
    }
}

fn escapes(path: &str) -> HostError {
    HostError::Denied(format!("path `{path}` escapes the workspace root"))
}

/// The canonical workspace root.
pub fn canonical_root(root: &Path) -> HostResult<PathBuf> {
    root.canonicalize().map_err(|e| {
        let context = format!("workspace root `{}` is not accessible", root.display());
        HostError::tool_failed(context, e)
    })
}

/// Resolves `path` under `root` (see the module docs). An empty path is the root.
pub fn resolve(root: &Path, path: &str) -> HostResult<Resolved> {
    if path.contains('\0') {
        return Err(HostError::schema(vec![format!(
            "path: `{}` contains NUL",
            path.escape_debug()
        )]));
    }
    let canon_root = canonical_root(root)?;
    let given = Path::new(path);
    let relative: &Path = if given.is_absolute() {
        let abs_root = std::path::absolute(root).unwrap_or_else(|_| root.to_path_buf());
        given
            .strip_prefix(&canon_root)
            .or_else(|_| given.strip_prefix(&abs_root))
            .map_err(|_| escapes(path))?
    } else {
        given
    };

    let mut parts: Vec<OsString> = Vec::new();
    for component in relative.components() {
        match component {
            Component::CurDir | Component::RootDir | Component::Prefix(_) => {}
            Component::ParentDir => {
                if parts.pop().is_none() {
                    return Err(escapes(path));
                }
            }
            Component::Normal(name) => parts.push(name.to_owned()),
        }
    }

    let mut current = canon_root.clone();
    let mut rest = parts.into_iter();
    for name in rest.by_ref() {
        let next = current.join(&name);
        match std::fs::symlink_metadata(&next) {
            Ok(_) => match next.canonicalize() {
                Ok(real) if real.starts_with(&canon_root) => current = real,
                Ok(_) => return Err(escapes(path)),
                Err(e) if e.kind() == io::ErrorKind::NotFound => {
                    return Err(HostError::Denied(format!(
                        "path `{path}` goes through a dangling symbolic link"
                    )));
                }
                Err(e) => {
                    return Err(HostError::tool_failed(
                        format!("cannot resolve `{path}`"),
                        e,
                    ));
                }
            },
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                current = next;
                break;
            }
            Err(e) => {
                return Err(HostError::tool_failed(
                    format!("cannot resolve `{path}`"),
                    e,
                ));
            }
        }
    }
    for name in rest {
        current.push(name);
    }
    Ok(Resolved {
        path: current,
        root: canon_root,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn denied(r: HostResult<Resolved>) -> bool {
        matches!(r, Err(HostError::Denied(m)) if m.contains("escapes") || m.contains("dangling"))
    }

    #[test]
    fn relative_paths_stay_inside() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("a")).unwrap();
        let root = dir.path().canonicalize().unwrap();
        let r = resolve(dir.path(), "a/../a/./new/file.txt").unwrap();
        assert_eq!(r.path, root.join("a/new/file.txt"));
        assert_eq!(r.relative(), "a/new/file.txt");
        assert_eq!(resolve(dir.path(), "").unwrap().relative(), ".");
        assert_eq!(resolve(dir.path(), ".").unwrap().path, root);
    }

    #[test]
    fn parent_escapes_are_denied() {
        let dir = tempfile::tempdir().unwrap();
        assert!(denied(resolve(dir.path(), "..")));
        assert!(denied(resolve(dir.path(), "a/../../x")));
        assert!(denied(resolve(dir.path(), "../etc/passwd")));
    }

    #[test]
    fn absolute_paths_must_be_under_the_root() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        assert!(denied(resolve(dir.path(), "/etc/passwd")));
        let inside = root.join("x.txt");
        let r = resolve(dir.path(), inside.to_str().unwrap()).unwrap();
        assert_eq!(r.path, inside);
        let sneaky = format!("{}/../x", root.display());
        assert!(denied(resolve(dir.path(), &sneaky)));
    }

    #[test]
    fn symlinks_out_of_the_root_are_denied() {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret"), "s").unwrap();
        std::os::unix::fs::symlink(outside.path(), dir.path().join("out")).unwrap();
        std::os::unix::fs::symlink(
            outside.path().join("secret"),
            dir.path().join("secret-link"),
        )
        .unwrap();
        std::os::unix::fs::symlink("/no/such/target", dir.path().join("dangling")).unwrap();
        assert!(denied(resolve(dir.path(), "out")));
        assert!(denied(resolve(dir.path(), "out/secret")));
        assert!(denied(resolve(dir.path(), "out/new-file")));
        assert!(denied(resolve(dir.path(), "secret-link")));
        assert!(denied(resolve(dir.path(), "dangling")));
    }

    #[test]
    fn symlinks_inside_the_root_resolve_to_their_target() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir(dir.path().join("real")).unwrap();
        std::os::unix::fs::symlink(root.join("real"), dir.path().join("alias")).unwrap();
        let r = resolve(dir.path(), "alias/f").unwrap();
        assert_eq!(r.path, root.join("real/f"));
    }

    #[test]
    fn nul_is_a_schema_error() {
        let dir = tempfile::tempdir().unwrap();
        assert!(matches!(
            resolve(dir.path(), "a\0b"),
            Err(HostError::Schema { .. })
        ));
    }
}
