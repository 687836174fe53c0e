//! The large case: whole `anon` processes on a generated table, as a user runs them.
//!
//! A plain `COPY (SELECT * FROM p) TO … STORED AS PARQUET` in one `anon sql` process is the
//! floor; `anon anonymize` of the patients policy under `--memory-limit` is the case. Each is a
//! fresh process, so page faults and start-up are in both times, and each process's own peak
//! RSS is read from the kernel when it ends (`wait4`'s `ru_maxrss`). The input may be a local
//! path or a bucket URL (the environment's credentials are passed on).

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use datafusion::error::{DataFusionError, Result};

use crate::measure::{PATIENTS_POLICY, Timings, secs};

/// What one child process took.
struct ProcessRun {
    wall: Duration,
    peak_rss_mib: u64,
}

/// Runs `anon args` as a child process and waits for it with `wait4`, which reports the
/// child's own peak RSS.
fn run_anon(args: &[&str]) -> Result<ProcessRun> {
    // the shipped binary, built beside this one (`cargo build --release` builds both)
    let exe = std::env::current_exe()
        .map(|bench| bench.with_file_name("anon"))
        .map_err(|e| DataFusionError::Execution(format!("cannot find the anon binary: {e}")))?;
    let started = Instant::now();
    let child = Command::new(exe)
        .args(args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .map_err(|e| DataFusionError::Execution(format!("cannot start anon: {e}")))?;
    let pid = child.id() as libc::pid_t;
    let mut status = 0;
    // SAFETY: an all-zero rusage is a valid value, filled in by the kernel
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: pid is our child, status and usage are valid for writes
    let waited = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    let wall = started.elapsed();
    let stderr = {
        use std::io::Read;
        let mut text = String::new();
        if let Some(mut pipe) = child.stderr {
            let _ = pipe.read_to_string(&mut text);
        }
        text
    };
    if waited != pid || !libc::WIFEXITED(status) || libc::WEXITSTATUS(status) != 0 {
        return Err(DataFusionError::Execution(format!(
            "anon {} failed: {}",
            args.first().copied().unwrap_or_default(),
            stderr.trim()
        )));
    }
    Ok(ProcessRun {
        wall,
        // Linux reports ru_maxrss in KiB
        peak_rss_mib: usage.ru_maxrss.max(0) as u64 / 1024,
    })
}

/// Runs the large case on `input` (a path or URL of the generated patients table) with
/// `memory_limit`, `iterations` times each, COPY and anonymize interleaved; prints one line.
pub fn run(input: &str, scratch: &Path, memory_limit: &str, iterations: usize) -> Result<bool> {
    const TARGET: f64 = 3.0;
    std::fs::create_dir_all(scratch)?;
    let policy = scratch.join("policy.toml");
    let text = PATIENTS_POLICY.replacen(
        "path = \"patients.parquet\"",
        &format!("path = \"{input}\""),
        1,
    );
    std::fs::write(&policy, text)?;
    let (copy_out, anon_out) = (scratch.join("copy"), scratch.join("anonymized"));
    let copy_sql = format!(
        "COPY (SELECT * FROM p) TO '{}/' STORED AS PARQUET",
        copy_out.display()
    );
    let table = format!("p={input}");
    let policy_arg = policy.display().to_string();
    let anon_arg = anon_out.display().to_string();
    let (mut floor, mut case) = (Timings::default(), Timings::default());
    let (mut floor_rss, mut case_rss) = (0, 0);
    for _ in 0..iterations.max(1) {
        let _ = std::fs::remove_dir_all(&copy_out);
        let copied = run_anon(&["sql", "--table", &table, &copy_sql])?;
        floor.0.push(copied.wall);
        floor_rss = floor_rss.max(copied.peak_rss_mib);
        let anonymized = run_anon(&[
            "anonymize",
            "--policy",
            &policy_arg,
            "--out",
            &anon_arg,
            "--overwrite",
            "--memory-limit",
            memory_limit,
            "-q",
        ])?;
        case.0.push(anonymized.wall);
        case_rss = case_rss.max(anonymized.peak_rss_mib);
    }
    let _ = std::fs::remove_dir_all(scratch);
    let ratio = secs(case.median()) / secs(floor.median());
    println!(
        "large: anonymize --memory-limit {memory_limit} of {input}: {:.2} s (peak RSS {case_rss} MiB) \
         vs COPY {:.2} s (peak RSS {floor_rss} MiB): {ratio:.2}x, target {TARGET:.1} {}",
        secs(case.median()),
        secs(floor.median()),
        if ratio <= TARGET { "PASS" } else { "over" }
    );
    println!(
        "       whole processes, median of {}; ranges {:.2}-{:.2} s and {:.2}-{:.2} s",
        case.0.len(),
        secs(case.min()),
        secs(case.max()),
        secs(floor.min()),
        secs(floor.max())
    );
    Ok(ratio <= TARGET)
}
