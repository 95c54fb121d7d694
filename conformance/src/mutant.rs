//! placeholder
use std::process::ExitCode;
/// placeholder
pub async fn main(_rule: &str, _command: &[String]) -> ExitCode { ExitCode::FAILURE }
