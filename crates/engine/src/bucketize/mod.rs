//! Bucketized publishing for several sensitive attributes: (c,k)-anonymization (seed 002),
//! its (p,k)-angelization baseline, and the fingerprint-correlation attack that separates them.
//!
//! A bucketized release is two tables linked by a bucket id:
//! - **GT**, the generalized table: one row per record, its quasi-identifiers published as the
//!   `[min, max]` of its *generalized bucket* (GB, at least k records), and the id of the
//!   *fingerprint bucket* (FB) that holds its sensitive values;
//! - **ST**, the sensitive table: one row per record, the bucket id and every sensitive
//!   attribute, each column sorted on its own within the bucket. A row of ST is therefore not a
//!   person's fingerprint: a bucket publishes, per attribute, the multiset of its values (the
//!   seed's "cells"), and which values go together is what the attack tries to rebuild.
//!
//! In (p,k)-angelization a GB and its FB are the same records (one-to-one); in
//! (c,k)-anonymization the FBs are formed on the sensitive values and the GBs on the
//! quasi-identifiers, so one GB links to many FBs.
//!
//! The steps follow the data flow: [`encode`] reads the input into dictionary codes,
//! [`weights`] measures the dependencies between sensitive attributes (Function 1) and builds
//! the category table, [`fingerprint`] makes and refines the c-diverse fingerprint buckets
//! (Functions 2–3), [`groups`] makes the generalized buckets (Function 4) and the (p,k)
//! baseline, [`attack`] simulates the adversary, [`utility`] measures NCP and query error, and
//! `publish::bucketized` writes, verifies and commits both tables together.
//!
//! ## Choices where the seed is silent or lost its equations
//! Each is taken on the side that never overstates privacy, and documented where it is made:
//! - *c-diverse* (Definition 2): every sensitive attribute takes at least c + 1 distinct values
//!   in every FB — the seed's own reading "c = 1 implies l = 2" (§5.1), applied to every
//!   attribute, not only to some categories.
//! - *λ* (Function 2): at most λ records of an FB share a value of the maximum-weighted
//!   attribute (the *linking* attribute).
//! - FBs have at least k records (Function 2's "k: minimum FB size"), GBs at least k records.
//! - *Equations (4)/(5)* (Function 3): for every linking value v and every attribute the
//!   adversary can link (see [`attack`]), the intersection of the attribute's values over
//!   *all* FBs that contain v (the seed's "n FBs where the same physician exists") never has
//!   exactly one value. Strict requires it of every linkable attribute; relax exempts the
//!   non-secret ones (weight 0: no other attribute depends on them).
//! - NULL is a value of its own for sensitive attributes; quasi-identifiers must not be NULL
//!   (a `[min, max]` cannot cover NULL), and a NULL is refused with the column's name.

pub mod attack;
pub mod encode;
pub mod fingerprint;
pub mod groups;
pub mod utility;
pub mod weights;

#[cfg(test)]
mod tests;

use datafusion::arrow::array::ArrayRef;
use datafusion::error::{DataFusionError, Result};
use serde::Serialize;

pub use attack::{AttackReport, SensitiveBuckets};
pub use weights::{Category, Dependencies};

/// One column of the input, dictionary-encoded in value order: code `i` is the `i`-th smallest
/// distinct value (NULL first, as a value of its own).
#[derive(Debug, Clone)]
pub struct EncodedColumn {
    /// The column's name.
    pub name: String,
    /// Per record, the code of its value.
    pub codes: Vec<u32>,
    /// The distinct values in code order, in the input's type (one entry per code).
    pub values: ArrayRef,
    /// The distinct values as numbers, for ordered numeric columns (NCP over the value range);
    /// `None` for categorical columns.
    pub numeric: Option<Vec<f64>>,
}

impl EncodedColumn {
    /// Distinct values.
    pub fn cardinality(&self) -> usize {
        self.values.len()
    }
}

/// The input of a bucketization: quasi-identifiers and sensitive attributes, one entry per
/// record in each column.
#[derive(Debug, Clone)]
pub struct MsaTable {
    /// Quasi-identifiers, in the policy's order (the order GBs are sorted by).
    pub quasi_identifiers: Vec<EncodedColumn>,
    /// Sensitive attributes, in the policy's order.
    pub sensitive: Vec<EncodedColumn>,
}

impl MsaTable {
    /// Records.
    pub fn rows(&self) -> usize {
        self.sensitive
            .first()
            .or(self.quasi_identifiers.first())
            .map_or(0, |c| c.codes.len())
    }
}

/// Strict (equation 4) or relaxed (equation 5) refinement of linked fingerprint buckets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Refinement {
    /// No linkable attribute may be pinned down through linked buckets.
    #[default]
    Strict,
    /// Non-secret attributes (nothing depends on them) may be.
    Relax,
}

/// The parameters of (c,k)-anonymization.
#[derive(Debug, Clone)]
pub struct CkOptions {
    /// Diversity: every attribute takes at least c + 1 distinct values in every FB.
    pub c: usize,
    /// Every GB and every FB has at least k records.
    pub k: usize,
    /// At most λ records of an FB share a linking value.
    pub lambda: usize,
    /// Strict or relaxed refinement.
    pub refinement: Refinement,
    /// The attribute that wins a tie for the maximum weight (the seed's external factor χ).
    pub external_factor: Option<String>,
    /// Attribute j depends on attribute i when knowing i removes at least this share of j's
    /// entropy (the uncertainty coefficient U(j | i)); 0.5 by default.
    pub dependency_threshold: f64,
}

impl CkOptions {
    /// Checks the parameters before any data are read.
    pub fn check(&self) -> Result<()> {
        let refuse = |m: &str| Err(DataFusionError::Plan(format!("(c,k)-anonymization: {m}")));
        if self.c < 1 {
            return refuse("c must be at least 1");
        }
        if self.k < 2 {
            return refuse("k must be at least 2");
        }
        if self.lambda < 1 {
            return refuse("lambda must be at least 1");
        }
        if !(self.dependency_threshold > 0.0 && self.dependency_threshold <= 1.0) {
            return refuse("dependency_threshold must be in (0, 1]");
        }
        Ok(())
    }
}

/// A bucketized release: every record's GB and FB.
#[derive(Debug, Clone)]
pub struct BucketizedRelease {
    /// Per record, its fingerprint bucket (the published bucket id).
    pub bucket_of: Vec<u32>,
    /// Number of fingerprint buckets.
    pub buckets: usize,
    /// The sensitive table's cells, when the construction built them already.
    pub cells: Option<std::sync::Arc<SensitiveBuckets>>,
    /// Per record, its generalized bucket.
    pub group_of: Vec<u32>,
    /// Per generalized bucket, per quasi-identifier, the smallest and largest code.
    pub group_ranges: GroupRanges,
}

/// Per generalized bucket, per quasi-identifier, the smallest and largest code, in one flat
/// vector (`group_ranges[g][q]`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupRanges {
    /// Quasi-identifiers per group.
    pub width: usize,
    /// `width` ranges per group, group after group.
    pub ranges: Vec<(u32, u32)>,
}

impl GroupRanges {
    /// Groups.
    pub fn len(&self) -> usize {
        self.ranges.len().checked_div(self.width).unwrap_or(0)
    }

    /// Whether there is no group.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Each group's ranges.
    pub fn iter(&self) -> impl Iterator<Item = &[(u32, u32)]> {
        self.ranges.chunks(self.width.max(1))
    }
}

impl std::ops::Index<usize> for GroupRanges {
    type Output = [(u32, u32)];

    fn index(&self, group: usize) -> &[(u32, u32)] {
        &self.ranges[group * self.width..(group + 1) * self.width]
    }
}

impl BucketizedRelease {
    /// The sensitive table as the adversary sees it: per bucket, per attribute, the values
    /// (kept from the construction's own check when it made one).
    pub fn sensitive_buckets(&self, table: &MsaTable) -> std::borrow::Cow<'_, SensitiveBuckets> {
        if let Some(cells) = &self.cells {
            return std::borrow::Cow::Borrowed(cells.as_ref());
        }
        std::borrow::Cow::Owned(SensitiveBuckets::from_columns(
            &table.sensitive,
            &self.bucket_of,
            self.buckets,
        ))
    }
}

/// What (c,k)-anonymization decided, for the report.
#[derive(Debug, Clone, Serialize)]
pub struct CkSummary {
    /// The dependency analysis (weights, linking attribute, categories).
    pub dependencies: Dependencies,
    /// Fingerprint buckets.
    pub fingerprint_buckets: usize,
    /// Generalized buckets.
    pub generalized_buckets: usize,
    /// Cohorts of linking values (each cohort's records form its own FBs).
    pub cohorts: usize,
    /// Cohorts merged by the refinement.
    pub cohorts_merged: usize,
}

/// (c,k)-anonymization of `table`: dependencies, category table, fingerprint buckets and their
/// refinement, then generalized buckets.
pub fn ck_anonymize(
    table: &MsaTable,
    options: &CkOptions,
) -> Result<(BucketizedRelease, CkSummary)> {
    options.check()?;
    check_input(table, options.k)?;
    // the generalized buckets do not depend on the fingerprint buckets: made side by side
    let (fbs, gbs) = std::thread::scope(|scope| {
        let gbs = scope.spawn(|| groups::generalized_buckets(table, options.k));
        let fbs = weights::analyse(table, options).and_then(|dependencies| {
            fingerprint::make_buckets(table, &dependencies, options).map(|f| (f, dependencies))
        });
        let gbs = gbs.join().unwrap_or_else(|_| {
            Err(DataFusionError::Internal(
                "the generalized buckets' thread panicked".into(),
            ))
        });
        (fbs, gbs)
    });
    let (fbs, dependencies) = fbs?;
    let (group_of, group_ranges) = gbs?;
    let release = BucketizedRelease {
        bucket_of: fbs.bucket_of,
        buckets: fbs.buckets,
        cells: Some(std::sync::Arc::new(fbs.cells)),
        group_of,
        group_ranges,
    };
    let summary = CkSummary {
        fingerprint_buckets: release.buckets,
        generalized_buckets: release.group_ranges.len(),
        cohorts: fbs.cohorts,
        cohorts_merged: fbs.cohorts_merged,
        dependencies,
    };
    Ok((release, summary))
}

/// Refuses inputs no bucketization can serve: no records, fewer than k, no sensitive or no
/// quasi-identifier attribute, a sensitive attribute named twice.
pub(crate) fn check_input(table: &MsaTable, k: usize) -> Result<()> {
    let refuse = |m: String| Err(DataFusionError::Plan(format!("bucketization: {m}")));
    if table.sensitive.is_empty() {
        return refuse("no sensitive attribute".into());
    }
    if table.quasi_identifiers.is_empty() {
        return refuse("no quasi-identifier".into());
    }
    let mut names: Vec<&str> = table.sensitive.iter().map(|c| c.name.as_str()).collect();
    names.sort_unstable();
    if let Some(w) = names.windows(2).find(|w| w[0] == w[1]) {
        return refuse(format!("sensitive attribute '{}' is named twice", w[0]));
    }
    let rows = table.rows();
    if rows < k {
        return refuse(format!(
            "{rows} records cannot form a bucket of k = {k} records"
        ));
    }
    Ok(())
}
