//! Every failure of `anon` ends as exactly one `error: ...` line on stderr: no backtrace, no
//! panic message spread over lines, no data value.

use std::sync::Mutex;

use datafusion::error::DataFusionError;
use datafusion_anonymity_engine::errors::{Opt, Vocabulary};

/// The command line's words for the options the engine's messages name.
fn flag(option: Opt) -> &'static str {
    match option {
        Opt::Out => "--out",
        Opt::Overwrite => "--overwrite",
        Opt::Append => "--append",
        Opt::FormatDelta => "--format delta",
        Opt::MemoryLimit => "--memory-limit",
        Opt::Report => "--report",
        Opt::HtmlReport => "--html-report",
        Opt::Utility => "--utility",
        Opt::RecodingOut => "--recoding-out",
        Opt::Recoding => "--recoding",
        // the command line takes levels from the policy's [transformation] only
        Opt::Levels => "[transformation]",
        Opt::NoRefine => "--no-refine",
        Opt::Mondrian => "--algorithm mondrian",
        Opt::LocalAlgorithms => "--algorithm mondrian, kaca or iab",
        Opt::Qi => "--qi",
        Opt::ByPosition => "--by-position",
        Opt::Key => "--key",
        Opt::BackgroundValues => "--background-values",
    }
}

/// One line describing `error` ([`datafusion_anonymity_engine::errors::one_line`]).
pub fn one_line(error: &DataFusionError) -> String {
    datafusion_anonymity_engine::errors::one_line(error, Vocabulary { name: flag })
}

/// A command-line parsing error as one line: clap's message (which starts with `error: `)
/// followed by the usage line, without the blank lines and the `--help` hint around them.
pub fn clap_line(error: &clap::Error) -> String {
    let rendered = error.render().to_string();
    let mut message = Vec::new();
    let mut usage = None;
    for line in rendered.lines().map(str::trim).filter(|l| !l.is_empty()) {
        if let Some(rest) = line.strip_prefix("Usage:") {
            usage = Some(rest.trim().to_string());
        } else if !line.starts_with("For more information") {
            message.push(line);
        }
    }
    let mut line = message.join(" ");
    if !line.starts_with("error:") {
        line = format!("error: {line}");
    }
    match usage {
        Some(usage) => format!("{line} (usage: {usage})"),
        None => line,
    }
}

/// The message of the last panic, kept by [`install_panic_hook`] for `main` to report.
static LAST_PANIC: Mutex<Option<String>> = Mutex::new(None);

/// Replaces the default panic output (a multi-line message and perhaps a backtrace) by
/// remembering the message; `main` prints it as its one error line.
pub fn install_panic_hook() {
    std::panic::set_hook(Box::new(|info| {
        let payload = info.payload();
        let message = payload
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown panic".to_string());
        let location = info
            .location()
            .map(|l| format!(" at {}:{}", l.file(), l.line()))
            .unwrap_or_default();
        if let Ok(mut last) = LAST_PANIC.lock() {
            *last = Some(format!(
                "{}{location}",
                datafusion_anonymity_engine::errors::join_lines(&message)
            ));
        }
    }));
}

/// The line to print after a panic reached `main`.
pub fn panic_line() -> String {
    let message = LAST_PANIC
        .lock()
        .ok()
        .and_then(|mut last| last.take())
        .unwrap_or_else(|| "unknown panic".to_string());
    format!("error: internal error (a bug in anon, please report it): {message}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::error::ArrowError;

    #[test]
    fn errors_are_one_line_without_values() {
        let cast = DataFusionError::ArrowError(
            Box::new(ArrowError::CastError(
                "Cannot cast string 'Male' to value of Int32 type".into(),
            )),
            None,
        );
        let wrapped = DataFusionError::Context("while running".into(), Box::new(cast));
        let line = one_line(&wrapped);
        assert!(!line.contains("Male"), "{line}");
        assert!(line.contains("Int32"), "{line}");
        let plan = DataFusionError::Plan("table 't':\n  x does not exist".into());
        assert_eq!(one_line(&plan), "table 't': x does not exist");
    }
}
