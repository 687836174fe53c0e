//! Unicity (de Montjoye et al., "Unique in the Crowd", Scientific Reports 2013): the share of
//! subjects whose trace is the only one containing p points drawn at random from it.
//!
//! A trace is a subject's set of distinct points: on the input, (finest cell at `max_level`,
//! base window); on a release, its labels. For each subject of the sample, p distinct points
//! are drawn from its trace ([`choose_points`]; a trace of fewer than p points gives all of
//! them: the adversary then knows the whole trace); the subject is unique when no other
//! subject's trace holds all of them. The sample is every subject when there are at most
//! `sample` of them, else `sample` subjects drawn without replacement; both draws come from
//! one seeded [`SplitMix64`], so a seed gives the same figure.
//!
//! [`unicity_of_events`] measures a table's events without indexing all of them: the sample is
//! drawn first, and only the events at a point of a sampled subject's trace are indexed (the
//! only ones whose holders a draw can ask for). Points are numbered in their sorted order
//! among those, which orders every sampled trace as numbering all points would: the figures
//! are those of [`Traces::unicity`] over every event, for the same seed.
//!
//! Memory O(n): the (subject, point) pairs, 8 bytes each, sorted twice, by subject and by point.

use std::hash::Hash;

use hashbrown::{HashMap, HashSet};
use serde::Serialize;

use crate::rng::SplitMix64;

/// Subjects sampled for a release's unicity.
pub const UNICITY_SAMPLE: usize = 10_000;
/// Unicity is measured for p = 1..=this.
pub const UNICITY_POINTS: usize = 5;

/// A point of a trace: a dense code (the caller numbers the distinct points).
pub type Point = u32;

/// Unicity for p = 1..=5.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct UnicityFigures {
    /// Subjects measured.
    pub subjects_sampled: u64,
    /// `unique[p - 1]`: the share of sampled subjects unique given p points.
    pub unique: Vec<f64>,
}

/// The traces of a table, indexed both ways.
pub struct Traces {
    /// (subject, point), sorted and distinct.
    by_subject: Vec<(u32, Point)>,
    /// Where each subject's points start in `by_subject` (`subjects + 1` entries).
    subject_start: Vec<usize>,
    /// (point, subject), sorted and distinct.
    by_point: Vec<(Point, u32)>,
}

impl Traces {
    /// The traces of `pairs` (subject, point); subjects are codes below `subjects`.
    pub fn new(pairs: Vec<(u32, Point)>, subjects: u32) -> Self {
        // each pair one word, radix sorted both ways (subject high, then point high)
        let point_bits = bits_for(pairs.iter().map(|&(_, p)| p).max().map_or(0, |p| p as u64));
        let subject_bits = bits_for(u64::from(subjects));
        let mut words: Vec<u64> = pairs
            .iter()
            .map(|&(s, p)| (u64::from(s) << 32) | u64::from(p))
            .collect();
        drop(pairs);
        crate::sort::radix_sort(&mut words, 0, 32 + subject_bits);
        words.dedup();
        let mut subject_start = vec![0usize; subjects as usize + 1];
        for &w in &words {
            subject_start[(w >> 32) as usize + 1] += 1;
        }
        for i in 0..subjects as usize {
            subject_start[i + 1] += subject_start[i];
        }
        let mut by_point_words: Vec<u64> = words.iter().map(|&w| w.rotate_left(32)).collect();
        let by_subject = words
            .iter()
            .map(|&w| ((w >> 32) as u32, w as u32))
            .collect();
        drop(words);
        crate::sort::radix_sort(&mut by_point_words, 0, 32 + point_bits);
        let by_point = by_point_words
            .iter()
            .map(|&w| ((w >> 32) as Point, w as u32))
            .collect();
        Self {
            by_subject,
            subject_start,
            by_point,
        }
    }

    /// Subjects (codes `0..subjects`).
    pub fn subjects(&self) -> u32 {
        (self.subject_start.len() - 1) as u32
    }

    /// The distinct points of `subject`'s trace, sorted.
    pub fn trace(&self, subject: u32) -> impl ExactSizeIterator<Item = Point> + '_ {
        let s = subject as usize;
        self.by_subject[self.subject_start[s]..self.subject_start[s + 1]]
            .iter()
            .map(|&(_, p)| p)
    }

    /// The subjects whose trace holds `point`, sorted.
    fn holders(&self, point: Point) -> &[(Point, u32)] {
        let start = self.by_point.partition_point(|&(p, _)| p < point);
        let end = self.by_point.partition_point(|&(p, _)| p <= point);
        &self.by_point[start..end]
    }

    /// Whether `subject` is the only subject whose trace holds every one of `points`.
    pub fn is_unique(&self, subject: u32, points: &[Point]) -> bool {
        // candidates: the holders of the rarest point, checked against the others
        let Some(&rarest) = points.iter().min_by_key(|&&p| (self.holders(p).len(), p)) else {
            return self.subjects() == 1;
        };
        !self.holders(rarest).iter().any(|&(_, candidate)| {
            candidate != subject
                && points.iter().all(|&p| {
                    p == rarest
                        || self
                            .holders(p)
                            .binary_search_by_key(&candidate, |&(_, s)| s)
                            .is_ok()
                })
        })
    }

    /// Unicity for p = 1..=`max_p` over a sample of at most `sample` subjects.
    pub fn unicity(&self, max_p: usize, sample: usize, seed: u64) -> UnicityFigures {
        let mut rng = SplitMix64(seed);
        let subjects = sample_subjects(self, sample, &mut rng);
        self.unicity_of(&subjects, max_p, &mut rng)
    }

    /// Unicity for p = 1..=`max_p` of `subjects`, the points drawn from `rng`.
    fn unicity_of(&self, subjects: &[u32], max_p: usize, rng: &mut SplitMix64) -> UnicityFigures {
        let mut scratch = Vec::new();
        let mut unique = Vec::with_capacity(max_p);
        for p in 1..=max_p {
            let mut count = 0u64;
            for &s in subjects {
                choose_points(self, s, p, rng, &mut scratch);
                if self.is_unique(s, &scratch) {
                    count += 1;
                }
            }
            unique.push(if subjects.is_empty() {
                0.0
            } else {
                count as f64 / subjects.len() as f64
            });
        }
        UnicityFigures {
            subjects_sampled: subjects.len() as u64,
            unique,
        }
    }
}

/// Every subject with a trace when there are at most `sample`, else `sample` of them drawn
/// without replacement (a partial Fisher–Yates shuffle), in drawn order.
pub fn sample_subjects(traces: &Traces, sample: usize, rng: &mut SplitMix64) -> Vec<u32> {
    let all: Vec<u32> = (0..traces.subjects())
        .filter(|&s| traces.trace(s).len() > 0)
        .collect();
    draw(all, sample, rng)
}

/// `sample` of `all` drawn without replacement (all of them when there are no more).
fn draw(mut all: Vec<u32>, sample: usize, rng: &mut SplitMix64) -> Vec<u32> {
    if all.len() <= sample {
        return all;
    }
    for i in 0..sample {
        let j = i + rng.below((all.len() - i) as u64) as usize;
        all.swap(i, j);
    }
    all.truncate(sample);
    all
}

/// Draws p distinct points of `subject`'s trace into `out` (all of them when it has at most
/// p): a partial Fisher–Yates shuffle of the trace.
pub fn choose_points(
    traces: &Traces,
    subject: u32,
    p: usize,
    rng: &mut SplitMix64,
    out: &mut Vec<Point>,
) {
    out.clear();
    out.extend(traces.trace(subject));
    if out.len() <= p {
        return;
    }
    for i in 0..p {
        let j = i + rng.below((out.len() - i) as u64) as usize;
        out.swap(i, j);
    }
    out.truncate(p);
}

/// Bits for values up to `max`.
fn bits_for(max: u64) -> u32 {
    u64::BITS - max.leading_zeros()
}

/// Unicity for p = 1..=`max_p` of the traces of events: event `e` belongs to subject
/// `subject[e]` (codes below `subjects`) at point `point(e)`, `None` for an event left out
/// (suppressed). The figures of [`Traces::unicity`] over every event's (subject, point), for
/// the same `sample` and `seed`, with only the events at a point of a sampled trace indexed
/// (see the module documentation).
pub fn unicity_of_events<K: Copy + Ord + Hash>(
    subject: &[u32],
    subjects: u32,
    point: impl Fn(usize) -> Option<K>,
    max_p: usize,
    sample: usize,
    seed: u64,
) -> UnicityFigures {
    let mut has_trace = vec![false; subjects as usize];
    for (e, &s) in subject.iter().enumerate() {
        if !has_trace[s as usize] && point(e).is_some() {
            has_trace[s as usize] = true;
        }
    }
    let with_trace: Vec<u32> = (0..subjects).filter(|&s| has_trace[s as usize]).collect();
    let mut rng = SplitMix64(seed);
    let sampled = draw(with_trace, sample, &mut rng);
    let mut in_sample = vec![false; subjects as usize];
    for &s in &sampled {
        in_sample[s as usize] = true;
    }
    // the points of the sampled traces, numbered in sorted order
    let mut wanted: Vec<K> = subject
        .iter()
        .enumerate()
        .filter(|&(_, &s)| in_sample[s as usize])
        .filter_map(|(e, _)| point(e))
        .collect::<HashSet<K>>()
        .into_iter()
        .collect();
    wanted.sort_unstable();
    let code: HashMap<K, Point> = wanted
        .iter()
        .enumerate()
        .map(|(i, &k)| (k, i as Point))
        .collect();
    drop(wanted);
    // every event at one of them
    let pairs: Vec<(u32, Point)> = subject
        .iter()
        .enumerate()
        .filter_map(|(e, &s)| Some((s, *code.get(&point(e)?)?)))
        .collect();
    drop(code);
    Traces::new(pairs, subjects).unicity_of(&sampled, max_p, &mut rng)
}
