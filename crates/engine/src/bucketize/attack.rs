//! The fingerprint-correlation attack (seed 002 §1.1, Definitions 5–6) as a checker for any
//! bucketized release.
//!
//! ## The adversary
//! She sees the sensitive table: per fingerprint bucket, per attribute, the multiset of values
//! (a *cell*). She knows her target's linking value (the maximum-weighted attribute, e.g. the
//! physician, which the seed assumes public) and which attributes the linking attribute
//! *determines*: for those, every record with linking value v has the same value f(v) (the
//! physician's specialty). The publisher runs the check with the attributes that really are
//! determined in the data, so everything the attack concludes is true of the data.
//!
//! ## The procedure (the seed's §1.1, iterated to a fixed point)
//! For every determined attribute s:
//! 1. **Common values.** f(v) lies in every bucket that contains v, so its candidates are the
//!    intersection of s's values over all buckets linked through v. One candidate pins f(v).
//! 2. **Left-over values.** In a bucket, the records of pinned linking values take their
//!    values out of the cell; each unpinned linking value's candidates shrink to what is left
//!    with at least as many copies as it has records there (all of its records take the same
//!    value). When one value is left for it, it is pinned — the seed's "the leftover value
//!    ultrasound for sure belongs to Alan".
//! 3. Repeat until nothing changes.
//!
//! An attribute that is *not* determined by the linking value gives no link between buckets;
//! a record's value of it is certain only when its bucket's cell holds one value
//! (homogeneity).
//!
//! A record is **pinned** on an attribute when the attack leaves one possible value; it is
//! *partially* pinned when at least one attribute other than the linking one is, and *fully*
//! when all of them are. The attack is sound (a brute-force enumeration of every assignment
//! consistent with the cells checks this in the tests) but not complete: within one bucket,
//! counts alone can sometimes decide (records 2 × v and 1 × w over {x, x, y}) before any value
//! is pinned; the seed's adversary, and this one, start from intersections.
//!
//! If the cells contradict the assumption that s is determined (a candidate set empties, or a
//! bucket cannot hold its pinned values), the adversary learns the assumption is false and
//! nothing is concluded about s.

use datafusion::arrow::array::Array;
use serde::Serialize;

use super::EncodedColumn;

/// The sensitive table as the adversary sees it. Bucket `b`'s records are
/// `offsets[b]..offsets[b + 1]`; `columns[a]` holds attribute `a`'s codes in that record
/// order, sorted within each bucket (so a row is not a fingerprint).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SensitiveBuckets {
    /// Attribute names.
    pub attributes: Vec<String>,
    /// Distinct codes per attribute (codes are `0..cardinality`).
    pub cardinalities: Vec<usize>,
    /// Record offsets of the buckets (`buckets + 1` entries).
    pub offsets: Vec<usize>,
    /// Per attribute, the codes grouped by bucket and sorted within it.
    pub columns: Vec<Vec<u32>>,
}

impl SensitiveBuckets {
    /// Builds the cells of `columns` from each record's bucket.
    pub fn from_columns(columns: &[EncodedColumn], bucket_of: &[u32], buckets: usize) -> Self {
        let mut offsets = vec![0usize; buckets + 1];
        for &b in bucket_of {
            offsets[b as usize + 1] += 1;
        }
        for b in 0..buckets {
            offsets[b + 1] += offsets[b];
        }
        // each record's slot in bucket order (stable: by record within a bucket)
        let mut next = offsets.clone();
        let slots: Vec<u32> = bucket_of
            .iter()
            .map(|&b| {
                let slot = next[b as usize];
                next[b as usize] += 1;
                slot as u32
            })
            .collect();
        // per column: the codes written to their slots (read in order; a gather by bucket
        // order reads at random), then sorted within each bucket; columns in parallel
        let cell_column = |c: &EncodedColumn| {
            let mut cells = vec![0u32; c.codes.len()];
            for (&code, &slot) in c.codes.iter().zip(&slots) {
                cells[slot as usize] = code;
            }
            for b in 0..buckets {
                cells[offsets[b]..offsets[b + 1]].sort_unstable();
            }
            cells
        };
        let threads = std::thread::available_parallelism()
            .map_or(1, |n| n.get())
            .min(columns.len())
            .max(1);
        let per_thread = columns.len().div_ceil(threads).max(1);
        let cells: Vec<Vec<u32>> = std::thread::scope(|scope| {
            let handles: Vec<_> = columns
                .chunks(per_thread)
                .skip(1)
                .map(|chunk| scope.spawn(move || chunk.iter().map(cell_column).collect::<Vec<_>>()))
                .collect();
            let mut cells: Vec<Vec<u32>> = columns
                .chunks(per_thread)
                .next()
                .unwrap_or(&[])
                .iter()
                .map(cell_column)
                .collect();
            for handle in handles {
                // a panic in a worker is a bug: raise it here
                match handle.join() {
                    Ok(more) => cells.extend(more),
                    Err(panic) => std::panic::resume_unwind(panic),
                }
            }
            cells
        });
        Self {
            attributes: columns.iter().map(|c| c.name.clone()).collect(),
            cardinalities: columns.iter().map(EncodedColumn::cardinality).collect(),
            offsets,
            columns: cells,
        }
    }

    /// Buckets.
    pub fn buckets(&self) -> usize {
        self.offsets.len() - 1
    }

    /// Records.
    pub fn records(&self) -> usize {
        self.offsets.last().copied().unwrap_or(0)
    }

    /// Attribute `a`'s cell in bucket `b`, sorted.
    pub fn cell(&self, a: usize, b: usize) -> &[u32] {
        &self.columns[a][self.offsets[b]..self.offsets[b + 1]]
    }
}

/// `(value, copies)` runs of a sorted cell.
pub fn runs(cell: &[u32]) -> impl Iterator<Item = (u32, usize)> + '_ {
    cell.chunk_by(|a, b| a == b).map(|run| (run[0], run.len()))
}

/// What the attack found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttackOutcome {
    /// The linking attribute.
    pub linking: usize,
    /// Per attribute, whether the adversary treated it as determined by the linking value
    /// (false for the linking attribute, for attributes not assumed, and for attributes whose
    /// assumption the cells refuted).
    pub linked: Vec<bool>,
    /// Per attribute, per linking value, the pinned value of a linked attribute.
    pub pinned: Vec<Vec<Option<u32>>>,
    /// Rounds of the fixed point (1 when the intersections decided everything).
    pub rounds: usize,
}

/// The attack's figures for a report.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct AttackReport {
    /// The linking (maximum-weighted) attribute.
    pub linking_attribute: String,
    /// The attributes the adversary linked through it (determined by it).
    pub linked_attributes: Vec<String>,
    /// Records in the release.
    pub records: u64,
    /// Records with at least one attribute other than the linking one pinned.
    pub partially_pinned: u64,
    /// Records with every attribute other than the linking one pinned.
    pub fully_pinned: u64,
    /// Per attribute (the linking one excluded), records pinned on it.
    pub pinned_per_attribute: Vec<(String, u64)>,
    /// Rounds until nothing changed.
    pub rounds: usize,
}

/// Runs the attack on `st` with linking attribute `linking`, treating the attributes with
/// `determined[a]` as determined by it.
pub fn fingerprint_attack(
    st: &SensitiveBuckets,
    linking: usize,
    determined: &[bool],
) -> AttackOutcome {
    // the index of links is needed only where step 1 pins something (steps 2-3)
    let links = std::cell::OnceCell::new();
    let links = || links.get_or_init(|| LinkIndex::new(st, linking));
    let attributes = st.attributes.len();
    let mut linked = vec![false; attributes];
    let mut pinned = vec![Vec::new(); attributes];
    let mut rounds = 0;
    for a in 0..attributes {
        if a == linking || !determined.get(a).copied().unwrap_or(false) {
            continue;
        }
        if let Some((values, r)) = pin_attribute(st, linking, &links, a) {
            linked[a] = true;
            pinned[a] = values;
            rounds = rounds.max(r);
        }
    }
    AttackOutcome {
        linking,
        linked,
        pinned,
        rounds: rounds.max(1),
    }
}

/// The first attribute `a` with `attributes[a]` whose value the attack through `linking` pins
/// for some record, where `attributes` holds only attributes that `linking` determines
/// exactly in the data the cells come from. Only step 1 runs: for an exact determination the
/// cells never refute the adversary's assumption (f(v) is in every bucket of v, with all of
/// v's records), so steps 2–3 can only pin more where step 1 pinned something — the attack
/// pins a value of `a` exactly when some intersection has one value.
pub fn first_pinned_attribute(
    st: &SensitiveBuckets,
    linking: usize,
    attributes: &[bool],
) -> Option<usize> {
    (0..st.attributes.len())
        .filter(|&a| a != linking && attributes.get(a).copied().unwrap_or(false))
        .find(|&a| {
            intersections(st, linking, a).is_some_and(|sets| sets.iter().any(|s| s.len() == 1))
        })
}

/// Per bucket, its linking values with their record counts; per linking value, its buckets.
struct LinkIndex {
    /// `members[member_offsets[b]..member_offsets[b + 1]]`: (linking value, records) of bucket b.
    member_offsets: Vec<usize>,
    members: Vec<(u32, u32)>,
    /// `occurrences[occurrence_offsets[v]..]`: the buckets holding linking value v.
    occurrence_offsets: Vec<usize>,
    occurrences: Vec<u32>,
}

impl LinkIndex {
    fn new(st: &SensitiveBuckets, linking: usize) -> Self {
        let mut member_offsets = Vec::with_capacity(st.buckets() + 1);
        let mut members = Vec::new();
        member_offsets.push(0);
        let values = st.cardinalities[linking];
        let mut occurrence_counts = vec![0usize; values + 1];
        for b in 0..st.buckets() {
            for (v, copies) in runs(st.cell(linking, b)) {
                members.push((v, copies as u32));
                occurrence_counts[v as usize + 1] += 1;
            }
            member_offsets.push(members.len());
        }
        for v in 0..values {
            occurrence_counts[v + 1] += occurrence_counts[v];
        }
        let occurrence_offsets = occurrence_counts;
        let mut next = occurrence_offsets.clone();
        let mut occurrences = vec![0u32; members.len()];
        for b in 0..st.buckets() {
            for &(v, _) in &members[member_offsets[b]..member_offsets[b + 1]] {
                occurrences[next[v as usize]] = b as u32;
                next[v as usize] += 1;
            }
        }
        Self {
            member_offsets,
            members,
            occurrence_offsets,
            occurrences,
        }
    }

    fn members(&self, b: usize) -> &[(u32, u32)] {
        &self.members[self.member_offsets[b]..self.member_offsets[b + 1]]
    }

    fn buckets_of(&self, v: usize) -> &[u32] {
        &self.occurrences[self.occurrence_offsets[v]..self.occurrence_offsets[v + 1]]
    }
}

/// Bitset intersections for attributes of at most this many values (16 words a linking value).
const BITSET_VALUES: usize = 1024;

/// Step 1 for attribute `a`: per linking value, the values of `a` found in every bucket that
/// holds it (sorted; empty for a value in no bucket), or `None` as soon as one such
/// intersection is empty (the cells refute that `a` is determined).
///
/// The buckets are taken in order (intersection is order-free): the cells are read in memory
/// order and the few linking values' candidates stay in cache. Value by value, each of the up
/// to 371,327 buckets of a busy value was a cache miss. An attribute of at most
/// [`BITSET_VALUES`] values intersects bitsets, one AND per word for each (bucket, linking
/// value); a wider one sorted lists ([`intersections_by_lists`]).
fn intersections(st: &SensitiveBuckets, linking: usize, a: usize) -> Option<Vec<Vec<u32>>> {
    let cardinality = st.cardinalities[a];
    if cardinality > BITSET_VALUES {
        return intersections_by_lists(st, linking, a);
    }
    let words = cardinality.div_ceil(64).max(1);
    let values = st.cardinalities[linking];
    let mut sets = vec![0u64; values * words];
    let mut seen = vec![false; values];
    let mut cell_set = vec![0u64; words];
    for b in 0..st.buckets() {
        cell_set.fill(0);
        for &x in st.cell(a, b) {
            cell_set[x as usize / 64] |= 1 << (x % 64);
        }
        for (v, _) in runs(st.cell(linking, b)) {
            let v = v as usize;
            let set = &mut sets[v * words..(v + 1) * words];
            if std::mem::replace(&mut seen[v], true) {
                let mut any = 0;
                for (word, &cell) in set.iter_mut().zip(&cell_set) {
                    *word &= cell;
                    any |= *word;
                }
                if any == 0 {
                    return None;
                }
            } else {
                set.copy_from_slice(&cell_set);
            }
        }
    }
    Some(
        sets.chunks_exact(words)
            .map(|set| {
                let mut members = Vec::new();
                for (w, &word) in set.iter().enumerate() {
                    let mut bits = word;
                    while bits != 0 {
                        members.push((w * 64) as u32 + bits.trailing_zeros());
                        bits &= bits - 1;
                    }
                }
                members
            })
            .collect(),
    )
}

/// [`intersections`] by sorted lists, for attributes of many values.
fn intersections_by_lists(
    st: &SensitiveBuckets,
    linking: usize,
    a: usize,
) -> Option<Vec<Vec<u32>>> {
    let values = st.cardinalities[linking];
    let mut candidates: Vec<Vec<u32>> = vec![Vec::new(); values];
    let mut seen = vec![false; values];
    for b in 0..st.buckets() {
        let cell = st.cell(a, b);
        for (v, _) in runs(st.cell(linking, b)) {
            let v = v as usize;
            if std::mem::replace(&mut seen[v], true) {
                candidates[v].retain(|x| cell.binary_search(x).is_ok());
                if candidates[v].is_empty() {
                    return None;
                }
            } else {
                candidates[v].extend(runs(cell).map(|(x, _)| x));
            }
        }
    }
    Some(candidates)
}

/// Steps 1–3 for attribute `a`: the pinned value per linking value and the rounds, or `None`
/// when the cells refute that `a` is determined by the linking value.
fn pin_attribute<'a>(
    st: &SensitiveBuckets,
    linking: usize,
    links: &impl Fn() -> &'a LinkIndex,
    a: usize,
) -> Option<(Vec<Option<u32>>, usize)> {
    let mut candidates = intersections(st, linking, a)?;
    let mut pinned: Vec<Option<u32>> = candidates
        .iter()
        .map(|c| (c.len() == 1).then(|| c[0]))
        .collect();
    if pinned.iter().all(Option::is_none) {
        // steps 2-3 start from pinned values: nothing to revisit
        return Some((pinned, 1));
    }
    let links = links();
    // steps 2-3: revisit the buckets of every newly pinned value until nothing changes
    let mut dirty = vec![false; st.buckets()];
    let mut queue: Vec<u32> = Vec::new();
    for (v, pin) in pinned.iter().enumerate() {
        if pin.is_some() {
            for &b in links.buckets_of(v) {
                if !std::mem::replace(&mut dirty[b as usize], true) {
                    queue.push(b);
                }
            }
        }
    }
    let mut rounds = 1;
    let mut remaining: Vec<(u32, usize)> = Vec::new();
    while !queue.is_empty() {
        rounds += 1;
        let current = std::mem::take(&mut queue);
        for b in current {
            let b = b as usize;
            dirty[b] = false;
            remaining.clear();
            remaining.extend(runs(st.cell(a, b)));
            for &(v, records) in links.members(b) {
                if let Some(x) = pinned[v as usize] {
                    let slot = remaining.binary_search_by_key(&x, |r| r.0).ok()?;
                    remaining[slot].1 = remaining[slot].1.checked_sub(records as usize)?;
                }
            }
            for &(v, records) in links.members(b) {
                let v = v as usize;
                if pinned[v].is_some() {
                    continue;
                }
                candidates[v].retain(|x| {
                    remaining
                        .binary_search_by_key(x, |r| r.0)
                        .is_ok_and(|slot| remaining[slot].1 >= records as usize)
                });
                match candidates[v].len() {
                    0 => return None,
                    1 => {
                        pinned[v] = Some(candidates[v][0]);
                        for &other in links.buckets_of(v) {
                            if !std::mem::replace(&mut dirty[other as usize], true) {
                                queue.push(other);
                            }
                        }
                    }
                    _ => {}
                }
            }
        }
    }
    Some((pinned, rounds))
}

impl AttackOutcome {
    /// Whether a record with linking value `v` in bucket `b` is pinned on attribute `a`.
    pub fn is_pinned(&self, st: &SensitiveBuckets, b: usize, v: u32, a: usize) -> bool {
        if a == self.linking {
            return false;
        }
        if self.linked[a] && self.pinned[a][v as usize].is_some() {
            return true;
        }
        let cell = st.cell(a, b);
        !cell.is_empty() && cell[0] == cell[cell.len() - 1]
    }

    /// Counts the pinned records.
    pub fn report(&self, st: &SensitiveBuckets) -> AttackReport {
        let attributes = st.attributes.len();
        let mut per_attribute = vec![0u64; attributes];
        let (mut partial, mut full) = (0u64, 0u64);
        let others = attributes - 1;
        // per bucket, which cells hold one value (as `is_pinned`, found once per bucket)
        let mut homogeneous = vec![false; attributes];
        for b in 0..st.buckets() {
            for (a, flag) in homogeneous.iter_mut().enumerate() {
                let cell = st.cell(a, b);
                *flag = a != self.linking && !cell.is_empty() && cell[0] == cell[cell.len() - 1];
            }
            for (v, records) in runs(st.cell(self.linking, b)) {
                let mut count = 0;
                for (a, total) in per_attribute.iter_mut().enumerate() {
                    let pinned = a != self.linking
                        && (homogeneous[a]
                            || (self.linked[a] && self.pinned[a][v as usize].is_some()));
                    if pinned {
                        *total += records as u64;
                        count += 1;
                    }
                }
                if count > 0 {
                    partial += records as u64;
                }
                if others > 0 && count == others {
                    full += records as u64;
                }
            }
        }
        AttackReport {
            linking_attribute: st.attributes[self.linking].clone(),
            linked_attributes: (0..attributes)
                .filter(|&a| self.linked[a])
                .map(|a| st.attributes[a].clone())
                .collect(),
            records: st.records() as u64,
            partially_pinned: partial,
            fully_pinned: full,
            pinned_per_attribute: (0..attributes)
                .filter(|&a| a != self.linking)
                .map(|a| (st.attributes[a].clone(), per_attribute[a]))
                .collect(),
            rounds: self.rounds,
        }
    }
}

/// The attack on a sensitive table registered on `ctx` as `table`: every column but
/// `bucket_column` is a sensitive attribute; `determined` names the attributes the adversary
/// assumes the linking value determines (`None`: all others). Returns the report and the
/// assumed attributes the cells refuted. Errors name the table's columns, never a value.
pub async fn attack_table(
    ctx: &datafusion::prelude::SessionContext,
    table: &str,
    bucket_column: &str,
    linking: &str,
    determined: Option<&[String]>,
) -> datafusion::error::Result<(AttackReport, Vec<String>)> {
    use datafusion::error::DataFusionError;
    let schema = ctx.table_provider(table).await?.schema();
    let refuse = |what: String| DataFusionError::Plan(format!("{table}: {what}"));
    if schema.field_with_name(bucket_column).is_err() {
        return Err(refuse(format!("no bucket id column '{bucket_column}'")));
    }
    let attributes: Vec<String> = schema
        .fields()
        .iter()
        .map(|f| f.name().clone())
        .filter(|n| n != bucket_column)
        .collect();
    let linking = attributes
        .iter()
        .position(|a| a == linking)
        .ok_or_else(|| refuse(format!("no linking attribute '{linking}'")))?;
    let assumed: Vec<bool> = match determined {
        None => (0..attributes.len()).map(|a| a != linking).collect(),
        Some(names) => {
            if let Some(name) = names
                .iter()
                .find(|n| !attributes.contains(n) || **n == attributes[linking])
            {
                return Err(refuse(format!(
                    "'{name}' is not a sensitive attribute other than the linking one"
                )));
            }
            attributes.iter().map(|a| names.contains(a)).collect()
        }
    };
    // one scan for the cells and the bucket ids: two scans of several partitions need not
    // return the rows in the same order
    let mut columns = attributes.clone();
    columns.push(bucket_column.to_string());
    let mut cells = super::encode::read_table(ctx, table, &[], &columns).await?;
    let bucket_ids = cells
        .sensitive
        .pop()
        .ok_or_else(|| refuse(format!("no bucket id column '{bucket_column}'")))?;
    let bucket_ids = &bucket_ids;
    if bucket_ids.values.null_count() > 0 {
        return Err(refuse(format!("'{bucket_column}' has NULLs")));
    }
    let st = SensitiveBuckets::from_columns(
        &cells.sensitive,
        &bucket_ids.codes,
        bucket_ids.cardinality(),
    );
    let outcome = fingerprint_attack(&st, linking, &assumed);
    let refuted = (0..attributes.len())
        .filter(|&a| assumed[a] && !outcome.linked[a])
        .map(|a| attributes[a].clone())
        .collect();
    Ok((outcome.report(&st), refuted))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::SplitMix64;
    use std::collections::BTreeSet;

    /// Random cells: `buckets` buckets of 1–6 records; attribute 0 links (few values), and
    /// attribute 1 has `values` values, a function of the linking value in most records (so
    /// that intersections are often non-empty) and random in the rest.
    fn random_cells(
        rng: &mut SplitMix64,
        buckets: usize,
        values: u64,
        noise: u64,
    ) -> SensitiveBuckets {
        let linking_values = 12;
        let function: Vec<u32> = (0..linking_values)
            .map(|_| rng.below(values) as u32)
            .collect();
        let mut offsets = vec![0];
        let (mut linking, mut other) = (Vec::new(), Vec::new());
        for _ in 0..buckets {
            let size = 1 + rng.below(6) as usize;
            let start = linking.len();
            for _ in 0..size {
                let v = rng.below(linking_values) as u32;
                linking.push(v);
                other.push(if rng.below(100) < noise {
                    rng.below(values) as u32
                } else {
                    function[v as usize]
                });
            }
            linking[start..].sort_unstable();
            other[start..].sort_unstable();
            offsets.push(linking.len());
        }
        SensitiveBuckets {
            attributes: vec!["linking".into(), "other".into()],
            cardinalities: vec![linking_values as usize, values as usize],
            offsets,
            columns: vec![linking, other],
        }
    }

    #[test]
    fn bitset_and_list_intersections_match_a_brute_force_one() {
        let mut rng = SplitMix64(7);
        let (mut refuted, mut kept) = (0, 0);
        // one word, several words, and past the bitsets' limit (lists only)
        for values in [5u64, 150, BITSET_VALUES as u64 + 7] {
            for trial in 0..200 {
                let st = random_cells(&mut rng, 1 + trial % 9, values, trial as u64 % 3 * 10);
                // the reference: per linking value, the intersection of its buckets' values
                let mut expected: Vec<Option<BTreeSet<u32>>> = vec![None; 12];
                for b in 0..st.buckets() {
                    let cell: BTreeSet<u32> = st.cell(1, b).iter().copied().collect();
                    for (v, _) in runs(st.cell(0, b)) {
                        let slot = &mut expected[v as usize];
                        *slot = Some(match slot.take() {
                            None => cell.clone(),
                            Some(set) => set.intersection(&cell).copied().collect(),
                        });
                    }
                }
                let expected: Option<Vec<Vec<u32>>> = if expected
                    .iter()
                    .any(|s| s.as_ref().is_some_and(BTreeSet::is_empty))
                {
                    None
                } else {
                    Some(
                        expected
                            .into_iter()
                            .map(|s| s.unwrap_or_default().into_iter().collect())
                            .collect(),
                    )
                };
                match &expected {
                    None => refuted += 1,
                    Some(_) => kept += 1,
                }
                assert_eq!(intersections_by_lists(&st, 0, 1), expected);
                assert_eq!(intersections(&st, 0, 1), expected, "{values} values");
            }
        }
        // both outcomes were exercised
        assert!(refuted > 50 && kept > 50, "{refuted} refuted, {kept} kept");
    }
}
