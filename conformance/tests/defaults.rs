//! The decoder's defaults against the spec's field tables.

use crate::common;

use a2e_proto::{Message, decode};
use conformance::catalog::{self, Catalog, MODELS};
use conformance::{Suite, defaults};
use serde_json::json;

#[test]
fn every_type_fills_the_spec_defaults() {
    let suite = Suite::load().expect("suite loads");
    let outcomes = suite.run_defaults();
    assert_eq!(outcomes.len(), 1 + Message::TYPES.len() + MODELS.len());
    assert_eq!(Message::TYPES.len(), 29);
    common::assert_passed(&outcomes);
}

#[test]
fn a_wrong_default_in_the_table_is_caught() {
    let suite = Suite::load().expect("suite loads");
    let mut table = conformance::fixtures::load_json("defaults.json").expect("loads");
    table["types"]["tool/call/req"]["defaults"]["timeout"] = json!(31);
    let catalog = Catalog::from_value(&table).expect("parses");
    let problems = defaults::check("tool/call/req", &catalog, &suite.schemas);
    assert!(
        problems.iter().any(|p| p.contains("`timeout`")),
        "{problems:?}"
    );
}

#[test]
fn an_optional_field_listed_as_required_is_caught() {
    let suite = Suite::load().expect("suite loads");
    let mut table = conformance::fixtures::load_json("defaults.json").expect("loads");
    table["types"]["ChainNode"]["minimal"]["name"] = json!("read_file");
    let catalog = Catalog::from_value(&table).expect("parses");
    let problems = defaults::check("ChainNode", &catalog, &suite.schemas);
    assert!(
        problems
            .iter()
            .any(|p| p.contains("`name` has no default in the spec")),
        "{problems:?}"
    );
}

#[test]
fn fresh_values_are_new_every_time() {
    let a = decode(br#"{"type":"chain/req"}"#).expect("decodes");
    let b = decode(br#"{"type":"chain/req"}"#).expect("decodes");
    let (Message::ChainRequest(a), Message::ChainRequest(b)) = (a, b) else {
        panic!("not chain/req")
    };
    assert_ne!(a.id, b.id);
    assert_ne!(a.chain_id, b.chain_id);
    let hex8 = json!({"$fresh": "hex:8"});
    catalog::check_fresh(&hex8, &json!(a.chain_id)).expect("8 hex digits");
    assert!(catalog::check_fresh(&hex8, &json!("abc")).is_err());
    let now = json!({"$fresh": "now"});
    catalog::check_fresh(&now, &json!(a.ts)).expect("now");
    assert!(catalog::check_fresh(&now, &json!(1716123456.0)).is_err());
}
