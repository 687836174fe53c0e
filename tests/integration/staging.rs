//! Fail-closed publishing on a local disk: a run killed while its staging holds data leaves
//! the old output as it was (file or directory, `apply` or `anonymize`); the next run removes
//! the stale staging and says so; reports and outputs are replaced only with `--overwrite`;
//! an output name that promises another format is refused.

use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::{Scratch, anon, stderr};

/// A scratch directory with the generated patients table (`rows` rows) and `policy.toml` over
/// it (zip at level 2).
fn scratch(rows: usize) -> Scratch {
    let scratch = Scratch::with_patients(rows);
    write_policy(&scratch, 2);
    scratch
}

/// `policy.toml`: k = 2 with zip at `zip_level` (the level changes the output's bytes).
fn write_policy(scratch: &Scratch, zip_level: usize) -> String {
    let text = super::patients_policy("patients.parquet", 2, 1.0, zip_level, 1);
    scratch.write("policy.toml", &text)
}

/// Every file under `path` (or `path` itself) with its bytes, in name order; nothing when
/// `path` does not exist.
fn snapshot(path: &Path) -> Vec<(String, Vec<u8>)> {
    if !path.exists() {
        return Vec::new();
    }
    if path.is_file() {
        return vec![(String::new(), std::fs::read(path).unwrap())];
    }
    let mut files: Vec<(String, Vec<u8>)> = std::fs::read_dir(path)
        .unwrap()
        .map(|e| e.unwrap().path())
        .map(|p| {
            (
                p.file_name().unwrap().to_string_lossy().to_string(),
                std::fs::read(&p).unwrap(),
            )
        })
        .collect();
    files.sort();
    files
}

/// Runs `anon args` until one run is caught with a staging entry of `scratch` holding data
/// (a run may finish before the poll sees it on a busy machine), SIGKILLs that run, asserts
/// the kill landed while it ran, and that `out` is byte for byte what it was before that run.
fn kill_while_staging(scratch: &Scratch, args: &[&str], out: &Path) {
    for _ in 0..5 {
        let before = snapshot(out);
        if try_kill_while_staging(scratch, args) {
            assert_eq!(snapshot(out), before, "the old output changed");
            return;
        }
        if before.is_empty() {
            // the missed run published to a new output: make it new again
            if out.is_dir() {
                std::fs::remove_dir_all(out).unwrap();
            } else {
                std::fs::remove_file(out).unwrap();
            }
        }
    }
    panic!("no run was caught while its staging held data");
}

fn try_kill_while_staging(scratch: &Scratch, args: &[&str]) -> bool {
    let mut child = Command::new(env!("CARGO_BIN_EXE_anon"))
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(120);
    let mut staged = false;
    while Instant::now() < deadline && child.try_wait().unwrap().is_none() {
        staged = scratch.staging().iter().any(|name| {
            let path = scratch.path(name);
            path.is_file()
                || std::fs::read_dir(&path).is_ok_and(|mut entries| {
                    entries.any(|e| e.is_ok_and(|e| e.metadata().is_ok_and(|m| m.len() > 0)))
                })
        });
        if staged {
            break;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    let _ = child.kill();
    let status = child.wait().unwrap();
    if !staged {
        assert!(status.success(), "the run failed: {status}");
        return false;
    }
    assert_eq!(status.signal(), Some(9), "the run was not killed mid-way");
    let left = scratch.staging();
    assert!(!left.is_empty(), "the staging should be left behind");
    true
}

#[test]
fn a_killed_overwrite_of_a_directory_leaves_the_old_output_and_the_next_run_recovers() {
    let s = scratch(300_000);
    let policy = write_policy(&s, 2);
    let out = s.arg("out");
    let first = anon(&["apply", "--policy", &policy, "--out", &out]);
    assert!(first.status.success(), "{}", stderr(&first));
    kill_while_staging(
        &s,
        &["apply", "--policy", &policy, "--out", &out, "--overwrite"],
        &s.path("out"),
    );
    let old = snapshot(&s.path("out"));

    // a different transformation (zip erased: level 5 of a 5-character mask), so the new
    // output's bytes differ from the old
    let policy = write_policy(&s, 5);
    let next = anon(&["apply", "--policy", &policy, "--out", &out, "--overwrite"]);
    assert!(next.status.success(), "{}", stderr(&next));
    let said = stderr(&next);
    assert!(
        said.contains("removed") && said.contains(".out.anon-tmp-"),
        "{said}"
    );
    assert!(s.staging().is_empty(), "{:?}", s.staging());
    assert_ne!(snapshot(&s.path("out")), old, "the output was not replaced");
    // the levels say what they publish, and an erased quasi-identifier is warned about
    let printed = String::from_utf8_lossy(&next.stdout);
    assert!(
        printed.contains("levels: zip=5 (all *), age=1 (width 5), sex=0 (as is)"),
        "{printed}"
    );
    assert!(
        said.contains("warning: quasi-identifier 'zip' is erased entirely"),
        "{said}"
    );
}

#[test]
fn a_killed_apply_to_a_new_file_leaves_nothing_at_the_output() {
    let s = scratch(300_000);
    let policy = write_policy(&s, 2);
    let out = s.arg("new.parquet");
    kill_while_staging(
        &s,
        &["apply", "--policy", &policy, "--out", &out],
        &s.path("new.parquet"),
    );
    assert!(!s.path("new.parquet").exists());
}

#[test]
fn a_killed_anonymize_over_a_file_leaves_the_old_file() {
    let s = scratch(300_000);
    let policy = write_policy(&s, 2);
    let out = s.arg("out.parquet");
    let first = anon(&["anonymize", "--policy", &policy, "--out", &out]);
    assert!(first.status.success(), "{}", stderr(&first));
    kill_while_staging(
        &s,
        &[
            "anonymize",
            "--policy",
            &policy,
            "--out",
            &out,
            "--overwrite",
        ],
        &s.path("out.parquet"),
    );
    let next = anon(&[
        "anonymize",
        "--policy",
        &policy,
        "--out",
        &out,
        "--overwrite",
    ]);
    assert!(next.status.success(), "{}", stderr(&next));
    assert!(stderr(&next).contains("removed"), "{}", stderr(&next));
    assert!(s.staging().is_empty(), "{:?}", s.staging());
}

#[test]
fn reports_and_outputs_are_replaced_only_with_overwrite_and_named_for_parquet() {
    let s = scratch(2_000);
    let policy = write_policy(&s, 3);
    let (out, report) = (s.arg("out.parquet"), s.arg("report.json"));
    std::fs::write(&report, "earlier report").unwrap();
    let refused = anon(&[
        "anonymize",
        "--policy",
        &policy,
        "--out",
        &out,
        "--report",
        &report,
    ]);
    assert!(!refused.status.success());
    let error = stderr(&refused);
    assert!(
        error.contains("report") && error.contains("--overwrite"),
        "{error}"
    );
    // refused before anything was written
    assert!(!s.path("out.parquet").exists());
    assert_eq!(std::fs::read_to_string(&report).unwrap(), "earlier report");
    let replaced = anon(&[
        "anonymize",
        "--policy",
        &policy,
        "--out",
        &out,
        "--report",
        &report,
        "--overwrite",
    ]);
    assert!(replaced.status.success(), "{}", stderr(&replaced));
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    assert_eq!(json["publish"]["input_rows"], 2000, "{json}");

    // a name that promises CSV would hold Parquet: refused before reading
    let csv = anon(&["apply", "--policy", &policy, "--out", &s.arg("out.csv")]);
    assert!(!csv.status.success());
    let error = stderr(&csv);
    assert!(
        error.contains("out.csv") && error.contains(".parquet"),
        "{error}"
    );
    assert!(!s.path("out.csv").exists());
}

#[test]
fn anonymize_with_masking_publishes_every_row() {
    let s = scratch(5_000);
    // k = 20 at zip level 1 leaves small classes: masked, not dropped
    let text = super::patients_policy("patients.parquet", 20, 1.0, 1, 1)
        .replace("[privacy]\n", "[privacy]\nsuppression = \"mask\"\n");
    assert!(text.contains("suppression = \"mask\""));
    std::fs::write(s.path("policy.toml"), text).unwrap();
    let out = s.arg("masked.parquet");
    let output = anon(&[
        "anonymize",
        "--policy",
        &s.arg("policy.toml"),
        "--out",
        &out,
    ]);
    assert!(output.status.success(), "{}", stderr(&output));
    // the chosen levels, to reuse: without them the policy cannot serve patients_anon
    let said = stderr(&output);
    assert!(
        said.contains("add to the policy: [transformation] zip = "),
        "{said}"
    );
    let policy_text = std::fs::read_to_string(s.path("policy.toml")).unwrap();
    let without = policy_text.split("[transformation]").next().unwrap();
    std::fs::write(s.path("searched.toml"), without).unwrap();
    let unserved = anon(&[
        "sql",
        "--policy",
        &s.arg("searched.toml"),
        "SELECT count(*) FROM patients_anon",
    ]);
    assert!(!unserved.status.success());
    assert!(
        stderr(&unserved).contains("[transformation]"),
        "{}",
        stderr(&unserved)
    );
    // stderr is a pipe here: progress comes as whole lines, never run together by '\r'
    let progress = stderr(&output);
    assert!(!progress.contains('\r'), "{progress:?}");
    assert!(progress.contains(" nodes checked\n"), "{progress:?}");
    // every input row is published (mask keeps rows), and every class of the output, the
    // masked class of all-'*' quasi-identifiers included, has at least k = 20 rows
    let counts = anon(&[
        "sql",
        "--table",
        &format!("m={out}"),
        "--format",
        "csv",
        "SELECT count(*), (SELECT min(n) FROM (SELECT count(*) AS n FROM m GROUP BY zip, age, sex)) FROM m",
    ]);
    assert!(counts.status.success(), "{}", stderr(&counts));
    let text = String::from_utf8_lossy(&counts.stdout).to_string();
    let values: Vec<i64> = text
        .lines()
        .nth(1)
        .unwrap()
        .split(',')
        .map(|v| v.trim().parse().unwrap())
        .collect();
    assert_eq!(values[0], 5000, "{text}");
    assert!(values[1] >= 20, "{text}");
}

#[test]
fn a_memory_limit_spills_or_stops_with_one_clear_error_before_writing() {
    let s = scratch(200_000);
    let policy = write_policy(&s, 2);
    let out = s.arg("limited.parquet");
    // far too small: the aggregation of 200,000 rows cannot even start
    let refused = anon(&[
        "anonymize",
        "--policy",
        &policy,
        "--out",
        &out,
        "--memory-limit",
        "1MiB",
    ]);
    assert!(!refused.status.success());
    let error = stderr(&refused);
    assert_eq!(error.trim().lines().count(), 1, "{error}");
    assert!(
        error.contains("raise --memory-limit") && error.contains("Nothing was written"),
        "{error}"
    );
    assert!(!s.path("limited.parquet").exists());
    assert!(s.staging().is_empty(), "{:?}", s.staging());
    // the frequency set's aggregation under a small limit spills to disk (DataFusion's
    // spill_count) and still answers
    let explained = anon(&[
        "sql",
        "--memory-limit",
        "8MiB",
        "--table",
        &format!("p={}", s.arg("patients.parquet")),
        "EXPLAIN ANALYZE SELECT zip, age, sex, marital_status, education, count(*) FROM p \
         GROUP BY zip, age, sex, marital_status, education",
    ]);
    assert!(explained.status.success(), "{}", stderr(&explained));
    let plan = String::from_utf8_lossy(&explained.stdout).to_string();
    let spills: u64 = plan
        .split("spill_count=")
        .skip(1)
        .filter_map(|rest| {
            let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
            digits.parse::<u64>().ok()
        })
        .sum();
    assert!(spills > 0, "no spill under 8 MiB: {plan}");
    // a limit that holds the frequency set: the same output as without a limit
    let limited = anon(&[
        "anonymize",
        "--policy",
        &policy,
        "--out",
        &out,
        "--memory-limit",
        "64MiB",
        "--seed",
        "1",
    ]);
    assert!(limited.status.success(), "{}", stderr(&limited));
    let free_out = s.arg("free.parquet");
    let free = anon(&[
        "anonymize",
        "--policy",
        &policy,
        "--out",
        &free_out,
        "--seed",
        "1",
    ]);
    assert!(free.status.success(), "{}", stderr(&free));
    assert_eq!(
        String::from_utf8_lossy(&limited.stdout).replace("limited.parquet", "X"),
        String::from_utf8_lossy(&free.stdout).replace("free.parquet", "X"),
    );
    // the same seed shuffles the same way whether or not the shuffle spilled
    assert!(
        std::fs::read(s.path("limited.parquet")).unwrap()
            == std::fs::read(s.path("free.parquet")).unwrap(),
        "the limited run wrote other bytes"
    );
}

/// A killed run that strips the person column leaves its second staging,
/// `.<name>.anon-tmp-<pid>.p.parquet`; the next run to the same output removes it as it removes
/// the first. (The pid 4,000,000 is above Linux's largest, so it names no live process.)
#[test]
fn the_next_run_removes_a_stale_staging_of_the_published_rows() {
    let s = scratch(2_000);
    let policy = write_policy(&s, 2);
    let stale = s.path(".new.parquet.anon-tmp-4000000.p.parquet");
    std::fs::write(&stale, b"partial").unwrap();
    let out = s.arg("new.parquet");
    let run = anon(&["apply", "--policy", &policy, "--out", &out]);
    assert!(run.status.success(), "{}", stderr(&run));
    assert!(
        stderr(&run).contains("removed") && !stale.exists(),
        "{}",
        stderr(&run)
    );
    assert!(s.staging().is_empty(), "{:?}", s.staging());
}

/// Issue 57: SIGINT (Ctrl-C) or SIGTERM stops a run, which commits nothing, leaves no staging
/// and exits with 128 + the signal's number, saying so. Each run is held at a named point by
/// the test hook (a blocking sleep, during which the signal arrives), so the signal lands
/// where the test says: before the search (the search's own check stops it), and after the
/// files were written and before their verification (the check before the commit stops it;
/// the staging then holds data, which must be removed).
#[test]
fn an_interrupted_run_stops_commits_nothing_and_leaves_no_staging() {
    let scratch = scratch(20_000);
    let policy = scratch.arg("policy.toml");
    for (point, signal, code, name, out) in [
        ("before-search", libc::SIGINT, 130, "SIGINT", "out.parquet"),
        (
            "before-search",
            libc::SIGTERM,
            143,
            "SIGTERM",
            "out.parquet",
        ),
        ("after-write", libc::SIGINT, 130, "SIGINT", "out.parquet"),
        ("after-write", libc::SIGTERM, 143, "SIGTERM", "out.parquet"),
        // a Delta table: verified, about to commit
        ("before-commit", libc::SIGINT, 130, "SIGINT", "table"),
    ] {
        let case = format!("{name} at {point}");
        let log = scratch.path("run.log");
        let format = if out == "table" { "delta" } else { "parquet" };
        let mut child = Command::new(env!("CARGO_BIN_EXE_anon"))
            .args(["anonymize", "--policy", &policy, "--out", &scratch.arg(out)])
            .args(["--algorithm", "mondrian", "--seed", "1", "--format", format])
            .env("ANON_TEST_PAUSE_AT", point)
            .env("ANON_TEST_PAUSE_SECONDS", "2")
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(120);
        while !std::fs::read_to_string(&log).is_ok_and(|t| t.contains("paused at")) {
            assert!(Instant::now() < deadline, "{case}: never paused");
            std::thread::sleep(Duration::from_millis(20));
        }
        if point == "after-write" {
            assert!(!scratch.staging().is_empty(), "{case}: nothing staged yet");
        }
        // SAFETY: a signal to the child this test started and has not reaped
        assert_eq!(unsafe { libc::kill(child.id() as i32, signal) }, 0);
        let status = child.wait().unwrap();
        let text = std::fs::read_to_string(&log).unwrap();
        assert_eq!(status.code(), Some(code), "{case}: {text}");
        assert!(
            text.contains(&format!("{name}: stopping; nothing will be published")),
            "{case}: {text}"
        );
        assert!(
            text.contains(
                "error: interrupted: the job stopped before its commit; nothing was published"
            ),
            "{case}: {text}"
        );
        // nothing at the output: no file, no table (not even an empty directory)
        assert!(!scratch.path(out).exists(), "{case}: published");
        assert!(
            scratch.staging().is_empty(),
            "{case}: {:?}",
            scratch.staging()
        );
    }
    // the same run, not interrupted, publishes
    let run = anon(&[
        "anonymize",
        "--quiet",
        "--policy",
        &policy,
        "--out",
        &scratch.arg("out.parquet"),
    ]);
    assert!(run.status.success(), "{}", stderr(&run));
}
