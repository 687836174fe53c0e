//! What every suite of `anon-bench` measures with: timed runs of a query, their medians, the
//! process's peak RSS and CPU time, and the line each comparison prints.

use std::time::{Duration, Instant};

use datafusion::error::Result;
use datafusion::prelude::SessionContext;

/// The policy of the publish case: examples/patients/policy.toml (5 quasi-identifiers at its
/// fixed transformation), read at compile time so the benchmark runs from any directory.
pub(crate) const PATIENTS_POLICY: &str = include_str!("../../../examples/patients/policy.toml");

/// Wall times of one query's timed runs.
#[derive(Default)]
pub(crate) struct Timings(pub(crate) Vec<Duration>);

impl Timings {
    fn sorted(&self) -> Vec<Duration> {
        let mut times = self.0.clone();
        times.sort();
        times
    }

    /// The median (mean of the two middle runs for an even count).
    pub(crate) fn median(&self) -> Duration {
        let times = self.sorted();
        let mid = times.len() / 2;
        if times.len().is_multiple_of(2) {
            (times[mid - 1] + times[mid]) / 2
        } else {
            times[mid]
        }
    }

    pub(crate) fn min(&self) -> Duration {
        self.sorted()[0]
    }

    pub(crate) fn max(&self) -> Duration {
        self.sorted()[self.0.len() - 1]
    }
}

/// Runs `sql` to completion, collecting every batch; returns the wall time and the result rows.
pub(crate) async fn run_once(ctx: &SessionContext, sql: &str) -> Result<(Duration, usize)> {
    let start = Instant::now();
    let batches = ctx.sql(sql).await?.collect().await?;
    let elapsed = start.elapsed();
    Ok((elapsed, batches.iter().map(|b| b.num_rows()).sum()))
}

pub(crate) fn secs(d: Duration) -> f64 {
    d.as_secs_f64()
}

/// One line of the results table: times, ratio against `target`, PASS/over, `extra` (the
/// result's rows, or `-`) and the spreads; whether the ratio is within the target.
pub(crate) fn print_row(
    name: &str,
    floor: &Timings,
    query: &Timings,
    target: f64,
    extra: &str,
) -> bool {
    let ratio = secs(query.median()) / secs(floor.median());
    println!(
        "{:<22} {:>9.3} {:>9.3} {:>6.2} {:>6.2}  {:<6} {:>8} {:>17} {:>17}",
        name,
        secs(floor.median()),
        secs(query.median()),
        ratio,
        target,
        if ratio <= target { "PASS" } else { "over" },
        extra,
        format!("{:.3}-{:.3}", secs(floor.min()), secs(floor.max())),
        format!("{:.3}-{:.3}", secs(query.min()), secs(query.max())),
    );
    ratio <= target
}

/// One warm-up run of each, then `iterations` timed runs of the floor and the query in turn.
/// The peak RSS is reset after the floor's warm-up, so that [`peak_rss_mib`] afterwards covers
/// the query's runs (and the floor's timed ones).
pub(crate) async fn interleaved(
    iterations: usize,
    mut floor_once: impl AsyncFnMut() -> Result<Duration>,
    mut query_once: impl AsyncFnMut() -> Result<Duration>,
) -> Result<(Timings, Timings)> {
    floor_once().await?;
    reset_peak_rss();
    query_once().await?;
    let mut floor = Timings::default();
    let mut query = Timings::default();
    for _ in 0..iterations {
        floor.0.push(floor_once().await?);
        query.0.push(query_once().await?);
    }
    Ok((floor, query))
}

/// Resets the process's peak RSS (Linux: `VmHWM`), so that the next reading covers only
/// what runs after this call.
pub(crate) fn reset_peak_rss() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

/// The process's CPU time so far, user and system, in seconds (Linux `/proc/self/stat`, in
/// ticks of 1/100 s), if readable.
pub(crate) fn cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // the fields after the command name, which is in parentheses and may hold spaces:
    // utime and stime are the 12th and 13th
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    let user: u64 = fields.get(11)?.parse().ok()?;
    let system: u64 = fields.get(12)?.parse().ok()?;
    Some((user + system) as f64 / 100.0)
}

/// The median of `values`, if any.
pub(crate) fn median(values: &[f64]) -> Option<f64> {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    sorted.get(sorted.len() / 2).copied()
}

/// The process's peak RSS in MiB (Linux `VmHWM`), if readable.
pub(crate) fn peak_rss_mib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib / 1024)
}
