//! Progress on stderr for long phases. On a terminal, an `indicatif` bar (rows or nodes done
//! of the total, elapsed time, ETA) redrawn in place; otherwise whole plain lines, one every
//! 5 s, so a redirected log reads line by line. `-q` shows nothing.

use std::io::IsTerminal;
use std::sync::Arc;
use std::time::{Duration, Instant};

use datafusion_anonymity::progress::ScanProgress;
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
            let template = if total.is_some() {
                "{prefix}: [{bar:30}] {human_pos}/{human_len} {msg} · {elapsed} · ETA {eta}"
            } else {
                "{prefix}: {spinner} {human_pos} {msg} · {elapsed}"
            };
            if let Ok(style) = ProgressStyle::with_template(template) {
                bar.set_style(style.progress_chars("=> "));
            }
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
        let stop = Arc::new(Notify::new());
        let task = (!quiet).then(|| {
            let stop = Arc::clone(&stop);
            tokio::spawn(async move {
                let mut progress = Progress::new(phase, "rows", total, false);
                loop {
                    progress.set(scan.rows());
                    tokio::select! {
                        _ = stop.notified() => break,
                        _ = tokio::time::sleep(Duration::from_millis(200)) => {}
                    }
                }
                progress.finish();
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
