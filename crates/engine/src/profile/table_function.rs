//! `anonymity_profile(table, qis [, sensitive [, person_id [, population [, original [, key]]]]])`:
//! the profile as one row, from SQL.
//!
//! ```sql
//! SELECT k, classes, disease_l_distinct, disease_t_equal, prosecutor_risk_max
//! FROM anonymity_profile('patients', 'zip,age,sex', 'disease');
//! ```
//!
//! Arguments are string literals: table names as registered, column lists comma-separated;
//! `''` or NULL leaves an optional argument out. With an original, the key is a column both
//! tables keep, or `'position()'` to match rows by position (refused unless the columns both
//! keep unchanged agree row by row). The columns of the row depend only on the
//! arguments (one group of columns per sensitive attribute, the population and utility
//! columns when those tables are given); a figure that does not apply (ordered t of a
//! categorical attribute) is NULL. The profile is computed when the query is planned.
//!
//! Per sensitive attribute s, besides its diversity and closeness figures: the homogeneity
//! attack as `<s>_homogeneous_rows` and `<s>_homogeneous_classes`, and the background-knowledge
//! attack for m = 1..=3 values ruled out as `<s>_background_<m>_rows` and
//! `<s>_background_<m>_classes` (the rows whose value is then certain: the rows of the classes
//! with at most m + 1 distinct values; see [`super::BackgroundKnowledge`]).

use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::array::{
    ArrayRef, Float64Builder, ListBuilder, RecordBatch, StringBuilder, StructBuilder, UInt64Builder,
};
use datafusion::arrow::datatypes::{DataType, Field, Fields, Schema, SchemaRef};
use datafusion::catalog::{Session, TableFunctionArgs, TableFunctionImpl, TableProvider};
use datafusion::common::ScalarValue;
use datafusion::datasource::TableType;
use datafusion::datasource::memory::MemorySourceConfig;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::SessionState;
use datafusion::logical_expr::Expr;
use datafusion::physical_plan::ExecutionPlan;
use datafusion::prelude::SessionContext;

use super::attacks::attack_figures;
use super::figures as f;
use super::{Profile, ProfileOptions, profile};

/// The key argument that matches the original's rows by position instead of by a column.
pub const BY_POSITION: &str = "position()";

/// The name of the table function.
pub const NAME: &str = "anonymity_profile";

/// Registers `anonymity_profile` on `ctx`.
pub fn register_table_function(ctx: &SessionContext) {
    ctx.register_udtf(NAME, Arc::new(AnonymityProfileFunction));
}

/// The table function `anonymity_profile`.
#[derive(Debug, Default)]
pub struct AnonymityProfileFunction;

/// A string argument: `None` for NULL or `''`.
fn string_argument(args: &[Expr], index: usize, name: &str) -> Result<Option<String>> {
    let Some(expr) = args.get(index) else {
        return Ok(None);
    };
    match expr {
        Expr::Literal(value, _) => match value {
            ScalarValue::Utf8(v) | ScalarValue::LargeUtf8(v) | ScalarValue::Utf8View(v) => {
                Ok(v.clone().filter(|s| !s.trim().is_empty()))
            }
            ScalarValue::Null => Ok(None),
            _ => Err(DataFusionError::Plan(format!(
                "{NAME}: argument {} ({name}) must be a string",
                index + 1
            ))),
        },
        _ => Err(DataFusionError::Plan(format!(
            "{NAME}: argument {} ({name}) must be a string literal",
            index + 1
        ))),
    }
}

fn column_list(text: Option<String>) -> Vec<String> {
    text.map(|t| {
        t.split(',')
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
            .collect()
    })
    .unwrap_or_default()
}

impl TableFunctionImpl for AnonymityProfileFunction {
    fn call_with_args(&self, args: TableFunctionArgs) -> Result<Arc<dyn TableProvider>> {
        let exprs = args.exprs();
        if exprs.len() < 2 || exprs.len() > 7 {
            return Err(DataFusionError::Plan(format!(
                "{NAME} takes 2 to 7 arguments: (table, quasi_identifiers [, sensitive \
                 [, person_id [, population [, original [, key]]]]]), got {}",
                exprs.len()
            )));
        }
        let table = string_argument(exprs, 0, "table")?
            .ok_or_else(|| DataFusionError::Plan(format!("{NAME}: the table is missing")))?;
        let mut options = ProfileOptions::new(
            table,
            column_list(string_argument(exprs, 1, "quasi_identifiers")?),
        );
        options.sensitive = column_list(string_argument(exprs, 2, "sensitive")?);
        options.person_id = string_argument(exprs, 3, "person_id")?;
        options.population = string_argument(exprs, 4, "population")?;
        options.original = string_argument(exprs, 5, "original")?;
        match string_argument(exprs, 6, "key")? {
            Some(key) if key.trim() == BY_POSITION => options.by_position = true,
            key => options.key = key,
        }
        let schema = Arc::new(Schema::new(
            row(&options, None)
                .into_iter()
                .map(|(name, value)| Field::new(name, value.data_type(), true))
                .collect::<Vec<_>>(),
        ));
        Ok(Arc::new(ProfileTable { options, schema }))
    }
}

/// The one-row table of a profile.
#[derive(Debug)]
struct ProfileTable {
    options: ProfileOptions,
    schema: SchemaRef,
}

#[async_trait]
impl TableProvider for ProfileTable {
    fn schema(&self) -> SchemaRef {
        Arc::clone(&self.schema)
    }

    fn table_type(&self) -> TableType {
        TableType::Temporary
    }

    async fn scan(
        &self,
        state: &dyn Session,
        projection: Option<&Vec<usize>>,
        _filters: &[Expr],
        _limit: Option<usize>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let state = state
            .as_any()
            .downcast_ref::<SessionState>()
            .ok_or_else(|| {
                DataFusionError::Plan(format!("{NAME} needs a DataFusion SessionState"))
            })?;
        let ctx = SessionContext::new_with_state(state.clone());
        let profile = profile(&ctx, &self.options).await?;
        let batch = to_batch(&self.options, &profile, &self.schema)?;
        Ok(MemorySourceConfig::try_new_exec(
            &[vec![batch]],
            Arc::clone(&self.schema),
            projection.cloned(),
        )?)
    }
}

/// A value of the row: its type and, with a profile, its content.
enum Value {
    Count(Option<u64>),
    Number(Option<f64>),
    Text(Option<String>),
    /// The leakage ranking as a list of {attribute, leakage}.
    Ranking(Option<Vec<(String, f64)>>),
}

fn ranking_fields() -> Fields {
    Fields::from(vec![
        Field::new("attribute", DataType::Utf8, true),
        Field::new("leakage", DataType::Float64, true),
    ])
}

impl Value {
    fn data_type(&self) -> DataType {
        match self {
            Value::Count(_) => DataType::UInt64,
            Value::Number(_) => DataType::Float64,
            Value::Text(_) => DataType::Utf8,
            Value::Ranking(_) => DataType::List(Arc::new(Field::new(
                "item",
                DataType::Struct(ranking_fields()),
                true,
            ))),
        }
    }

    fn array(&self) -> ArrayRef {
        match self {
            Value::Count(v) => {
                let mut b = UInt64Builder::new();
                b.append_option(*v);
                Arc::new(b.finish())
            }
            Value::Number(v) => {
                let mut b = Float64Builder::new();
                b.append_option(*v);
                Arc::new(b.finish())
            }
            Value::Text(v) => {
                let mut b = StringBuilder::new();
                b.append_option(v.as_deref());
                Arc::new(b.finish())
            }
            Value::Ranking(v) => {
                let item = StructBuilder::from_fields(ranking_fields(), 0);
                let mut b = ListBuilder::new(item).with_field(Arc::new(Field::new(
                    "item",
                    DataType::Struct(ranking_fields()),
                    true,
                )));
                match v {
                    Some(ranking) => {
                        for (attribute, leakage) in ranking {
                            let item = b.values();
                            if let Some(f) = item.field_builder::<StringBuilder>(0) {
                                f.append_value(attribute);
                            }
                            if let Some(f) = item.field_builder::<Float64Builder>(1) {
                                f.append_value(*leakage);
                            }
                            item.append(true);
                        }
                        b.append(true);
                    }
                    None => b.append(false),
                }
                Arc::new(b.finish())
            }
        }
    }
}

/// The columns of the row, named, with their values when `profile` is given. The schema and
/// the values come from this one function so they cannot disagree; the names are the keys of
/// [`super::figures`] (a sensitive attribute's prefixed with `<attribute>_`).
fn row(options: &ProfileOptions, profile: Option<&Profile>) -> Vec<(String, Value)> {
    let mut columns = Vec::new();
    let mut push = |name: &str, value: Value| columns.push((name.to_string(), value));
    let a = profile.map(|p| &p.anonymity);
    let r = profile.map(|p| &p.risk);
    push(f::INPUT.key, Value::Text(profile.map(|p| p.input.clone())));
    push(f::ROWS.key, Value::Count(profile.map(|p| p.rows)));
    push(f::CLASSES.key, Value::Count(a.map(|a| a.classes)));
    push(f::K.key, Value::Count(a.map(|a| a.k)));
    if options.person_id.is_some() {
        push(f::K_PERSONS.key, Value::Count(a.and_then(|a| a.k_persons)));
    }
    push(
        f::SAMPLE_UNIQUES.key,
        Value::Count(a.map(|a| a.sample_uniques)),
    );
    for (index, size) in ["1", "2", "3_4", "5_9", "10_plus"].iter().enumerate() {
        let bucket = a.map(|a| &a.class_sizes[index]);
        push(
            &f::CLASSES_SIZE.column(size),
            Value::Count(bucket.map(|b| b.classes)),
        );
        push(
            &f::ROWS_SIZE.column(size),
            Value::Count(bucket.map(|b| b.rows)),
        );
    }
    for (index, attribute) in options.sensitive.iter().enumerate() {
        let s = a.map(|a| &a.sensitive[index]);
        let figures = [
            (f::L_DISTINCT, Value::Count(s.map(|s| s.l_distinct))),
            (f::L_ENTROPY, Value::Number(s.map(|s| s.l_entropy))),
            (f::L_RECURSIVE, Value::Count(s.map(|s| s.l_recursive))),
            (f::T_EQUAL, Value::Number(s.map(|s| s.t_equal))),
            (f::T_ORDERED, Value::Number(s.and_then(|s| s.t_ordered))),
            (f::ALPHA, Value::Number(s.map(|s| s.alpha))),
            (f::BETA, Value::Number(s.map(|s| s.beta))),
            (
                f::BETA_ENHANCED,
                Value::Number(s.and_then(|s| s.beta_enhanced)),
            ),
            (f::DELTA, Value::Number(s.map(|s| s.delta))),
            (
                f::DELTA_CLASSES_MISSING_VALUES,
                Value::Count(s.map(|s| s.delta_classes_missing_values)),
            ),
            (
                f::TUPLE_DIVERSITY,
                Value::Number(s.and_then(|s| s.tuple_diversity)),
            ),
        ];
        for (figure, value) in figures {
            push(&format!("{attribute}_{}", figure.key), value);
        }
        for figure in attack_figures(options.background_values, s) {
            push(
                &format!("{attribute}_{}", figure.rows_column),
                Value::Count(figure.rows),
            );
            push(
                &format!("{attribute}_{}", figure.classes_column),
                Value::Count(figure.classes),
            );
        }
    }
    push(
        f::PROSECUTOR_RISK_MAX.key,
        Value::Number(r.map(|r| r.prosecutor_max)),
    );
    push(
        f::PROSECUTOR_RISK_AVERAGE.key,
        Value::Number(r.map(|r| r.prosecutor_average)),
    );
    push(f::MARKETER_RISK.key, Value::Number(r.map(|r| r.marketer)));
    for (index, name) in ["0_2", "0_1", "0_05"].iter().enumerate() {
        push(
            &f::RISK_OVER.column(name),
            Value::Count(r.map(|r| r.thresholds[index].rows)),
        );
    }
    if options.population.is_some() {
        let p = r.and_then(|r| r.population.as_ref());
        push(f::POPULATION_ROWS.key, Value::Count(p.map(|p| p.rows)));
        push(f::K_MAP.key, Value::Count(p.map(|p| p.k_map)));
        push(
            f::JOURNALIST_RISK.key,
            Value::Number(p.map(|p| p.journalist)),
        );
        push(
            f::POPULATION_MARKETER_RISK.key,
            Value::Number(p.map(|p| p.marketer)),
        );
    }
    push(
        f::LEAKAGE_QUASI_IDENTIFIERS.key,
        Value::Number(profile.map(|p| p.leakage.quasi_identifiers)),
    );
    push(
        f::LEAKAGE.key,
        Value::Ranking(profile.map(|p| {
            p.leakage
                .attributes
                .iter()
                .map(|l| (l.attribute.clone(), l.leakage))
                .collect()
        })),
    );
    if options.original.is_some() {
        let u = profile.and_then(|p| p.utility.as_ref());
        push(f::NCP.key, Value::Number(u.map(|u| u.ncp)));
        push(f::LOSS.key, Value::Number(u.map(|u| u.loss_metric)));
        push(
            f::DISCERNIBILITY.key,
            Value::Number(u.map(|u| u.discernibility)),
        );
        push(f::AECS.key, Value::Number(u.and_then(|u| u.aecs)));
        push(
            f::CLASSIFICATION_METRIC.key,
            Value::Number(u.and_then(|u| u.classification_metric)),
        );
        push(
            f::MODIFICATION_RATE.key,
            Value::Number(u.map(|u| u.modification_rate)),
        );
        push(
            f::WHD_UNIFORM.key,
            Value::Number(u.and_then(|u| u.whd_uniform)),
        );
        push(f::WHD_BETA1.key, Value::Number(u.and_then(|u| u.whd_beta1)));
        push(
            f::MONOTONE_ENTROPY_LOSS.key,
            Value::Number(u.map(|u| u.monotone_entropy_loss)),
        );
        push(
            f::MUTUAL_INFORMATION_LOSS.key,
            Value::Number(u.map(|u| u.mutual_information_loss)),
        );
        push(
            f::PRIVATE_MUTUAL_INFORMATION.key,
            Value::Number(u.and_then(|u| u.private_mutual_information_utility)),
        );
        push(
            f::QUERY_MEAN_RELATIVE_ERROR.key,
            Value::Number(u.map(|u| u.query_accuracy.mean_relative_error)),
        );
    }
    columns
}

/// The profile as the one-row batch of `schema`.
fn to_batch(
    options: &ProfileOptions,
    profile: &Profile,
    schema: &SchemaRef,
) -> Result<RecordBatch> {
    let columns = row(options, Some(profile))
        .iter()
        .map(|(_, value)| value.array())
        .collect();
    Ok(RecordBatch::try_new(Arc::clone(schema), columns)?)
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;

    /// Every column the function can emit (every optional group asked for) is a figure of
    /// [`super::figures`]: a column added here without its label and description fails.
    #[test]
    fn every_column_is_a_figure() {
        let mut options = ProfileOptions::new("t", vec!["zip".into(), "age".into()]);
        options.sensitive = vec!["disease".into(), "salary".into()];
        options.person_id = Some("pid".into());
        options.population = Some("population".into());
        options.original = Some("original".into());
        options.background_values = 3;
        let columns = row(&options, None);
        let mut seen = HashSet::new();
        for (name, _) in &columns {
            assert!(seen.insert(name.as_str()), "column {name} twice");
            let figure = options
                .sensitive
                .iter()
                .find_map(|s| name.strip_prefix(&format!("{s}_")))
                .unwrap_or(name);
            assert!(
                f::of_column(figure).is_some(),
                "column {name} has no entry in profile::figures"
            );
        }
        // the optional groups are there
        for name in ["k_persons", "k_map", "ncp", "salary_background_3_classes"] {
            assert!(seen.contains(name), "{name} missing");
        }
    }
}
