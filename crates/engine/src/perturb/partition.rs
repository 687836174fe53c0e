//! Microaggregation of a table's numeric attributes: strata, blocks, and the algorithm run in
//! each block.
//!
//! - **Standardized** once over the whole table ([`Points::standardized`]), so distances mean
//!   the same in every stratum and block.
//! - **Strata** (categorical attributes, as sdcMicro's `strata_variables`) are
//!   microaggregated separately: a group never mixes two strata. A stratum of fewer than k
//!   records cannot be published k-anonymous and is refused.
//! - **Blocks.** MDAV is quadratic in the records it sees. A stratum larger than
//!   `block_rows` is split k-d fashion — at the median of its widest standardized attribute,
//!   recursively — into blocks of `block_rows / 2 ..= block_rows` records, and each block is
//!   microaggregated on its own (in parallel). Memory stays O(n·d): the blocks are index
//!   lists, never a distance matrix.
//! - **Algorithms:** `mdav` (the reference), `refined` (the default: MDAV's partition
//!   improved by moves and swaps, never worse) and `projection` (the optimal runs of the
//!   first-principal-component order).
//! - **`refined` on large strata.** A stratum that fits one block is refined exactly (each
//!   record against every group). In the blocks of a larger stratum, MDAV — quadratic in what
//!   it sees — runs on k-d leaves of at most [`SEED_ROWS`] records (or 4k), and the refinement
//!   then works on the whole block, each record trying the groups nearest its own
//!   ([`Reach::Neighbours`]): the leaves' seams are repaired, and a record costs O(C·k·d) per
//!   pass rather than O(block · d).

use datafusion::error::{DataFusionError, Result};
use serde::{Deserialize, Serialize};

use super::mdav::mdav;
use super::points::Points;
use super::refine::{Reach, refine, refine_with};
use super::univariate::{optimal_runs, projection_order};

/// The microaggregation heuristic.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum MicroAlgorithm {
    /// MDAV, fixed group size (Domingo-Ferrer & Torra 2005).
    Mdav,
    /// MDAV improved by local search (moves and swaps while SSE falls).
    #[default]
    Refined,
    /// Optimal runs of k..2k − 1 along the first principal component (Hansen & Mukherjee).
    Projection,
}

impl MicroAlgorithm {
    /// The name in policies and reports.
    pub fn name(self) -> &'static str {
        match self {
            MicroAlgorithm::Mdav => "mdav",
            MicroAlgorithm::Refined => "refined",
            MicroAlgorithm::Projection => "projection",
        }
    }

    /// The groups of `points`, each of at least k (all of them when fewer than 2k).
    pub fn groups(self, points: &Points, k: usize) -> Vec<Vec<u32>> {
        match self {
            MicroAlgorithm::Mdav => mdav(points, k),
            MicroAlgorithm::Refined => refine(points, mdav(points, k), k),
            MicroAlgorithm::Projection => optimal_runs(points, &projection_order(points), k),
        }
    }

    /// The groups of `points`, one block of a stratum too large for one: as [`Self::groups`],
    /// but `refined` starts from MDAV on k-d leaves (see the module docs).
    pub fn groups_of_block(self, points: &Points, k: usize) -> Vec<Vec<u32>> {
        match self {
            MicroAlgorithm::Refined => {
                let mut all: Vec<u32> = (0..points.len() as u32).collect();
                let mut leaves = Vec::new();
                // one thread: the blocks are already spread over the cores
                split_leaves(points, &mut all, SEED_ROWS.max(4 * k), &mut leaves);
                let mut seeds = Vec::with_capacity(points.len() / k + 1);
                for leaf in leaves {
                    let local = points.subset(leaf);
                    seeds.extend(
                        mdav(&local, k)
                            .into_iter()
                            .map(|g| g.into_iter().map(|i| leaf[i as usize]).collect()),
                    );
                }
                refine_with(points, seeds, k, Reach::Neighbours)
            }
            _ => self.groups(points, k),
        }
    }
}

/// [`split_blocks`] on one thread (no error can arise).
fn split_leaves<'a>(
    points: &Points,
    members: &'a mut [u32],
    leaf_rows: usize,
    leaves: &mut Vec<&'a [u32]>,
) {
    // without threads, the only error (a panicking thread) cannot occur
    let _ = split_blocks(points, members, leaf_rows, 0, leaves);
}

/// The records MDAV sees at once in the blocks of a large stratum under `refined` (at least
/// 4k): MDAV costs O(leaf/k · d) per record, and the refinement repairs the leaves' seams.
pub const SEED_ROWS: usize = 256;

/// What a group publishes for each attribute.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Aggregate {
    /// The group's mean (minimizes SSE).
    #[default]
    Mean,
    /// The group's median (the lower middle value of an even group: always a value of the
    /// data).
    Median,
}

impl Aggregate {
    /// The name in policies and reports.
    pub fn name(self) -> &'static str {
        match self {
            Aggregate::Mean => "mean",
            Aggregate::Median => "median",
        }
    }
}

/// Microaggregation's settings.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MicroOptions {
    /// The smallest group.
    pub k: usize,
    /// The heuristic.
    pub algorithm: MicroAlgorithm,
    /// Strata larger than this are split into blocks (see the module docs); at least 4k.
    pub block_rows: usize,
}

/// The default block: MDAV on 5,000 records is ~1,700 scans of them per block, a few ms.
pub const DEFAULT_BLOCK_ROWS: usize = 5_000;

impl MicroOptions {
    /// The defaults for `k`.
    pub fn new(k: usize) -> Self {
        Self {
            k,
            algorithm: MicroAlgorithm::default(),
            block_rows: DEFAULT_BLOCK_ROWS,
        }
    }
}

/// A partition of the records into groups.
#[derive(Debug, Clone, PartialEq)]
pub struct Groups {
    /// Each record's group.
    pub of_record: Vec<u32>,
    /// Groups.
    pub count: usize,
    /// Blocks the strata were split into.
    pub blocks: usize,
}

impl Groups {
    /// Each group's records (ascending).
    pub fn members(&self) -> Vec<Vec<u32>> {
        let mut members = vec![Vec::new(); self.count];
        for (i, &g) in self.of_record.iter().enumerate() {
            members[g as usize].push(i as u32);
        }
        members
    }

    /// The smallest group's size (0 when there is none).
    pub fn smallest(&self) -> usize {
        let mut sizes = vec![0usize; self.count];
        for &g in &self.of_record {
            sizes[g as usize] += 1;
        }
        sizes.into_iter().min().unwrap_or(0)
    }

    /// IL = 100 · SSE / SST of `columns` in this partition, on the attributes standardized by
    /// their sample SD (a constant attribute adds nothing), without building the standardized
    /// points: per attribute, SSE_j around the group means and SST_j around the mean, each
    /// divided by the attribute's sample variance.
    pub fn information_loss(&self, columns: &[&[f64]]) -> f64 {
        let (mut sse, mut sst) = (0.0, 0.0);
        for column in columns {
            let (mean, sd) = super::points::mean_sd(column);
            if sd == 0.0 {
                continue;
            }
            let means = self.aggregates(column, Aggregate::Mean);
            let variance = sd * sd;
            sse += self
                .of_record
                .iter()
                .zip(column.iter())
                .map(|(&g, x)| (x - means[g as usize]).powi(2))
                .sum::<f64>()
                / variance;
            sst += column.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / variance;
        }
        if sst > 0.0 { 100.0 * sse / sst } else { 0.0 }
    }

    /// Each group's aggregate of `column` (one value per record), by `aggregate`.
    pub fn aggregates(&self, column: &[f64], aggregate: Aggregate) -> Vec<f64> {
        match aggregate {
            Aggregate::Mean => {
                let mut sums = vec![0.0; self.count];
                let mut sizes = vec![0usize; self.count];
                for (&g, &x) in self.of_record.iter().zip(column) {
                    sums[g as usize] += x;
                    sizes[g as usize] += 1;
                }
                sums.iter()
                    .zip(&sizes)
                    .map(|(s, &n)| s / n as f64)
                    .collect()
            }
            Aggregate::Median => self
                .members()
                .into_iter()
                .map(|members| {
                    let mut values: Vec<f64> =
                        members.iter().map(|&i| column[i as usize]).collect();
                    values.sort_by(f64::total_cmp);
                    values[(values.len() - 1) / 2]
                })
                .collect(),
        }
    }
}

/// Microaggregates `columns` (one per attribute, all n long, no NaN) in the strata of
/// `strata` (a stratum id per record; `None`: one stratum). Errors: k of 0, or a stratum (the
/// table, without strata) of fewer than k records; `describe_stratum` names a stratum by its
/// id for the message (never by its values).
pub fn microaggregate(
    columns: &[&[f64]],
    strata: Option<&[u32]>,
    options: MicroOptions,
    describe_stratum: &dyn Fn(u32) -> String,
) -> Result<Groups> {
    let k = options.k;
    if k == 0 {
        return Err(DataFusionError::Plan("k must be at least 1".into()));
    }
    let n = columns.first().map_or(0, |c| c.len());
    let points = Points::standardized(columns);
    let mut strata_members: Vec<Vec<u32>> = match strata {
        None => vec![(0..n as u32).collect()],
        Some(ids) => {
            let mut members: Vec<Vec<u32>> = Vec::new();
            for (i, &s) in ids.iter().enumerate() {
                if members.len() <= s as usize {
                    members.resize(s as usize + 1, Vec::new());
                }
                members[s as usize].push(i as u32);
            }
            members
        }
    };
    for (id, members) in strata_members.iter().enumerate() {
        if !members.is_empty() && members.len() < k {
            return Err(DataFusionError::Plan(format!(
                "{} has {} records, fewer than k = {k}: it cannot be microaggregated into groups \
                 of k",
                describe_stratum(id as u32),
                members.len()
            )));
        }
    }
    let block_rows = options.block_rows.max(4 * k);
    let mut blocks = Vec::new();
    let mut whole = Vec::new();
    for members in strata_members.iter_mut().filter(|m| !m.is_empty()) {
        let before = blocks.len();
        let fits = members.len() <= block_rows;
        let parallel_depth = crate::parallel::threads().next_power_of_two().trailing_zeros();
        split_blocks(
            &points,
            members,
            block_rows,
            parallel_depth as usize,
            &mut blocks,
        )?;
        whole.resize(whole.len() + blocks.len() - before, fits);
    }
    let threads = std::thread::available_parallelism()
        .map(|p| p.get())
        .unwrap_or(1)
        .min(blocks.len())
        .max(1);
    let shares: Vec<Vec<(&[u32], bool)>> = (0..threads)
        .map(|t| {
            blocks
                .iter()
                .copied()
                .zip(whole.iter().copied())
                .skip(t)
                .step_by(threads)
                .collect()
        })
        .collect();
    let results = crate::parallel::map_scoped("microaggregation", shares, |share| {
        share
            .into_iter()
            .map(|(block, whole)| {
                let local = points.subset(block);
                let groups = if whole {
                    options.algorithm.groups(&local, k)
                } else {
                    options.algorithm.groups_of_block(&local, k)
                };
                groups
                    .into_iter()
                    .map(|g| g.into_iter().map(|i| block[i as usize]).collect())
                    .collect::<Vec<Vec<u32>>>()
            })
            .collect::<Vec<_>>()
    })?;
    // blocks back in their order (thread t had blocks t, t + threads, ...)
    let mut per_block: Vec<Option<Vec<Vec<u32>>>> = vec![None; blocks.len()];
    for (t, share) in results.into_iter().enumerate() {
        for (j, groups) in share.into_iter().enumerate() {
            per_block[t + j * threads] = Some(groups);
        }
    }
    let mut of_record = vec![u32::MAX; n];
    let mut count = 0usize;
    for groups in per_block.into_iter().flatten() {
        for group in groups {
            for i in group {
                of_record[i as usize] = count as u32;
            }
            count += 1;
        }
    }
    Ok(Groups {
        of_record,
        count,
        blocks: blocks.len(),
    })
}

/// Splits `members` (in place) at the median of their widest attribute until each piece has
/// at most `block_rows` records, pushing the pieces in order. The two halves of the first
/// `parallel_depth` splits are split on threads of their own.
///
/// The median is selected on (coordinate, record) pairs copied out of the points, not on
/// the indices with a comparison that looks each point up: on millions of records the
/// lookups are cache misses, and the selection compares each element several times.
fn split_blocks<'a>(
    points: &Points,
    members: &'a mut [u32],
    block_rows: usize,
    parallel_depth: usize,
    blocks: &mut Vec<&'a [u32]>,
) -> Result<()> {
    if members.len() <= block_rows {
        members.sort_unstable();
        blocks.push(members);
        return Ok(());
    }
    let d = points.d();
    let mut low = vec![f64::INFINITY; d];
    let mut high = vec![f64::NEG_INFINITY; d];
    for &i in members.iter() {
        for (j, &x) in points.row(i as usize).iter().enumerate() {
            low[j] = low[j].min(x);
            high[j] = high[j].max(x);
        }
    }
    let widest = (0..d)
        .max_by(|&a, &b| {
            (high[a] - low[a])
                .total_cmp(&(high[b] - low[b]))
                .then(b.cmp(&a))
        })
        .unwrap_or(0);
    let middle = members.len() / 2;
    let mut keys: Vec<(f64, u32)> = members
        .iter()
        .map(|&i| (points.row(i as usize)[widest], i))
        .collect();
    keys.select_nth_unstable_by(middle, |a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    for (member, &(_, i)) in members.iter_mut().zip(&keys) {
        *member = i;
    }
    drop(keys);
    let (left, right) = members.split_at_mut(middle);
    if parallel_depth == 0 {
        split_blocks(points, left, block_rows, 0, blocks)?;
        return split_blocks(points, right, block_rows, 0, blocks);
    }
    let halves = crate::parallel::map_scoped("splitting into blocks", [left, right], |half| {
        let mut pieces = Vec::new();
        split_blocks(points, half, block_rows, parallel_depth - 1, &mut pieces).map(|()| pieces)
    })?;
    for pieces in halves {
        blocks.extend(pieces?);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::SplitMix64;

    fn random_columns(n: usize, d: usize, seed: u64) -> Vec<Vec<f64>> {
        let mut rng = SplitMix64(seed);
        (0..d)
            .map(|_| (0..n).map(|_| rng.unit() * 100.0).collect())
            .collect()
    }

    #[test]
    fn every_group_has_k_records_and_every_record_a_group() {
        for (n, k, block_rows, algorithm) in [
            (100, 3, 5_000, MicroAlgorithm::Mdav),
            (1_000, 5, 40, MicroAlgorithm::Refined),
            (777, 4, 100, MicroAlgorithm::Projection),
            // blocks of 2,000 split into MDAV leaves of 256 (SEED_ROWS), then refined
            (5_000, 3, 2_000, MicroAlgorithm::Refined),
        ] {
            let columns = random_columns(n, 3, n as u64);
            let refs: Vec<&[f64]> = columns.iter().map(Vec::as_slice).collect();
            let options = MicroOptions {
                k,
                algorithm,
                block_rows,
            };
            let groups = microaggregate(&refs, None, options, &|_| String::new()).unwrap();
            assert!(
                groups
                    .of_record
                    .iter()
                    .all(|&g| (g as usize) < groups.count)
            );
            assert!(groups.smallest() >= k, "{algorithm:?}");
            assert!(
                groups.members().iter().all(|g| g.len() < 2 * k),
                "{algorithm:?}"
            );
            if block_rows < n {
                assert!(groups.blocks > 1);
            }
        }
    }

    /// The scalable path (blocks of 500, MDAV on leaves, 3 neighbour passes) against MDAV
    /// over the whole table, the reference the issue measures it by: on correlated,
    /// heavy-tailed data like the generated firms (log-normal size driving 4 attributes), its
    /// IL stays within 10 % of MDAV's.
    #[test]
    fn the_blocked_default_stays_within_ten_percent_of_whole_table_mdav() {
        let mut rng = SplitMix64(17);
        let n = 4_000;
        let mut columns = vec![Vec::new(); 5];
        for _ in 0..n {
            // a Box–Muller normal for the log-size, and noise per attribute
            let normal = |rng: &mut SplitMix64| {
                let (u, v) = (rng.unit().max(1e-12), rng.unit());
                (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
            };
            let size = (1.5 * normal(&mut rng)).exp();
            columns[0].push(size);
            for (j, column) in columns.iter_mut().enumerate().skip(1) {
                column.push(size * (j as f64) * (0.3 * normal(&mut rng)).exp());
            }
        }
        let refs: Vec<&[f64]> = columns.iter().map(Vec::as_slice).collect();
        let il = |algorithm, block_rows| {
            let options = MicroOptions {
                k: 5,
                algorithm,
                block_rows,
            };
            microaggregate(&refs, None, options, &|_| String::new())
                .unwrap()
                .information_loss(&refs)
        };
        let mdav = il(MicroAlgorithm::Mdav, n);
        let blocked = il(MicroAlgorithm::Refined, 500);
        assert!(
            blocked <= 1.1 * mdav,
            "blocked {blocked} against MDAV {mdav}"
        );
    }

    #[test]
    fn groups_never_mix_strata_and_a_small_stratum_is_refused() {
        let columns = random_columns(60, 2, 5);
        let refs: Vec<&[f64]> = columns.iter().map(Vec::as_slice).collect();
        let strata: Vec<u32> = (0..60).map(|i| (i % 3) as u32).collect();
        let groups = microaggregate(&refs, Some(&strata), MicroOptions::new(4), &|_| {
            String::new()
        })
        .unwrap();
        for members in groups.members() {
            let s = strata[members[0] as usize];
            assert!(members.iter().all(|&i| strata[i as usize] == s));
        }
        // stratum 1 has a single record: refused, named by the caller's description
        let mut strata = vec![0u32; 60];
        strata[7] = 1;
        let error = microaggregate(&refs, Some(&strata), MicroOptions::new(4), &|id| {
            format!("stratum #{id}")
        })
        .unwrap_err();
        assert!(
            error
                .to_string()
                .contains("stratum #1 has 1 records, fewer than k = 4"),
            "{error}"
        );
    }

    #[test]
    fn a_median_is_a_value_of_its_group_and_a_mean_its_average() {
        let groups = Groups {
            of_record: vec![0, 0, 1, 1, 1, 0],
            count: 2,
            blocks: 1,
        };
        let column = [1.0, 2.0, 10.0, 30.0, 20.0, 9.0];
        // group 0: 1, 2, 9 (mean 4, median 2); group 1: 10, 30, 20 (mean 20, median 20)
        assert_eq!(groups.aggregates(&column, Aggregate::Mean), vec![4.0, 20.0]);
        assert_eq!(
            groups.aggregates(&column, Aggregate::Median),
            vec![2.0, 20.0]
        );
    }
}
