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
//! Memory O(n): the (subject, point) pairs, 8 bytes each, sorted twice, by subject and by point.

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
    pub fn new(mut pairs: Vec<(u32, Point)>, subjects: u32) -> Self {
        pairs.sort_unstable();
        pairs.dedup();
        let mut subject_start = vec![0usize; subjects as usize + 1];
        for &(s, _) in &pairs {
            subject_start[s as usize + 1] += 1;
        }
        for i in 0..subjects as usize {
            subject_start[i + 1] += subject_start[i];
        }
        let mut by_point: Vec<(Point, u32)> = pairs.iter().map(|&(s, p)| (p, s)).collect();
        by_point.sort_unstable();
        Self {
            by_subject: pairs,
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
        let mut scratch = Vec::new();
        let mut unique = Vec::with_capacity(max_p);
        for p in 1..=max_p {
            let mut count = 0u64;
            for &s in &subjects {
                choose_points(self, s, p, &mut rng, &mut scratch);
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
    let mut all: Vec<u32> = (0..traces.subjects())
        .filter(|&s| traces.trace(s).len() > 0)
        .collect();
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
