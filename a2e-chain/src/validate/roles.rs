//! Roles: map templates and fallbacks, what they may not also be, and the
//! scoped names (`item`, `index`) only templates may use.

use a2e_proto::{ChainNode, NodeKind};
use serde_json::Value;

use super::{Field, Ids, Refs, Result, Scope, compile, invalid};
use crate::context::{Expr, Root};
use crate::graph::{DATA, Node, Policy, Role, Spec, inputs_of};

/// Templates, fallbacks and their exclusive roles.
pub(super) fn assign_roles(
    nodes: &[ChainNode],
    refs: &[Refs],
    entry: Option<u32>,
) -> Result<Vec<Role>> {
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

/// With roles known, in one pass over the compiled nodes: records each
/// node's role; recompiles an `input_map` expression that used
/// `item`/`index` outside a map template (where they are node ids, or
/// unknown); refuses expressions that read a template; and adds the data
/// edges (a node depends on every node its expressions read, a map also on
/// every node its template reads). Of several errors, a scoping error comes
/// first, then the first read of a template, each in declaration order.
pub(super) fn scopes_and_edges(
    compiled: &mut [Node<'_>],
    inputs: &mut [(&str, Expr)],
    roles: &[Role],
    index: &Ids<'_>,
    pairs: &mut Vec<(u32, u32, u8)>,
) -> Result<()> {
    let templates = roles.contains(&Role::Template);
    let template_read = |e: &Expr| {
        let mut template = None;
        if templates {
            e.each_root(|root| {
                if let Root::Node(j) = root
                    && roles.get(j as usize) == Some(&Role::Template)
                {
                    template = Some(j);
                }
            });
        }
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
    let mut scope_error = None;
    let mut read_error = None;
    for i in 0..compiled.len() {
        let me = i as u32;
        let Some(node) = compiled.get_mut(i) else {
            break;
        };
        node.role = roles.get(i).copied().unwrap_or(Role::Normal);
        let template = node.role == Role::Template;
        let at = node.inputs_at as usize;
        let own = inputs
            .get_mut(at..at + node.inputs_len as usize)
            .unwrap_or_default();
        if !template && scope_error.is_none() {
            let src = node.src;
            for (key, expr) in own.iter_mut() {
                let mut scoped = false;
                expr.each_root(|r| scoped |= matches!(r, Root::Item | Root::Index));
                if scoped {
                    let text = src
                        .input_map
                        .get(key)
                        .and_then(Value::as_str)
                        .unwrap_or_default();
                    match compile(src, me, Field::InputMap(key), text, Scope::Plain, index) {
                        Ok(e) => *expr = e,
                        Err(e) => {
                            scope_error = Some(e);
                            break;
                        }
                    }
                }
            }
        }
        let compiled = &*compiled;
        let Some(node) = compiled.get(i) else {
            break;
        };
        let mut add = |e: &Expr| {
            e.each_root(|root| {
                if let Root::Node(j) = root {
                    pairs.push((j, me, DATA));
                }
            })
        };
        for (key, expr) in inputs_of(inputs, node) {
            if read_error.is_none()
                && let Some(j) = template_read(expr)
            {
                read_error = Some(refuse(node, format!("input_map.{key}"), j));
            }
            if !template {
                add(expr);
            }
        }
        let (field, expr) = match &node.spec {
            Spec::Branch(branch) => ("condition", &branch.cond),
            Spec::Map(map) => ("items_path", &map.items),
            Spec::Run => continue,
        };
        if read_error.is_none()
            && let Some(j) = template_read(expr)
        {
            read_error = Some(refuse(node, field.to_owned(), j));
        }
        if !template {
            add(expr);
            if let Spec::Map(map) = &node.spec
                && let Some(t) = compiled.get(map.template as usize)
            {
                inputs_of(inputs, t).iter().for_each(|(_, e)| add(e));
            }
        }
    }
    match (scope_error, read_error) {
        (Some(e), _) | (None, Some(e)) => Err(e),
        (None, None) => Ok(()),
    }
}
