//! Tool search: BM25 ranking over name, description and tags.
//!
//! Each tool is a document whose fields are tokenised (lowercase alphanumeric
//! runs; `read_file` also yields `read` and `file`; a plural `s` is dropped). Name tokens count three
//! times, tags twice, description once. Scores use BM25 (k1 = 1.2, b = 0.75)
//! with an extra boost when the query equals the name or is a prefix of it, so
//! `read` finds `read_file` first. Tools with no matching token are left out.

use std::collections::HashMap;

use a2e_proto::ToolDefinition;

const K1: f64 = 1.2;
const B: f64 = 0.75;

/// Lowercase tokens of `text`; snake, kebab and dotted names are split, and
/// the whole name is kept as one token too.
pub fn tokenize(text: &str) -> Vec<String> {
    let lower = text.to_lowercase();
    let mut out = Vec::new();
    for word in lower.split_whitespace() {
        let parts: Vec<&str> = word
            .split(|c: char| !c.is_alphanumeric())
            .filter(|p| !p.is_empty())
            .collect();
        if parts.len() > 1 {
            let joined = word.trim_matches(|c: char| !c.is_alphanumeric());
            out.push(joined.to_owned());
        }
        out.extend(parts.into_iter().map(stem));
    }
    out
}

/// A light stemmer: plural `s` dropped (`files` → `file`, not `class`).
fn stem(word: &str) -> String {
    match word.strip_suffix('s') {
        Some(base) if base.len() >= 3 && !base.ends_with('s') => base.to_owned(),
        _ => word.to_owned(),
    }
}

fn document(tool: &ToolDefinition) -> Vec<String> {
    let mut doc = Vec::new();
    let name = tokenize(&tool.name);
    for _ in 0..3 {
        doc.extend(name.iter().cloned());
    }
    for tag in &tool.tags {
        let t = tokenize(tag);
        doc.extend(t.iter().cloned());
        doc.extend(t);
    }
    doc.extend(tokenize(&tool.description));
    doc
}

/// Ranks `tools` against `query`, best first; tools matching no query token are dropped.
pub fn rank(query: &str, tools: &[ToolDefinition]) -> Vec<(f64, usize)> {
    let terms = tokenize(query);
    if terms.is_empty() || tools.is_empty() {
        return Vec::new();
    }
    let docs: Vec<Vec<String>> = tools.iter().map(document).collect();
    let n = docs.len() as f64;
    let avg_len = docs.iter().map(Vec::len).sum::<usize>() as f64 / n;
    let mut df: HashMap<&str, usize> = HashMap::new();
    for term in &terms {
        let count = docs.iter().filter(|d| d.iter().any(|t| t == term)).count();
        df.insert(term, count);
    }
    let q_lower = query.trim().to_lowercase();
    let mut scored = Vec::new();
    for (i, (doc, tool)) in docs.iter().zip(tools).enumerate() {
        let len = doc.len() as f64;
        let mut score = 0.0;
        for term in &terms {
            let tf = doc.iter().filter(|t| *t == term).count() as f64;
            if tf == 0.0 {
                continue;
            }
            let d = df.get(term.as_str()).copied().unwrap_or(0) as f64;
            let idf = ((n - d + 0.5) / (d + 0.5) + 1.0).ln();
            score += idf * tf * (K1 + 1.0) / (tf + K1 * (1.0 - B + B * len / avg_len.max(1.0)));
        }
        let name = tool.name.to_lowercase();
        if name == q_lower {
            score += 10.0;
        } else if !q_lower.is_empty() && name.starts_with(&q_lower) {
            score += 2.0;
        } else if !q_lower.is_empty() && score == 0.0 && name.contains(&q_lower) {
            // Substring fallback: `hostnam` still finds something.
            score += 0.5;
        }
        if score > 0.0 {
            scored.push((score, i));
        }
    }
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    scored
}

/// The name among `known` that `given` is most likely a typo of (the
/// closest by Jaro-Winkler similarity, when close enough to be meant), for
/// a "did you mean" in an error.
pub fn closest<'a>(given: &str, known: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    known
        .into_iter()
        .map(|k| (strsim::jaro_winkler(given, k), k))
        .filter(|(score, _)| *score >= 0.8)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, k)| k)
}

#[cfg(test)]
mod tests {
    use super::closest;

    #[test]
    fn a_typo_is_matched_to_the_closest_name_and_a_stranger_to_none() {
        let known = ["read_file", "write_file", "list_dir"];
        assert_eq!(closest("read_fil", known), Some("read_file"));
        assert_eq!(closest("list_dirs", known), Some("list_dir"));
        assert_eq!(closest("zzz", known), None);
    }

    use super::*;

    fn tool(name: &str, desc: &str, tags: &[&str]) -> ToolDefinition {
        ToolDefinition::new(name, desc).tags(tags)
    }

    #[test]
    fn tokenizer_splits_names() {
        assert_eq!(tokenize("read_file"), vec!["read_file", "read", "file"]);
        assert_eq!(tokenize("HTTP request"), vec!["http", "request"]);
    }

    #[test]
    fn name_matches_outrank_description_matches() {
        let tools = vec![
            tool("list_dir", "List files in a directory", &["fs"]),
            tool("read_file", "Read a file's contents", &["fs"]),
            tool(
                "github_search",
                "Search GitHub issues",
                &["github", "network"],
            ),
        ];
        let ranked = rank("file", &tools);
        assert_eq!(ranked.first().map(|r| r.1), Some(1));
        assert_eq!(ranked.len(), 2);
        let ranked = rank("github", &tools);
        assert_eq!(ranked.iter().map(|r| r.1).collect::<Vec<_>>(), vec![2]);
        assert!(rank("zebra", &tools).is_empty());
    }

    #[test]
    fn rare_terms_weigh_more() {
        let tools = vec![
            tool("a", "read data fast", &[]),
            tool("b", "read data", &[]),
            tool("c", "read archive", &[]),
        ];
        let ranked = rank("read archive", &tools);
        assert_eq!(ranked.first().map(|r| r.1), Some(2));
    }
}
