//! The utility of a bucketized release (seed 002 §6.1).
//!
//! **NCP** of GT (§6.1.1, Xu et al. 2006, the project's `ncp`): per record and
//! quasi-identifier, a numeric column costs (max − min) / (max_T − min_T) of its GB (0 when
//! the table has one value), a categorical one 0 when the GB has one value, else the GB's
//! distinct values over the table's; the release's NCP is the mean over records and
//! quasi-identifiers (equal weights), reported as a percentage.
//!
//! **Query error** (§6.1.2; the equation was lost, this is the usual relative error of
//! Anatomy, Xiao & Tao 2006): random queries
//! `SELECT COUNT(*) WHERE qi_1 IN R_1 AND … AND qi_d IN R_d AND s IN V`, one sensitive
//! attribute s per query (cycling through them). Each predicate selects a contiguous run of
//! a share φ = θ^(1/(d+1)) of the attribute's distinct values (at least one), so that the
//! query's expected selectivity is θ when the attributes are independent. The estimate from
//! the release assumes values are uniform within a GB's ranges and independent of the FB's
//! cell: Σ over records of Π_q |R_q ∩ GB_q| / |GB_q| × (records of the record's FB with s in
//! V) / |FB|. The error of a query is |estimate − actual| / actual; queries whose actual count
//! is 0 are drawn again (at most 100 times per query), and the mean over the queries is
//! reported. Ranges are counted in distinct values (codes), for numeric and categorical
//! columns alike.

use serde::Serialize;

use super::{BucketizedRelease, MsaTable};
use crate::rng::SplitMix64;

/// NCP of the release's GT, in percent.
pub fn ncp_percent(table: &MsaTable, release: &BucketizedRelease) -> f64 {
    let d = table.quasi_identifiers.len();
    let rows = table.rows();
    if d == 0 || rows == 0 {
        return 0.0;
    }
    // distinct values of each QI per group: codes are dense, count them with stamps
    let mut group_sizes = vec![0u64; release.group_ranges.len()];
    for &g in &release.group_of {
        group_sizes[g as usize] += 1;
    }
    let mut total = 0.0;
    for (q, column) in table.quasi_identifiers.iter().enumerate() {
        let penalties: Vec<f64> = match &column.numeric {
            Some(values) => {
                let span =
                    values.last().copied().unwrap_or(0.0) - values.first().copied().unwrap_or(0.0);
                release
                    .group_ranges
                    .iter()
                    .map(|ranges| {
                        let (lo, hi) = ranges[q];
                        if span > 0.0 {
                            (values[hi as usize] - values[lo as usize]) / span
                        } else {
                            0.0
                        }
                    })
                    .collect()
            }
            None => {
                let mut distinct = vec![0usize; release.group_ranges.len()];
                let mut pairs: Vec<(u32, u32)> = release
                    .group_of
                    .iter()
                    .zip(&column.codes)
                    .map(|(&g, &c)| (g, c))
                    .collect();
                pairs.sort_unstable();
                pairs.dedup();
                for (g, _) in pairs {
                    distinct[g as usize] += 1;
                }
                let all = column.cardinality() as f64;
                distinct
                    .iter()
                    .map(|&n| if n <= 1 { 0.0 } else { n as f64 / all })
                    .collect()
            }
        };
        total += penalties
            .iter()
            .zip(&group_sizes)
            .map(|(p, &n)| p * n as f64)
            .sum::<f64>();
    }
    100.0 * total / (rows as f64 * d as f64)
}

/// The mean relative error of random COUNT queries.
#[derive(Debug, Clone, Serialize)]
pub struct QueryError {
    /// Queries answered.
    pub queries: usize,
    /// The selectivity θ asked for.
    pub selectivity: f64,
    /// The mean relative error.
    pub mean_relative_error: f64,
    /// The mean actual count (how selective the queries really were).
    pub mean_actual: f64,
}

/// The mean error of `queries` random COUNT queries at selectivity `theta`; see the module
/// documentation.
pub fn query_error(
    table: &MsaTable,
    release: &BucketizedRelease,
    queries: usize,
    theta: f64,
    seed: u64,
) -> QueryError {
    let d = table.quasi_identifiers.len();
    let share = theta.clamp(0.0, 1.0).powf(1.0 / (d as f64 + 1.0));
    let mut rng = SplitMix64(seed);
    let rows = table.rows();
    let mut bucket_sizes = vec![0u64; release.buckets];
    for &b in &release.bucket_of {
        bucket_sizes[b as usize] += 1;
    }
    let draw_range = |rng: &mut SplitMix64, cardinality: usize| {
        let width = ((share * cardinality as f64).round() as usize).clamp(1, cardinality);
        let start = rng.below((cardinality - width + 1) as u64) as u32;
        (start, start + width as u32 - 1)
    };
    let mut errors = 0.0;
    let mut actual_total = 0.0;
    let mut answered = 0;
    let mut in_bucket = vec![0u64; release.buckets];
    for query in 0..queries {
        let s = query % table.sensitive.len().max(1);
        for _attempt in 0..100 {
            let qi_ranges: Vec<(u32, u32)> = table
                .quasi_identifiers
                .iter()
                .map(|c| draw_range(&mut rng, c.cardinality()))
                .collect();
            let sensitive = &table.sensitive[s];
            let (s_lo, s_hi) = draw_range(&mut rng, sensitive.cardinality());
            let selected = |code: u32| code >= s_lo && code <= s_hi;
            let inside = |record: usize| {
                table
                    .quasi_identifiers
                    .iter()
                    .zip(&qi_ranges)
                    .all(|(c, &(lo, hi))| (lo..=hi).contains(&c.codes[record]))
            };
            let actual = (0..rows)
                .filter(|&r| selected(sensitive.codes[r]) && inside(r))
                .count();
            if actual == 0 {
                continue;
            }
            in_bucket.iter_mut().for_each(|n| *n = 0);
            for (r, &b) in release.bucket_of.iter().enumerate() {
                if selected(sensitive.codes[r]) {
                    in_bucket[b as usize] += 1;
                }
            }
            let group_share: Vec<f64> = release
                .group_ranges
                .iter()
                .map(|ranges| {
                    ranges
                        .iter()
                        .zip(&qi_ranges)
                        .map(|(&(lo, hi), &(qlo, qhi))| {
                            let overlap = (hi.min(qhi) as i64 - lo.max(qlo) as i64 + 1).max(0);
                            overlap as f64 / (hi - lo + 1) as f64
                        })
                        .product()
                })
                .collect();
            let estimate: f64 = (0..rows)
                .map(|r| {
                    let b = release.bucket_of[r] as usize;
                    group_share[release.group_of[r] as usize] * in_bucket[b] as f64
                        / bucket_sizes[b] as f64
                })
                .sum();
            errors += (estimate - actual as f64).abs() / actual as f64;
            actual_total += actual as f64;
            answered += 1;
            break;
        }
    }
    QueryError {
        queries: answered,
        selectivity: theta,
        mean_relative_error: if answered > 0 {
            errors / answered as f64
        } else {
            0.0
        },
        mean_actual: if answered > 0 {
            actual_total / answered as f64
        } else {
            0.0
        },
    }
}
