//! Validation: everything that can be refused before a node runs, and the
//! compilation of the request into a [`Plan`].

use std::collections::HashMap;
use std::sync::Arc;

use a2e_proto::{ChainNode, ChainRequest, NodeKind, OnError};
use serde_json::Value;

use crate::config::ChainConfig;
use crate::context::{self, CompileError, Expr, Root};
use crate::cycle::find_cycle;
use crate::error::ValidationError;
use crate::graph::{
    ANY_CONTROL, CONTROL, DATA, Edge, FALLBACK, Node, ON_FALSE, ON_TRUE, Plan, Policy, Role, Spec,
};

type Result<T> = std::result::Result<T, ValidationError>;

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
    let arena: String = nodes.iter().map(|n| n.node_id.as_str()).collect();
    let index = index_ids(nodes, &arena)?;
    let index = Ids::new(index, &arena, nodes);
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
    let mut pairs: Vec<(u32, u32, u8)> = Vec::with_capacity(nodes.len() * 2);
    let mut names: HashMap<&str, Arc<str>> = HashMap::new();
    let mut last_name: Option<Arc<str>> = None;
    let mut keys: HashMap<&str, Arc<str>> = HashMap::new();
    let mut compiled = Vec::with_capacity(nodes.len());
    for (i, node) in nodes.iter().enumerate() {
        let me = i as u32;
        check_fields(node)?;
        let policy = match node.on_error_policy() {
            OnError::Abort => Policy::Abort,
            OnError::Skip => Policy::Skip,
            OnError::Fallback(f) => match lookup(node, "on_error", f)? {
                Some(i) => Policy::Fallback(i),
                None => Policy::Abort,
            },
        };
        let r = Refs {
            next: lookup(node, "next_node", &node.next_node)?,
            on_true: lookup(node, "true_node", &node.true_node)?,
            on_false: lookup(node, "false_node", &node.false_node)?,
            template: lookup(node, "map_node", &node.map_node)?,
            policy,
        };
        let mut input_map = Vec::with_capacity(node.input_map.len());
        for (key, value) in &node.input_map {
            let field = Field::InputMap(key);
            let Value::String(text) = value else {
                return Err(invalid(
                    &node.node_id,
                    &field.name(),
                    "expected a JMESPath expression string",
                ));
            };
            let expr = compile(node, me, field, text, Scope::Template, &index)?;
            let key = match keys.get(key.as_str()) {
                Some(k) => Arc::clone(k),
                None => {
                    let k: Arc<str> = Arc::from(key.as_str());
                    keys.insert(key.as_str(), Arc::clone(&k));
                    k
                }
            };
            input_map.push((key, expr));
        }
        let kind = &node.kind;
        let spec = if *kind == NodeKind::BRANCH {
            let field = Field::Named("condition");
            let cond = compile(node, me, field, &node.condition, Scope::Condition, &index)?;
            if let Some(t) = r.on_true {
                pairs.push((me, t, ON_TRUE));
            }
            if let Some(f) = r.on_false {
                pairs.push((me, f, ON_FALSE));
            }
            Spec::Branch {
                cond,
                on_true: r.on_true,
                on_false: r.on_false,
                upstream: None,
            }
        } else if *kind == NodeKind::MAP {
            let field = Field::Named("items_path");
            let items = compile(node, me, field, &node.items_path, Scope::Plain, &index)?;
            Spec::Map {
                items,
                template: r.template.unwrap_or(me),
            }
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
            input_map: input_map.into_boxed_slice(),
            kind: node.kind.clone(),
            has_input: !node.input.is_empty(),
            pending: 0,
            ctrl_in: 0,
            data_in: 0,
            terminal: false,
            owner: None,
            may_time_out: node.input.contains_key("timeout")
                || node.input_map.contains_key("timeout"),
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
    check_scopes(&mut compiled, &roles, &index)?;
    // Data edges: a node depends on every node its expressions read; a map
    // also on every node its template reads.
    for (i, n) in compiled.iter().enumerate() {
        if n.role == Role::Template {
            continue;
        }
        let me = i as u32;
        let mut add = |e: &Expr| {
            e.each_root(|root| {
                if let Root::Node(j) = root {
                    pairs.push((j, me, DATA));
                }
            })
        };
        n.input_map.iter().for_each(|(_, e)| add(e));
        match &n.spec {
            Spec::Branch { cond, .. } => add(cond),
            Spec::Map { items, template } => {
                add(items);
                if let Some(t) = compiled.get(*template as usize) {
                    t.input_map.iter().for_each(|(_, e)| add(e));
                }
            }
            Spec::Run => {}
        }
    }
    let (edge_start, edges) = build_csr(nodes.len(), pairs);
    let mut plan = Plan {
        req,
        nodes: compiled,
        edge_start,
        edges,
        roots: Vec::new(),
        total: 0,
    };
    if !forward_only(&plan) {
        if let Some(path) = find_cycle(&plan) {
            return Err(ValidationError::Cycle { path });
        }
    }
    finish(&mut plan, entry)?;
    check_static_fan_out(&plan, config)?;
    Ok(plan)
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

/// Node ids by name, with a shortcut for the node declared just before
/// (chains mostly read their predecessor).
struct Ids<'a> {
    map: HashMap<&'a str, u32>,
    arena: &'a str,
    ends: Vec<u32>,
}

impl<'a> Ids<'a> {
    fn new(map: HashMap<&'a str, u32>, arena: &'a str, nodes: &[ChainNode]) -> Self {
        let mut end = 0u32;
        let ends = nodes
            .iter()
            .map(|n| {
                end = end.saturating_add(n.node_id.len() as u32);
                end
            })
            .collect();
        Self { map, arena, ends }
    }

    /// The id of node `i`.
    fn id(&self, i: u32) -> Option<&'a str> {
        let start = match i.checked_sub(1) {
            Some(p) => *self.ends.get(p as usize)?,
            None => 0,
        };
        self.arena
            .get(start as usize..*self.ends.get(i as usize)? as usize)
    }

    /// The node named `name`.
    fn get(&self, name: &str) -> Option<u32> {
        self.map.get(name).copied()
    }

    /// The node named `name`, trying node `me - 1` first.
    fn get_near(&self, name: &str, me: u32) -> Option<u32> {
        match me.checked_sub(1) {
            Some(prev) if self.id(prev) == Some(name) => Some(prev),
            _ => self.get(name),
        }
    }
}

fn index_ids<'a>(nodes: &'a [ChainNode], arena: &'a str) -> Result<HashMap<&'a str, u32>> {
    let mut index: HashMap<&str, u32> = HashMap::with_capacity(nodes.len());
    let mut at = 0;
    for (i, node) in nodes.iter().enumerate() {
        let end = at + node.node_id.len();
        let key = arena.get(at..end).unwrap_or(&node.node_id);
        at = end;
        if node.node_id.is_empty() {
            return Err(invalid(
                "",
                "node_id",
                format!("node at position {i} has an empty node_id"),
            ));
        }
        if node.node_id == "input" {
            return Err(invalid(
                &node.node_id,
                "node_id",
                "`input` is reserved for the chain's initial input",
            ));
        }
        if let Some(first) = index.insert(key, i as u32) {
            return Err(ValidationError::DuplicateId {
                node_id: node.node_id.clone(),
                first: first as usize,
            });
        }
    }
    Ok(index)
}

/// Fields each kind needs and fields it must not have.
fn check_fields(node: &ChainNode) -> Result<()> {
    let kind = &node.kind;
    let id = &node.node_id;
    let missing = |field: &str| ValidationError::MissingField {
        node_id: id.clone(),
        field: field.into(),
        kind: kind.to_string(),
    };
    let unexpected = |field: &str| ValidationError::UnexpectedField {
        node_id: id.clone(),
        field: field.into(),
        kind: kind.to_string(),
    };
    let forbid = |fields: &[(&str, bool)]| -> Result<()> {
        match fields.iter().find(|(_, set)| *set) {
            Some((f, _)) => Err(unexpected(f)),
            None => Ok(()),
        }
    };
    let runnable_only = [
        ("input", !node.input.is_empty()),
        ("input_map", !node.input_map.is_empty()),
    ];
    let branch_only = [
        ("condition", !node.condition.is_empty()),
        ("true_node", !node.true_node.is_empty()),
        ("false_node", !node.false_node.is_empty()),
    ];
    let map_only = [
        ("items_path", !node.items_path.is_empty()),
        ("map_node", !node.map_node.is_empty()),
    ];
    if *kind == NodeKind::TOOL || *kind == NodeKind::SKILL || *kind == NodeKind::PROC {
        forbid(&branch_only)?;
        forbid(&map_only)?;
        if *kind == NodeKind::PROC {
            if !node.input.contains_key("cmd") && !node.input_map.contains_key("cmd") {
                return Err(missing("input.cmd"));
            }
        } else if node.name.is_empty() {
            return Err(missing("name"));
        }
        match node.input.get("timeout") {
            None => {}
            Some(Value::Number(n)) if n.as_f64().is_some_and(|t| t >= 0.0 && t.is_finite()) => {}
            Some(_) => {
                return Err(invalid(
                    id,
                    "input.timeout",
                    "expected a number of seconds >= 0",
                ));
            }
        }
    } else if *kind == NodeKind::BRANCH {
        forbid(&runnable_only)?;
        forbid(&map_only)?;
        if node.condition.is_empty() {
            return Err(missing("condition"));
        }
        if node.true_node.is_empty() && node.false_node.is_empty() {
            return Err(missing("true_node"));
        }
        if node.true_node == node.false_node {
            return Err(invalid(
                id,
                "false_node",
                "names the same node as true_node",
            ));
        }
    } else if *kind == NodeKind::MAP {
        forbid(&runnable_only)?;
        forbid(&branch_only)?;
        if node.items_path.is_empty() {
            return Err(missing("items_path"));
        }
        if node.map_node.is_empty() {
            return Err(missing("map_node"));
        }
    } else {
        return Err(ValidationError::UnknownKind {
            node_id: id.clone(),
            kind: kind.to_string(),
        });
    }
    Ok(())
}

/// Templates, fallbacks and their exclusive roles.
fn assign_roles(nodes: &[ChainNode], refs: &[Refs], entry: Option<u32>) -> Result<Vec<Role>> {
    let mut roles = vec![Role::Normal; nodes.len()];
    let mut fallback_of: Vec<Option<u32>> = vec![None; nodes.len()];
    let name = |i: u32| nodes.get(i as usize).map_or("", |n| n.node_id.as_str());
    for (i, (node, r)) in nodes.iter().zip(refs).enumerate() {
        if let Some(t) = r.template {
            let template = nodes.get(t as usize);
            let runnable = template.is_some_and(|n| {
                n.kind == NodeKind::TOOL || n.kind == NodeKind::SKILL || n.kind == NodeKind::PROC
            });
            if !runnable {
                return Err(invalid(
                    &node.node_id,
                    "map_node",
                    format!(
                        "map template `{}` must be a tool, skill or proc node",
                        name(t)
                    ),
                ));
            }
            if let Some(slot) = roles.get_mut(t as usize) {
                *slot = Role::Template;
            }
        }
        if let Policy::Fallback(f) = r.policy {
            if f as usize == i {
                return Err(invalid(
                    &node.node_id,
                    "on_error",
                    "a node cannot be its own fallback",
                ));
            }
            if let Some(Some(owner)) = fallback_of.get(f as usize) {
                return Err(invalid(
                    &node.node_id,
                    "on_error",
                    format!(
                        "`{}` is already the fallback of `{}`",
                        name(f),
                        name(*owner)
                    ),
                ));
            }
            if let Some(slot) = fallback_of.get_mut(f as usize) {
                *slot = Some(i as u32);
            }
        }
    }
    for (i, slot) in fallback_of.iter().enumerate() {
        if let (Some(owner), Some(role)) = (slot, roles.get_mut(i)) {
            if *role == Role::Template {
                return Err(invalid(
                    name(*owner),
                    "on_error",
                    format!(
                        "`{}` is a map template and cannot be a fallback",
                        name(i as u32)
                    ),
                ));
            }
            *role = Role::Fallback;
        }
    }
    let role_of = |i: u32| roles.get(i as usize).copied().unwrap_or(Role::Normal);
    let what = |role: Role| match role {
        Role::Template => "a map template, which runs only through its map",
        Role::Fallback => "a fallback, which runs only when its node fails",
        Role::Normal => "",
    };
    for (i, (node, r)) in nodes.iter().zip(refs).enumerate() {
        for (field, target) in [
            ("next_node", r.next),
            ("true_node", r.on_true),
            ("false_node", r.on_false),
        ] {
            if let Some(t) = target {
                let role = role_of(t);
                if role != Role::Normal {
                    return Err(invalid(
                        &node.node_id,
                        field,
                        format!("`{}` is {}", name(t), what(role)),
                    ));
                }
            }
        }
        if role_of(i as u32) == Role::Template {
            if !node.next_node.is_empty() {
                return Err(invalid(
                    &node.node_id,
                    "next_node",
                    "a map template has no successor; give the map node one",
                ));
            }
            if matches!(r.policy, Policy::Fallback(_)) {
                return Err(invalid(
                    &node.node_id,
                    "on_error",
                    "a map template takes `abort` or `skip` (the map node may have a fallback)",
                ));
            }
        }
    }
    if let Some(e) = entry {
        let role = role_of(e);
        if role != Role::Normal {
            return Err(invalid(
                "",
                "entry_node",
                format!("`{}` is {}", name(e), what(role)),
            ));
        }
    }
    Ok(roles)
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

fn compile(
    node: &ChainNode,
    me: u32,
    field: Field<'_>,
    text: &str,
    scope: Scope,
    index: &Ids<'_>,
) -> Result<Expr> {
    let resolve = |name: &str| -> Option<Root> {
        match (name, scope) {
            ("input", _) => Some(Root::Input),
            ("item", Scope::Template) => Some(Root::Item),
            ("index", Scope::Template) => Some(Root::Index),
            ("output", Scope::Condition) => Some(Root::Upstream),
            _ => index.get_near(name, me).map(Root::Node),
        }
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

/// With roles known: records each node's role; recompiles an `input_map`
/// expression that used `item`/`index` outside a map template (where they
/// are node ids, or unknown); refuses expressions that read a template.
fn check_scopes(compiled: &mut [Node<'_>], roles: &[Role], index: &Ids<'_>) -> Result<()> {
    for (i, node) in compiled.iter_mut().enumerate() {
        node.role = roles.get(i).copied().unwrap_or(Role::Normal);
        if node.role == Role::Template {
            continue;
        }
        let src = node.src;
        for (key, expr) in node.input_map.iter_mut() {
            let mut scoped = false;
            expr.each_root(|r| scoped |= matches!(r, Root::Item | Root::Index));
            if scoped {
                let text = src
                    .input_map
                    .get(&**key)
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                *expr = compile(
                    src,
                    i as u32,
                    Field::InputMap(key),
                    text,
                    Scope::Plain,
                    index,
                )?;
            }
        }
    }
    if !roles.contains(&Role::Template) {
        return Ok(());
    }
    let template_read = |e: &Expr| {
        let mut template = None;
        e.each_root(|root| {
            if let Root::Node(j) = root {
                if roles.get(j as usize) == Some(&Role::Template) {
                    template = Some(j);
                }
            }
        });
        template
    };
    let refuse = |node: &Node<'_>, field: String, j: u32| {
        let target = index.id(j).unwrap_or_default();
        invalid(
            &node.src.node_id,
            &field,
            format!(
                "reads map template `{target}`, which has no output of its own; read the map node"
            ),
        )
    };
    for node in compiled.iter() {
        for (key, expr) in node.input_map.iter() {
            if let Some(j) = template_read(expr) {
                return Err(refuse(node, format!("input_map.{key}"), j));
            }
        }
        let (field, expr) = match &node.spec {
            Spec::Branch { cond, .. } => ("condition", cond),
            Spec::Map { items, .. } => ("items_path", items),
            Spec::Run => continue,
        };
        if let Some(j) = template_read(expr) {
            return Err(refuse(node, field.to_owned(), j));
        }
    }
    Ok(())
}

/// Merges duplicate (from, to) pairs and lays the edges out by source.
fn build_csr(n: usize, pairs: Vec<(u32, u32, u8)>) -> (Vec<u32>, Vec<Edge>) {
    // Counting sort by source (linear time), then sort each source's short
    // run by target and merge duplicates.
    let mut start = vec![0u32; n + 1];
    for &(a, _, _) in &pairs {
        if let Some(s) = start.get_mut(a as usize + 1) {
            *s += 1;
        }
    }
    for i in 0..n {
        let prev = start.get(i).copied().unwrap_or(0);
        if let Some(s) = start.get_mut(i + 1) {
            *s += prev;
        }
    }
    let mut fill: Vec<u32> = start.clone();
    let mut slots = vec![Edge { to: 0, flags: 0 }; pairs.len()];
    for (a, b, f) in pairs {
        if let Some(pos) = fill.get_mut(a as usize) {
            if let Some(slot) = slots.get_mut(*pos as usize) {
                *slot = Edge { to: b, flags: f };
            }
            *pos += 1;
        }
    }
    let mut edges: Vec<Edge> = Vec::with_capacity(slots.len());
    let mut new_start = vec![0u32; n + 1];
    for i in 0..n {
        let (a, b) = match (start.get(i), start.get(i + 1)) {
            (Some(&a), Some(&b)) => (a as usize, b as usize),
            _ => (0, 0),
        };
        if let Some(run) = slots.get_mut(a..b) {
            run.sort_unstable_by_key(|e| e.to);
            let mut prev: Option<u32> = None;
            for e in run.iter() {
                match edges.last_mut() {
                    Some(last) if prev == Some(e.to) => last.flags |= e.flags,
                    _ => edges.push(*e),
                }
                prev = Some(e.to);
            }
        }
        if let Some(s) = new_start.get_mut(i + 1) {
            *s = edges.len() as u32;
        }
    }
    (new_start, edges)
}

/// Whether every edge the cycle search looks at (see [`find_cycle`]) points
/// to a later-declared node: then the graph is acyclic and the search can be
/// skipped.
fn forward_only(plan: &Plan<'_>) -> bool {
    (0..plan.nodes.len() as u32).all(|from| {
        let edges = plan.out_edges(from);
        edges.iter().all(|e| e.to > from)
            && edges.iter().filter(|f| f.flags & FALLBACK != 0).all(|f| {
                edges
                    .iter()
                    .filter(|d| d.flags & FALLBACK == 0)
                    .all(|d| d.to > f.to)
            })
    })
}

/// Counters, terminals, roots, branch upstreams, and the entry checks.
fn finish(plan: &mut Plan<'_>, entry: Option<u32>) -> Result<()> {
    let n = plan.nodes.len();
    let mut last_source: Vec<Option<u32>> = vec![None; n];
    for from in 0..n as u32 {
        let mut depended_on = false;
        let (a, b) = match (
            plan.edge_start.get(from as usize),
            plan.edge_start.get(from as usize + 1),
        ) {
            (Some(&a), Some(&b)) => (a as usize, b as usize),
            _ => (0, 0),
        };
        for k in a..b {
            let Some(&e) = plan.edges.get(k) else { break };
            if e.flags & FALLBACK == 0 {
                depended_on = true;
            }
            if let Some(t) = plan.nodes.get_mut(e.to as usize) {
                if e.flags & FALLBACK != 0 {
                    t.owner = Some(from);
                }
                t.pending += 1;
                if e.flags & ANY_CONTROL != 0 {
                    t.ctrl_in += 1;
                }
                if e.flags & DATA != 0 {
                    t.data_in += 1;
                }
            }
            if let Some(s) = last_source.get_mut(e.to as usize) {
                *s = Some(from);
            }
        }
        if let Some(node) = plan.nodes.get_mut(from as usize) {
            node.terminal = !depended_on && node.role != Role::Template;
        }
    }
    let mut total = 0;
    for (i, node) in plan.nodes.iter_mut().enumerate() {
        if node.role != Role::Template {
            total += 1;
            if node.pending == 0 {
                plan.roots.push(i as u32);
            }
        }
        let pending = node.pending;
        let id = node.src.node_id.as_str();
        if let Spec::Branch { cond, upstream, .. } = &mut node.spec {
            *upstream = if pending == 1 {
                last_source.get(i).copied().flatten()
            } else {
                None
            };
            if upstream.is_none() && cond.roots().contains(&Root::Upstream) {
                return Err(invalid(
                    id,
                    "condition",
                    format!(
                        "reads `output`, which needs exactly one upstream node; this branch has {pending}"
                    ),
                ));
            }
        }
    }
    plan.total = total;
    if let Some(e) = entry {
        if let Some(node) = plan.nodes.get(e as usize) {
            if node.pending != 0 {
                return Err(invalid(
                    "",
                    "entry_node",
                    format!(
                        "entry node `{}` depends on {} other node(s); the entry must have none",
                        node.id, node.pending
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// A map whose `items_path` reads only `input` is checked against the
/// fan-out limit now.
fn check_static_fan_out(plan: &Plan<'_>, config: &ChainConfig) -> Result<()> {
    let mut input = None;
    for node in &plan.nodes {
        let Spec::Map { items, .. } = &node.spec else {
            continue;
        };
        if items.roots().iter().any(|r| *r != Root::Input) {
            continue;
        }
        let input = input.get_or_insert_with(|| Value::Object(plan.req.initial_input.clone()));
        let list = crate::engine::resolve::eval_static(items, input);
        if let Value::Array(list) = list {
            if list.len() > config.max_map_items {
                return Err(ValidationError::MapFanOut {
                    node_id: node.src.node_id.clone(),
                    count: list.len(),
                    limit: config.max_map_items,
                });
            }
        }
    }
    Ok(())
}
