//! Verification: what the written output achieves, measured on the written files (with l or
//! t) or on the classes of the rows handed to the writer (k alone), against the policy.

use datafusion::arrow::array::{Array, ArrayRef, AsArray};
use datafusion::arrow::compute::cast as arrow_cast;
use datafusion::arrow::datatypes::{DataType, Float64Type, Int64Type};
use datafusion::common::Column;
use datafusion::error::Result;
use datafusion::functions_aggregate::expr_fn::count;
use datafusion::logical_expr::{Expr, col, lit};
use datafusion::prelude::{ParquetReadOptions, SessionContext};
use serde::Serialize;

use super::classes::ClassCounter;
use crate::generalize::TOP_LABEL;
use crate::policy::{Bound, PrivacyRequirements, SensitiveAchieved, SuppressionMode};
use crate::storage::Location;
use crate::storage::manifest::is_parquet_file;

/// What the published data achieve, measured on the written files.
#[derive(Debug, Clone, Serialize)]
pub struct Verification {
    /// Rows written.
    pub rows: u64,
    /// Equivalence classes among the rows (the all-`*` class of masked rows excluded when it
    /// does not meet the requirements on its own).
    pub classes: u64,
    /// The smallest class (0 when no rows).
    pub k: u64,
    /// Rows suppressed as far as the output shows: input rows not written (drop), or the
    /// rows of the all-`*` class when it is excluded (mask; masked rows in an all-`*` class
    /// that meets the requirements on its own are indistinguishable from generalized ones).
    pub suppressed_rows: u64,
    /// Per sensitive attribute with requirements: the worst value of each bounded measure
    /// over the classes.
    pub sensitive: Vec<SensitiveAchieved>,
    /// k-map and δ-presence against the policy's population, over the written classes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub population: Option<crate::policy::PopulationAchieved>,
    /// Why the output fails the policy; empty when it passes.
    pub failures: Vec<String>,
}

impl Verification {
    /// Whether the output meets the policy.
    pub fn passes(&self) -> bool {
        self.failures.is_empty()
    }
}

/// Measures the Parquet output at `path` (file or directory) with the crate's functions and
/// checks it against `requirements`: every class at least k rows and meeting each l and t
/// (measured against the output's own distribution, as a reader of the published data
/// would), and at most the allowed share of the `input_rows` suppressed.
pub async fn verify(
    ctx: &SessionContext,
    path: &Location,
    quasi_identifiers: &[String],
    requirements: &PrivacyRequirements,
    suppression: SuppressionMode,
    input_rows: u64,
) -> Result<Verification> {
    let table = register_written(ctx, path, "verify").await?;
    let result = measure(
        ctx,
        &table,
        quasi_identifiers,
        requirements,
        suppression,
        input_rows,
    )
    .await;
    ctx.deregister_table(table.as_str())?;
    result
}

/// Registers the Parquet output at `path` (file or directory) on `ctx` under a private name,
/// returned.
pub(super) async fn register_written(
    ctx: &SessionContext,
    path: &Location,
    purpose: &str,
) -> Result<String> {
    let table = format!("__anon_{purpose}_{}", std::process::id());
    let location = match path {
        Location::Local(local) if local.is_dir() => format!("{}/", local.display()),
        Location::Url(_) if !is_parquet_file(path) => path.as_prefix().datafusion_path(),
        _ => path.datafusion_path(),
    };
    ctx.register_parquet(&table, &location, ParquetReadOptions::default())
        .await?;
    Ok(table)
}

/// The column of the verification's per-class table holding bound `j` of attribute `i`.
fn measure_column(i: usize, j: usize) -> String {
    format!("__anon_m{i}_{j}")
}

async fn measure(
    ctx: &SessionContext,
    table: &str,
    quasi_identifiers: &[String],
    requirements: &PrivacyRequirements,
    suppression: SuppressionMode,
    input_rows: u64,
) -> Result<Verification> {
    let keys: Vec<Expr> = quasi_identifiers
        .iter()
        .map(|q| Expr::Column(Column::from_name(q)))
        .collect();
    // per class: its size, each bounded measure, whether it passes, whether it is all `*`
    let mut per_class = vec![count(lit(1)).alias("__anon_k")];
    let mut passes = vec![col("__anon_k").gt_eq(lit(requirements.k as i64))];
    let bounds: Vec<Vec<Bound>> = requirements.sensitive.iter().map(|s| s.bounds()).collect();
    for (i, (s, bounds)) in requirements.sensitive.iter().zip(&bounds).enumerate() {
        for (j, bound) in bounds.iter().enumerate() {
            let name = measure_column(i, j);
            let value = Expr::Column(Column::from_name(&s.attribute));
            // the aggregate stays outermost: the whole-table rewrite looks for it there
            per_class.push(bound.measure.call(value).alias(&name));
            passes.push(bound.passes(col(name)));
        }
    }
    let all_top = keys
        .iter()
        .map(|k| k.clone().eq(lit(TOP_LABEL)).is_true())
        .reduce(Expr::and)
        .unwrap_or_else(|| lit(true));
    let passes = passes.into_iter().reduce(Expr::and).unwrap_or(lit(true));
    let classes = ctx
        .table(table)
        .await?
        .aggregate(keys, per_class)?
        .with_column("__anon_passes", passes)?
        .with_column("__anon_all_top", all_top)?;
    let batches = classes.collect().await?;
    let mut summary = ClassSummary::new(&bounds);
    for batch in &batches {
        let schema = batch.schema();
        let k = batch
            .column(schema.index_of("__anon_k")?)
            .as_primitive::<Int64Type>();
        let pass = batch.column(schema.index_of("__anon_passes")?).as_boolean();
        let top = batch
            .column(schema.index_of("__anon_all_top")?)
            .as_boolean();
        // each bound's column, as Float64, once per batch
        let mut measured: Vec<Vec<ArrayRef>> = Vec::with_capacity(bounds.len());
        for (i, bounds) in bounds.iter().enumerate() {
            let mut columns = Vec::with_capacity(bounds.len());
            for j in 0..bounds.len() {
                let column = batch.column(schema.index_of(&measure_column(i, j))?);
                columns.push(arrow_cast(column, &DataType::Float64)?);
            }
            measured.push(columns);
        }
        for row in 0..batch.num_rows() {
            let size = k.value(row) as u64;
            let passes = pass.is_valid(row) && pass.value(row);
            let is_top = top.is_valid(row) && top.value(row);
            if !summary.add_class(size, passes, is_top, suppression) {
                continue;
            }
            for (i, bounds) in bounds.iter().enumerate() {
                for (j, bound) in bounds.iter().enumerate() {
                    let values = measured[i][j].as_primitive::<Float64Type>();
                    // no value (a class without the attribute's values) counts as the worst
                    let value = if values.is_valid(row) {
                        values.value(row)
                    } else {
                        bound.unmet_value()
                    };
                    let worst = &mut summary.worst[i][j];
                    *worst = Some(worst.map_or(value, |w| bound.worse(w, value)));
                }
            }
        }
    }
    Ok(summary.finish(requirements, &bounds, suppression, input_rows))
}

/// The output's classes summed up into a [`Verification`].
struct ClassSummary {
    rows: u64,
    classes: u64,
    min_k: Option<u64>,
    /// rows of the all-`*` class when it is excluded (mask mode)
    excluded: u64,
    failing_classes: u64,
    /// per sensitive attribute, per bound: the worst value over the kept classes
    worst: Vec<Vec<Option<f64>>>,
}

impl ClassSummary {
    fn new(bounds: &[Vec<Bound>]) -> Self {
        Self {
            rows: 0,
            classes: 0,
            min_k: None,
            excluded: 0,
            failing_classes: 0,
            worst: bounds.iter().map(|b| vec![None; b.len()]).collect(),
        }
    }

    /// Adds a class of `size` rows; `false` when it is the masked rows' all-`*` class that
    /// fails on its own, which is excluded (its l and t are then not to be added).
    fn add_class(
        &mut self,
        size: u64,
        passes: bool,
        is_top: bool,
        suppression: SuppressionMode,
    ) -> bool {
        if suppression == SuppressionMode::Mask && is_top && !passes {
            self.excluded += size;
            return false;
        }
        self.rows += size;
        self.classes += 1;
        self.min_k = Some(self.min_k.map_or(size, |m| m.min(size)));
        if !passes {
            self.failing_classes += 1;
        }
        true
    }

    fn finish(
        self,
        requirements: &PrivacyRequirements,
        bounds: &[Vec<Bound>],
        suppression: SuppressionMode,
        input_rows: u64,
    ) -> Verification {
        let suppressed_rows = match suppression {
            SuppressionMode::Drop => input_rows.saturating_sub(self.rows),
            SuppressionMode::Mask => self.excluded,
        };
        let mut failures = Vec::new();
        if self.failing_classes > 0 {
            failures.push(format!(
                "{} class(es) of the output fail the requirements (smallest class {} rows)",
                self.failing_classes,
                self.min_k.unwrap_or(0)
            ));
        }
        let allowed = requirements.max_suppressed_rows(input_rows);
        if suppressed_rows > allowed {
            failures.push(format!(
                "{suppressed_rows} rows suppressed, above the limit of {allowed} ({} of {input_rows})",
                requirements.max_suppression
            ));
        }
        if self.rows == 0 && input_rows > 0 {
            failures.push("no rows left to publish".to_string());
        }
        Verification {
            rows: self.rows,
            classes: self.classes,
            k: self.min_k.unwrap_or(0),
            suppressed_rows,
            sensitive: requirements
                .sensitive
                .iter()
                .zip(bounds)
                .zip(&self.worst)
                .filter(|((_, bounds), _)| !bounds.is_empty())
                .map(|((s, bounds), worst)| SensitiveAchieved::new(&s.attribute, bounds, worst))
                .collect(),
            population: None,
            failures,
        }
    }
}

/// [`Verification`] of a k-only policy from the classes of the written rows.
/// The sizes of the written classes that hold rows, the all-`*` class left out when
/// `exclude_top` (a mask release whose verification leaves it out).
pub(super) fn class_sizes(written: &ClassCounter, exclude_top: bool) -> Vec<u64> {
    (0..written.classes() as u32)
        .filter(|&class| written.size(class) > 0)
        .filter(|&class| {
            !exclude_top
                || !written
                    .labels(class)
                    .all(|label| label == Some(TOP_LABEL.as_bytes()))
        })
        .map(|class| written.size(class))
        .collect()
}

pub(super) fn measure_classes(
    written: &ClassCounter,
    requirements: &PrivacyRequirements,
    suppression: SuppressionMode,
    input_rows: u64,
) -> Verification {
    let bounds: Vec<Vec<Bound>> = requirements.sensitive.iter().map(|s| s.bounds()).collect();
    let mut summary = ClassSummary::new(&bounds);
    for class in 0..written.classes() as u32 {
        let size = written.size(class);
        if size == 0 {
            // a failing class whose rows were all dropped or masked
            continue;
        }
        let is_top = written
            .labels(class)
            .all(|label| label == Some(TOP_LABEL.as_bytes()));
        summary.add_class(size, size >= requirements.k, is_top, suppression);
    }
    summary.finish(requirements, &bounds, suppression, input_rows)
}
