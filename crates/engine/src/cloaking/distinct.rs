//! Counting distinct subjects over ranges of events, up to a bound, with one stamp per subject
//! (no set, no allocation per count).

/// A stamp per subject: a subject is counted once per generation.
pub(crate) struct DistinctCounter {
    stamp: Vec<u32>,
    generation: u32,
}

impl DistinctCounter {
    /// A counter for subject codes `0..subjects`.
    pub(crate) fn new(subjects: u32) -> Self {
        Self {
            stamp: vec![0; subjects as usize],
            generation: 0,
        }
    }

    /// Starts a new count.
    pub(crate) fn start(&mut self) {
        if self.generation == u32::MAX {
            self.stamp.fill(0);
            self.generation = 0;
        }
        self.generation += 1;
    }

    /// Adds the subjects of `events` (indices into `subject`) to the current count, stopping
    /// once `count` reaches `enough`; returns the count.
    pub(crate) fn add(
        &mut self,
        events: &[u32],
        subject: &[u32],
        mut count: u32,
        enough: u32,
    ) -> u32 {
        for &e in events {
            if count >= enough {
                break;
            }
            let s = subject[e as usize] as usize;
            if self.stamp[s] != self.generation {
                self.stamp[s] = self.generation;
                count += 1;
            }
        }
        count
    }

    /// Whether `events` hold at least `k` distinct subjects (a new count).
    pub(crate) fn at_least(&mut self, events: &[u32], subject: &[u32], k: u32) -> bool {
        self.start();
        self.add(events, subject, 0, k) >= k
    }
}
