//! General expressions: the jmespath interpreter over a context that holds
//! only the roots the expression names, each converted once and shared.

use std::collections::BTreeMap;

use jmespath::{Context, DEFAULT_RUNTIME, Rcvar, Variable};
use serde_json::Value;

use super::{General, Root};

/// A JSON value as a shared jmespath variable.
pub(crate) fn to_var(v: &Value) -> Rcvar {
    Rcvar::new(Variable::try_from(v).unwrap_or(Variable::Null))
}

/// A shared `null`.
pub(crate) fn null_var() -> Rcvar {
    Rcvar::new(Variable::Null)
}

/// A node's context entry, `{"output": …, "error": …}`.
pub(crate) fn node_var(output: Rcvar, error: Option<&str>) -> Rcvar {
    let mut map = BTreeMap::new();
    map.insert("output".to_owned(), output);
    map.insert(
        "error".to_owned(),
        Rcvar::new(error.map_or(Variable::Null, |e| Variable::String(e.to_owned()))),
    );
    Rcvar::new(Variable::Object(map))
}

/// A jmespath result as JSON.
pub(crate) fn to_value(v: &Rcvar) -> Value {
    serde_json::to_value(&**v).unwrap_or(Value::Null)
}

/// Evaluates `expr`; `lookup` supplies each root it names.
pub(crate) fn eval(expr: &General, mut lookup: impl FnMut(Root) -> Rcvar) -> Result<Rcvar, String> {
    let mut map = BTreeMap::new();
    for (name, root) in expr.roots.iter() {
        map.insert(name.to_string(), lookup(*root));
    }
    let data = Rcvar::new(Variable::Object(map));
    let mut ctx = Context::new(&expr.text, &DEFAULT_RUNTIME);
    jmespath::interpret(&data, &expr.ast, &mut ctx).map_err(|e| e.to_string())
}
