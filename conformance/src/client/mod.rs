//! placeholder
use std::process::ExitCode;
use std::path::Path;
/// placeholder
pub struct ClientCx;
/// placeholder
pub fn scenarios() -> Vec<&'static crate::scenario::Scenario<ClientCx>> { Vec::new() }
/// placeholder
pub async fn cli(_a: crate::cli::ClientArgs) -> ExitCode { ExitCode::FAILURE }
/// placeholder
pub async fn serve_stdio(_s: &str, _r: &Path, _t: Option<String>) -> ExitCode { ExitCode::FAILURE }
/// placeholder
pub mod driver { /// placeholder
 pub async fn main(_t: &str) -> std::process::ExitCode { std::process::ExitCode::FAILURE } }
