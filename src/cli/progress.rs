//! Progress on stderr for long phases. On a terminal, an `indicatif` bar (rows or nodes done
//! of the total, elapsed time, ETA) redrawn in place; otherwise whole plain lines, one every
//! 5 s, so a redirected log reads line by line. `-q` shows nothing. Only counts are shown,
//! never values.

use std::io::IsTerminal;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use datafusion_anonymity_engine::jobs::Observer;
use datafusion_anonymity_engine::progress::ScanProgress;
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

/// The command line's [`Observer`]: progress bars (or plain lines) on stderr, the jobs' notes
/// on stderr; `-q` keeps only the warnings.
pub struct TerminalObserver {
    quiet: bool,
    scans: Mutex<Option<ScanReport>>,
    steps: Mutex<Option<Progress>>,
}

impl TerminalObserver {
    pub fn new(quiet: bool) -> Self {
        Self {
            quiet,
            scans: Mutex::new(None),
            steps: Mutex::new(None),
        }
    }
}

#[async_trait]
impl Observer for TerminalObserver {
    fn wants_progress(&self) -> bool {
        !self.quiet
    }

    fn scans_started(&self, passes: Vec<(&'static str, Arc<ScanProgress>)>, total: Option<u64>) {
        let report = ScanReport::start_passes(passes, total, self.quiet);
        if let Ok(mut scans) = self.scans.lock() {
            *scans = Some(report);
        }
    }

    async fn scans_finished(&self) {
        let report = self.scans.lock().ok().and_then(|mut scans| scans.take());
        if let Some(report) = report {
            report.finish().await;
        }
    }

    fn steps(&self, phase: &'static str, unit: &'static str, done: usize, total: usize) {
        if let Ok(mut steps) = self.steps.lock() {
            steps
                .get_or_insert_with(|| Progress::new(phase, unit, Some(total as u64), self.quiet))
                .set(done as u64);
        }
    }

    fn steps_finished(&self) {
        if let Some(progress) = self.steps.lock().ok().and_then(|mut steps| steps.take()) {
            progress.finish();
        }
    }

    fn note(&self, line: &str) {
        if !self.quiet || line.starts_with("warning") {
            eprintln!("{line}");
        }
    }
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
