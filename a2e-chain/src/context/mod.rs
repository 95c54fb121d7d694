//! JMESPath over the chain context, compiled once at validation.
//!
//! The context is `{"input": …, "<node_id>": {"output": …, "error": …}, …}`
//! (plus `item`/`index` in a map template, `output` in a branch condition).
//! It is never built whole: an expression's root names are resolved to
//! [`Root`]s when it is compiled, and evaluation looks each one up directly.
//! Plain paths (`read.output.text`, `input.files[0]`) run over the
//! `serde_json` values themselves ([`path`]); anything else runs in the
//! jmespath interpreter over a context holding only the roots it names,
//! each converted once and shared ([`jmes`]).

pub(crate) mod jmes;
pub(crate) mod path;

use jmespath::ast::Ast;

/// A name at the root of the chain context.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) enum Root {
    /// `input`: the chain's initial input.
    Input,
    /// A node's `{"output": …, "error": …}`.
    Node(u32),
    /// `item` in a map template.
    Item,
    /// `index` in a map template.
    Index,
    /// `output` in a branch condition: the upstream node's output.
    Upstream,
}

/// One step of a plain path.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Step {
    /// `.name`
    Field(Box<str>),
    /// `[i]` (negative counts from the end)
    Index(i32),
}

/// A compiled expression.
#[derive(Debug)]
pub(crate) enum Expr {
    /// A root followed by field and index steps.
    Path {
        /// Where the path starts.
        root: Root,
        /// The root is a node and the path continues from its `output`
        /// (the common `node.output…`; saves a step).
        output: bool,
        /// The steps after the root (and `output`).
        steps: Box<[Step]>,
    },
    /// Anything else: the jmespath AST and the roots it names.
    General(Box<General>),
}

/// An expression that needs the interpreter.
#[derive(Debug)]
pub(crate) struct General {
    /// The expression text (for error messages).
    pub text: Box<str>,
    /// The parsed expression.
    pub ast: Ast,
    /// Root names it reads, with what they resolve to.
    pub roots: Box<[(Box<str>, Root)]>,
}

/// Why an expression does not compile.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum CompileError {
    /// A syntax error or an unknown function.
    Syntax(String),
    /// A root name that is neither `input`, a node id nor a scoped name.
    Unknown(String),
    /// The expression reads the whole context (`@` at the root).
    WholeContext,
}

impl Expr {
    /// Every root the expression reads, in order of first appearance.
    pub(crate) fn roots(&self) -> Vec<Root> {
        let mut out = Vec::new();
        self.each_root(|r| out.push(r));
        out
    }

    /// Calls `f` with every root the expression reads.
    pub(crate) fn each_root(&self, mut f: impl FnMut(Root)) {
        match self {
            Self::Path { root, .. } => f(*root),
            Self::General(g) => g.roots.iter().for_each(|(_, r)| f(*r)),
        }
    }

    /// A path from `root` through `steps`, with a leading `output` of a node
    /// folded into the flag.
    fn path(root: Root, mut steps: Vec<Step>) -> Self {
        let output = matches!(root, Root::Node(_))
            && matches!(steps.first(), Some(Step::Field(f)) if &**f == OUTPUT);
        if output {
            steps.remove(0);
        }
        Self::Path {
            root,
            output,
            steps: steps.into_boxed_slice(),
        }
    }
}

/// Compiles `text`, resolving root names with `resolve`.
pub(crate) fn compile(
    text: &str,
    resolve: &dyn Fn(&str) -> Option<Root>,
) -> Result<Expr, CompileError> {
    let body = text.strip_prefix("$.").unwrap_or(text);
    // `node.output`, the usual entry, without the general scan.
    if let Some(first) = body.strip_suffix(".output").filter(|f| is_ident(f)) {
        let root = resolve(first).ok_or_else(|| CompileError::Unknown(first.to_owned()))?;
        return Ok(match root {
            Root::Node(_) => Expr::Path {
                root,
                output: true,
                steps: Box::new([]),
            },
            _ => Expr::path(root, vec![Step::Field(OUTPUT.into())]),
        });
    }
    if let Some((first, output, mut steps)) = fast_path(body) {
        let root = resolve(first).ok_or_else(|| CompileError::Unknown(first.to_owned()))?;
        if output && matches!(root, Root::Node(_)) {
            return Ok(Expr::Path {
                root,
                output,
                steps: steps.into_boxed_slice(),
            });
        }
        if output {
            steps.insert(0, Step::Field(OUTPUT.into()));
        }
        return Ok(Expr::path(root, steps));
    }
    let ast = jmespath::parse(body).map_err(|e| CompileError::Syntax(e.to_string()))?;
    let mut names = Vec::new();
    root_names(&ast, true, &mut names)?;
    let mut roots: Vec<(Box<str>, Root)> = Vec::with_capacity(names.len());
    for name in names {
        if roots.iter().any(|(n, _)| **n == *name) {
            continue;
        }
        let root = resolve(name).ok_or_else(|| CompileError::Unknown(name.to_owned()))?;
        roots.push((name.into(), root));
    }
    if let Some((first, steps)) = ast_path(&ast)
        && let Some((_, root)) = roots.iter().find(|(n, _)| **n == *first)
    {
        return Ok(Expr::path(*root, steps));
    }
    Ok(Expr::General(Box::new(General {
        text: body.into(),
        ast,
        roots: roots.into(),
    })))
}

const OUTPUT: &str = "output";

/// Recognises `ident(.ident|[int])*` without the general parser.
fn fast_path(s: &str) -> Option<(&str, bool, Vec<Step>)> {
    let b = s.as_bytes();
    let first_end = ident_end(b, 0)?;
    let first = s.get(..first_end)?;
    let mut output = false;
    let mut steps = Vec::new();
    let mut i = first_end;
    while i < b.len() {
        match b.get(i)? {
            b'.' => {
                let end = ident_end(b, i + 1)?;
                let name = s.get(i + 1..end)?;
                if i == first_end && name == OUTPUT {
                    // `root.output`: kept as a flag, no allocation.
                    output = true;
                } else {
                    steps.push(Step::Field(name.into()));
                }
                i = end;
            }
            b'[' => {
                let close = i + 1 + b.get(i + 1..)?.iter().position(|&c| c == b']')?;
                let digits = s.get(i + 1..close)?;
                let unsigned = digits.strip_prefix('-').unwrap_or(digits);
                if unsigned.is_empty() || !unsigned.bytes().all(|c| c.is_ascii_digit()) {
                    return None;
                }
                steps.push(Step::Index(digits.parse().ok()?));
                i = close + 1;
            }
            _ => return None,
        }
    }
    Some((first, output, steps))
}

/// Bytes that continue an unquoted identifier: `[A-Za-z0-9_]`.
// Built at compile time; `c < 256` is the loop's bound.
#[allow(clippy::indexing_slicing)]
const IDENT: [bool; 256] = {
    let mut t = [false; 256];
    let mut c = 0;
    while c < 256 {
        let b = c as u8;
        t[c] = b.is_ascii_alphanumeric() || b == b'_';
        c += 1;
    }
    t
};

/// Whether `c` continues an unquoted identifier.
#[inline]
pub(crate) fn ident_byte(c: u8) -> bool {
    IDENT.get(c as usize).copied().unwrap_or(false)
}

/// Whether `s` is one unquoted identifier.
pub(crate) fn is_ident(s: &str) -> bool {
    match s.as_bytes().split_first() {
        Some((first, rest)) => {
            (first.is_ascii_alphabetic() || *first == b'_') && rest.iter().all(|&c| ident_byte(c))
        }
        None => false,
    }
}

/// End of an unquoted identifier starting at `start`, if there is one.
fn ident_end(b: &[u8], start: usize) -> Option<usize> {
    let first = *b.get(start)?;
    if !(first.is_ascii_alphabetic() || first == b'_') {
        return None;
    }
    let rest = b.get(start + 1..)?;
    Some(
        start
            + 1
            + rest
                .iter()
                .position(|&c| !ident_byte(c))
                .unwrap_or(rest.len()),
    )
}

/// An AST that is a plain path (fields and indexes from a root field).
fn ast_path(ast: &Ast) -> Option<(&str, Vec<Step>)> {
    let mut flat = Vec::new();
    flatten(ast, &mut flat)?;
    let mut iter = flat.into_iter();
    let Some(Ast::Field { name, .. }) = iter.next() else {
        return None;
    };
    let steps = iter
        .map(|a| match a {
            Ast::Field { name, .. } => Some(Step::Field(name.as_str().into())),
            Ast::Index { idx, .. } => Some(Step::Index(*idx)),
            _ => None,
        })
        .collect::<Option<Vec<_>>>()?;
    Some((name, steps))
}

fn flatten<'a>(ast: &'a Ast, out: &mut Vec<&'a Ast>) -> Option<()> {
    match ast {
        Ast::Subexpr { lhs, rhs, .. } => {
            flatten(lhs, out)?;
            flatten(rhs, out)
        }
        Ast::Field { .. } | Ast::Index { .. } => {
            out.push(ast);
            Some(())
        }
        _ => None,
    }
}

/// Collects the field names evaluated against the root context, and checks
/// function names against the runtime.
fn root_names<'a>(ast: &'a Ast, at_root: bool, out: &mut Vec<&'a str>) -> Result<(), CompileError> {
    match ast {
        Ast::Field { name, .. } => {
            if at_root {
                out.push(name);
            }
        }
        Ast::Identity { .. } => {
            if at_root {
                return Err(CompileError::WholeContext);
            }
        }
        Ast::Subexpr { lhs, rhs, .. } | Ast::Projection { lhs, rhs, .. } => {
            root_names(lhs, at_root, out)?;
            root_names(rhs, false, out)?;
        }
        Ast::Comparison { lhs, rhs, .. } | Ast::And { lhs, rhs, .. } | Ast::Or { lhs, rhs, .. } => {
            root_names(lhs, at_root, out)?;
            root_names(rhs, at_root, out)?;
        }
        Ast::Condition {
            predicate, then, ..
        } => {
            root_names(predicate, at_root, out)?;
            root_names(then, at_root, out)?;
        }
        Ast::Flatten { node, .. } | Ast::ObjectValues { node, .. } | Ast::Not { node, .. } => {
            root_names(node, at_root, out)?;
        }
        Ast::Expref { ast, .. } => root_names(ast, false, out)?,
        Ast::Function { name, args, .. } => {
            if jmespath::DEFAULT_RUNTIME.get_function(name).is_none() {
                return Err(CompileError::Syntax(format!("unknown function `{name}`")));
            }
            for arg in args {
                root_names(arg, at_root, out)?;
            }
        }
        Ast::MultiList { elements, .. } => {
            for e in elements {
                root_names(e, at_root, out)?;
            }
        }
        Ast::MultiHash { elements, .. } => {
            for kv in elements {
                root_names(&kv.value, at_root, out)?;
            }
        }
        Ast::Index { .. } | Ast::Slice { .. } | Ast::Literal { .. } => {}
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resolve(name: &str) -> Option<Root> {
        match name {
            "input" => Some(Root::Input),
            "read" => Some(Root::Node(0)),
            "b" => Some(Root::Node(1)),
            _ => None,
        }
    }

    #[test]
    fn plain_paths_take_the_fast_route() {
        let Expr::Path {
            root,
            output,
            steps,
        } = compile("read.output.text[-1]", &resolve).unwrap()
        else {
            panic!("not a path")
        };
        assert_eq!(root, Root::Node(0));
        assert!(output);
        assert_eq!(&*steps, &[Step::Field("text".into()), Step::Index(-1)]);
        let Expr::Path { output, steps, .. } = compile("read.error", &resolve).unwrap() else {
            panic!("not a path")
        };
        assert!(!output);
        assert_eq!(&*steps, &[Step::Field("error".into())]);
        assert!(matches!(
            compile("$.input", &resolve),
            Ok(Expr::Path {
                root: Root::Input,
                ..
            })
        ));
        // Quoted and spaced paths go through the parser and still end as paths.
        assert!(matches!(
            compile("\"read\" . output", &resolve),
            Ok(Expr::Path {
                root: Root::Node(0),
                ..
            })
        ));
    }

    #[test]
    fn node_output_shortcut_matches_the_general_route() {
        let Expr::Path {
            root,
            output,
            steps,
        } = compile("read.output", &resolve).unwrap()
        else {
            panic!("not a path")
        };
        assert_eq!((root, output, steps.len()), (Root::Node(0), true, 0));
        // A field named `output` of a root that is not a node stays a field.
        let Expr::Path {
            root,
            output,
            steps,
        } = compile("$.input.output", &resolve).unwrap()
        else {
            panic!("not a path")
        };
        assert_eq!(root, Root::Input);
        assert!(!output);
        assert_eq!(&*steps, &[Step::Field("output".into())]);
        assert_eq!(
            compile("nope.output", &resolve).unwrap_err(),
            CompileError::Unknown("nope".into())
        );
        // Not an identifier before `.output`: the general parser decides.
        assert!(matches!(
            compile("read[0].output", &resolve),
            Ok(Expr::Path {
                root: Root::Node(0),
                output: false,
                ..
            })
        ));
        assert!(matches!(
            compile(".output", &resolve),
            Err(CompileError::Syntax(_))
        ));
    }

    #[test]
    fn general_expressions_list_their_roots_once() {
        let e = compile(
            "[read.output, b.output.x, read.error] | length(@)",
            &resolve,
        )
        .unwrap();
        assert_eq!(e.roots(), vec![Root::Node(0), Root::Node(1)]);
        let e = compile("read.output.items[?size > `3`].name", &resolve).unwrap();
        assert_eq!(e.roots(), vec![Root::Node(0)]);
        let e = compile("sort_by(read.output, &size)", &resolve).unwrap();
        assert_eq!(e.roots(), vec![Root::Node(0)]);
    }

    #[test]
    fn errors_are_precise() {
        assert_eq!(
            compile("nope.output", &resolve).unwrap_err(),
            CompileError::Unknown("nope".into())
        );
        assert!(matches!(
            compile("read.output[", &resolve),
            Err(CompileError::Syntax(_))
        ));
        assert!(matches!(
            compile("frobnicate(read)", &resolve),
            Err(CompileError::Syntax(_))
        ));
        assert_eq!(
            compile("@", &resolve).unwrap_err(),
            CompileError::WholeContext
        );
        assert_eq!(
            compile("length(@)", &resolve).unwrap_err(),
            CompileError::WholeContext
        );
    }
}
