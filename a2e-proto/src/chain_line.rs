//! A `chain/req` line with its `nodes` read by hand, the rest by serde.
//!
//! Nearly all of a large chain request is its node list, and nearly every
//! node is an object of short plain strings (`node_id`, `kind`, `name`, an
//! `input_map` of expressions). serde's generic path spends most of its
//! time on such a node in its machinery (the string reader's escape
//! search, the field visitors), not in the bytes: here those nodes are
//! read directly, each plain string found by one scan and copied once.
//!
//! The rules are [`crate::node_list`]'s, and the result is the same value,
//! by construction:
//!
//! - The top-level object is walked only to find the `nodes` member; every
//!   other member is skipped (strings to their closing quote, arrays and
//!   objects to their matching bracket). The line without that member is
//!   then decoded by serde, which checks all of it; the nodes read here
//!   are put in.
//! - Inside a node, a field that is not a plain string (an escape, a
//!   number, an object for `input`, an unknown field's value) is handed to
//!   serde as its own JSON text, decoded as the type the derived decoder
//!   gives it. Only the fields' layout (the object, its keys, the commas)
//!   is read here, strictly.
//! - Anything else (a key with an escape, a field given twice, a missing
//!   `node_id` or `kind`, a second `nodes`, any error) gives up: the caller
//!   decodes the line the generic way, which gives the answer, or the
//!   error and its path.
//!
//! The nesting depth limit is checked here, without the pass over the
//! whole line that the generic path makes first: the nodes' own layout is
//! at most four levels deep (an `input_map`), each text handed to serde is
//! checked against what is left of the limit where it lies, and the line
//! without its nodes against the whole limit.

use serde::Deserialize;
use serde::de::{DeserializeOwned, IgnoredAny, IntoDeserializer};
use serde_json::{Map, Value};

use crate::chains::{ChainNode, ChainRequest, NodeKind};
use crate::input_map::InputMap;
use crate::node_list::Field;

/// `text` (a whole line, its `type` already read as `chain/req`) decoded,
/// or `None` when it takes the generic path (see the module's docs): also
/// when it nests deeper than `max_depth`, which is checked here for the
/// parts serde decodes (the nodes' own layout is three levels deep, an
/// `input_map` four).
pub(crate) fn chain_request(text: &str, max_depth: usize) -> Option<ChainRequest> {
    // An `input_map` is one level below the node.
    if max_depth <= NODE_DEPTH {
        return None;
    }
    let mut line = Reader {
        text,
        at: 0,
        field_depth: max_depth - NODE_DEPTH,
    };
    line.ws();
    line.eat(b'{')?;
    line.ws();
    let mut found: Option<(usize, usize, Vec<ChainNode>)> = None;
    if line.peek()? != b'}' {
        loop {
            line.ws();
            let key_at = line.at;
            let key = line.plain()?;
            line.ws();
            line.eat(b':')?;
            line.ws();
            if key == "nodes" {
                if found.is_some() {
                    return None;
                }
                let nodes = line.nodes()?;
                found = Some((key_at, line.at, nodes));
            } else {
                line.skip_value()?;
            }
            line.ws();
            match line.next()? {
                b',' => {}
                b'}' => break,
                _ => return None,
            }
        }
    }
    let (key_at, value_end, nodes) = found?;
    let rest = without_member(text, key_at, value_end)?;
    if !crate::decode::within_depth(rest.as_bytes(), max_depth) {
        return None;
    }
    let mut request: ChainRequest = serde_json::from_str(&rest).ok()?;
    request.nodes = nodes;
    Some(request)
}

/// `text` without the object member that starts at `key_at` and whose
/// value ends at `value_end`, and without one comma beside it.
fn without_member(text: &str, key_at: usize, value_end: usize) -> Option<String> {
    let bytes = text.as_bytes();
    let after = bytes.get(value_end..)?;
    let ws = after.iter().take_while(|b| is_ws(**b)).count();
    let (cut_from, cut_to) = if after.get(ws) == Some(&b',') {
        // Members follow: the comma after goes with it.
        (key_at, value_end + ws + 1)
    } else {
        // The last member: the comma before it goes, if there is one.
        let before = bytes.get(..key_at)?;
        let ws = before.iter().rev().take_while(|b| is_ws(**b)).count();
        let at = key_at - ws;
        match before.get(at.checked_sub(1)?) {
            Some(b',') => (at - 1, value_end),
            _ => (key_at, value_end),
        }
    };
    let mut rest = String::with_capacity(text.len() - (cut_to - cut_from));
    rest.push_str(text.get(..cut_from)?);
    rest.push_str(text.get(cut_to..)?);
    Some(rest)
}

fn is_ws(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r')
}

/// How deep a node's fields start: the line's object, `nodes`, the node.
const NODE_DEPTH: usize = 3;

/// A position in the line.
struct Reader<'a> {
    text: &'a str,
    at: usize,
    /// How deep a field's value may nest, itself counted.
    field_depth: usize,
}

impl<'a> Reader<'a> {
    fn peek(&self) -> Option<u8> {
        self.text.as_bytes().get(self.at).copied()
    }

    fn next(&mut self) -> Option<u8> {
        let b = self.peek()?;
        self.at += 1;
        Some(b)
    }

    fn eat(&mut self, want: u8) -> Option<()> {
        (self.next()? == want).then_some(())
    }

    fn ws(&mut self) {
        while self.peek().is_some_and(is_ws) {
            self.at += 1;
        }
    }

    /// A string without escapes or control characters, borrowed; `None`
    /// (the position then anywhere) for any other value.
    fn plain(&mut self) -> Option<&'a str> {
        self.eat(b'"')?;
        let start = self.at;
        let bytes = self.text.as_bytes();
        loop {
            match *bytes.get(self.at)? {
                b'"' => break,
                b'\\' | 0..0x20 => return None,
                _ => self.at += 1,
            }
        }
        let body = self.text.get(start..self.at)?;
        self.at += 1;
        Some(body)
    }

    /// The next value read by `fast`, or else (from where it started)
    /// skipped and decoded by serde as a `T`.
    fn value<T: DeserializeOwned>(
        &mut self,
        fast: impl FnOnce(&mut Self) -> Option<T>,
    ) -> Option<T> {
        let start = self.at;
        if let Some(value) = fast(self) {
            return Some(value);
        }
        self.at = start;
        self.skip_value()?;
        let span = self.text.get(start..self.at)?;
        if !crate::decode::within_depth(span.as_bytes(), self.field_depth) {
            return None;
        }
        serde_json::from_str(span).ok()
    }

    /// A string field.
    fn string(&mut self) -> Option<String> {
        self.value(|r| r.plain().map(str::to_owned))
    }

    /// Past the next value, without checking it beyond its extent: strings
    /// to their closing quote, arrays and objects to their matching
    /// bracket, anything else to the next delimiter.
    fn skip_value(&mut self) -> Option<()> {
        let bytes = self.text.as_bytes();
        match self.peek()? {
            b'"' => {
                self.at += 1;
                self.skip_string_body();
                Some(())
            }
            b'[' | b'{' => {
                let mut depth = 0usize;
                loop {
                    match *bytes.get(self.at)? {
                        b'"' => {
                            self.at += 1;
                            self.skip_string_body();
                            continue;
                        }
                        b'[' | b'{' => depth += 1,
                        b']' | b'}' => {
                            depth = depth.checked_sub(1)?;
                            if depth == 0 {
                                self.at += 1;
                                return Some(());
                            }
                        }
                        _ => {}
                    }
                    self.at += 1;
                }
            }
            _ => {
                while let Some(b) = self.peek() {
                    if matches!(b, b',' | b'}' | b']') || is_ws(b) {
                        break;
                    }
                    self.at += 1;
                }
                Some(())
            }
        }
    }

    /// Past the quote that closes the string whose body starts here (to
    /// the line's end if none does: what reads on then finds nothing).
    fn skip_string_body(&mut self) {
        self.at = crate::decode::string_end(self.text.as_bytes(), self.at);
    }

    /// The node list, an array of objects.
    fn nodes(&mut self) -> Option<Vec<ChainNode>> {
        self.eat(b'[')?;
        self.ws();
        if self.peek()? == b']' {
            self.at += 1;
            return Some(Vec::new());
        }
        let mut nodes = Vec::with_capacity(crate::node_list::MAX_RESERVED);
        loop {
            self.ws();
            // Filled where it lies: a node is ~340 bytes to move.
            nodes.push(ChainNode::blank());
            self.node(nodes.last_mut()?)?;
            self.ws();
            match self.next()? {
                b',' => {}
                b']' => break,
                _ => return None,
            }
        }
        nodes.shrink_to_fit();
        Some(nodes)
    }

    /// One node, as [`crate::node_list`] reads it, into `node` (blank).
    fn node(&mut self, node: &mut ChainNode) -> Option<()> {
        self.eat(b'{')?;
        let mut seen = 0u16;
        self.ws();
        if self.peek()? == b'}' {
            // Without `node_id` and `kind`: an error.
            return None;
        }
        loop {
            self.ws();
            let key = self.plain()?;
            self.ws();
            self.eat(b':')?;
            self.ws();
            let field = Field::of(key);
            if seen & field.bit() != 0 && field != Field::Other {
                return None;
            }
            seen |= field.bit();
            match field {
                Field::NodeId => node.node_id = self.string()?,
                Field::Kind => node.kind = self.value(|r| kind(r.plain()?))?,
                Field::Name => node.name = self.string()?,
                Field::Input => node.input = self.value(empty_object)?,
                Field::InputMap => node.input_map = self.value(Reader::input_map)?,
                Field::Condition => node.condition = self.string()?,
                Field::TrueNode => node.true_node = self.string()?,
                Field::FalseNode => node.false_node = self.string()?,
                Field::ItemsPath => node.items_path = self.string()?,
                Field::MapNode => node.map_node = self.string()?,
                Field::NextNode => node.next_node = self.string()?,
                Field::OnError => node.on_error = self.string()?,
                // Not a field: checked and dropped.
                Field::Other => {
                    self.value::<IgnoredAny>(|_| None)?;
                }
            }
            self.ws();
            match self.next()? {
                b',' => {}
                b'}' => break,
                _ => return None,
            }
        }
        let required = Field::NodeId.bit() | Field::Kind.bit();
        if seen & required != required {
            return None;
        }
        if seen & Field::OnError.bit() == 0 {
            node.on_error = ChainNode::DEFAULT_ON_ERROR.to_owned();
        }
        Some(())
    }

    /// An `input_map` whose values are all plain strings.
    fn input_map(&mut self) -> Option<InputMap> {
        self.eat(b'{')?;
        let mut entries = Vec::with_capacity(1);
        self.ws();
        if self.peek()? == b'}' {
            self.at += 1;
            return Some(InputMap::new());
        }
        loop {
            self.ws();
            let key = self.plain()?.to_owned();
            self.ws();
            self.eat(b':')?;
            self.ws();
            let value = Value::String(self.plain()?.to_owned());
            entries.push((key, value));
            self.ws();
            match self.next()? {
                b',' => {}
                b'}' => break,
                _ => return None,
            }
        }
        Some(InputMap::from_entries(entries))
    }
}

/// A kind from its plain string, as its decoder reads a borrowed string.
fn kind(text: &str) -> Option<NodeKind> {
    let de: serde::de::value::StrDeserializer<'_, serde::de::value::Error> =
        text.into_deserializer();
    NodeKind::deserialize(de).ok()
}

/// `{}` (the common `input`), else `None`.
fn empty_object(r: &mut Reader<'_>) -> Option<Map<String, Value>> {
    r.eat(b'{')?;
    r.ws();
    r.eat(b'}')?;
    Some(Map::new())
}

#[cfg(test)]
mod tests;
