//! One test per validation rule: each violation is reported, naming task and field.

use crate::common;

use acmp_dag::path::PathErrorKind;
use acmp_dag::validate::{EdgeEnd, check};
use acmp_dag::{
    Dag, Edge, Task, TaskInput, ValidatedDag, ValidationError, ValidationLimits, ValidationWarning,
};
use common::{dag, task};

fn errors(dag: &Dag) -> Vec<ValidationError> {
    check(dag, &ValidationLimits::default()).errors
}

fn warnings(dag: &Dag) -> Vec<ValidationWarning> {
    check(dag, &ValidationLimits::default()).warnings
}

#[test]
fn a_valid_dag_has_no_errors_and_an_empty_edge_list_is_a_batch() {
    let d = dag(&[("a", "c", &[]), ("b", "c", &["a"]), ("m", "c", &["a", "b"])]);
    assert_eq!(errors(&d), vec![]);
    let batch = Dag::new("dag_batch")
        .with_task(task("x", "c"))
        .with_task(task("y", "c"));
    let valid = ValidatedDag::new(batch, &ValidationLimits::default()).unwrap();
    assert_eq!(valid.roots().collect::<Vec<_>>(), ["x", "y"]);
    assert_eq!(valid.leaves().collect::<Vec<_>>(), ["x", "y"]);
    assert_eq!(errors(&Dag::new("dag_empty")), vec![]);
}

#[test]
fn cycles_are_rejected_with_their_path() {
    let d = dag(&[
        ("a", "c", &["c"]),
        ("b", "c", &["a"]),
        ("c", "c", &["b"]),
        ("z", "c", &["c"]),
    ]);
    assert_eq!(
        errors(&d),
        vec![ValidationError::Cycle {
            path: vec!["a".into(), "b".into(), "c".into(), "a".into()]
        }]
    );
    assert_eq!(errors(&d)[0].to_string(), "cycle: a → b → c → a");

    let self_loop = Dag::new("d")
        .with_task(Task::new("s", "c", TaskInput::from_task("s")))
        .with_edge(Edge::new("s", "s"));
    assert_eq!(
        errors(&self_loop),
        vec![ValidationError::Cycle {
            path: vec!["s".into(), "s".into()]
        }]
    );

    // Two independent cycles: both reported.
    let two = dag(&[
        ("a", "c", &["b"]),
        ("b", "c", &["a"]),
        ("x", "c", &["y"]),
        ("y", "c", &["x"]),
    ]);
    assert_eq!(errors(&two).len(), 2);
}

#[test]
fn edges_naming_unknown_tasks_are_rejected() {
    let d = dag(&[("a", "c", &[])])
        .with_edge(Edge::new("a", "ghost"))
        .with_edge(Edge::new("nobody", "a"));
    let errs = errors(&d);
    assert!(errs.contains(&ValidationError::UnknownEdgeTask {
        edge_index: 0,
        end: EdgeEnd::To,
        task_id: "ghost".into()
    }));
    assert!(errs.contains(&ValidationError::UnknownEdgeTask {
        edge_index: 1,
        end: EdgeEnd::From,
        task_id: "nobody".into()
    }));
    assert_eq!(errs[0].field().as_deref(), Some("edges[0].to"));
    assert_eq!(errs[0].to_string(), "edges[0].to: unknown task \"ghost\"");
}

#[test]
fn a_reference_without_its_edge_is_rejected() {
    let d = Dag::new("d").with_task(task("a", "c")).with_task(Task::new(
        "b",
        "c",
        TaskInput::from_task("a"),
    ));
    let errs = errors(&d);
    assert_eq!(
        errs,
        vec![ValidationError::MissingSourceEdge {
            task_id: "b".into(),
            field: "input.source.from_task".into(),
            source_task: "a".into()
        }]
    );
    assert_eq!(errs[0].task_id(), Some("b"));
    assert_eq!(
        errs[0].to_string(),
        "task \"b\": input.source.from_task: references \"a\" but there is no edge a → b"
    );

    // from_tasks: the missing one is named by its position.
    let d = Dag::new("d")
        .with_task(task("a", "c"))
        .with_task(task("x", "c"))
        .with_task(Task::new("m", "c", TaskInput::from_tasks(["a", "x"])))
        .with_edge(Edge::new("a", "m"));
    assert_eq!(
        errors(&d),
        vec![ValidationError::MissingSourceEdge {
            task_id: "m".into(),
            field: "input.source.from_tasks[1]".into(),
            source_task: "x".into()
        }]
    );

    // An edge the other way round does not count.
    let d = Dag::new("d")
        .with_task(task("a", "c"))
        .with_task(Task::new("b", "c", TaskInput::from_task("a")))
        .with_edge(Edge::new("b", "a"));
    assert!(matches!(
        errors(&d)[0],
        ValidationError::MissingSourceEdge { .. }
    ));
}

#[test]
fn a_reference_to_an_unknown_task_is_rejected() {
    let d = Dag::new("d").with_task(Task::new("b", "c", TaskInput::from_tasks(["ghost"])));
    assert_eq!(
        errors(&d),
        vec![ValidationError::UnknownSourceTask {
            task_id: "b".into(),
            field: "input.source.from_tasks[0]".into(),
            source_task: "ghost".into()
        }]
    );
    let d = Dag::new("d").with_task(Task::new(
        "b",
        "c",
        TaskInput::from_tasks(Vec::<String>::new()),
    ));
    assert_eq!(
        errors(&d),
        vec![ValidationError::EmptyFromTasks {
            task_id: "b".into()
        }]
    );
}

#[test]
fn duplicate_task_ids_and_edges_are_rejected() {
    let d = Dag::new("d")
        .with_task(task("a", "c"))
        .with_task(task("b", "c"))
        .with_task(task("a", "k"));
    let errs = errors(&d);
    assert_eq!(
        errs,
        vec![ValidationError::DuplicateTaskId {
            task_id: "a".into(),
            first_index: 0,
            index: 2
        }]
    );
    assert_eq!(errs[0].field().as_deref(), Some("task_id"));

    let d = dag(&[("a", "c", &[]), ("b", "c", &["a"])]).with_edge(Edge::new("a", "b"));
    assert_eq!(
        errors(&d),
        vec![ValidationError::DuplicateEdge {
            edge_index: 1,
            first_index: 0,
            from: "a".into(),
            to: "b".into()
        }]
    );
}

#[test]
fn empty_identifiers_are_rejected() {
    let d = Dag::new("")
        .with_task(task("", "c"))
        .with_task(task("b", ""));
    assert_eq!(
        errors(&d),
        vec![
            ValidationError::EmptyDagId,
            ValidationError::EmptyTaskId { index: 0 },
            ValidationError::EmptyCapability {
                task_id: "b".into()
            },
        ]
    );
}

#[test]
fn paths_outside_the_grammar_are_rejected_at_validation() {
    for (field, offset, kind) in [
        ("data.items[*]", 11, PathErrorKind::Wildcard),
        ("data.items[0:2]", 12, PathErrorKind::Slice),
        ("data.items[?(@.ok)]", 11, PathErrorKind::Filter),
        ("$.data", 0, PathErrorKind::DollarRoot),
        (
            "chunks[0]",
            0,
            PathErrorKind::BadRoot {
                found: "chunks".into(),
            },
        ),
    ] {
        let d = Dag::new("d")
            .with_task(task("a", "c"))
            .with_task(Task::new("b", "c", TaskInput::from_task_field("a", field)))
            .with_edge(Edge::new("a", "b"));
        let errs = errors(&d);
        let [ValidationError::InvalidPath { task_id, error }] = errs.as_slice() else {
            panic!("{field}: {errs:?}");
        };
        assert_eq!(task_id, "b");
        assert_eq!((error.offset, &error.kind), (offset, &kind), "{field}");
        assert_eq!(errs[0].field().as_deref(), Some("input.source.field"));
        assert!(errs[0].to_string().starts_with(&format!(
            "task \"b\": input.source.field: invalid path `{field}` at offset {offset}: "
        )));
    }
}

#[test]
fn stream_eligible_edges_that_cannot_stream_are_warnings() {
    let base = || {
        Dag::new("d")
            .with_task(task("a", "c"))
            .with_task(task("x", "c"))
    };
    // A sub-field: it will not stream.
    let d = base()
        .with_task(Task::new(
            "b",
            "c",
            TaskInput::from_task_field("a", "data.chunks[0]"),
        ))
        .with_edge(Edge::streaming("a", "b"));
    assert_eq!(errors(&d), vec![]);
    assert_eq!(
        warnings(&d),
        vec![ValidationWarning::StreamWithSubField {
            edge_index: 0,
            from: "a".into(),
            to: "b".into(),
            field: "data.chunks[0]".into()
        }]
    );
    // The whole output, with or without `field: "data"`: no warning.
    for input in [
        TaskInput::from_task("a"),
        TaskInput::from_task_field("a", "data"),
    ] {
        let d = base()
            .with_task(Task::new("b", "c", input))
            .with_edge(Edge::streaming("a", "b"));
        assert_eq!((errors(&d), warnings(&d)), (vec![], vec![]));
    }
    // An aggregation, and an edge the downstream does not read: warnings.
    let d = base()
        .with_task(Task::new("m", "c", TaskInput::from_tasks(["a", "x"])))
        .with_task(task("l", "c"))
        .with_edge(Edge::streaming("a", "m"))
        .with_edge(Edge::new("x", "m"))
        .with_edge(Edge::streaming("a", "l"));
    let w = warnings(&d);
    assert!(matches!(
        w[0],
        ValidationWarning::StreamIntoAggregation { edge_index: 0, .. }
    ));
    assert!(matches!(
        w[1],
        ValidationWarning::StreamWithoutReference { edge_index: 2, .. }
    ));
    assert!(w[0].to_string().contains("stream_eligible ignored"));
}

#[test]
fn limits_on_tasks_depth_and_breadth_are_enforced() {
    let chain = dag(&[
        ("a", "c", &[]),
        ("b", "c", &["a"]),
        ("c", "c", &["b"]),
        ("d", "c", &["c"]),
    ]);
    let limits = ValidationLimits {
        max_tasks: 3,
        max_depth: 100,
        max_breadth: 100,
    };
    assert_eq!(
        check(&chain, &limits).errors,
        vec![ValidationError::TooManyTasks { count: 4, max: 3 }]
    );
    let limits = ValidationLimits {
        max_tasks: 100,
        max_depth: 3,
        max_breadth: 100,
    };
    assert_eq!(
        check(&chain, &limits).errors,
        vec![ValidationError::TooDeep {
            depth: 4,
            max: 3,
            task_id: "d".into()
        }]
    );
    let wide = dag(&[
        ("r", "c", &[]),
        ("a", "c", &["r"]),
        ("b", "c", &["r"]),
        ("c", "c", &["r"]),
    ]);
    let limits = ValidationLimits {
        max_tasks: 100,
        max_depth: 100,
        max_breadth: 2,
    };
    assert_eq!(
        check(&wide, &limits).errors,
        vec![ValidationError::TooBroad {
            breadth: 3,
            max: 2,
            level: 2
        }]
    );
    assert!(check(&wide, &ValidationLimits::unlimited()).is_ok());
}

#[test]
fn every_violation_is_reported_at_once() {
    let d = Dag::new("d")
        .with_task(task("a", "c"))
        .with_task(task("a", "c"))
        .with_task(Task::new(
            "b",
            "c",
            TaskInput::from_task_field("a", "data[*]"),
        ))
        .with_edge(Edge::new("a", "zzz"));
    let report = ValidatedDag::new(d, &ValidationLimits::default()).unwrap_err();
    assert_eq!(report.errors.len(), 4, "{report}");
    let text = report.to_string();
    assert!(text.starts_with("invalid DAG: "), "{text}");
    for part in [
        "duplicate",
        "unknown task \"zzz\"",
        "no edge a → b",
        "wildcard",
    ] {
        assert!(text.contains(part), "{part} in {text}");
    }
}

#[test]
fn wide_aggregations_resolve_their_sources_in_any_edge_order() {
    // More sources than the few incoming edges looked through directly, edges listed in
    // reverse, one reference without its edge.
    let ids: Vec<String> = (0..12).map(|i| format!("s{i}")).collect();
    let mut d = Dag::new("d");
    for id in &ids {
        d = d.with_task(task(id, "c"));
    }
    d = d.with_task(Task::new("m", "c", TaskInput::from_tasks(ids.clone())));
    for id in ids.iter().rev().filter(|id| *id != "s9") {
        d = d.with_edge(Edge::new(id.as_str(), "m"));
    }
    assert_eq!(
        errors(&d),
        vec![ValidationError::MissingSourceEdge {
            task_id: "m".into(),
            field: "input.source.from_tasks[9]".into(),
            source_task: "s9".into()
        }]
    );
    let d = d.with_edge(Edge::new("s9", "m"));
    assert!(errors(&d).is_empty());
    let valid = ValidatedDag::new(d, &ValidationLimits::default()).unwrap();
    assert_eq!(valid.roots().count(), 12);
    assert_eq!(valid.leaves().collect::<Vec<_>>(), ["m"]);
}

#[test]
fn edges_naming_a_duplicated_id_point_at_its_first_task() {
    // `b` twice: edges and references resolve to the first one, and the duplicate is the
    // only error.
    let d = Dag::new("d")
        .with_task(task("a", "c"))
        .with_task(Task::new("b", "c", TaskInput::from_task("a")))
        .with_task(task("b", "c"))
        .with_task(Task::new("z", "c", TaskInput::from_task("b")))
        .with_edge(Edge::new("a", "b"))
        .with_edge(Edge::new("b", "z"));
    assert_eq!(
        errors(&d),
        vec![ValidationError::DuplicateTaskId {
            task_id: "b".into(),
            first_index: 1,
            index: 2
        }]
    );
}
