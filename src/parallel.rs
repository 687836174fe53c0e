//! Coarse parallelism for in-memory phases (labelling, merging the frequency set, Mondrian's
//! workers): a few independent pieces of work, each on a scoped thread of its own, so that
//! they may borrow the caller's data. The pieces are few and large (one per column or per
//! core), so a thread each costs nothing next to the work.

use datafusion::error::{DataFusionError, Result};

/// `work` applied to every item, each on a scoped thread of its own; the results in item
/// order. A thread that panics gives an internal error naming `what`.
pub(crate) fn map_scoped<T: Send, R: Send>(
    what: &str,
    items: impl IntoIterator<Item = T>,
    work: impl Fn(T) -> R + Sync,
) -> Result<Vec<R>> {
    let work = &work;
    std::thread::scope(|scope| {
        let handles: Vec<_> = items
            .into_iter()
            .map(|item| scope.spawn(move || work(item)))
            .collect();
        handles
            .into_iter()
            .map(|handle| {
                handle
                    .join()
                    .map_err(|_| DataFusionError::Internal(format!("{what} panicked")))
            })
            .collect()
    })
}

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
}
