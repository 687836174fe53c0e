//! What a release publishes once its failing classes are suppressed, so that the search and
//! the local algorithms judge a release exactly as the written file shows it
//! (docs/definitions.md, "What the suppressed rows do to the published table"). One rule
//! each, used by the full-domain search ([`super::evaluate`], hence
//! [`super::failing_classes`]) and by the local algorithms' final step
//! ([`super::local::evaluate`]):
//!
//! - **Drop** ([`settle_dropped`]): t, β and δ compare a class with the distribution of the
//!   table it is published in, and dropping the failing classes changes that distribution.
//!   The kept classes are judged again against the rows kept, the classes that now fail are
//!   dropped too, and so on until none does. Suppression only grows, so this ends. Publishing
//!   settles a table the same way on its rows
//!   ([`GeneralizedTable::settle_failing`](crate::provider::GeneralizedTable::settle_failing)),
//!   and finds nothing more to drop in a release the search settled.
//! - **Mask** ([`settle_masked`]): a masked row publishes `*` for every quasi-identifier, so
//!   the masked rows and the release's own all-`*` classes are one class of the written
//!   file. When that union fails, the written file's verification leaves the whole class out
//!   as suppressed: the all-`*` classes are then suppressed too.
//!
//! [`Reference`] is the distribution t, β and δ compare with: the input's, less the rows
//! dropped.

use datafusion::arrow::array::{Array, AsArray};
use datafusion::error::Result;

use super::domain::QiDomain;
use crate::functions::formulas::OrderedDomain;
use crate::generalize::TOP_LABEL;

/// A sensitive attribute's distribution over the published table: what t, β and δ compare
/// a class with. Codes are the frequency set's (`0..cardinality`, ascending value order,
/// NULL first).
#[derive(Debug, Clone)]
pub(crate) struct Reference {
    counts: Vec<u64>,
    rows: u64,
    /// values with a row (NULL one of them): δ's "values of T"
    values: usize,
    /// for ordered t: the domain of the values with a row, and each code's position in it
    ordered: Option<(OrderedDomain, Vec<u32>)>,
}

impl Reference {
    /// The distribution of `counts` (per code); `ordered` prepares ordered t.
    pub fn new(counts: Vec<u64>, ordered: bool) -> Self {
        let mut reference = Self {
            counts,
            rows: 0,
            values: 0,
            ordered: ordered.then(|| (OrderedDomain::new(&[]), Vec::new())),
        };
        reference.refresh();
        reference
    }

    /// Rows of the table.
    pub fn rows(&self) -> u64 {
        self.rows
    }

    /// Rows of the table with value `code`.
    #[inline]
    pub fn count(&self, code: u32) -> u64 {
        self.counts[code as usize]
    }

    /// Distinct values with a row (NULL one of them).
    pub fn values(&self) -> usize {
        self.values
    }

    /// The ordered domain of the values with a row and the position of `code` in it
    /// (`None` unless prepared for ordered t).
    #[inline]
    pub fn ordered(&self) -> Option<(&OrderedDomain, &[u32])> {
        self.ordered.as_ref().map(|(d, p)| (d, p.as_slice()))
    }

    /// Takes the rows of a class (`codes` with `counts`) out of the table; [`Self::refresh`]
    /// then updates the figures.
    pub fn remove(&mut self, codes: &[u32], counts: &[u64]) {
        for (&c, &n) in codes.iter().zip(counts) {
            self.counts[c as usize] -= n;
        }
    }

    /// [`Self::remove`] of a class given as a dense histogram (a count per code).
    pub fn remove_dense(&mut self, histogram: &[u64]) {
        for (count, &n) in self.counts.iter_mut().zip(histogram) {
            *count -= n;
        }
    }

    /// Recomputes rows, values and the ordered domain from the counts. Values without rows
    /// leave the ordered domain, as they are absent from the published table that
    /// `t_closeness_ordered` orders.
    pub fn refresh(&mut self) {
        self.rows = self.counts.iter().sum();
        self.values = self.counts.iter().filter(|&&n| n > 0).count();
        if let Some((domain, positions)) = &mut self.ordered {
            positions.clear();
            let mut present = Vec::with_capacity(self.values);
            for &n in &self.counts {
                positions.push(present.len() as u32);
                if n > 0 {
                    present.push(n);
                }
            }
            *domain = OrderedDomain::new(&present);
        }
    }
}

/// Drop mode: settles which classes are published when t, β or δ apply. `kept[c]` says
/// whether class c passed against `references` (in) and whether it is published (out);
/// `references` are the distributions the first judgment used — the input's, less rows
/// dropped before it (in) — and those of the published rows (out). `remove(c, references)`
/// takes class c's rows out of `references` (then refreshed here); `passes(c, references)`
/// judges kept class c against them. Classes only ever leave: the result is the least
/// fixed point reached from the first judgment, as publishing reaches it.
pub(crate) fn settle_dropped(
    kept: &mut [bool],
    references: &mut [Reference],
    mut remove: impl FnMut(usize, &mut [Reference]),
    mut passes: impl FnMut(usize, &[Reference]) -> bool,
) {
    let mut dropped: Vec<usize> = (0..kept.len()).filter(|&c| !kept[c]).collect();
    while !dropped.is_empty() && kept.contains(&true) {
        for &c in &dropped {
            remove(c, references);
        }
        references.iter_mut().for_each(Reference::refresh);
        dropped.clear();
        for (c, k) in kept.iter_mut().enumerate() {
            if *k && !passes(c, references) {
                *k = false;
                dropped.push(c);
            }
        }
    }
}

/// Mask mode: the masked rows (the classes not `kept`) and the passing classes of `all_star`
/// (the release's classes whose every label is `*`) are one class of the written file.
/// When both exist and `union_passes(members)` says their union fails, the all-`*`
/// classes are suppressed too (`kept` false): the file's verification leaves that class out
/// as suppressed rows. Returns whether it did.
pub(crate) fn settle_masked(
    kept: &mut [bool],
    all_star: &[usize],
    union_passes: impl FnOnce(&[usize]) -> bool,
) -> bool {
    let star_kept = all_star.iter().any(|&c| kept[c]);
    let masked = kept.iter().any(|&k| !k);
    if !star_kept || !masked {
        return false;
    }
    let members: Vec<usize> = (0..kept.len())
        .filter(|&c| !kept[c] || all_star.contains(&c))
        .collect();
    if union_passes(&members) {
        return false;
    }
    for &c in all_star {
        kept[c] = false;
    }
    true
}

/// Per level, per level code of `qi`: whether the code publishes `*`, the label every
/// quasi-identifier of a masked row carries. From the hierarchy's labels when the domain has
/// values (NULL stays NULL at every level, so its code never does); a domain built from
/// codes has no labels, and only its top level's codes count.
pub(crate) fn star_codes(qi: &QiDomain) -> Result<Vec<Vec<bool>>> {
    let top = qi.height() - 1;
    (0..qi.height())
        .map(|level| {
            let codes: Vec<u32> = (0..qi.cardinality(level) as u32).collect();
            if qi.leaf_values().is_none() {
                return Ok(vec![level == top; codes.len()]);
            }
            let labels = qi.labels_of_codes(level, &codes)?;
            let labels = labels.as_string_view();
            Ok((0..codes.len())
                .map(|i| labels.is_valid(i) && labels.value(i) == TOP_LABEL)
                .collect())
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Counts 4, 0, 2 of three codes: 6 rows, 2 values; the ordered domain leaves the empty
    /// code out (positions 0, 1, 1) and its cumulative shares are 4/6 then 1.
    #[test]
    fn reference_leaves_values_without_rows_out() {
        let mut r = Reference::new(vec![4, 1, 2], true);
        assert_eq!((r.rows(), r.values()), (7, 3));
        r.remove(&[1], &[1]);
        r.refresh();
        assert_eq!((r.rows(), r.values()), (6, 2));
        let (domain, positions) = r.ordered().unwrap();
        assert_eq!(domain.len(), 2);
        assert_eq!(positions, &[0, 1, 1]);
    }

    /// Classes 0..3; class 2 fails first. Removing it makes class 1 fail, which makes class
    /// 0 fail: all three leave, in two more rounds; class 3 stays.
    #[test]
    fn dropped_classes_settle_to_a_fixed_point() {
        let mut kept = vec![true, true, false, true];
        let mut references = vec![Reference::new(vec![10], false)];
        let mut removed = Vec::new();
        settle_dropped(
            &mut kept,
            &mut references,
            |c, r| {
                removed.push(c);
                r[0].remove(&[0], &[1]);
            },
            // class 1 passes only with all 10 rows, class 0 with at least 9
            |c, r| match c {
                1 => r[0].rows() >= 10,
                0 => r[0].rows() >= 9,
                _ => true,
            },
        );
        assert_eq!(kept, vec![false, false, false, true]);
        assert_eq!(removed, vec![2, 1, 0]);
        assert_eq!(references[0].rows(), 7);
    }

    /// The masked rows (class 1) and the passing all-`*` class 2 fail together: class 2 is
    /// suppressed. Without masked rows nothing is judged.
    #[test]
    fn masked_rows_and_the_all_star_class_are_judged_together() {
        let mut kept = vec![true, false, true];
        assert!(settle_masked(&mut kept, &[2], |members| {
            assert_eq!(members, &[1, 2]);
            false
        }));
        assert_eq!(kept, vec![true, false, false]);
        let mut kept = vec![true, true, true];
        assert!(!settle_masked(&mut kept, &[2], |_| unreachable!()));
        let mut kept = vec![true, false, true];
        assert!(!settle_masked(&mut kept, &[2], |_| true));
        assert_eq!(kept, vec![true, false, true]);
    }
}
