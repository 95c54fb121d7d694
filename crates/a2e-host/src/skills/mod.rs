//! Skills: argument checking against `input_schema`, and chain skills loaded
//! from Markdown files with YAML front matter.

pub mod schema;
