//! A pool of work items shared by a fixed set of threads, for divide-and-conquer work whose
//! pieces are uneven (Mondrian's regions): each thread works depth-first on its own stack and
//! hands pieces to the pool only while another thread is waiting for one, so the threads stay
//! busy to the end without a lock per piece.
//!
//! The work is over when every thread waits and the pool is empty. A thread that panics marks
//! the work over (the others then stop instead of waiting for it forever).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard};

/// Work items waiting for a thread; see the module documentation.
pub(crate) struct WorkPool<T> {
    state: Mutex<PoolState<T>>,
    ready: Condvar,
    /// threads waiting for an item (mirrors `state.waiting`, read without the lock)
    hungry: AtomicUsize,
    threads: usize,
}

struct PoolState<T> {
    items: Vec<T>,
    waiting: usize,
    over: bool,
}

impl<T> WorkPool<T> {
    /// A pool for `threads` threads, holding `items` to start with.
    pub(crate) fn new(threads: usize, items: Vec<T>) -> Self {
        Self {
            state: Mutex::new(PoolState {
                items,
                waiting: 0,
                over: false,
            }),
            ready: Condvar::new(),
            hungry: AtomicUsize::new(0),
            threads: threads.max(1),
        }
    }

    fn lock(&self) -> MutexGuard<'_, PoolState<T>> {
        // a thread that panicked while holding the lock left the state consistent (every
        // change under it is a single push, pop or count)
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Whether a thread waits for an item: the time to share.
    #[inline]
    pub(crate) fn is_hungry(&self) -> bool {
        self.hungry.load(Ordering::Relaxed) > 0
    }

    /// Hands `items` to the waiting threads.
    pub(crate) fn give(&self, items: impl IntoIterator<Item = T>) {
        let mut state = self.lock();
        state.items.extend(items);
        self.ready.notify_all();
    }

    /// The next item, waiting for one while another thread still works; `None` once the work
    /// is over.
    pub(crate) fn take(&self) -> Option<T> {
        let mut state = self.lock();
        loop {
            if let Some(item) = state.items.pop() {
                return Some(item);
            }
            if state.over {
                return None;
            }
            state.waiting += 1;
            if state.waiting == self.threads {
                state.over = true;
                self.ready.notify_all();
                return None;
            }
            self.hungry.store(state.waiting, Ordering::Relaxed);
            state = self
                .ready
                .wait(state)
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            state.waiting -= 1;
            self.hungry.store(state.waiting, Ordering::Relaxed);
        }
    }

    /// Ends the work for every thread (a stop was asked for, [`crate::interrupt`]): waiting
    /// threads get `None` and stop; the items left are not done.
    pub(crate) fn stop(&self) {
        let mut state = self.lock();
        state.over = true;
        self.ready.notify_all();
    }

    /// A guard for one thread's work: if the thread panics, the work is over for all.
    pub(crate) fn guard(&self) -> PanicGuard<'_, T> {
        PanicGuard(self)
    }
}

/// See [`WorkPool::guard`].
pub(crate) struct PanicGuard<'a, T>(&'a WorkPool<T>);

impl<T> Drop for PanicGuard<'_, T> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            let mut state = self.0.lock();
            state.over = true;
            self.0.ready.notify_all();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Splitting ranges in halves down to single numbers on 3 threads, sharing only when a
    /// thread is hungry: every number comes out exactly once (sum 0 + … + 9999 = 49,995,000).
    #[test]
    fn every_piece_is_done_once_whatever_the_sharing() {
        let pool = WorkPool::new(3, vec![(0u64, 10_000u64)]);
        let done: Vec<Vec<u64>> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..3)
                .map(|_| {
                    let pool = &pool;
                    scope.spawn(move || {
                        let _guard = pool.guard();
                        let mut local = Vec::new();
                        let mut done = Vec::new();
                        // (start, end) pieces of the numbers
                        while let Some((start, end)) = local.pop().or_else(|| pool.take()) {
                            if end - start == 1 {
                                done.push(start);
                                continue;
                            }
                            let mid = start + (end - start) / 2;
                            local.push((start, mid));
                            if pool.is_hungry() {
                                pool.give([(mid, end)]);
                            } else {
                                local.push((mid, end));
                            }
                        }
                        done
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let mut all: Vec<u64> = done.into_iter().flatten().collect();
        all.sort_unstable();
        assert_eq!(all, (0..10_000).collect::<Vec<_>>());
        assert_eq!(all.iter().sum::<u64>(), 49_995_000);
    }

    /// A thread that panics ends the work for the others instead of leaving them waiting.
    #[test]
    fn a_panicking_thread_does_not_strand_the_others() {
        let pool = WorkPool::new(2, Vec::<u32>::new());
        let (panicked, stopped) = std::thread::scope(|scope| {
            let pool = &pool;
            let failing = scope.spawn(move || {
                let _guard = pool.guard();
                panic!("a worker failed");
            });
            let waiting = scope.spawn(move || {
                let _guard = pool.guard();
                pool.take()
            });
            (failing.join().is_err(), waiting.join().unwrap())
        });
        assert!(panicked);
        assert_eq!(stopped, None);
    }
}
