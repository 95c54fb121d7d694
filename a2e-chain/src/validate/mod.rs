//! Validation: everything that can be refused before a node runs, and the
//! compilation of the request into a [`Plan`].

use std::sync::Arc;

use a2e_proto::{ChainNode, ChainRequest, OnError};
use serde_json::Value;

use crate::config::ChainConfig;
use crate::context::{self, CompileError, Expr, Root};
use crate::cycle::find_cycle;
use crate::hash::{FastMap, map_with_capacity};
use crate::input::Keys;

mod fields;
#[cfg(not(feature = "bench-std-ids"))]
mod ids;
/// A std `HashMap` in place of the id table, for `cargo xtask bench
/// structures` (`--features bench-std-ids`).
#[cfg(feature = "bench-std-ids")]
#[path = "ids_peer.rs"]
mod ids;
mod layout;
mod roles;

use crate::error::ValidationError;
use crate::graph::{
    BranchSpec, CONTROL, FALLBACK, MapSpec, Node, ON_FALSE, ON_TRUE, Plan, Policy, Role, Spec,
};
use fields::{Kind, check_fields};
use ids::Ids;
use layout::{build_csr, check_static_fan_out, finish, forward_only};
use roles::{assign_roles, scopes_and_edges};

type Result<T> = std::result::Result<T, ValidationError>;

/// How many nodes ahead of the one being compiled the id-table slots for
/// its references are prefetched.
const PREFETCH_AHEAD: usize = 8;

/// Checks `req` against the chain rules and `config`'s limits and compiles
/// it. Nothing runs. The first error found is returned, in a fixed order:
/// limits; ids; then node by node in declaration order its fields,
/// references and expressions; `entry_node`; roles (templates, fallbacks);
/// scopes; cycles; the entry's dependencies; static map fan-out.
pub fn validate<'r>(req: &'r ChainRequest, config: &ChainConfig) -> Result<Plan<'r>> {
    let nodes = &req.nodes;
    if nodes.len() > config.max_nodes {
        return Err(ValidationError::TooManyNodes {
            count: nodes.len(),
            limit: config.max_nodes,
        });
    }
    if nodes.len() > u32::MAX as usize / 2 {
        return Err(ValidationError::TooManyNodes {
            count: nodes.len(),
            limit: u32::MAX as usize / 2,
        });
    }
    // The ids, copied side by side: the index's keys point here rather than
    // into the request's scattered strings, so lookups stay in cache.
    let index = Ids::build(nodes)?;
    let lookup = |owner: &ChainNode, field: &str, target: &str| -> Result<Option<u32>> {
        if target.is_empty() {
            return Ok(None);
        }
        index
            .get(target)
            .map(Some)
            .ok_or_else(|| ValidationError::UnknownNode {
                node_id: owner.node_id.clone(),
                field: field.to_owned(),
                target: target.to_owned(),
            })
    };

    // One pass over the request: fields, references, expressions. Map
    // templates are known only once every node is read, so `item`/`index`
    // are accepted everywhere here and checked against roles afterwards.
    let mut refs = Vec::with_capacity(nodes.len());
    // Control edges now, data edges (about one per input entry) later.
    let mut pairs: Vec<(u32, u32, u8)> =
        Vec::with_capacity(nodes.len() + index.input_entries + index.input_entries / 4);
    let mut names: FastMap<&str, Arc<str>> = map_with_capacity(0);
    let mut last_name: Option<Arc<str>> = None;
    let mut inputs: Vec<(&str, Expr)> = Vec::with_capacity(index.input_entries);
    let mut shapes = Shapes::default();
    let mut compiled = Vec::with_capacity(nodes.len());
    for (i, node) in nodes.iter().enumerate() {
        let me = i as u32;
        let class = check_fields(node)?;
        let policy = match node.on_error_policy() {
            OnError::Abort => Policy::Abort,
            OnError::Skip => Policy::Skip,
            OnError::Fallback(f) => match lookup(node, "on_error", f)? {
                Some(i) => Policy::Fallback(i),
                None => Policy::Abort,
            },
        };
        // Most nodes name few of these: an empty one costs no call.
        let refer = |field: &str, target: &str| match target.is_empty() {
            true => Ok(None),
            false => lookup(node, field, target),
        };
        let r = Refs {
            next: refer("next_node", &node.next_node)?,
            on_true: refer("true_node", &node.true_node)?,
            on_false: refer("false_node", &node.false_node)?,
            template: refer("map_node", &node.map_node)?,
            policy,
        };
        let inputs_at = inputs.len() as u32;
        let mut may_time_out = false;
        // The id-table slots that a node a few places on will look up are
        // fetched now, so that its lookups find them in cache.
        // (A read of the node just before is found without the table.)
        if let Some(ahead) = nodes.get(i + PREFETCH_AHEAD) {
            let at = (i + PREFETCH_AHEAD) as u32;
            for value in ahead.input_map.values() {
                if let Value::String(text) = value {
                    index.prefetch(first_name(text), at);
                }
            }
        }
        for (key, value) in &node.input_map {
            may_time_out |= key == "timeout";
            let field = Field::InputMap(key);
            let Value::String(text) = value else {
                return Err(invalid(
                    &node.node_id,
                    &field.name(),
                    "expected a JMESPath expression string",
                ));
            };
            let expr = match node_output(text, me, &index) {
                Some(expr) => expr,
                None => compile(node, me, field, text, Scope::Template, &index)?,
            };
            inputs.push((key.as_str(), expr));
        }
        let spec = if class == Kind::Branch {
            let field = Field::Named("condition");
            let cond = compile(node, me, field, &node.condition, Scope::Condition, &index)?;
            if let Some(t) = r.on_true {
                pairs.push((me, t, ON_TRUE));
            }
            if let Some(f) = r.on_false {
                pairs.push((me, f, ON_FALSE));
            }
            Spec::Branch(Box::new(BranchSpec {
                cond,
                on_true: r.on_true,
                on_false: r.on_false,
                upstream: None,
            }))
        } else if class == Kind::Map {
            let field = Field::Named("items_path");
            let items = compile(node, me, field, &node.items_path, Scope::Plain, &index)?;
            Spec::Map(Box::new(MapSpec {
                items,
                template: r.template.unwrap_or(me),
            }))
        } else {
            Spec::Run
        };
        if let Some(n) = r.next {
            pairs.push((me, n, CONTROL));
        }
        if let Policy::Fallback(f) = r.policy {
            pairs.push((me, f, FALLBACK));
        }
        // Names repeat (the same tool on many nodes): share one Arc each,
        // with the previous node's name as a shortcut.
        let name = match last_name.as_ref().filter(|n| ***n == *node.name) {
            Some(n) => n.clone(),
            None => match names.get(node.name.as_str()) {
                Some(n) => n.clone(),
                None => {
                    let n: Arc<str> = Arc::from(node.name.as_str());
                    names.insert(node.name.as_str(), n.clone());
                    n
                }
            },
        };
        last_name = Some(name.clone());
        compiled.push(Node {
            src: node,
            id: Arc::from(index.id(me).unwrap_or(&node.node_id)),
            name,
            role: Role::Normal,
            spec,
            policy: r.policy,
            inputs_at,
            inputs_len: inputs.len() as u32 - inputs_at,
            kind: class.constant(),
            has_input: !node.input.is_empty(),
            pending: 0,
            ctrl_in: 0,
            data_in: 0,
            terminal: false,
            owner: None,
            shape: shapes.of(node),
            may_time_out: may_time_out || node.input.contains_key("timeout"),
        });
        refs.push(r);
    }
    let entry =
        if req.entry_node.is_empty() {
            if !nodes.is_empty() {
                return Err(invalid(
                    "",
                    "entry_node",
                    "required when the chain has nodes",
                ));
            }
            None
        } else {
            Some(index.get(req.entry_node.as_str()).ok_or_else(|| {
                ValidationError::UnknownNode {
                    node_id: String::new(),
                    field: "entry_node".into(),
                    target: req.entry_node.clone(),
                }
            })?)
        };
    let roles = assign_roles(nodes, &refs, entry)?;
    scopes_and_edges(&mut compiled, &mut inputs, &roles, &index, &mut pairs)?;
    let (edge_start, edges) = build_csr(nodes.len(), pairs);
    let mut plan = Plan {
        req,
        nodes: compiled,
        edge_start,
        edges,
        inputs,
        shapes: shapes.lists,
        roots: Vec::new(),
        total: 0,
    };
    if !forward_only(&plan)
        && let Some(path) = find_cycle(&plan)
    {
        return Err(ValidationError::Cycle { path });
    }
    finish(&mut plan, entry)?;
    check_static_fan_out(&plan, config)?;
    Ok(plan)
}

/// Input key lists, each kept once (nodes mostly share a few).
struct Shapes<'r> {
    lists: Vec<Keys>,
    by_keys: FastMap<Box<[&'r str]>, u32>,
    /// The lists found last, most recent first: neighbouring nodes mostly
    /// have one of a few lists, and comparing against these costs no hash.
    recent: [u32; RECENT_SHAPES],
    keys: Vec<&'r str>,
}

/// How many recently used key lists are tried before the table.
const RECENT_SHAPES: usize = 4;

impl Default for Shapes<'_> {
    fn default() -> Self {
        Self {
            lists: Vec::new(),
            by_keys: FastMap::default(),
            recent: [u32::MAX; RECENT_SHAPES],
            keys: Vec::new(),
        }
    }
}

impl<'r> Shapes<'r> {
    /// The list of `node`'s input keys: its static `input` keys, then its
    /// `input_map` keys that are not among them.
    fn of(&mut self, node: &'r ChainNode) -> u32 {
        self.keys.clear();
        self.keys.extend(node.input.keys().map(String::as_str));
        if node.input.is_empty() {
            self.keys.extend(node.input_map.keys().map(String::as_str));
        } else {
            let more = node
                .input_map
                .keys()
                .filter(|k| !node.input.contains_key(*k));
            self.keys.extend(more.map(String::as_str));
        }
        let keys = &self.keys;
        let same = |l: &Keys| l.len() == keys.len() && l.iter().zip(keys).all(|(a, b)| **a == **b);
        for r in 0..RECENT_SHAPES {
            let Some(&at) = self.recent.get(r) else { break };
            if self.lists.get(at as usize).is_some_and(same) {
                // Move it to the front.
                self.recent.copy_within(0..r, 1);
                if let Some(first) = self.recent.first_mut() {
                    *first = at;
                }
                return at;
            }
        }
        let at = match self.by_keys.get(self.keys.as_slice()) {
            Some(&at) => at,
            None => {
                let at = self.lists.len() as u32;
                self.lists
                    .push(self.keys.iter().map(|k| Box::from(*k)).collect());
                self.by_keys
                    .insert(self.keys.clone().into_boxed_slice(), at);
                at
            }
        };
        self.recent.copy_within(0..RECENT_SHAPES - 1, 1);
        if let Some(first) = self.recent.first_mut() {
            *first = at;
        }
        at
    }
}

/// References of one node, resolved.
struct Refs {
    next: Option<u32>,
    on_true: Option<u32>,
    on_false: Option<u32>,
    template: Option<u32>,
    policy: Policy,
}

/// Which scoped names an expression may use besides `input` and node ids.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Scope {
    Plain,
    Template,
    Condition,
}

fn invalid(node_id: &str, field: &str, message: impl Into<String>) -> ValidationError {
    ValidationError::InvalidField {
        node_id: node_id.to_owned(),
        field: field.to_owned(),
        message: message.into(),
    }
}

/// The field an expression sits in; named only when an error needs it.
#[derive(Clone, Copy)]
enum Field<'a> {
    Named(&'a str),
    InputMap(&'a str),
}

impl Field<'_> {
    fn name(self) -> String {
        match self {
            Self::Named(f) => f.to_owned(),
            Self::InputMap(key) => format!("input_map.{key}"),
        }
    }
}

/// The name an expression starts with (after an optional `$.`): the root
/// a plain path reads. Empty when the expression starts otherwise.
fn first_name(expr: &str) -> &str {
    let body = expr.strip_prefix("$.").unwrap_or(expr);
    let end = body
        .bytes()
        .position(|c| !crate::context::ident_byte(c))
        .unwrap_or(body.len());
    body.get(..end).unwrap_or_default()
}

/// Refuses an empty id and the reserved `input` (node `i`'s id `id`).
fn check_id(i: usize, id: &str) -> Result<()> {
    if id.is_empty() {
        return Err(invalid(
            "",
            "node_id",
            format!("node at position {i} has an empty node_id"),
        ));
    }
    if id == "input" {
        return Err(invalid(
            id,
            "node_id",
            "`input` is reserved for the chain's initial input",
        ));
    }
    Ok(())
}

/// `<node>.output` (optionally after `$.`), the usual `input_map` entry,
/// compiled straight from the id table; anything else (a scoped name, an
/// unknown id, a longer path) is left to [`compile`].
fn node_output(text: &str, me: u32, index: &Ids<'_>) -> Option<Expr> {
    let body = text.strip_prefix("$.").unwrap_or(text);
    // Fixed-size comparisons: no call to compare seven bytes.
    if body.as_bytes().last_chunk::<7>() != Some(b".output") {
        return None;
    }
    let name = body.get(..body.len() - 7)?;
    if matches!(name.as_bytes().first(), Some(b'i' | b'o')) || !context::is_ident(name) {
        return None;
    }
    let node = index.get_near(name, me)?;
    Some(Expr::Path {
        root: Root::Node(node),
        output: true,
        steps: Box::new([]),
    })
}

fn compile(
    node: &ChainNode,
    me: u32,
    field: Field<'_>,
    text: &str,
    scope: Scope,
    index: &Ids<'_>,
) -> Result<Expr> {
    // Bounded before the parser, whose recursion follows the nesting.
    if let Err(e) = crate::expr::check_expression(text) {
        return Err(ValidationError::InvalidField {
            node_id: node.node_id.clone(),
            field: field.name(),
            message: e.to_string(),
        });
    }
    let resolve = |name: &str| -> Option<Root> {
        // The scoped names shadow node ids of the same name; they all start
        // with `i` or `o`, so other names skip the comparisons.
        if matches!(name.as_bytes().first(), Some(b'i' | b'o')) {
            match (name, scope) {
                ("input", _) => return Some(Root::Input),
                ("item", Scope::Template) => return Some(Root::Item),
                ("index", Scope::Template) => return Some(Root::Index),
                ("output", Scope::Condition) => return Some(Root::Upstream),
                _ => {}
            }
        }
        index.get_near(name, me).map(Root::Node)
    };
    context::compile(text, &resolve).map_err(|e| match e {
        CompileError::Unknown(target) => ValidationError::UnknownNode {
            node_id: node.node_id.clone(),
            field: field.name(),
            target,
        },
        CompileError::Syntax(message) => ValidationError::Expression {
            node_id: node.node_id.clone(),
            field: field.name(),
            expression: text.to_owned(),
            message,
        },
        CompileError::WholeContext => ValidationError::Expression {
            node_id: node.node_id.clone(),
            field: field.name(),
            expression: text.to_owned(),
            message: "`@` at the top level reads the whole chain context; name the node instead"
                .into(),
        },
    })
}
