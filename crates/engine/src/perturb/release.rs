//! A perturbed release computed in memory from the columns read: every transformation of the
//! policy applied to the records kept (those with no NULL or NaN in a numeric perturbed
//! attribute), with its figures. The publishing pipeline reads the columns
//! ([`crate::publish::perturbed`]) and writes what this returns.
//!
//! Each random draw comes from its own stream of the run's seed (by purpose and attribute),
//! so one transformation's draws do not depend on another's, and the same seed gives the same
//! release.

use datafusion::error::{DataFusionError, Result};
use serde::Serialize;

use super::linkage::dbrl;
use super::measures::{Utility, interval_disclosure, utility};
use super::noise::{additive, correlated, multiplicative, reflect_into};
use super::pram::PramMatrix;
use super::swap::rank_swap;
use super::{Aggregate, MicroOptions, microaggregate};
use crate::rng::SplitMix64;

/// A checked transformation of one attribute.
#[derive(Debug, Clone, PartialEq)]
pub enum Transformation {
    /// Replaced by its microaggregation group's aggregate.
    Microaggregation,
    /// Additive noise of SD level·σ.
    Noise(f64),
    /// Correlated noise of covariance level²·Σ (SD level·σ per attribute), jointly with the
    /// other such attributes.
    CorrelatedNoise(f64),
    /// Multiplicative log-normal noise of log-SD level and mean 1 (positive quantities).
    MultiplicativeNoise(f64),
    /// Rank swapping with window p %.
    RankSwap(f64),
    /// PRAM.
    Pram(Pram),
    /// Exchanged within its microaggregation group.
    Permute,
}

impl Transformation {
    /// The name in policies and reports.
    pub fn name(&self) -> &'static str {
        match self {
            Transformation::Microaggregation => "microaggregation",
            Transformation::Noise(_) => "noise",
            Transformation::CorrelatedNoise(_) => "correlated_noise",
            Transformation::MultiplicativeNoise(_) => "multiplicative_noise",
            Transformation::RankSwap(_) => "rank_swap",
            Transformation::Pram(_) => "pram",
            Transformation::Permute => "permute",
        }
    }

    /// Whether it reads the attribute as numbers.
    pub fn is_numeric(&self) -> bool {
        matches!(
            self,
            Transformation::Microaggregation
                | Transformation::Noise(_)
                | Transformation::CorrelatedNoise(_)
                | Transformation::MultiplicativeNoise(_)
                | Transformation::RankSwap(_)
        )
    }

    /// Whether it adds noise (of any kind): its values may leave the input's range.
    pub fn is_noise(&self) -> bool {
        matches!(
            self,
            Transformation::Noise(_)
                | Transformation::CorrelatedNoise(_)
                | Transformation::MultiplicativeNoise(_)
        )
    }
}

/// Where a noisy attribute's published values must stay (the policy's `bounds`): reflected
/// into the range ([`super::noise::reflect_into`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum NoiseBounds {
    /// The input's own smallest and largest value.
    Observed,
    /// `[min, max]` as the policy gives them.
    Range(f64, f64),
}

/// PRAM's matrix: from a retention probability over the data's categories, or given.
#[derive(Debug, Clone, PartialEq)]
pub enum Pram {
    Retention {
        alpha: f64,
        invariant: bool,
    },
    Matrix {
        categories: Vec<String>,
        matrix: PramMatrix,
        invariant: bool,
    },
}

/// A numeric attribute read: its name, transformation and values (records kept only).
#[derive(Debug, Clone)]
pub struct NumericInput {
    pub name: String,
    pub transformation: Transformation,
    pub values: Vec<f64>,
    /// A noisy attribute's bounds, if the policy gives them.
    pub bounds: Option<NoiseBounds>,
}

/// A categorical attribute for PRAM: its name, matrix, the distinct values of the data
/// (sorted) and each kept record's code among them (`None` for NULL, which PRAM keeps).
#[derive(Debug, Clone)]
pub struct CategoricalInput {
    pub name: String,
    pub pram: Pram,
    pub values: Vec<String>,
    pub codes: Vec<Option<u32>>,
}

/// What to compute.
#[derive(Debug, Clone)]
pub struct ReleaseInput {
    pub numeric: Vec<NumericInput>,
    pub categorical: Vec<CategoricalInput>,
    /// Attributes exchanged within groups (their count; the caller holds their values).
    pub permuted: usize,
    /// Each kept record's stratum (with strata).
    pub strata: Option<Vec<u32>>,
    /// Microaggregation's settings and aggregate.
    pub micro: MicroOptions,
    pub aggregate: Aggregate,
    /// SDID's interval.
    pub disclosure_percent: f64,
    pub seed: u64,
}

/// A PRAM attribute published: the categories (the codes' labels), the codes, and the figures.
#[derive(Debug, Clone)]
pub struct CategoricalOutput {
    pub categories: Vec<String>,
    pub codes: Vec<Option<u32>>,
    pub report: PramReport,
}

/// What the report says of a PRAM attribute.
#[derive(Debug, Clone, Serialize)]
pub struct PramReport {
    pub attribute: String,
    pub invariant: bool,
    /// The categories, in the matrix's order.
    pub categories: Vec<String>,
    /// The transition matrix applied (after the invariant construction, if asked).
    pub matrix: Vec<Vec<f64>>,
    /// The published frequency of each category.
    pub published_counts: Vec<u64>,
    /// (Pᵀ)⁻¹ · published: the original frequencies estimated (absent when P is singular).
    pub estimated_counts: Option<Vec<f64>>,
    /// Records whose NULL PRAM kept.
    pub nulls_kept: u64,
    /// Its association with each other PRAMed attribute and each numeric attribute, before
    /// and after ([`super::association`]).
    pub associations: Vec<super::association::Association>,
}

/// The figures of a release's microaggregation.
#[derive(Debug, Clone, Serialize)]
pub struct MicroReport {
    pub algorithm: &'static str,
    pub aggregate: &'static str,
    pub k: usize,
    pub groups: usize,
    pub smallest_group: usize,
    pub blocks: usize,
    /// 100 · SSE / SST of the microaggregated attributes (standardized; the CASC figure).
    pub information_loss: f64,
}

/// Disclosure risk of the numeric perturbed attributes, each record against its original.
#[derive(Debug, Clone, Serialize)]
pub struct Risk {
    /// Distance-based record linkage: share of records whose nearest original is their own.
    pub dbrl: f64,
    /// Interval disclosure: share of records whose originals all lie within ± percent.
    pub sdid: f64,
    pub sdid_percent: f64,
}

/// The release computed.
#[derive(Debug, Clone)]
pub struct ReleaseOutput {
    /// Published values of each numeric attribute, in input order.
    pub numeric: Vec<Vec<f64>>,
    pub categorical: Vec<CategoricalOutput>,
    /// Per permuted attribute, each kept record's source record (a permutation inside groups).
    pub permutations: Vec<Vec<u32>>,
    /// Each kept record's microaggregation group, when microaggregated.
    pub groups: Option<Vec<u32>>,
    pub micro: Option<MicroReport>,
    /// What the utility and risk figures are measured on (absent without a numeric
    /// attribute): [`Measurement::measure`] them, on a thread of their own if wanted.
    pub measurement: Option<Measurement>,
    /// Each noisy attribute without bounds whose published values left the input's range:
    /// its name and how many values did (never a value).
    pub out_of_range: Vec<(String, u64)>,
}

/// The records the utility and risk of a release are measured on (at most
/// [`MEASURED_RECORDS`], see there), copied out of the release so that the full columns can
/// be freed, and the figures computed while the release is written.
#[derive(Debug, Clone)]
pub struct Measurement {
    names: Vec<String>,
    original: Vec<Vec<f64>>,
    published: Vec<Vec<f64>>,
    disclosure_percent: f64,
}

impl Measurement {
    /// The sampled records of `original` and `published` (one column per attribute, records
    /// aligned).
    pub fn new(
        names: Vec<String>,
        original: &[&[f64]],
        published: &[&[f64]],
        disclosure_percent: f64,
    ) -> Self {
        let n = original.first().map_or(0, |c| c.len());
        let stride = n.div_ceil(MEASURED_RECORDS).max(1);
        let sample =
            |values: &&[f64]| -> Vec<f64> { values.iter().step_by(stride).copied().collect() };
        Self {
            names,
            original: original.iter().map(sample).collect(),
            published: published.iter().map(sample).collect(),
            disclosure_percent,
        }
    }

    /// The utility and risk; SDID at ± `disclosure_percent` %.
    pub fn measure(&self) -> (Utility, Risk) {
        let original: Vec<&[f64]> = self.original.iter().map(Vec::as_slice).collect();
        let published: Vec<&[f64]> = self.published.iter().map(Vec::as_slice).collect();
        (
            utility(&self.names, &original, &published),
            Risk {
                dbrl: dbrl(&original, &published),
                sdid: interval_disclosure(&original, &published, self.disclosure_percent),
                sdid_percent: self.disclosure_percent,
            },
        )
    }
}

/// The utility and risk of `published` against `original` (one column per attribute,
/// records aligned), on at most [`MEASURED_RECORDS`] of them (see there); SDID at ±
/// `disclosure_percent` %.
pub fn measure(
    names: &[String],
    original: &[&[f64]],
    published: &[&[f64]],
    disclosure_percent: f64,
) -> (Utility, Risk) {
    Measurement::new(names.to_vec(), original, published, disclosure_percent).measure()
}

/// Utility and risk are measured on every record up to this many, beyond that on every
/// ⌈n / this⌉-th record (an evenly spaced sample of the input's order): the k-d tree of DBRL
/// and the copies stay bounded whatever n.
pub const MEASURED_RECORDS: usize = 1_000_000;

/// The stream of `purpose` (1 noise, 2 correlated noise, 3 swap, 4 PRAM, 5 permutation,
/// 6 multiplicative noise) for
/// attribute `index`.
fn stream(seed: u64, purpose: u64, index: usize) -> SplitMix64 {
    let mut mix = SplitMix64(seed ^ (purpose << 56) ^ ((index as u64) << 32));
    SplitMix64(mix.next_u64())
}

/// Applies every transformation (see the module docs); `describe_stratum` names a stratum for
/// errors.
pub fn compute(
    input: &ReleaseInput,
    describe_stratum: &dyn Fn(u32) -> String,
) -> Result<ReleaseOutput> {
    let n = input
        .numeric
        .first()
        .map(|c| c.values.len())
        .or_else(|| input.categorical.first().map(|c| c.codes.len()))
        .unwrap_or(0);
    let micro_columns: Vec<&[f64]> = input
        .numeric
        .iter()
        .filter(|c| c.transformation == Transformation::Microaggregation)
        .map(|c| c.values.as_slice())
        .collect();
    let mut micro = None;
    let mut group_of = None;
    // the microaggregated attributes' published values, in their order
    let mut aggregated: Vec<Vec<f64>> = Vec::new();
    if !micro_columns.is_empty() {
        if n < input.micro.k {
            return Err(DataFusionError::Plan(format!(
                "the table has {n} records to microaggregate, fewer than k = {}",
                input.micro.k
            )));
        }
        let groups = microaggregate(
            &micro_columns,
            input.strata.as_deref(),
            input.micro,
            describe_stratum,
        )?;
        let means = groups.means(&micro_columns);
        let information_loss = groups.information_loss_with_means(&micro_columns, &means);
        let d = micro_columns.len();
        let per_group = match input.aggregate {
            Aggregate::Mean => means,
            Aggregate::Median => {
                let medians: Vec<Vec<f64>> = micro_columns
                    .iter()
                    .map(|c| groups.aggregates(c, Aggregate::Median))
                    .collect();
                (0..groups.count)
                    .flat_map(|g| medians.iter().map(move |m| m[g]))
                    .collect()
            }
        };
        aggregated = groups.published(&per_group, d);
        micro = Some(MicroReport {
            algorithm: input.micro.algorithm.name(),
            aggregate: input.aggregate.name(),
            k: input.micro.k,
            groups: groups.count,
            smallest_group: groups.smallest(),
            blocks: groups.blocks,
            information_loss,
        });
        group_of = Some(groups);
    }
    // correlated noise: one joint draw
    let correlated_columns: Vec<&[f64]> = input
        .numeric
        .iter()
        .filter(|c| matches!(c.transformation, Transformation::CorrelatedNoise(_)))
        .map(|c| c.values.as_slice())
        .collect();
    let correlated_level = input.numeric.iter().find_map(|c| match c.transformation {
        Transformation::CorrelatedNoise(level) => Some(level),
        _ => None,
    });
    // every perturbation works within each stratum (the whole table without strata)
    let members = stratum_members(input.strata.as_deref());
    let mut correlated_out = match correlated_level {
        Some(level) => {
            let mut rng = stream(input.seed, 2, 0);
            stratified_columns(&correlated_columns, &members, |columns| {
                correlated(columns, level, &mut rng)
            })
        }
        None => Vec::new(),
    }
    .into_iter();
    // noise and swapping: each attribute on its own stream, so the attributes are spread over
    // the cores (one share per core, which bounds the buffers alive at once)
    let independent: Vec<(usize, &NumericInput)> = input
        .numeric
        .iter()
        .enumerate()
        .filter(|(_, c)| {
            matches!(
                c.transformation,
                Transformation::Noise(_)
                    | Transformation::MultiplicativeNoise(_)
                    | Transformation::RankSwap(_)
            )
        })
        .collect();
    let threads = crate::parallel::threads().min(independent.len()).max(1);
    let shares = (0..threads).map(|t| {
        independent
            .iter()
            .skip(t)
            .step_by(threads)
            .copied()
            .collect::<Vec<_>>()
    });
    let mut perturbed: Vec<Option<Vec<f64>>> = vec![None; input.numeric.len()];
    let results = crate::parallel::map_scoped("perturbing attributes", shares, |share| {
        share
            .into_iter()
            .map(|(index, column)| {
                let values = match column.transformation {
                    Transformation::Noise(level) => {
                        let mut rng = stream(input.seed, 1, index);
                        stratified(&column.values, &members, |v| {
                            Ok(additive(v, level, &mut rng))
                        })?
                    }
                    Transformation::MultiplicativeNoise(level) => {
                        let mut rng = stream(input.seed, 6, index);
                        stratified(&column.values, &members, |v| {
                            Ok(multiplicative(v, level, &mut rng))
                        })?
                    }
                    Transformation::RankSwap(p) => {
                        let mut rng = stream(input.seed, 3, index);
                        stratified(&column.values, &members, |v| rank_swap(v, p, &mut rng))?
                    }
                    _ => Vec::new(),
                };
                Ok((index, values))
            })
            .collect::<Result<Vec<_>>>()
    })?;
    for share in results {
        for (index, values) in share? {
            perturbed[index] = Some(values);
        }
    }
    let mut micro_index = 0;
    let mut numeric = Vec::with_capacity(input.numeric.len());
    let mut out_of_range = Vec::new();
    for (index, column) in input.numeric.iter().enumerate() {
        let published = match &column.transformation {
            Transformation::Microaggregation => {
                let values = aggregated
                    .get_mut(micro_index)
                    .map(std::mem::take)
                    .unwrap_or_default();
                micro_index += 1;
                values
            }
            Transformation::Noise(_)
            | Transformation::MultiplicativeNoise(_)
            | Transformation::RankSwap(_) => perturbed[index].take().unwrap_or_default(),
            Transformation::CorrelatedNoise(_) => correlated_out.next().unwrap_or_default(),
            Transformation::Pram(_) | Transformation::Permute => {
                return Err(DataFusionError::Internal(format!(
                    "attribute '{}' is not numeric in the perturbation",
                    column.name
                )));
            }
        };
        let mut published = published;
        if column.transformation.is_noise() {
            let (low, high) = match column.bounds {
                Some(NoiseBounds::Range(low, high)) => (low, high),
                _ => observed_range(&column.values),
            };
            if column.bounds.is_some() {
                for value in published.iter_mut().filter(|v| !v.is_nan()) {
                    *value = reflect_into(*value, low, high);
                }
            } else {
                let outside = published.iter().filter(|&&v| v < low || v > high).count() as u64;
                if outside > 0 {
                    out_of_range.push((column.name.clone(), outside));
                }
            }
        }
        numeric.push(published);
    }
    let mut categorical = input
        .categorical
        .iter()
        .enumerate()
        .map(|(index, c)| pram_stratified(c, &members, &mut stream(input.seed, 4, index)))
        .collect::<Result<Vec<_>>>()?;
    pram_associations(input, &numeric, &mut categorical);
    let permutations = match &group_of {
        Some(groups) if input.permuted > 0 => {
            let members = groups.members();
            (0..input.permuted)
                .map(|index| {
                    let mut rng = stream(input.seed, 5, index);
                    let mut source: Vec<u32> = (0..n as u32).collect();
                    for group in &members {
                        // Fisher–Yates over the group's members
                        let mut shuffled = group.clone();
                        for i in (1..shuffled.len()).rev() {
                            let j = rng.below(i as u64 + 1) as usize;
                            shuffled.swap(i, j);
                        }
                        for (&to, &from) in group.iter().zip(&shuffled) {
                            source[to as usize] = from;
                        }
                    }
                    source
                })
                .collect()
        }
        _ => Vec::new(),
    };
    let measurement = (!input.numeric.is_empty() && n > 0).then(|| {
        let names: Vec<String> = input.numeric.iter().map(|c| c.name.clone()).collect();
        let original: Vec<&[f64]> = input.numeric.iter().map(|c| c.values.as_slice()).collect();
        let published: Vec<&[f64]> = numeric.iter().map(Vec::as_slice).collect();
        Measurement::new(names, &original, &published, input.disclosure_percent)
    });
    Ok(ReleaseOutput {
        numeric,
        categorical,
        permutations,
        groups: group_of.map(|g| g.of_record),
        micro,
        measurement,
        out_of_range,
    })
}

/// The records of each stratum, in stratum order; none without strata (the whole table is
/// then perturbed at once, with no copy).
fn stratum_members(strata: Option<&[u32]>) -> Vec<Vec<u32>> {
    let Some(strata) = strata else {
        return Vec::new();
    };
    let count = strata.iter().max().map_or(0, |&s| s as usize + 1);
    let mut members = vec![Vec::new(); count];
    for (record, &stratum) in strata.iter().enumerate() {
        members[stratum as usize].push(record as u32);
    }
    members
}

/// `perturb` applied to each stratum's values of `values` on its own (in stratum order, so a
/// seed means the same draws), the results put back in place. One stratum or none: `values`
/// itself.
fn stratified(
    values: &[f64],
    members: &[Vec<u32>],
    mut perturb: impl FnMut(&[f64]) -> Result<Vec<f64>>,
) -> Result<Vec<f64>> {
    if members.len() <= 1 {
        return perturb(values);
    }
    let mut out = vec![0.0; values.len()];
    for group in members {
        let part: Vec<f64> = group.iter().map(|&r| values[r as usize]).collect();
        for (&r, value) in group.iter().zip(perturb(&part)?) {
            out[r as usize] = value;
        }
    }
    Ok(out)
}

/// [`stratified`] for the columns of one joint draw (correlated noise).
fn stratified_columns(
    columns: &[&[f64]],
    members: &[Vec<u32>],
    mut perturb: impl FnMut(&[&[f64]]) -> Vec<Vec<f64>>,
) -> Vec<Vec<f64>> {
    if members.len() <= 1 {
        return perturb(columns);
    }
    let n = columns.first().map_or(0, |c| c.len());
    let mut out = vec![vec![0.0; n]; columns.len()];
    for group in members {
        let parts: Vec<Vec<f64>> = columns
            .iter()
            .map(|c| group.iter().map(|&r| c[r as usize]).collect())
            .collect();
        let part_refs: Vec<&[f64]> = parts.iter().map(Vec::as_slice).collect();
        for (column, perturbed) in out.iter_mut().zip(perturb(&part_refs)) {
            for (&r, value) in group.iter().zip(perturbed) {
                column[r as usize] = value;
            }
        }
    }
    out
}

/// PRAM of `input` within each stratum: the matrix (invariant, by the stratum's own
/// frequencies) applied to each stratum's records on their own. With several strata the
/// report sums the published counts and gives no estimate (each stratum had its own matrix),
/// and `matrix` is P, the matrix as the policy gives it.
fn pram_stratified(
    input: &CategoricalInput,
    members: &[Vec<u32>],
    rng: &mut SplitMix64,
) -> Result<CategoricalOutput> {
    if members.len() <= 1 {
        return pram_attribute(input, rng);
    }
    let mut codes = vec![None; input.codes.len()];
    let mut summed: Option<PramReport> = None;
    let mut categories = Vec::new();
    for group in members {
        let part = CategoricalInput {
            name: input.name.clone(),
            pram: input.pram.clone(),
            values: input.values.clone(),
            codes: group.iter().map(|&r| input.codes[r as usize]).collect(),
        };
        let output = pram_attribute(&part, rng)?;
        for (&r, code) in group.iter().zip(&output.codes) {
            codes[r as usize] = *code;
        }
        categories = output.categories;
        summed = Some(match summed {
            None => output.report,
            Some(mut report) => {
                for (total, count) in report
                    .published_counts
                    .iter_mut()
                    .zip(&output.report.published_counts)
                {
                    *total += count;
                }
                report.nulls_kept += output.report.nulls_kept;
                report
            }
        });
    }
    let mut report = summed.ok_or_else(|| {
        DataFusionError::Internal(format!("attribute '{}': no stratum", input.name))
    })?;
    // each stratum applied its own matrix (R by its own frequencies): the report gives P
    report.matrix = match &input.pram {
        Pram::Retention { alpha, .. } => PramMatrix::with_retention(categories.len(), *alpha)
            .map_err(|e| DataFusionError::Plan(format!("attribute '{}': {e}", input.name)))?
            .rows(),
        Pram::Matrix { matrix, .. } => matrix.rows(),
    };
    report.estimated_counts = None;
    Ok(CategoricalOutput {
        categories,
        codes,
        report,
    })
}

/// The smallest and largest value of `values` (NaN left out); `(0, 0)` for none.
fn observed_range(values: &[f64]) -> (f64, f64) {
    let (low, high) = values
        .iter()
        .filter(|v| !v.is_nan())
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), &v| {
            (l.min(v), h.max(v))
        });
    if low > high { (0.0, 0.0) } else { (low, high) }
}

/// Each PRAMed attribute's association with every other PRAMed attribute (Cramér's V) and
/// every numeric attribute (η), on the original records and on the published ones
/// ([`super::association`]): how far PRAM weakened what an analyst would find.
fn pram_associations(
    input: &ReleaseInput,
    numeric: &[Vec<f64>],
    categorical: &mut [CategoricalOutput],
) {
    use super::association::{Association, correlation_ratio, cramers_v};
    let published = |i: usize| categorical[i].codes.as_slice();
    let associations: Vec<Vec<Association>> = (0..categorical.len())
        .map(|i| {
            let original = &input.categorical[i].codes;
            let with_categories = input
                .categorical
                .iter()
                .enumerate()
                .filter(|&(j, _)| j != i)
                .map(|(j, other)| Association {
                    with: other.name.clone(),
                    measure: "cramers_v",
                    before: cramers_v(original, &other.codes),
                    after: cramers_v(published(i), published(j)),
                });
            let with_numbers =
                input
                    .numeric
                    .iter()
                    .zip(numeric)
                    .map(|(column, values)| Association {
                        with: column.name.clone(),
                        measure: "eta",
                        before: correlation_ratio(original, &column.values),
                        after: correlation_ratio(published(i), values),
                    });
            with_categories.chain(with_numbers).collect()
        })
        .collect();
    for (output, associations) in categorical.iter_mut().zip(associations) {
        output.report.associations = associations;
    }
}

/// PRAM on one attribute.
fn pram_attribute(input: &CategoricalInput, rng: &mut SplitMix64) -> Result<CategoricalOutput> {
    let error =
        |message: String| DataFusionError::Plan(format!("attribute '{}': {message}", input.name));
    // the matrix's categories, and each data value's code among them
    let (categories, codes, matrix, invariant) = match &input.pram {
        Pram::Retention { alpha, invariant } => {
            let matrix = PramMatrix::with_retention(input.values.len(), *alpha).map_err(error)?;
            (
                input.values.clone(),
                input.codes.clone(),
                matrix,
                *invariant,
            )
        }
        Pram::Matrix {
            categories,
            matrix,
            invariant,
        } => {
            let position: std::collections::HashMap<&str, u32> = categories
                .iter()
                .enumerate()
                .map(|(i, c)| (c.as_str(), i as u32))
                .collect();
            let remap: Vec<Option<u32>> = input
                .values
                .iter()
                .map(|v| position.get(v.as_str()).copied())
                .collect();
            let missing = remap.iter().filter(|r| r.is_none()).count();
            if missing > 0 {
                return Err(error(format!(
                    "{missing} value(s) of the data are not among the PRAM matrix's categories"
                )));
            }
            let codes = input
                .codes
                .iter()
                .map(|c| c.and_then(|c| remap[c as usize]))
                .collect();
            (categories.clone(), codes, matrix.clone(), *invariant)
        }
    };
    let m = categories.len();
    let mut counts = vec![0u64; m];
    for c in codes.iter().flatten() {
        counts[*c as usize] += 1;
    }
    let matrix = if invariant {
        matrix.invariant(&counts)
    } else {
        matrix
    };
    let present: Vec<u32> = codes.iter().flatten().copied().collect();
    let drawn = matrix.apply(&present, rng);
    let mut drawn = drawn.into_iter();
    let published: Vec<Option<u32>> = codes.iter().map(|c| c.and_then(|_| drawn.next())).collect();
    let mut published_counts = vec![0u64; m];
    for c in published.iter().flatten() {
        published_counts[*c as usize] += 1;
    }
    let report = PramReport {
        attribute: input.name.clone(),
        invariant,
        categories: categories.clone(),
        matrix: matrix.rows(),
        estimated_counts: matrix.estimate(&published_counts),
        published_counts,
        nulls_kept: codes.iter().filter(|c| c.is_none()).count() as u64,
        associations: Vec::new(),
    };
    Ok(CategoricalOutput {
        categories,
        codes: published,
        report,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::perturb::MicroAlgorithm;

    fn input(numeric: Vec<NumericInput>, seed: u64) -> ReleaseInput {
        ReleaseInput {
            numeric,
            categorical: Vec::new(),
            permuted: 1,
            strata: None,
            micro: MicroOptions {
                k: 3,
                algorithm: MicroAlgorithm::Refined,
                block_rows: 5_000,
            },
            aggregate: Aggregate::Mean,
            disclosure_percent: 10.0,
            seed,
        }
    }

    fn column(name: &str, transformation: Transformation, values: Vec<f64>) -> NumericInput {
        NumericInput {
            name: name.into(),
            transformation,
            values,
            bounds: None,
        }
    }

    /// Properties on random data: every group ≥ k, every published value is its group's
    /// mean, a permutation stays inside its group, and the same seed gives the same release.
    #[test]
    fn microaggregated_values_are_their_groups_means_and_permutations_stay_inside_groups() {
        let mut rng = SplitMix64(1);
        for case in 0..10 {
            let n = 50 + case * 31;
            let a: Vec<f64> = (0..n).map(|_| rng.unit() * 100.0).collect();
            let b: Vec<f64> = (0..n).map(|_| (rng.below(50)) as f64).collect();
            let make = || {
                input(
                    vec![
                        column("a", Transformation::Microaggregation, a.clone()),
                        column("b", Transformation::Microaggregation, b.clone()),
                    ],
                    case as u64,
                )
            };
            let out = compute(&make(), &|_| String::new()).unwrap();
            let groups = out.groups.clone().unwrap();
            let count = groups.iter().max().map_or(0, |g| *g as usize + 1);
            let mut members = vec![Vec::new(); count];
            for (i, &g) in groups.iter().enumerate() {
                members[g as usize].push(i);
            }
            for m in &members {
                assert!(m.len() >= 3);
                for (original, published) in [(&a, &out.numeric[0]), (&b, &out.numeric[1])] {
                    let mean = m.iter().map(|&i| original[i]).sum::<f64>() / m.len() as f64;
                    for &i in m {
                        assert!((published[i] - mean).abs() < 1e-9);
                    }
                }
            }
            for (i, &from) in out.permutations[0].iter().enumerate() {
                assert_eq!(groups[i], groups[from as usize]);
            }
            let again = compute(&make(), &|_| String::new()).unwrap();
            assert_eq!(out.numeric, again.numeric);
            assert_eq!(out.permutations, again.permutations);
        }
    }

    #[test]
    fn k_larger_than_the_table_is_refused() {
        let data = input(
            vec![column(
                "a",
                Transformation::Microaggregation,
                vec![1.0, 2.0],
            )],
            1,
        );
        let error = compute(&data, &|_| String::new()).unwrap_err();
        assert!(
            error
                .to_string()
                .contains("2 records to microaggregate, fewer than k = 3"),
            "{error}"
        );
    }
}
