//! The equivalence classes of the input and their anonymity figures.
//!
//! One aggregation `GROUP BY q1..qd` gives the class sizes and, for each
//! sensitive attribute s with few values (found first by `GROUP BY s`, one column), the
//! class's histogram of s over those values (an internal aggregate, [`super::histogram`]):
//! one scan for all of them, #classes rows out. An attribute with many values (or floating point) takes a
//! frequency set `GROUP BY q1..qd, s` of its own, whose rows are matched to the classes in
//! Rust, and so does the person id ([`class_persons`], which stays within the memory limit).
//! The per-class figures are then computed from the histograms.

use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, RecordBatch};
use datafusion::arrow::compute::{SortOptions, cast, concat_batches, sort_to_indices};
use datafusion::arrow::datatypes::{DataType, Int64Type};
use datafusion::error::{DataFusionError, Result};
use datafusion::functions_aggregate::expr_fn::count;
use datafusion::logical_expr::{Expr, ident};
use datafusion::physical_plan::{collect, execute_stream};
use datafusion::prelude::{DataFrame, SessionContext};
use futures::StreamExt;

use super::attacks::Tally;
use super::histogram::histogram_udaf;
use super::keys::KeyInterner;
use super::{Anonymity, ProfileOptions, RiskyClass, SensitiveFigures, SizeBucket, label, table};
use crate::functions::common::{decode_dictionary, is_ordered};
use crate::functions::formulas::{
    OrderedDomain, entropy_l, equal_emd, ordered_emd, range_share, recursive_l,
};
use crate::search::persons::PersonCount;

/// Name of the row count column of the aggregations.
const COUNT: &str = "__anon_rows";

/// `count(*)` (as `count(1)`, which DataFusion plans the same way).
pub(crate) fn count_rows() -> Expr {
    count(datafusion::prelude::lit(1i64)).alias(COUNT)
}

/// The equivalence classes of the input: ids in the order the aggregation returned them.
pub(crate) struct ClassData {
    /// The classes' quasi-identifier values, one array per quasi-identifier (class id = row).
    pub keys: Vec<ArrayRef>,
    /// Rows per class.
    pub sizes: Vec<u64>,
    /// Distinct persons per class (with a person id).
    pub persons: Option<Vec<u64>>,
    /// Figures per sensitive attribute.
    pub sensitive: Vec<SensitiveFigures>,
    /// max_v c_E(v) of the first sensitive attribute per class (NULL a label of its own).
    pub top_counts: Option<Vec<u64>>,
}

/// The rows of a frequency set `(class, value, count)`.
#[derive(Default)]
struct Entries {
    class: Vec<u32>,
    value: Vec<u32>,
    count: Vec<u64>,
}

/// The counts of a result column of `count(...)`.
fn counts(batch: &RecordBatch, index: usize) -> Result<&[i64]> {
    batch
        .column(index)
        .as_primitive_opt::<Int64Type>()
        .map(|a| a.values().as_ref())
        .ok_or_else(|| DataFusionError::Internal("a count is not Int64".into()))
}

fn qi_exprs(options: &ProfileOptions) -> Vec<Expr> {
    options.quasi_identifiers.iter().map(ident).collect()
}

/// Sensitive attributes with at most this many distinct values (and not floating point,
/// whose NaN and -0.0 make value equality delicate) get their per-class histogram as one
/// aggregate of the class aggregation (a dense array of counts per class, so the limit bounds
/// its memory): one scan for every such attribute. The others get a `GROUP BY qi, s` of their
/// own.
const FILTERED_VALUES: usize = 64;

/// The distinct values of a sensitive attribute (NULL included) and the table's counts.
struct Domain {
    values: ArrayRef,
    /// Whether the histogram comes from filtered counts of the class aggregation.
    filtered: bool,
}

/// The distinct persons of each class (`classes` interns the classes' keys), counted as
/// `k_anonymity(person_id)` counts them: a NULL id may be any person of its class, so it adds
/// none, except that a class of NULL ids only is one person.
///
/// Counted from `GROUP BY q1..qd, person` streamed batch by batch, one (class, person) pair a
/// row: an aggregation of plain counts, which spills to disk under the memory pool, where a
/// `count(DISTINCT person)` per class would keep a set of persons per class in memory (6.5 GB
/// for 500,000 rows whatever `--memory-limit`). Only the class ids and two counters per
/// class stay in memory.
async fn class_persons(
    input: &DataFrame,
    options: &ProfileOptions,
    person: &str,
    classes: &KeyInterner,
) -> Result<Vec<u64>> {
    let d = options.quasi_identifiers.len();
    let mut group = qi_exprs(options);
    group.push(ident(person));
    let frame = input.clone().aggregate(group, vec![count_rows()])?;
    let mut known = vec![0u64; classes.len()];
    let mut nulls = vec![false; classes.len()];
    let mut stream = frame.execute_stream().await?;
    while let Some(batch) = stream.next().await {
        let batch = batch?;
        let persons = batch.column(d);
        for (row, id) in classes
            .lookup(&batch.columns()[..d])?
            .into_iter()
            .enumerate()
        {
            let class = id.ok_or_else(|| {
                DataFusionError::Internal(format!(
                    "a class of '{}' appeared between two aggregations",
                    label(options)
                ))
            })? as usize;
            if persons.is_null(row) {
                nulls[class] = true;
            } else {
                known[class] += 1;
            }
        }
    }
    Ok(known
        .into_iter()
        .zip(nulls)
        .map(|(known, nulls)| PersonCount { known, nulls }.persons())
        .collect())
}

impl ClassData {
    /// Runs the aggregations of the input's classes.
    pub async fn compute(ctx: &SessionContext, options: &ProfileOptions) -> Result<Self> {
        let input = table(ctx, &options.table, "input").await?;
        let d = options.quasi_identifiers.len();

        // each sensitive attribute's distinct values (reads one column each)
        let domains = futures::future::try_join_all(options.sensitive.iter().map(|s| {
            let frame = input.clone().aggregate(vec![ident(s)], vec![count_rows()]);
            let progress = options.progress.as_ref().map(|p| Arc::clone(&p.values));
            async move {
                let frame = frame?;
                let schema = Arc::new(frame.schema().as_arrow().clone());
                let task_ctx = Arc::new(frame.task_ctx());
                let plan = frame.create_physical_plan().await?;
                let _watch = progress.map(|p| crate::progress::watch(Arc::clone(&plan), p));
                let batches = collect(plan, task_ctx).await?;
                let values = concat_batches(&schema, &batches)?.column(0).clone();
                let value_type = decode_dictionary(values.data_type());
                let filtered = values.len() <= FILTERED_VALUES && !value_type.is_floating();
                Ok::<_, DataFusionError>(Domain { values, filtered })
            }
        }))
        .await?;

        // the class aggregation: rows, filtered histograms
        let mut aggregates = vec![count_rows()];
        let histograms_at = aggregates.len();
        for (index, (attribute, domain)) in options.sensitive.iter().zip(&domains).enumerate() {
            if domain.filtered {
                aggregates.push(
                    histogram_udaf(Arc::clone(&domain.values))
                        .call(vec![ident(attribute)])
                        .alias(format!("__anon_histogram_{index}")),
                );
            }
        }
        let frame = input.clone().aggregate(qi_exprs(options), aggregates)?;
        let key_schema = Arc::new(
            frame
                .schema()
                .as_arrow()
                .project(&(0..d).collect::<Vec<_>>())?,
        );
        let mut data = Self {
            keys: Vec::new(),
            sizes: Vec::new(),
            persons: options.person_id.as_ref().map(|_| Vec::new()),
            sensitive: Vec::new(),
            top_counts: None,
        };
        let mut entries: Vec<Entries> = domains.iter().map(|_| Entries::default()).collect();
        let mut key_batches = Vec::new();
        let task_ctx = Arc::new(frame.task_ctx());
        let plan = frame.create_physical_plan().await?;
        let _watch = options
            .progress
            .as_ref()
            .map(|p| crate::progress::watch(Arc::clone(&plan), Arc::clone(&p.classes)));
        let mut stream = execute_stream(plan, task_ctx)?;
        // the groups of the aggregation are the classes: class id = row number, no hashing
        while let Some(batch) = stream.next().await {
            let batch = batch?;
            let first = data.sizes.len() as u32;
            let rows = counts(&batch, d)?;
            data.sizes.extend(rows.iter().map(|&c| c as u64));
            let mut column = d + histograms_at;
            for (domain, entries) in domains.iter().zip(&mut entries) {
                if !domain.filtered {
                    continue;
                }
                let m = domain.values.len();
                let lists = batch.column(column).as_list::<i32>();
                let offsets = lists.value_offsets();
                let values = lists
                    .values()
                    .as_primitive::<datafusion::arrow::datatypes::UInt64Type>()
                    .values();
                // class by class, so the entries come grouped by class
                for (i, &offset) in offsets[..batch.num_rows()].iter().enumerate() {
                    let start = offset as usize;
                    for (v, &c) in values[start..start + m].iter().enumerate() {
                        if c > 0 {
                            entries.class.push(first + i as u32);
                            entries.value.push(v as u32);
                            entries.count.push(c);
                        }
                    }
                }
                column += 1;
            }
            key_batches.push(batch.project(&(0..d).collect::<Vec<_>>())?);
        }
        let keys = concat_batches(&key_schema, &key_batches)?;
        drop(key_batches);
        data.keys = keys.columns().to_vec();

        let mut interner = None;
        if let Some(person) = &options.person_id {
            let classes = interner.insert(data.interner()?);
            data.persons = Some(class_persons(&input, options, person, classes).await?);
        }

        // the other sensitive attributes: a frequency set each
        for ((attribute, domain), entries) in
            options.sensitive.iter().zip(&domains).zip(&mut entries)
        {
            if domain.filtered {
                continue;
            }
            if interner.is_none() {
                interner = Some(data.interner()?);
            }
            let classes = interner
                .as_ref()
                .ok_or_else(|| DataFusionError::Internal("no class interner".into()))?;
            let mut group = qi_exprs(options);
            group.push(ident(attribute));
            let frame = input.clone().aggregate(group, vec![count_rows()])?;
            let mut values = KeyInterner::new(std::slice::from_ref(domain.values.data_type()))?;
            let mut value_ids = Vec::new();
            values.intern(std::slice::from_ref(&domain.values), &mut value_ids)?;
            let mut stream = frame.execute_stream().await?;
            while let Some(batch) = stream.next().await {
                let batch = batch?;
                for id in classes.lookup(&batch.columns()[..d])? {
                    entries.class.push(id.ok_or_else(|| {
                        DataFusionError::Internal(format!(
                            "a class of '{}' appeared between two aggregations",
                            label(options)
                        ))
                    })?);
                }
                for id in values.lookup(&batch.columns()[d..d + 1])? {
                    entries.value.push(id.ok_or_else(|| {
                        DataFusionError::Internal(format!(
                            "a value of '{attribute}' appeared between two aggregations"
                        ))
                    })?);
                }
                entries
                    .count
                    .extend(counts(&batch, d + 1)?.iter().map(|&c| c as u64));
            }
        }

        let classes = data.classes();
        for (index, ((attribute, domain), entries)) in options
            .sensitive
            .iter()
            .zip(&domains)
            .zip(&entries)
            .enumerate()
        {
            let (figures, top) = sensitive_figures(
                attribute,
                entries,
                &domain.values,
                classes,
                options.recursive_c,
                options.background_values,
            )?;
            data.sensitive.push(figures);
            if index == 0 {
                data.top_counts = Some(top);
            }
        }
        Ok(data)
    }

    /// An interner of the classes' keys (ids = class ids), to find classes by value.
    pub fn interner(&self) -> Result<KeyInterner> {
        let types: Vec<DataType> = self.keys.iter().map(|k| k.data_type().clone()).collect();
        let mut interner = KeyInterner::new(&types)?;
        let mut ids = Vec::with_capacity(self.classes());
        interner.intern(&self.keys, &mut ids)?;
        if interner.len() != self.classes() {
            return Err(DataFusionError::Internal(
                "two groups of the class aggregation have the same key".into(),
            ));
        }
        Ok(interner)
    }

    /// Rows of the input.
    pub fn rows(&self) -> u64 {
        self.sizes.iter().sum()
    }

    /// Number of classes.
    pub fn classes(&self) -> usize {
        self.sizes.len()
    }

    /// The size used for risk: persons with a person id (fewer, hence riskier), else rows.
    pub fn risk_sizes(&self) -> &[u64] {
        self.persons.as_deref().unwrap_or(&self.sizes)
    }

    /// The anonymity section of the report.
    pub fn anonymity(&self) -> Anonymity {
        let k = self.sizes.iter().copied().min().unwrap_or(0);
        let k_persons = self
            .persons
            .as_ref()
            .map(|p| p.iter().copied().min().unwrap_or(0));
        let sample_uniques = self.sizes.iter().filter(|&&s| s == 1).count() as u64;
        Anonymity {
            classes: self.classes() as u64,
            k,
            k_persons,
            sample_uniques,
            class_sizes: size_buckets(&self.sizes),
            sensitive: self.sensitive.clone(),
        }
    }

    /// Whether each class is the suppressed one: every quasi-identifier is `*`.
    pub fn suppressed(&self) -> Result<Vec<bool>> {
        let keys = &self.keys;
        let mut suppressed = vec![true; self.classes()];
        for column in keys {
            let text = cast(column, &DataType::Utf8)?;
            let text = text.as_string::<i32>();
            for (class, flag) in suppressed.iter_mut().enumerate() {
                *flag &= text.is_valid(class) && text.value(class) == crate::generalize::TOP_LABEL;
            }
        }
        Ok(suppressed)
    }

    /// The `limit` riskiest classes (smallest first; ties in class order) with their values.
    pub fn risky_classes(&self, limit: usize) -> Result<Vec<RiskyClass>> {
        let sizes = self.risk_sizes();
        let mut ids: Vec<u32> = (0..self.classes() as u32).collect();
        ids.sort_by_key(|&id| (sizes[id as usize], id));
        ids.truncate(limit);
        let indices = datafusion::arrow::array::UInt32Array::from(ids.clone());
        let keys = self
            .keys
            .iter()
            .map(|k| datafusion::arrow::compute::take(k, &indices, None))
            .collect::<std::result::Result<Vec<_>, _>>()?;
        let text = keys
            .iter()
            .map(|column| cast(column, &DataType::Utf8))
            .collect::<std::result::Result<Vec<_>, _>>()?;
        Ok(ids
            .iter()
            .enumerate()
            .map(|(row, &id)| RiskyClass {
                rows: self.sizes[id as usize],
                values: text
                    .iter()
                    .map(|column| {
                        let column = column.as_string::<i32>();
                        column.is_valid(row).then(|| column.value(row).to_string())
                    })
                    .collect(),
            })
            .collect())
    }
}

/// [`size_buckets`] of the classes of `ids`, each the dense class id of one row (a
/// microaggregation group, a cloaking label): rows counted per id, then bucketed.
pub(crate) fn size_buckets_of_ids(ids: impl IntoIterator<Item = u32>) -> Vec<SizeBucket> {
    let mut sizes: Vec<u64> = Vec::new();
    for id in ids {
        let id = id as usize;
        if id >= sizes.len() {
            sizes.resize(id + 1, 0);
        }
        sizes[id] += 1;
    }
    sizes.retain(|&size| size > 0);
    size_buckets(&sizes)
}

/// Classes and rows by class size 1, 2, 3–4, 5–9, 10+.
pub(crate) fn size_buckets(sizes: &[u64]) -> Vec<SizeBucket> {
    const RANGES: [(u64, Option<u64>, &str); 5] = [
        (1, Some(1), "1"),
        (2, Some(2), "2"),
        (3, Some(4), "3-4"),
        (5, Some(9), "5-9"),
        (10, None, "10+"),
    ];
    let mut buckets: Vec<SizeBucket> = RANGES
        .iter()
        .map(|&(min, max, size)| SizeBucket {
            size: size.to_string(),
            min,
            max,
            classes: 0,
            rows: 0,
        })
        .collect();
    for &size in sizes {
        let index = match size {
            0 | 1 => 0,
            2 => 1,
            3..=4 => 2,
            5..=9 => 3,
            _ => 4,
        };
        buckets[index].classes += 1;
        buckets[index].rows += size;
    }
    buckets
}

/// The worst-class figures of one sensitive attribute from its frequency set (with the
/// homogeneity and background-knowledge attacks for up to `background_values` values ruled
/// out), and the per-class count of the most frequent value (NULL a value of its own; for the
/// classification metric).
fn sensitive_figures(
    attribute: &str,
    entries: &Entries,
    value_keys: &ArrayRef,
    classes: usize,
    recursive_c: f64,
    background_values: usize,
) -> Result<(SensitiveFigures, Vec<u64>)> {
    let values = value_keys.len();
    let null_value = (0..values).find(|&v| value_keys.is_null(v));

    // the table's distribution of s
    let mut table_counts = vec![0u64; values];
    for (&v, &c) in entries.value.iter().zip(&entries.count) {
        table_counts[v as usize] += c;
    }
    let n: u64 = table_counts.iter().sum();
    let nf = n as f64;

    // rows of the frequency set grouped by class (a counting sort)
    let mut starts = vec![0usize; classes + 1];
    for &class in &entries.class {
        starts[class as usize + 1] += 1;
    }
    for i in 0..classes {
        starts[i + 1] += starts[i];
    }
    let mut fill = starts.clone();
    let mut by_class = vec![(0u32, 0u64); entries.class.len()];
    for ((&class, &v), &c) in entries.class.iter().zip(&entries.value).zip(&entries.count) {
        let slot = &mut fill[class as usize];
        by_class[*slot] = (v, c);
        *slot += 1;
    }

    let ordered = is_ordered(&decode_dictionary(value_keys.data_type()));
    // ordered domain: NULL first, NaN after every number (as `t_closeness_ordered`)
    let (positions, domain, numbers, table_range) = if ordered {
        let order = sort_to_indices(
            value_keys,
            Some(SortOptions {
                descending: false,
                nulls_first: true,
            }),
            None,
        )?;
        let mut positions = vec![0usize; values];
        let mut sorted_counts = Vec::with_capacity(values);
        for (position, &v) in order.values().iter().enumerate() {
            positions[v as usize] = position;
            sorted_counts.push(table_counts[v as usize]);
        }
        let numbers = super::ordered_as_f64(value_keys)?;
        let (min, max) = numbers
            .iter()
            .flatten()
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &x| {
                (lo.min(x), hi.max(x))
            });
        let range = if max > min { max - min } else { 0.0 };
        (
            positions,
            Some(OrderedDomain::new(&sorted_counts)),
            numbers,
            range,
        )
    } else {
        (Vec::new(), None, Vec::new(), 0.0)
    };

    let mut worst = Worst::new();
    let mut attacks = Tally::new(background_values);
    let mut top_counts = vec![0u64; classes];
    let (mut non_null, mut emd_pairs, mut ordered_pairs) = (Vec::new(), Vec::new(), Vec::new());
    for class in 0..classes {
        let slice = &by_class[starts[class]..starts[class + 1]];
        let size: u64 = slice.iter().map(|&(_, c)| c).sum();
        if size == 0 {
            continue;
        }
        let size_f = size as f64;
        non_null.clear();
        emd_pairs.clear();
        ordered_pairs.clear();
        let mut nulls = 0;
        let mut top = 0;
        let mut beta: f64 = 0.0;
        let mut over_cap = false;
        let mut delta: f64 = 0.0;
        let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
        for &(v, c) in slice {
            top = top.max(c);
            if Some(v as usize) == null_value {
                nulls = c;
            } else {
                non_null.push(c);
            }
            let tc = table_counts[v as usize];
            emd_pairs.push((tc, c));
            let (pe, pt) = (c as f64 / size_f, tc as f64 / nf);
            if pe > pt {
                let d = (pe - pt) / pt;
                beta = beta.max(d);
                over_cap |= d > -pt.ln();
            }
            delta = delta.max((pe / pt).ln().abs());
            if ordered {
                ordered_pairs.push((positions[v as usize], c));
                if let Some(x) = numbers[v as usize] {
                    lo = lo.min(x);
                    hi = hi.max(x);
                }
            }
        }
        top_counts[class] = top;
        // NULLs join the most frequent value (the worst case for l and α)
        let (l, el, rl, alpha) = if non_null.is_empty() {
            (1, 1.0, 1, 1.0)
        } else {
            let (index, &max) = non_null
                .iter()
                .enumerate()
                .max_by_key(|&(_, c)| *c)
                .unwrap_or((0, &0));
            let alpha = (max + nulls) as f64 / size_f;
            non_null[index] += nulls;
            let distinct = non_null.len() as u64;
            let el = entropy_l(&non_null);
            let rl = recursive_l(&mut non_null, recursive_c) as u64;
            (distinct, el, rl, alpha)
        };
        worst.l = worst.l.min(l);
        // the class's l is its d of the attacks: NULLs joined the most frequent value
        attacks.add(l, size);
        worst.el = worst.el.min(el);
        worst.rl = worst.rl.min(rl);
        worst.alpha = worst.alpha.max(alpha);
        worst.t = worst.t.max(equal_emd(&emd_pairs, size, n));
        if let Some(domain) = &domain {
            ordered_pairs.sort_unstable_by_key(|&(p, _)| p);
            worst.t_ordered = worst
                .t_ordered
                .max(ordered_emd(domain, &ordered_pairs, size));
            worst.tuple = worst.tuple.min(range_share(lo, hi, table_range));
        }
        worst.beta = worst.beta.max(beta);
        worst.over_cap += u64::from(over_cap);
        worst.delta = worst.delta.max(delta);
        worst.missing += u64::from(slice.len() < values);
    }
    let (homogeneity, background_knowledge) = attacks.finish();
    let figures = SensitiveFigures {
        attribute: attribute.to_string(),
        ordered,
        distinct_values: values as u64,
        l_distinct: worst.l,
        l_entropy: worst.el,
        l_recursive: worst.rl,
        recursive_c,
        t_equal: worst.t,
        t_ordered: ordered.then_some(worst.t_ordered),
        alpha: worst.alpha,
        beta: worst.beta,
        beta_enhanced: (worst.over_cap == 0).then_some(worst.beta),
        beta_enhanced_classes_over_cap: worst.over_cap,
        delta: worst.delta,
        delta_classes_missing_values: worst.missing,
        tuple_diversity: ordered.then_some(if worst.tuple.is_finite() {
            worst.tuple
        } else {
            0.0
        }),
        homogeneity,
        background_knowledge,
    };
    Ok((figures, top_counts))
}

/// Running worst values over the classes.
struct Worst {
    l: u64,
    el: f64,
    rl: u64,
    t: f64,
    t_ordered: f64,
    alpha: f64,
    beta: f64,
    over_cap: u64,
    delta: f64,
    missing: u64,
    tuple: f64,
}

impl Worst {
    fn new() -> Self {
        Self {
            l: u64::MAX,
            el: f64::INFINITY,
            rl: u64::MAX,
            t: 0.0,
            t_ordered: 0.0,
            alpha: 0.0,
            beta: 0.0,
            over_cap: 0,
            delta: 0.0,
            missing: 0,
            tuple: f64::INFINITY,
        }
    }
}
