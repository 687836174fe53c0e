//! Progress on stderr for long phases. On a terminal, an `indicatif` bar (rows or nodes done
//! of the total, elapsed time, ETA) redrawn in place; otherwise whole plain lines, one every
//! 5 s, so a redirected log reads line by line. `-q` shows nothing. Only counts are shown,
//! never values.

use std::io::IsTerminal;
use std::sync::Arc;
use std::time::{Duration, Instant};

use datafusion::common::stats::Precision;
use datafusion::physical_plan::{StatisticsArgs, StatisticsContext};
use datafusion::prelude::SessionContext;
use datafusion_anonymity_engine::policy::Policy;
use datafusion_anonymity_engine::progress::ScanProgress;
use datafusion_anonymity_engine::publish::PublishProgress;
use datafusion_anonymity_engine::tables::{TableFormat, table_format};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use tokio::sync::Notify;

/// How often a plain (non-terminal) progress line is written.
const PLAIN_EVERY: Duration = Duration::from_secs(5);

/// One phase's progress report.
pub struct Progress {
    phase: &'static str,
    unit: &'static str,
    total: Option<u64>,
    quiet: bool,
    bar: Option<ProgressBar>,
    started: Instant,
    last_line: Instant,
}

impl Progress {
    /// A report of `phase` counting `unit`s of `total` (when known); silent when `quiet`.
    pub fn new(phase: &'static str, unit: &'static str, total: Option<u64>, quiet: bool) -> Self {
        let bar = (!quiet && std::io::stderr().is_terminal()).then(|| {
            let bar = ProgressBar::with_draw_target(total, ProgressDrawTarget::stderr_with_hz(5));
            set_style(&bar, total.is_some());
            bar.set_prefix(phase);
            bar.set_message(unit);
            bar
        });
        let now = Instant::now();
        Self {
            phase,
            unit,
            total,
            quiet,
            bar,
            started: now,
            last_line: now,
        }
    }

    /// Changes the total to `total` units.
    pub fn set_total(&mut self, total: u64) {
        if self.total == Some(total) {
            return;
        }
        let had_total = self.total.replace(total).is_some();
        if let Some(bar) = &self.bar {
            bar.set_length(total);
            if !had_total {
                set_style(bar, true);
            }
        }
    }

    /// Records `done` units so far.
    pub fn set(&mut self, done: u64) {
        if self.quiet {
            return;
        }
        match &self.bar {
            Some(bar) => bar.set_position(done),
            None if self.last_line.elapsed() >= PLAIN_EVERY => {
                self.last_line = Instant::now();
                eprintln!(
                    "{}",
                    self.plain_line(done, self.started.elapsed().as_secs_f64())
                );
            }
            None => {}
        }
    }

    /// The plain line for `done` units after `elapsed` seconds: counts, elapsed time and, with
    /// a total, the share done and the ETA (the rest at the rate so far).
    fn plain_line(&self, done: u64, elapsed: f64) -> String {
        match self.total {
            Some(total) if total > 0 => {
                let share = (done as f64 / total as f64).min(1.0);
                let eta = if done > 0 {
                    format!(", ETA {:.0} s", elapsed * (1.0 - share) / share)
                } else {
                    String::new()
                };
                format!(
                    "{}: {done} / {total} {} ({:.0} %), {elapsed:.1} s{eta}",
                    self.phase,
                    self.unit,
                    share * 100.0
                )
            }
            _ => format!("{}: {done} {}, {elapsed:.1} s", self.phase, self.unit),
        }
    }

    /// Removes the bar; the caller prints the phase's summary line.
    pub fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

/// A bar of the done units of the total (`with_total`), or a spinner by the done units.
fn set_style(bar: &ProgressBar, with_total: bool) {
    let template = if with_total {
        "{prefix}: [{bar:30}] {human_pos}/{human_len} {msg} · {elapsed} · ETA {eta}"
    } else {
        "{prefix}: {spinner} {human_pos} {msg} · {elapsed}"
    };
    if let Ok(style) = ProgressStyle::with_template(template) {
        bar.set_style(style.progress_chars("=> "));
    }
}

/// A report following the rows a scan counts, updated every 200 ms.
pub struct ScanReport {
    stop: Arc<Notify>,
    task: Option<tokio::task::JoinHandle<()>>,
}

impl ScanReport {
    /// Follows `scan` under `phase` (of `total` rows when known); nothing when `quiet`.
    pub fn start(
        phase: &'static str,
        total: Option<u64>,
        quiet: bool,
        scan: Arc<ScanProgress>,
    ) -> Self {
        Self::start_passes(vec![(phase, scan)], total, quiet)
    }

    /// Follows passes that run one after the other, each counting rows into its own counter,
    /// of the counter's own total or else `total` (when known): the report shows the first
    /// pass at once, and then the latest pass whose counter has moved. Nothing when `quiet`.
    pub fn start_passes(
        passes: Vec<(&'static str, Arc<ScanProgress>)>,
        total: Option<u64>,
        quiet: bool,
    ) -> Self {
        let stop = Arc::new(Notify::new());
        let task = (!quiet).then(|| {
            let stop = Arc::clone(&stop);
            tokio::spawn(async move {
                let mut shown: Option<(usize, Progress)> = None;
                loop {
                    if let Some(latest) = shown_pass(&passes) {
                        let (phase, scan) = &passes[latest];
                        match &mut shown {
                            Some((index, progress)) if *index == latest => {
                                if let Some(own) = scan.total() {
                                    // said by the pass once it starts
                                    progress.set_total(own);
                                }
                                progress.set(scan.rows());
                            }
                            _ => {
                                if let Some((_, progress)) = &shown {
                                    progress.finish();
                                }
                                let total = scan.total().or(total);
                                let mut progress = Progress::new(phase, "rows", total, false);
                                progress.set(scan.rows());
                                shown = Some((latest, progress));
                            }
                        }
                    }
                    tokio::select! {
                        _ = stop.notified() => break,
                        _ = tokio::time::sleep(Duration::from_millis(200)) => {}
                    }
                }
                if let Some((_, progress)) = &shown {
                    progress.finish();
                }
            })
        });
        Self { stop, task }
    }

    /// Stops the report and clears its bar.
    pub async fn finish(mut self) {
        if let Some(task) = self.task.take() {
            self.stop.notify_one();
            let _ = task.await;
        }
    }
}

/// The pass to show: the last of `passes` whose counter has moved, or the first.
fn shown_pass(passes: &[(&'static str, Arc<ScanProgress>)]) -> Option<usize> {
    passes
        .iter()
        .rposition(|(_, scan)| scan.rows() > 0)
        .or((!passes.is_empty()).then_some(0))
}

/// The rows of the table registered as `table` (read from `path`) from its Parquet metadata
/// (no scan), for a progress bar's total; `None` for CSV (counting would read it all) or when
/// the metadata has no exact count.
pub async fn input_rows_from_metadata(
    ctx: &SessionContext,
    table: &str,
    path: &str,
) -> Option<u64> {
    if !matches!(table_format(path), Ok(TableFormat::Parquet)) {
        return None;
    }
    let provider = ctx.table_provider(table).await.ok()?;
    let state = ctx.state();
    let plan = provider.scan(&state, None, &[], None).await.ok()?;
    let statistics = StatisticsContext::new()
        .compute(plan.as_ref(), &StatisticsArgs::new())
        .ok()?;
    match statistics.num_rows {
        Precision::Exact(rows) => Some(rows as u64),
        _ => None,
    }
}

/// The policy's input rows from its Parquet metadata (no scan), for the progress bar's total
/// (see [`input_rows_from_metadata`]); `None` when `quiet`.
pub async fn policy_input_rows(ctx: &SessionContext, policy: &Policy, quiet: bool) -> Option<u64> {
    if quiet {
        return None;
    }
    let path = policy.input().datafusion_path();
    input_rows_from_metadata(ctx, policy.table_name(), &path).await
}

/// The report of a publication's passes (see [`PublishProgress`]): the count of the classes
/// to suppress, of `input_rows` when known (unless the classes are given: `count_classes`
/// false), the shuffle (when `shuffled`), then the writing.
pub fn publish_report(
    input_rows: Option<u64>,
    quiet: bool,
    progress: &PublishProgress,
    count_classes: bool,
    shuffled: bool,
) -> ScanReport {
    let mut passes = Vec::new();
    if count_classes {
        passes.push(("classes", Arc::clone(&progress.classes)));
    }
    if shuffled {
        passes.push(("shuffle", Arc::clone(&progress.shuffled)));
    }
    passes.push(("write", Arc::clone(&progress.written)));
    ScanReport::start_passes(passes, input_rows, quiet)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_lines_give_the_share_and_the_eta() {
        let progress = Progress::new("frequency set", "rows", Some(100), true);
        // 25 of 100 rows in 10 s: 25 %, the other 75 at 2.5 rows/s take 30 s
        assert_eq!(
            progress.plain_line(25, 10.0),
            "frequency set: 25 / 100 rows (25 %), 10.0 s, ETA 30 s"
        );
        assert_eq!(
            progress.plain_line(0, 1.0),
            "frequency set: 0 / 100 rows (0 %), 1.0 s"
        );
        let open = Progress::new("search", "nodes", None, true);
        assert_eq!(open.plain_line(7, 2.0), "search: 7 nodes, 2.0 s");
    }
}
