//! `a2e graph`: a document file (a chain, an ACMP DAG or an Ontheia chain)
//! drawn as Mermaid, DOT or SVG by `a2e-graph`. No host is built: the file is
//! read, validated as `a2e validate` does, and drawn offline. With
//! `--run RUN_ID` the nodes are coloured by what the run journal of the
//! configuration says of that run (the cluster's when `--cluster`,
//! `A2E_CLUSTER` or `[cluster]` names one, else `[journal]`'s file).

use std::io::Write as _;
use std::path::Path;
use std::process::ExitCode;

use a2e_graph::{Format, Graph, GraphError, RunStates};
use a2e_host::config::HostConfig;
use a2e_journal::RunId;

use super::run::EXIT_INVALID;

/// Exit code: the picture could not be written.
const EXIT_WRITE: u8 = 1;

/// The format `--format` names, else the one `--out`'s extension names
/// (`.svg`, `.dot` / `.gv`, `.mmd` / `.mermaid`), else Mermaid.
pub(crate) fn choose_format(format: Option<Format>, out: Option<&Path>) -> Format {
    if let Some(format) = format {
        return format;
    }
    let ext = out
        .and_then(Path::extension)
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase);
    match ext.as_deref() {
        Some("svg") => Format::Svg,
        Some("dot" | "gv") => Format::Dot,
        _ => Format::Mermaid,
    }
}

/// Events of a run read to find its nodes' states.
const RUN_EVENTS: usize = 100_000;

/// Each node's state and duration in run `id` of the journal of `config`
/// (the cluster's, or the file's): exit 2 for an invalid id, 1 for a
/// journal that does not open or a run it does not hold.
pub(crate) async fn run_states(config: &HostConfig, id: &str) -> Result<RunStates, ExitCode> {
    let fail = |code: u8, message: String| {
        eprintln!("a2e: {message}");
        ExitCode::from(code)
    };
    let run = RunId::parse(id).map_err(|e| fail(EXIT_INVALID, e.to_string()))?;
    let opened = super::runs_view::open(config)
        .await
        .map_err(|e| fail(EXIT_WRITE, e))?;
    let journal = &*opened.journal;
    let state = match journal.show_run(&run).await {
        Ok(Some(state)) => state,
        Ok(None) => {
            return Err(fail(
                EXIT_WRITE,
                format!("no run `{run}` in {}", opened.place),
            ));
        }
        Err(e) => return Err(fail(EXIT_WRITE, e.to_string())),
    };
    let events = journal
        .events(&run, 0, RUN_EVENTS)
        .await
        .map_err(|e| fail(EXIT_WRITE, e.to_string()))?;
    Ok(a2e_host::ui::node_states(&state, &events))
}

/// Draws `file` in `format` to `out` (stdout without it), with `run`'s
/// states when given: exit 0, 2 for an unreadable or invalid document (the
/// error as `a2e validate` prints it), 1 when the picture cannot be written.
pub(crate) fn graph_file(
    file: &Path,
    format: Format,
    out: Option<&Path>,
    run: Option<&RunStates>,
) -> ExitCode {
    let shown = file.display();
    let text = match read_bounded(file) {
        Ok(text) => text,
        Err(e) => {
            eprintln!("a2e: {shown}: {e}");
            return ExitCode::from(EXIT_INVALID);
        }
    };
    let picture = Graph::parse(&text).and_then(|graph| graph.render(format, run));
    let picture = match picture {
        Ok(picture) => picture,
        Err(e) => {
            report(&shown.to_string(), &e);
            return ExitCode::from(EXIT_INVALID);
        }
    };
    let written = match out {
        Some(path) => std::fs::write(path, picture.as_bytes())
            .map_err(|e| format!("cannot write {}: {e}", path.display())),
        None => {
            let mut stdout = std::io::stdout().lock();
            stdout
                .write_all(picture.as_bytes())
                .and_then(|()| stdout.flush())
                .map_err(|e| format!("cannot write the picture: {e}"))
        }
    };
    match written {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("a2e: {e}");
            ExitCode::from(EXIT_WRITE)
        }
    }
}

/// The file's text, refused unread when it is larger than a document may be.
fn read_bounded(file: &Path) -> Result<String, String> {
    let limit = a2e_document::MAX_DOCUMENT_BYTES;
    let size = std::fs::metadata(file).map_err(|e| e.to_string())?.len();
    if size > limit as u64 {
        return Err(format!(
            "a document of {size} bytes exceeds the limit of {limit} bytes"
        ));
    }
    std::fs::read_to_string(file).map_err(|e| e.to_string())
}

/// The error on stderr, as `a2e validate` words it (a refused chain with its
/// wire code).
fn report(file: &str, e: &GraphError) {
    match e.chain_code() {
        Some(code) => eprintln!("a2e: {file}: {e} ({code})"),
        None => eprintln!("a2e: {file}: {e}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_format_comes_from_the_flag_then_the_extension() {
        let out = Some(Path::new("pic.SVG"));
        assert_eq!(choose_format(None, out), Format::Svg);
        assert_eq!(choose_format(Some(Format::Dot), out), Format::Dot);
        assert_eq!(choose_format(None, Some(Path::new("g.gv"))), Format::Dot);
        assert_eq!(
            choose_format(None, Some(Path::new("g.md"))),
            Format::Mermaid
        );
        assert_eq!(choose_format(None, None), Format::Mermaid);
    }
}
