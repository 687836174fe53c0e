//! Coarse parallelism for in-memory phases (labelling, merging the frequency set, Mondrian's
//! workers): a few independent pieces of work, each on a scoped thread of its own, so that
//! they may borrow the caller's data. The pieces are few and large (one per column or per
//! core), so a thread each costs nothing next to the work.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::RecvTimeoutError;
use std::time::Duration;

use datafusion::error::{DataFusionError, Result};

/// `work` applied to every item, each on a scoped thread of its own; the results in item
/// order. A thread that panics gives an internal error naming `what`.
pub(crate) fn map_scoped<T: Send, R: Send>(
    what: &str,
    items: impl IntoIterator<Item = T>,
    work: impl Fn(T) -> R + Sync,
) -> Result<Vec<R>> {
    each_on_a_thread(items, work)
        .into_iter()
        .map(|joined| joined.map_err(|_| DataFusionError::Internal(format!("{what} panicked"))))
        .collect()
}

/// [`map_scoped`] whose threads' panics are resumed on the caller: for in-memory passes whose
/// callers have no error to return (a panic there is a bug, not bad input).
pub(crate) fn map_scoped_unwinding<T: Send, R: Send>(
    items: impl IntoIterator<Item = T>,
    work: impl Fn(T) -> R + Sync,
) -> Vec<R> {
    each_on_a_thread(items, work)
        .into_iter()
        .map(|joined| joined.unwrap_or_else(|panic| std::panic::resume_unwind(panic)))
        .collect()
}

/// Every item's `work` on a scoped thread of its own, each thread joined, in item order.
fn each_on_a_thread<T: Send, R: Send>(
    items: impl IntoIterator<Item = T>,
    work: impl Fn(T) -> R + Sync,
) -> Vec<std::thread::Result<R>> {
    let work = &work;
    std::thread::scope(|scope| {
        let handles: Vec<_> = items
            .into_iter()
            .map(|item| scope.spawn(move || work(item)))
            .collect();
        handles.into_iter().map(|handle| handle.join()).collect()
    })
}

/// `work` run on a scoped thread of its own while the calling thread reports `done` (a count
/// the work advances) of `total` to `progress` every 200 ms; the work's result. A work that
/// panics gives an internal error naming `what`.
pub(crate) fn reporting<R: Send>(
    what: &str,
    work: impl FnOnce() -> R + Send,
    done: &AtomicU64,
    total: u64,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<R> {
    std::thread::scope(|scope| {
        let (finished, over) = std::sync::mpsc::channel::<()>();
        let handle = scope.spawn(move || {
            let result = work();
            // the receiver only goes away once this thread is joined
            let _ = finished.send(());
            result
        });
        // until the work says it is over, or its thread ends without saying so (a panic)
        while let Err(RecvTimeoutError::Timeout) = over.recv_timeout(REPORT_EVERY) {
            progress(done.load(Ordering::Relaxed) as usize, total as usize);
        }
        let result = handle
            .join()
            .map_err(|_| DataFusionError::Internal(format!("{what} panicked")))?;
        progress(done.load(Ordering::Relaxed) as usize, total as usize);
        Ok(result)
    })
}

/// How often [`reporting`] reports.
const REPORT_EVERY: Duration = Duration::from_millis(200);

/// The threads the machine runs at once (1 when unknown).
pub(crate) fn threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_come_in_item_order_and_panics_become_errors() {
        let squares = map_scoped("squaring", 0..8u64, |i| i * i).unwrap();
        assert_eq!(squares, vec![0, 1, 4, 9, 16, 25, 36, 49]);
        let failed = map_scoped("the failing piece", 0..2, |i| {
            assert!(i == 0, "piece {i} fails");
            i
        })
        .unwrap_err();
        assert!(
            failed.to_string().contains("the failing piece panicked"),
            "{failed}"
        );
    }

    #[test]
    fn reporting_reports_while_the_work_runs_then_the_end() {
        use std::sync::atomic::AtomicBool;
        let done = AtomicU64::new(0);
        let reported = AtomicBool::new(false);
        let mut seen = Vec::new();
        let result = reporting(
            "counting",
            || {
                done.store(1, Ordering::Relaxed);
                // the work goes on once it has been reported at 1 of 5
                while !reported.load(Ordering::Relaxed) {
                    std::thread::sleep(Duration::from_millis(10));
                }
                done.store(5, Ordering::Relaxed);
                7
            },
            &done,
            5,
            &mut |done, total| {
                seen.push((done, total));
                if done == 1 {
                    reported.store(true, Ordering::Relaxed);
                }
            },
        )
        .unwrap();
        assert_eq!(result, 7);
        assert!(seen.contains(&(1, 5)), "{seen:?}");
        assert_eq!(seen.last(), Some(&(5, 5)));
        let failed = reporting(
            "the failing work",
            || -> u32 { panic!("fails") },
            &done,
            5,
            &mut |_, _| {},
        );
        assert!(
            failed
                .unwrap_err()
                .to_string()
                .contains("the failing work panicked")
        );
    }
}
