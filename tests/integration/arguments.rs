//! The command line's own surface, which the engine's job tests (`crates/engine/tests/jobs`)
//! do not see: clap's refusals (exit code 2) and the engine's options named as flags.

use super::{anonymize_quietly, repo, stderr};

/// An unknown algorithm is refused by the command line parser (exit code 2, before the
/// policy is read), which lists the valid ones.
#[test]
fn unknown_algorithm_is_refused_by_the_parser_listing_the_valid_ones() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("x.parquet");
    let policy = repo("examples/adult/policy.toml").display().to_string();
    let output = anonymize_quietly(&policy, &out, None, &["--algorithm", "datafly"]);
    assert_eq!(output.status.code(), Some(2));
    let message = stderr(&output);
    assert!(message.contains("invalid value 'datafly'"), "{message}");
    for name in ["optimal", "iab-full-domain", "mondrian", "kaca", "iab"] {
        assert!(message.contains(name), "{message}");
    }
    assert!(!out.exists());
}

/// An option used where it does not apply is named as the flag the user typed: the engine's
/// `refine = false` is `--no-refine` here (exit code 1, one line, nothing written).
#[test]
fn options_are_named_as_flags() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("x.parquet");
    let policy = repo("examples/adult/policy.toml").display().to_string();
    let output = anonymize_quietly(&policy, &out, None, &["--no-refine"]);
    assert_eq!(output.status.code(), Some(1));
    let message = stderr(&output);
    assert_eq!(message.trim_end().lines().count(), 1, "{message}");
    assert!(
        message.contains("--no-refine is for --algorithm mondrian, not optimal"),
        "{message}"
    );
    assert!(!out.exists());
}
