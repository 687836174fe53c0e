//! Function 4 of seed 002 (generalized buckets) and the (p,k)-angelization baseline.
//!
//! **Generalized buckets.** Records are sorted by their quasi-identifiers (in the policy's
//! order, then by record for ties, so the result is deterministic) and cut into runs of k; a
//! last run shorter than k joins the one before. Each GB publishes, per quasi-identifier, the
//! `[min, max]` of its records ("close boundaries", seed Function 4).
//!
//! **(p,k)-angelization** (Anjum et al. 2018, as seed 002 §4 describes it): the same sorted
//! runs, each extended until it is also p-sensitive — every sensitive attribute takes at least
//! p distinct values in it — and then the run is *both* the GB and its sensitive batch:
//! bucket id = group id, one-to-one. The seed's categories and p-sensitivity are read the
//! same way as c-diversity ([`super`]), without the λ control and without refinement, which
//! is exactly what the fingerprint-correlation attack exploits.

use datafusion::error::{DataFusionError, Result};

use super::{BucketizedRelease, GroupRanges, MsaTable, check_input};

/// Records in quasi-identifier order (policy order of the columns, then record).
fn sorted_by_quasi_identifiers(table: &MsaTable) -> Vec<u32> {
    let columns: Vec<&[u32]> = table
        .quasi_identifiers
        .iter()
        .map(|c| c.codes.as_slice())
        .collect();
    let cardinalities: Vec<usize> = table
        .quasi_identifiers
        .iter()
        .map(|c| c.cardinality())
        .collect();
    crate::sort::order_by_codes(&columns, &cardinalities, table.rows())
}

/// Per group, per quasi-identifier, the smallest and largest code of its records.
fn ranges(table: &MsaTable, group_of: &[u32], groups: usize) -> GroupRanges {
    let width = table.quasi_identifiers.len();
    let mut ranges = vec![(u32::MAX, 0u32); groups * width];
    for (q, column) in table.quasi_identifiers.iter().enumerate() {
        for (&g, &code) in group_of.iter().zip(&column.codes) {
            let range = &mut ranges[g as usize * width + q];
            range.0 = range.0.min(code);
            range.1 = range.1.max(code);
        }
    }
    GroupRanges { width, ranges }
}

/// Cuts `order` into runs closed by `closes(start, end)`; a last run that never closes joins
/// the one before. Returns each record's run and the number of runs.
fn cut(
    order: &[u32],
    rows: usize,
    mut closes: impl FnMut(&[u32]) -> bool,
) -> Option<(Vec<u32>, usize)> {
    let mut group_of = vec![0u32; rows];
    let mut groups = 0u32;
    let mut start = 0;
    for end in 1..=order.len() {
        if closes(&order[start..end]) {
            for &r in &order[start..end] {
                group_of[r as usize] = groups;
            }
            groups += 1;
            start = end;
        }
    }
    if start < order.len() {
        let last = groups.checked_sub(1)?;
        for &r in &order[start..] {
            group_of[r as usize] = last;
        }
    }
    Some((group_of, groups as usize))
}

/// Function 4: every record's GB and every GB's ranges.
pub fn generalized_buckets(table: &MsaTable, k: usize) -> Result<(Vec<u32>, GroupRanges)> {
    let order = sorted_by_quasi_identifiers(table);
    let (group_of, groups) = cut(&order, table.rows(), |run| run.len() >= k).ok_or_else(|| {
        DataFusionError::Plan(format!(
            "bucketization: {} records cannot form a bucket of k = {k}",
            table.rows()
        ))
    })?;
    let ranges = ranges(table, &group_of, groups);
    Ok((group_of, ranges))
}

/// The (p,k)-angelization baseline; see the module documentation.
pub fn pk_angelize(table: &MsaTable, p: usize, k: usize) -> Result<BucketizedRelease> {
    check_input(table, k)?;
    if p < 1 {
        return Err(DataFusionError::Plan(
            "(p,k)-angelization: p must be at least 1".into(),
        ));
    }
    let order = sorted_by_quasi_identifiers(table);
    let mut seen: Vec<Vec<u32>> = table
        .sensitive
        .iter()
        .map(|c| vec![u32::MAX; c.cardinality()])
        .collect();
    let mut distinct = vec![0usize; table.sensitive.len()];
    let mut run_id = 0u32;
    let mut last_len = 0;
    let (group_of, groups) = cut(&order, table.rows(), |run| {
        // count the newest record's values into the run's distinct counts
        if run.len() < last_len || run.len() == 1 {
            run_id += 1;
            distinct.iter_mut().for_each(|d| *d = 0);
        }
        last_len = run.len();
        let record = run[run.len() - 1] as usize;
        for (a, column) in table.sensitive.iter().enumerate() {
            let mark = &mut seen[a][column.codes[record] as usize];
            if *mark != run_id {
                *mark = run_id;
                distinct[a] += 1;
            }
        }
        run.len() >= k && distinct.iter().all(|&d| d >= p)
    })
    .ok_or_else(|| {
        DataFusionError::Plan(format!(
            "(p,k)-angelization: the table cannot form a bucket of k = {k} records with p = {p} \
             distinct values of every sensitive attribute"
        ))
    })?;
    let group_ranges = ranges(table, &group_of, groups);
    Ok(BucketizedRelease {
        bucket_of: group_of.clone(),
        buckets: groups,
        cells: None,
        group_of,
        group_ranges,
    })
}
