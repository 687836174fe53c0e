//! Utility of the input (anonymized) against the original table, matched row for row.
//!
//! The matched rows become one in-memory table of pairs (`a_j` the anonymized and `o_j` the
//! original value of quasi-identifier j, `y` the first sensitive attribute). Then:
//! - per quasi-identifier, `GROUP BY o_j, a_j, y` gives every cell-level figure (loss, WHD,
//!   modification rate, entropy and mutual-information losses): a cell's cost depends only on
//!   its original and generalized values;
//! - `ncp(o_1..o_d) GROUP BY a_1..a_d` gives NCP;
//! - the classes of the input give discernibility, AECS and the classification metric;
//! - the distinct original and anonymized tuples answer the query workload.

use std::collections::HashMap;
use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, RecordBatch};
use datafusion::arrow::compute::{SortOptions, cast, concat_batches, sort_to_indices};
use datafusion::arrow::datatypes::{DataType, Field, Float64Type, Int64Type, Schema};
use datafusion::dataframe::DataFrame;
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::{SortExpr, col, ident};
use datafusion::prelude::SessionContext;

use super::anonymity::{ClassData, count_rows};
use super::keys::KeyInterner;
use super::{
    AttributeUtility, PerturbedFigures, ProfileOptions, QueryAccuracy, Utility, check_column,
    label, table,
};
use crate::functions::common::{decode_dictionary, is_ordered};
use crate::generalize::{Hierarchy, TOP_LABEL, format_number};
use crate::rng::SplitMix64;

/// Computes the utility section: `original` is the original table's registered name.
pub(crate) async fn utility(
    ctx: &SessionContext,
    options: &ProfileOptions,
    original: &str,
    classes: &ClassData,
) -> Result<Utility> {
    let pairs = pairs(ctx, options, original).await?;
    let n = pairs.num_rows() as u64;
    let d = options.quasi_identifiers.len();
    let has_label = !options.sensitive.is_empty();

    // the pairs as a table of a fresh context with the anonymity functions (for ncp)
    let uctx = SessionContext::new_with_config(ctx.copied_config());
    crate::register(&uctx)?;
    uctx.register_batch("pairs", pairs)?;
    let frame = uctx.table("pairs").await?;

    let mut attributes = Vec::with_capacity(d);
    let mut workload = Vec::with_capacity(d);
    for (j, name) in options.quasi_identifiers.iter().enumerate() {
        let (figures, stats) =
            attribute_utility(&frame, j, name, options.hierarchies.get(name), has_label, n).await?;
        attributes.push(figures);
        workload.push(stats);
    }

    // NCP of the classes of the anonymized values, over the original values
    let a_cols: Vec<_> = (0..d).map(|j| col(format!("a{j}"))).collect();
    let o_cols: Vec<_> = (0..d).map(|j| col(format!("o{j}"))).collect();
    let ncp_frame = frame.clone().aggregate(
        a_cols.clone(),
        vec![
            crate::functions::ncp_udaf()
                .call(o_cols.clone())
                .alias("ncp"),
            count_rows(),
        ],
    )?;
    let mut ncp_sum = 0.0;
    for batch in ncp_frame.collect().await? {
        let ncp = batch.column(d).as_primitive::<Float64Type>();
        let rows = batch.column(d + 1).as_primitive::<Int64Type>();
        for i in 0..batch.num_rows() {
            if ncp.is_valid(i) {
                ncp_sum += ncp.value(i) * rows.value(i) as f64;
            }
        }
    }

    // discernibility, AECS and CM from the input's classes
    let suppressed_flags = classes.suppressed()?;
    let suppressed: u64 = classes
        .sizes
        .iter()
        .zip(&suppressed_flags)
        .filter(|&(_, &s)| s)
        .map(|(&size, _)| size)
        .sum();
    let kept = classes
        .sizes
        .iter()
        .zip(&suppressed_flags)
        .filter(|&(_, &s)| !s);
    let discernibility = kept
        .clone()
        .map(|(&size, _)| (size as f64) * (size as f64))
        .sum::<f64>()
        + (n as f64) * suppressed as f64;
    let kept_classes = kept.clone().count() as f64;
    let kept_k = kept.clone().map(|(&size, _)| size).min();
    let aecs = kept_k.map(|k| (n - suppressed) as f64 / (kept_classes * k as f64));
    let classification_metric = classes.top_counts.as_ref().map(|top| {
        let misclassified: u64 = classes
            .sizes
            .iter()
            .zip(top)
            .zip(&suppressed_flags)
            .filter(|&(_, &s)| !s)
            .map(|((&size, &top), _)| size - top)
            .sum();
        (misclassified + suppressed) as f64 / n as f64
    });

    let query_accuracy = query_accuracy(&frame, &workload, options, n).await?;
    let perturbation = perturbed_figures(&frame.clone().collect().await?, options)?;

    let mean = |f: &dyn Fn(&AttributeUtility) -> f64| {
        attributes.iter().map(f).sum::<f64>() / attributes.len() as f64
    };
    // WHD: mean over the cells of quasi-identifiers with a hierarchy
    let with_hierarchy: Vec<&AttributeUtility> = attributes
        .iter()
        .filter(|a| a.whd_uniform.is_some())
        .collect();
    let whd = |f: &dyn Fn(&AttributeUtility) -> Option<f64>| {
        (!with_hierarchy.is_empty()).then(|| {
            with_hierarchy.iter().filter_map(|a| f(a)).sum::<f64>() / with_hierarchy.len() as f64
        })
    };
    Ok(Utility {
        original: options.label_of(original),
        matched_by: match &options.key {
            Some(key) => format!("key {key}"),
            None => "position".to_string(),
        },
        suppressed_rows: suppressed,
        ncp: ncp_sum / n as f64,
        loss_metric: mean(&|a| a.loss),
        discernibility,
        aecs,
        classification_metric,
        modification_rate: mean(&|a| a.modification_rate),
        whd_uniform: whd(&|a| a.whd_uniform),
        whd_beta1: whd(&|a| a.whd_beta1),
        monotone_entropy_loss: mean(&|a| a.monotone_entropy_loss),
        mutual_information_loss: mean(&|a| a.mutual_information_loss),
        private_mutual_information_utility: has_label
            .then(|| mean(&|a| a.private_mutual_information_utility.unwrap_or(0.0))),
        query_accuracy,
        attributes,
        perturbation,
    })
}

/// The perturbation figures of the pairs, when every quasi-identifier is numeric on both
/// sides; rows with a NULL or NaN in one are left out (they were suppressed, not perturbed).
fn perturbed_figures(
    pairs: &[RecordBatch],
    options: &ProfileOptions,
) -> Result<Option<PerturbedFigures>> {
    let d = options.quasi_identifiers.len();
    let Some(first) = pairs.first() else {
        return Ok(None);
    };
    let schema = first.schema();
    let numeric = (0..2 * d).all(|c| schema.field(c).data_type().is_numeric());
    if d == 0 || !numeric {
        return Ok(None);
    }
    let mut original = vec![Vec::new(); d];
    let mut published = vec![Vec::new(); d];
    for batch in pairs {
        let columns = (0..2 * d)
            .map(|c| cast(batch.column(c), &DataType::Float64))
            .collect::<std::result::Result<Vec<_>, _>>()?;
        let values: Vec<_> = columns
            .iter()
            .map(|c| c.as_primitive::<Float64Type>())
            .collect();
        for i in 0..batch.num_rows() {
            let whole = values.iter().all(|v| v.is_valid(i) && !v.value(i).is_nan());
            if whole {
                for j in 0..d {
                    published[j].push(values[j].value(i));
                    original[j].push(values[d + j].value(i));
                }
            }
        }
    }
    let rows = original[0].len() as u64;
    if rows == 0 {
        return Ok(None);
    }
    let o: Vec<&[f64]> = original.iter().map(Vec::as_slice).collect();
    let p: Vec<&[f64]> = published.iter().map(Vec::as_slice).collect();
    let (utility, risk) = crate::perturb::release::measure(
        &options.quasi_identifiers,
        &o,
        &p,
        crate::perturb::measures::DEFAULT_DISCLOSURE_PERCENT,
    );
    Ok(Some(PerturbedFigures {
        rows,
        utility,
        risk,
    }))
}

/// Rows of `frame`'s columns `columns`, in order (sorted by `key` when given).
async fn ordered_rows(
    frame: DataFrame,
    columns: &[String],
    key: Option<&str>,
) -> Result<RecordBatch> {
    let mut frame = frame.select(columns.iter().map(ident).collect::<Vec<_>>())?;
    if let Some(key) = key {
        frame = frame.sort(vec![SortExpr::new(ident(key), true, true)])?;
    }
    let schema = Arc::new(frame.schema().as_arrow().clone());
    let batches = frame.collect().await?;
    Ok(concat_batches(&schema, &batches)?)
}

/// The matched pairs: columns `a0..`, `o0..` and, with a sensitive attribute, `y`.
async fn pairs(
    ctx: &SessionContext,
    options: &ProfileOptions,
    original: &str,
) -> Result<RecordBatch> {
    let ordered = super::position::ordered_context(ctx);
    let input = table(&ordered, &options.table, "input").await?;
    let source = table(&ordered, original, "original").await?;
    let source_schema = source.schema().inner().clone();
    let what = format!("the original '{}'", options.label_of(original));
    for qi in &options.quasi_identifiers {
        check_column(&source_schema, qi, "quasi-identifier", &what)?;
    }
    let key = options.key.as_deref();
    if let Some(key) = key {
        check_column(&source_schema, key, "key", &what)?;
    }
    let mut input_columns = options.quasi_identifiers.clone();
    input_columns.extend(options.sensitive.first().cloned());
    let mut source_columns = options.quasi_identifiers.clone();
    if let Some(key) = key {
        input_columns.push(key.to_string());
        source_columns.push(key.to_string());
    }
    let a = ordered_rows(input, &input_columns, key).await?;
    let o = ordered_rows(source, &source_columns, key).await?;
    if a.num_rows() != o.num_rows() {
        return Err(DataFusionError::Plan(format!(
            "the original '{}' has {} rows but the input '{}' has {}: utility compares \
             the same rows (keep suppressed rows, with their quasi-identifiers set to *)",
            options.label_of(original),
            o.num_rows(),
            label(options),
            a.num_rows()
        )));
    }
    if let Some(key) = key {
        check_keys(
            a.column(a.num_columns() - 1),
            o.column(o.num_columns() - 1),
            key,
        )?;
    }
    let d = options.quasi_identifiers.len();
    let mut fields = Vec::new();
    let mut columns: Vec<ArrayRef> = Vec::new();
    for j in 0..d {
        fields.push(Field::new(
            format!("a{j}"),
            a.column(j).data_type().clone(),
            true,
        ));
        columns.push(a.column(j).clone());
    }
    for j in 0..d {
        fields.push(Field::new(
            format!("o{j}"),
            o.column(j).data_type().clone(),
            true,
        ));
        columns.push(o.column(j).clone());
    }
    if !options.sensitive.is_empty() {
        fields.push(Field::new("y", a.column(d).data_type().clone(), true));
        columns.push(a.column(d).clone());
    }
    Ok(RecordBatch::try_new(
        Arc::new(Schema::new(fields)),
        columns,
    )?)
}

/// Both key columns, sorted, must be equal row for row and free of duplicates and NULLs.
fn check_keys(a: &ArrayRef, o: &ArrayRef, key: &str) -> Result<()> {
    let mut interner = KeyInterner::new(&[a.data_type().clone()])?;
    let mut ids = Vec::new();
    interner.intern(std::slice::from_ref(a), &mut ids)?;
    let nulls = a.null_count() + o.null_count();
    if nulls > 0 {
        return Err(DataFusionError::Plan(format!(
            "key '{key}' is NULL in {nulls} rows: it cannot match rows"
        )));
    }
    if interner.len() != a.len() {
        return Err(DataFusionError::Plan(format!(
            "key '{key}' is not unique in the input ({} duplicate rows)",
            a.len() - interner.len()
        )));
    }
    let found = interner.lookup(std::slice::from_ref(o)).map_err(|_| {
        DataFusionError::Plan(format!(
            "key '{key}' has different types in the input and the original"
        ))
    })?;
    let mut seen = vec![false; a.len()];
    let mut unmatched = 0;
    for id in found {
        match id {
            Some(id) if !seen[id as usize] => seen[id as usize] = true,
            _ => unmatched += 1,
        }
    }
    if unmatched > 0 {
        return Err(DataFusionError::Plan(format!(
            "key '{key}': {unmatched} rows of the original match no row of the input, or \
             repeat a key"
        )));
    }
    Ok(())
}

/// What query accuracy needs of one quasi-identifier.
pub(crate) struct Workload {
    /// Distinct original values.
    originals: KeyInterner,
    /// Distinct anonymized values.
    generalized: KeyInterner,
    /// Original value id → rank among the sorted distinct original values.
    rank: Vec<u32>,
    /// Anonymized value id → sorted ranks of the original values it stands for.
    stands_for: Vec<Vec<u32>>,
}

/// Whether a generalized value stands for the whole domain: `*`, or NULL replacing a value.
fn is_whole_domain(generalized: &ArrayRef, g: usize, original_is_null: bool) -> bool {
    if generalized.is_null(g) {
        return !original_is_null;
    }
    generalized.as_string::<i32>().value(g) == TOP_LABEL
}

/// The cell-level figures of quasi-identifier `j` (and what query accuracy needs).
async fn attribute_utility(
    frame: &DataFrame,
    j: usize,
    name: &str,
    hierarchy: Option<&Arc<Hierarchy>>,
    has_label: bool,
    n: u64,
) -> Result<(AttributeUtility, Workload)> {
    let mut group = vec![col(format!("o{j}")), col(format!("a{j}"))];
    if has_label {
        group.push(col("y"));
    }
    let cells = frame.clone().aggregate(group, vec![count_rows()])?;
    let schema = cells.schema().clone();
    let batches = cells.collect().await?;
    let width = if has_label { 3 } else { 2 };
    let mut originals = KeyInterner::new(&[schema.field(0).data_type().clone()])?;
    let mut generalized = KeyInterner::new(&[schema.field(1).data_type().clone()])?;
    let mut labels = KeyInterner::new(&[schema.field(width - 1).data_type().clone()])?;
    let (mut v_ids, mut g_ids, mut y_ids, mut counts) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for batch in &batches {
        originals.intern(&batch.columns()[0..1], &mut v_ids)?;
        generalized.intern(&batch.columns()[1..2], &mut g_ids)?;
        if has_label {
            labels.intern(&batch.columns()[2..3], &mut y_ids)?;
        }
        counts.extend(
            batch
                .column(width)
                .as_primitive::<Int64Type>()
                .values()
                .iter()
                .map(|&c| c as u64),
        );
    }
    let values = originals.all_arrays()?.remove(0);
    let g_values = cast(&generalized.all_arrays()?.remove(0), &DataType::Utf8)?;
    let (m, gs) = (originals.len(), generalized.len());

    // c(v), the distinct (v, g) pairs with their counts, S_g
    let mut c_v = vec![0u64; m];
    let mut pair_counts: HashMap<(u32, u32), u64> = HashMap::new();
    for ((&v, &g), &c) in v_ids.iter().zip(&g_ids).zip(&counts) {
        c_v[v as usize] += c;
        *pair_counts.entry((v, g)).or_default() += c;
    }
    let mut stands: Vec<Vec<u32>> = vec![Vec::new(); gs];
    let all: Vec<u32> = (0..m as u32).collect();
    let mut whole = vec![false; gs];
    for &(v, g) in pair_counts.keys() {
        if is_whole_domain(&g_values, g as usize, values.is_null(v as usize)) {
            whole[g as usize] = true;
        } else {
            stands[g as usize].push(v);
        }
    }
    for (g, set) in stands.iter_mut().enumerate() {
        if whole[g] {
            *set = all.clone();
        } else {
            set.sort_unstable();
            set.dedup();
        }
    }
    let c_g: Vec<u64> = stands
        .iter()
        .map(|set| set.iter().map(|&v| c_v[v as usize]).sum())
        .collect();

    // per-cell cost: level in the hierarchy (if any) and loss
    let cost = CellCost::new(
        name,
        hierarchy,
        &values,
        &g_values,
        &stands,
        &whole,
        &pair_counts,
    )?;

    let nf = n as f64;
    let (mut loss, mut modified, mut whd_u, mut whd_b, mut me, mut mi) =
        (0.0, 0u64, 0.0, 0.0, 0.0, 0.0);
    // entropy of each S_g (base 2) and its probability
    let h_g: Vec<f64> = stands
        .iter()
        .zip(&c_g)
        .map(|(set, &total)| {
            let total = total as f64;
            -set.iter()
                .map(|&v| c_v[v as usize] as f64 / total)
                .filter(|&p| p > 0.0)
                .map(|p| p * p.log2())
                .sum::<f64>()
        })
        .collect();
    for (&(v, g), &c) in &pair_counts {
        let cf = c as f64;
        let cell = cost.cell(v, g)?;
        loss += cf * cell.loss;
        modified += c * u64::from(cell.modified);
        whd_u += cf * cell.whd_uniform;
        whd_b += cf * cell.whd_beta1;
        let (g, v) = (g as usize, v as usize);
        me += cf * (c_g[g] as f64 / nf) * h_g[g];
        mi -= cf * (c_v[v] as f64 / c_g[g] as f64).log2();
    }

    let pmi = if has_label {
        // C(v, y) over the whole table, then C(S_g, y)
        let mut c_y = vec![0u64; labels.len()];
        let mut by_value: Vec<HashMap<u32, u64>> = vec![HashMap::new(); m];
        let mut cells: HashMap<(u32, u32), u64> = HashMap::new();
        for (((&v, &g), &y), &c) in v_ids.iter().zip(&g_ids).zip(&y_ids).zip(&counts) {
            c_y[y as usize] += c;
            *by_value[v as usize].entry(y).or_default() += c;
            *cells.entry((g, y)).or_default() += c;
        }
        let mut sum = 0.0;
        for (&(g, y), &c) in &cells {
            let in_set: u64 = stands[g as usize]
                .iter()
                .map(|&v| by_value[v as usize].get(&y).copied().unwrap_or(0))
                .sum();
            let conditional = in_set as f64 / c_g[g as usize] as f64;
            let prior = c_y[y as usize] as f64 / nf;
            sum += c as f64 * (conditional / prior).log2();
        }
        Some(sum / nf)
    } else {
        None
    };

    let figures = AttributeUtility {
        attribute: name.to_string(),
        hierarchy: hierarchy.map(|h| h.name().to_string()),
        loss: loss / nf,
        modification_rate: modified as f64 / nf,
        whd_uniform: hierarchy.map(|_| whd_u / nf),
        whd_beta1: hierarchy.map(|_| whd_b / nf),
        monotone_entropy_loss: me / nf,
        mutual_information_loss: mi / nf,
        private_mutual_information_utility: pmi,
    };

    // ranks of the sorted distinct original values (NULL first)
    let order = sort_to_indices(
        &values,
        Some(SortOptions {
            descending: false,
            nulls_first: true,
        }),
        None,
    )?;
    let mut rank = vec![0u32; m];
    for (r, &v) in order.values().iter().enumerate() {
        rank[v as usize] = r as u32;
    }
    let stands_for = stands
        .iter()
        .map(|set| {
            let mut ranks: Vec<u32> = set.iter().map(|&v| rank[v as usize]).collect();
            ranks.sort_unstable();
            ranks
        })
        .collect();
    Ok((
        figures,
        Workload {
            originals,
            generalized,
            rank,
            stands_for,
        },
    ))
}

/// The costs of one cell.
struct Cell {
    loss: f64,
    modified: bool,
    whd_uniform: f64,
    whd_beta1: f64,
}

/// What a hierarchy says about the cells of a column.
struct Levels {
    /// (original value, generalized value) → the generalization
    of_pair: HashMap<(u32, u32), Generalized>,
    /// loss of each original value at each level
    loss: Vec<Vec<f64>>,
    /// levels of the hierarchy
    height: usize,
}

/// How one original value was generalized, with a hierarchy.
#[derive(Debug, Clone, Copy)]
enum Generalized {
    /// To its node at this level.
    Level(usize),
    /// Into an interval `[lo, hi]` of raw values (local recoding): its Loss, and the level
    /// of the lowest node covering both ends (for WHD, which counts levels).
    Interval { loss: f64, level: usize },
}

/// Cell costs of one quasi-identifier, from its hierarchy or from the data.
struct CellCost {
    /// With a hierarchy.
    levels: Option<Levels>,
    /// Without: the data-driven loss of each generalized value, and whether (v, g) changed.
    data_loss: Vec<f64>,
    changed: HashMap<(u32, u32), bool>,
}

impl CellCost {
    fn new(
        name: &str,
        hierarchy: Option<&Arc<Hierarchy>>,
        values: &ArrayRef,
        generalized: &ArrayRef,
        stands: &[Vec<u32>],
        whole: &[bool],
        pairs: &HashMap<(u32, u32), u64>,
    ) -> Result<Self> {
        let g_text = generalized.as_string::<i32>();
        if let Some(hierarchy) = hierarchy {
            let height = hierarchy.height();
            let top = height - 1;
            let mut labels = Vec::with_capacity(height);
            let mut losses = Vec::with_capacity(height);
            for level in 0..height {
                labels.push(cast(
                    &hierarchy.generalize_column(name, values, level)?,
                    &DataType::Utf8,
                )?);
                // the top costs 1 for every value, a NULL generalized to `*` included (its
                // coverage has no leaves to count)
                losses.push(if level == top {
                    vec![1.0; values.len()]
                } else {
                    hierarchy
                        .coverage(name, values, level)?
                        .loss()
                        .iter()
                        .map(|l| l.unwrap_or(0.0))
                        .collect::<Vec<_>>()
                });
            }
            let mut found = HashMap::with_capacity(pairs.len());
            let mut unmatched = 0usize;
            let mut intervals = IntervalLabels::new(name, hierarchy, values)?;
            for &(v, g) in pairs.keys() {
                let (vi, gi) = (v as usize, g as usize);
                let level = if g_text.is_null(gi) && values.is_null(vi) {
                    Some(0)
                } else if whole[gi] || values.is_null(vi) {
                    Some(top)
                } else {
                    let label = g_text.value(gi);
                    (0..height).find(|&level| {
                        let at = labels[level].as_string::<i32>();
                        at.is_valid(vi) && at.value(vi) == label
                    })
                };
                let generalized = match level {
                    Some(level) => Some(Generalized::Level(level)),
                    None => intervals.cell(vi, g_text.value(gi))?,
                };
                match generalized {
                    Some(generalized) => {
                        found.insert((v, g), generalized);
                    }
                    None => unmatched += 1,
                }
            }
            if unmatched > 0 {
                return Err(DataFusionError::Plan(format!(
                    "quasi-identifier '{name}': {unmatched} pairs of original and anonymized \
                     values are not a generalization in hierarchy '{}' (values are not shown)",
                    hierarchy.name()
                )));
            }
            return Ok(Self {
                levels: Some(Levels {
                    of_pair: found,
                    loss: losses,
                    height,
                }),
                data_loss: Vec::new(),
                changed: HashMap::new(),
            });
        }
        // Iyengar's LM from the data: over the original values each generalized value stands for
        let value_type = decode_dictionary(values.data_type());
        let numbers = if is_ordered(&value_type) {
            Some(super::ordered_as_f64(values)?)
        } else {
            None
        };
        let m = values.len() - usize::from(values.null_count() > 0);
        let (lo, hi) = numbers
            .as_ref()
            .map_or((0.0, 0.0), |x| range(x.iter().flatten()));
        let data_loss = stands
            .iter()
            .zip(whole)
            .map(|(set, &whole)| {
                if whole {
                    return 1.0;
                }
                match &numbers {
                    Some(x) if hi > lo => {
                        let (l, h) = range(set.iter().filter_map(|&v| x[v as usize].as_ref()));
                        if h > l { (h - l) / (hi - lo) } else { 0.0 }
                    }
                    Some(_) => 0.0,
                    None if m > 1 => {
                        let count = set.iter().filter(|&&v| values.is_valid(v as usize)).count();
                        count.saturating_sub(1) as f64 / (m - 1) as f64
                    }
                    None => 0.0,
                }
            })
            .collect();
        let text = cast(values, &DataType::Utf8)?;
        let text = text.as_string::<i32>();
        let floats = matches!(
            value_type,
            DataType::Float16 | DataType::Float32 | DataType::Float64
        );
        let float_values = if floats {
            Some(cast(values, &DataType::Float64)?)
        } else {
            None
        };
        let changed = pairs
            .keys()
            .map(|&(v, g)| {
                let (vi, gi) = (v as usize, g as usize);
                let same = match (text.is_valid(vi), g_text.is_valid(gi)) {
                    (false, false) => true,
                    (true, true) => {
                        let label = g_text.value(gi);
                        label == text.value(vi)
                            || float_values.as_ref().is_some_and(|f| {
                                format_number(f.as_primitive::<Float64Type>().value(vi)) == label
                            })
                    }
                    _ => false,
                };
                ((v, g), !same)
            })
            .collect();
        Ok(Self {
            levels: None,
            data_loss,
            changed,
        })
    }

    fn cell(&self, v: u32, g: u32) -> Result<Cell> {
        if let Some(levels) = &self.levels {
            let generalized = *levels
                .of_pair
                .get(&(v, g))
                .ok_or_else(|| DataFusionError::Internal("a cell without a level".into()))?;
            let (loss, level, modified) = match generalized {
                Generalized::Level(level) => (levels.loss[level][v as usize], level, level > 0),
                Generalized::Interval { loss, level } => (loss, level, true),
            };
            let (uniform, beta1) = whd(levels.height, level);
            return Ok(Cell {
                loss,
                modified,
                whd_uniform: uniform,
                whd_beta1: beta1,
            });
        }
        Ok(Cell {
            loss: self.data_loss[g as usize],
            modified: self.changed.get(&(v, g)).copied().unwrap_or(true),
            whd_uniform: 0.0,
            whd_beta1: 0.0,
        })
    }
}

/// Interval labels `[lo, hi]` and `(lo, hi)` of a local release on an ordered column with a
/// hierarchy.
struct IntervalLabels<'a> {
    name: &'a str,
    hierarchy: &'a Hierarchy,
    /// the original values as numbers (`None` unless the column is ordered)
    numbers: Option<Vec<Option<f64>>>,
    value_type: DataType,
    domain: Option<crate::generalize::IntervalDomain>,
    /// the original values as text, and their distinct non-NULL count (set labels)
    text: ArrayRef,
    distinct_non_null: usize,
}

impl<'a> IntervalLabels<'a> {
    fn new(name: &'a str, hierarchy: &'a Hierarchy, values: &ArrayRef) -> Result<Self> {
        let value_type = decode_dictionary(values.data_type());
        let ordered = is_ordered(&value_type);
        Ok(Self {
            name,
            hierarchy,
            numbers: if ordered {
                Some(super::ordered_as_f64(values)?)
            } else {
                None
            },
            domain: if ordered {
                Some(hierarchy.interval_domain(values)?)
            } else {
                None
            },
            value_type,
            text: cast(values, &DataType::Utf8)?,
            distinct_non_null: values.len() - values.null_count(),
        })
    }

    /// How original value `v` is generalized by `label`, if `label` is an interval holding it
    /// or a set listing it.
    fn cell(&mut self, v: usize, label: &str) -> Result<Option<Generalized>> {
        // a set-based QI's `{a, b}`: covers the values it lists
        if let Some(members) = crate::search::local::sets::parse_set_label(label) {
            let text = self.text.as_string::<i32>();
            if !text.is_valid(v) || !members.iter().any(|m| m == text.value(v)) {
                return Ok(None);
            }
            let domain = self.distinct_non_null;
            let loss = if domain <= 1 {
                0.0
            } else {
                (members.len().saturating_sub(1) as f64 / (domain - 1) as f64).min(1.0)
            };
            // the set's level: the top for several values (no node of the hierarchy)
            let level = if members.len() > 1 {
                self.hierarchy.height() - 1
            } else {
                0
            };
            return Ok(Some(Generalized::Interval { loss, level }));
        }
        let (Some(numbers), Some(domain)) = (&self.numbers, &self.domain) else {
            return Ok(None);
        };
        let Some(interval) = crate::generalize::parse_interval_label(label) else {
            return Ok(None);
        };
        // the ends as values of the column's type, then as numbers like the values
        let bounds = crate::search::local::labels::end_values(
            &[interval.lo, interval.hi],
            &self.value_type,
        )?;
        let (Some(lo), Some(hi), Some(x)) = (bounds[0], bounds[1], numbers[v]) else {
            return Ok(None);
        };
        let bounds = crate::search::local::IntervalBounds {
            lo,
            hi,
            open: interval.open,
        };
        if !bounds.holds(x) {
            return Ok(None);
        }
        // what the label covers: `[lo, hi]` from its ends, `(lo, hi)` from the outermost
        // domain values inside it (its ends lie outside the class)
        let (first, last, loss) = if interval.open {
            let Some((first, last)) = domain.inside_open(lo, hi) else {
                return Ok(None);
            };
            (
                first,
                last,
                domain.loss_of_covered(domain.covered_open(lo, hi)),
            )
        } else {
            (lo, hi, domain.loss(lo, hi))
        };
        let ends = crate::search::local::labels::typed_values(&[first, last], &self.value_type)?;
        // the lowest level at which both ends have one label
        let mut level = self.hierarchy.height() - 1;
        for l in 0..self.hierarchy.height() {
            let labels = cast(
                &self.hierarchy.generalize_column(self.name, &ends, l)?,
                &DataType::Utf8,
            )?;
            let labels = labels.as_string::<i32>();
            if labels.is_valid(0) && labels.is_valid(1) && labels.value(0) == labels.value(1) {
                level = l;
                break;
            }
        }
        Ok(Some(Generalized::Interval { loss, level }))
    }
}

/// Smallest and largest of `values` (0, 0 when empty).
fn range<'a>(values: impl Iterator<Item = &'a f64>) -> (f64, f64) {
    let (lo, hi) = values.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &x| {
        (lo.min(x), hi.max(x))
    });
    if lo > hi { (0.0, 0.0) } else { (lo, hi) }
}

/// Weighted hierarchical distance of a cell generalized from the leaves to `level` (0 = the
/// leaves) in a hierarchy of `height` levels, with uniform and with β = 1 weights.
///
/// (`formulas::weighted_hierarchical_distance`, the distance KACA merges by.)
pub fn whd(height: usize, level: usize) -> (f64, f64) {
    use crate::functions::formulas::weighted_hierarchical_distance;
    (
        weighted_hierarchical_distance(height, 0, level, None),
        weighted_hierarchical_distance(height, 0, level, Some(1.0)),
    )
}

/// Distinct tuples of `columns` of the pairs with their counts, as ids of each attribute's
/// interner (from `pick`).
async fn tuples(
    frame: &DataFrame,
    prefix: &str,
    workload: &[Workload],
    pick: fn(&Workload) -> &KeyInterner,
) -> Result<(Vec<Vec<u32>>, Vec<u64>)> {
    let d = workload.len();
    let group = (0..d).map(|j| col(format!("{prefix}{j}"))).collect();
    let batches = frame
        .clone()
        .aggregate(group, vec![count_rows()])?
        .collect()
        .await?;
    let mut ids = vec![Vec::new(); d];
    let mut counts = Vec::new();
    for batch in &batches {
        for (j, stats) in workload.iter().enumerate() {
            for id in pick(stats).lookup(&batch.columns()[j..j + 1])? {
                ids[j].push(id.ok_or_else(|| {
                    DataFusionError::Internal("a value missing from its attribute".into())
                })?);
            }
        }
        counts.extend(
            batch
                .column(d)
                .as_primitive::<Int64Type>()
                .values()
                .iter()
                .map(|&c| c as u64),
        );
    }
    Ok((ids, counts))
}

/// Mean and median relative error of the query workload (see [`QueryAccuracy`]).
async fn query_accuracy(
    frame: &DataFrame,
    workload: &[Workload],
    options: &ProfileOptions,
    n: u64,
) -> Result<QueryAccuracy> {
    let (original_ids, original_counts) = tuples(frame, "o", workload, |w| &w.originals).await?;
    let (general_ids, general_counts) = tuples(frame, "a", workload, |w| &w.generalized).await?;
    let d = workload.len();
    // original tuples as ranks; cumulative counts to draw a row uniformly
    let original_ranks: Vec<Vec<u32>> = (0..d)
        .map(|j| {
            original_ids[j]
                .iter()
                .map(|&v| workload[j].rank[v as usize])
                .collect()
        })
        .collect();
    let mut cumulative = Vec::with_capacity(original_counts.len());
    let mut running = 0u64;
    for &c in &original_counts {
        running += c;
        cumulative.push(running);
    }
    let mut rng = SplitMix64(options.seed);
    let mut errors = Vec::with_capacity(options.queries);
    let mut fractions: Vec<Vec<f64>> = workload
        .iter()
        .map(|w| vec![0.0; w.stands_for.len()])
        .collect();
    let mut ranges = vec![(0u32, 0u32); d];
    for _ in 0..options.queries {
        let row = rng.below(n);
        let tuple = cumulative.partition_point(|&c| c <= row);
        for j in 0..d {
            let m = workload[j].rank.len() as u64;
            let rank = original_ranks[j][tuple] as u64;
            let length = 1 + rng.below(m.div_ceil(2));
            let first = rank.saturating_sub(length - 1);
            let last = rank.min(m - length);
            let lo = first + rng.below(last - first + 1);
            ranges[j] = (lo as u32, (lo + length - 1) as u32);
            // share of each generalized value's original values inside the range
            let (lo, hi) = ranges[j];
            for (g, set) in workload[j].stands_for.iter().enumerate() {
                let inside = set.partition_point(|&r| r <= hi) - set.partition_point(|&r| r < lo);
                fractions[j][g] = if set.is_empty() {
                    0.0
                } else {
                    inside as f64 / set.len() as f64
                };
            }
        }
        let truth: u64 = (0..original_counts.len())
            .filter(|&t| {
                (0..d).all(|j| {
                    let r = original_ranks[j][t];
                    r >= ranges[j].0 && r <= ranges[j].1
                })
            })
            .map(|t| original_counts[t])
            .sum();
        let estimate: f64 = (0..general_counts.len())
            .map(|t| {
                let share: f64 = (0..d)
                    .map(|j| fractions[j][general_ids[j][t] as usize])
                    .product();
                share * general_counts[t] as f64
            })
            .sum();
        errors.push((estimate - truth as f64).abs() / truth.max(1) as f64);
    }
    let mean = if errors.is_empty() {
        0.0
    } else {
        errors.iter().sum::<f64>() / errors.len() as f64
    };
    errors.sort_by(f64::total_cmp);
    let median = match errors.len() {
        0 => 0.0,
        len if len % 2 == 1 => errors[len / 2],
        len => (errors[len / 2 - 1] + errors[len / 2]) / 2.0,
    };
    Ok(QueryAccuracy {
        queries: options.queries,
        seed: options.seed,
        mean_relative_error: mean,
        median_relative_error: median,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whd_examples_of_the_definitions() {
        // birth date {D/M/Y, M/Y, Y, 10Y, C/T/G/P, *}: h = 6; D/M/Y → 10Y is level 3
        let (uniform, beta1) = whd(6, 3);
        assert!((uniform - 0.6).abs() < 1e-12, "{uniform}");
        // (1/3 + 1/4 + 1/5) / (1 + 1/2 + 1/3 + 1/4 + 1/5) = 0.78333 / 2.28333
        assert!((beta1 - 0.3431).abs() < 5e-5, "{beta1}");
        // gender M/F → *: h = 2, level 1
        assert_eq!(whd(2, 1), (1.0, 1.0));
        assert_eq!(whd(6, 0), (0.0, 0.0));
        // the top always costs 1
        let (u, b) = whd(6, 5);
        assert!((u - 1.0).abs() < 1e-12 && (b - 1.0).abs() < 1e-12);
    }
}
