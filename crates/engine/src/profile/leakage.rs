//! The leakage ranking (the "pre-analytics" of the IAB approach): Longpre's normalized
//! ΔS/S0 of each single attribute, which is its entropy over log2 n:
//! Σ_v (c_v/n)(log2 n − log2 c_v)/log2 n = H(a)/log2 n.
//!
//! Quasi-identifiers come from the classes (#classes rows). Every other attribute takes one
//! `GROUP BY a` whose groups are folded in the same plan into Σ c·log2 c and the number of
//! values: each query reads only its column, and only two numbers leave DataFusion.

use datafusion::arrow::array::{Array, AsArray};
use datafusion::arrow::datatypes::{DataType, Float64Type, Int64Type, SchemaRef};
use datafusion::dataframe::DataFrame;
use datafusion::error::{DataFusionError, Result};
use datafusion::functions::math::expr_fn::log2;
use datafusion::functions_aggregate::expr_fn::{count, sum};
use datafusion::logical_expr::{cast, col, ident, lit};
use datafusion::prelude::SessionContext;

use super::anonymity::{ClassData, count_rows};
use super::keys::KeyInterner;
use super::{Leakage, LeakageRanking, ProfileOptions, table};
use crate::functions::formulas::entropy_leakage;
use crate::policy::AttributeLeakage;

/// Normalized leakage H/log2 n from n and Σ c·log2 c (1 for a one-row table).
pub(crate) fn normalized(n: u64, sum_c_log_c: f64) -> f64 {
    if n <= 1 {
        return 1.0;
    }
    let log_n = (n as f64).log2();
    // H = log2 n − (1/n) Σ c log2 c; clamp the rounding of a near-zero entropy
    ((log_n - sum_c_log_c / n as f64) / log_n).clamp(0.0, 1.0)
}

/// Σ c·log2 c and the number of distinct values of one attribute.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Sums {
    sum_c_log_c: f64,
    values: u64,
}

impl Sums {
    /// Σ c·log2 c over the values' counts c (read by tests).
    #[cfg(test)]
    pub(crate) fn sum_c_log_c(&self) -> f64 {
        self.sum_c_log_c
    }

    /// The distinct values (read by tests).
    #[cfg(test)]
    pub(crate) fn values(&self) -> u64 {
        self.values
    }

    /// The sums of an attribute whose values hold `counts` rows each (zeros skipped: values
    /// no row holds).
    pub(crate) fn of_counts(counts: impl IntoIterator<Item = u64>) -> Self {
        let (mut sum_c_log_c, mut values) = (0.0, 0);
        for c in counts.into_iter().filter(|&c| c > 0) {
            let c = c as f64;
            sum_c_log_c += c * c.log2();
            values += 1;
        }
        Self {
            sum_c_log_c,
            values,
        }
    }
}

/// The attributes ranked: every column of `schema` except the sensitive attributes and the
/// person id (a direct identifier).
fn ranked<'a>(options: &ProfileOptions, schema: &'a SchemaRef) -> Vec<&'a str> {
    schema
        .fields()
        .iter()
        .map(|f| f.name().as_str())
        .filter(|name| {
            !options.sensitive.iter().any(|s| s == name)
                && options.person_id.as_deref() != Some(*name)
        })
        .collect()
}

/// [`Sums`] of the ranked attributes that are not quasi-identifiers, by name: one
/// `GROUP BY a` each, folded into two numbers in the same plan, run concurrently.
pub(crate) async fn other_attribute_sums(
    ctx: &SessionContext,
    options: &ProfileOptions,
    schema: &SchemaRef,
) -> Result<Vec<(String, Sums)>> {
    let input = table(ctx, &options.table, "input").await?;
    let attributes: Vec<&str> = ranked(options, schema)
        .into_iter()
        .filter(|a| !options.quasi_identifiers.iter().any(|q| q == a))
        .collect();
    attribute_sums(&input, &attributes).await
}

/// [`Sums`] of each of `attributes` of `frame`: one `GROUP BY a` each, folded into two
/// numbers in the same plan, run concurrently.
async fn attribute_sums(frame: &DataFrame, attributes: &[&str]) -> Result<Vec<(String, Sums)>> {
    let rows_f = cast(col("__anon_rows"), DataType::Float64);
    let queries = attributes
        .iter()
        .map(|&attribute| {
            let frame = frame
                .clone()
                .aggregate(vec![ident(attribute)], vec![count_rows()])?
                .aggregate(
                    vec![],
                    vec![
                        sum(rows_f.clone() * log2(rows_f.clone())).alias("s"),
                        count(lit(1i64)).alias("values"),
                    ],
                )?;
            Ok(frame.collect())
        })
        .collect::<Result<Vec<_>>>()?;
    let results = futures::future::try_join_all(queries).await?;
    attributes
        .iter()
        .zip(results)
        .map(|(attribute, batches)| {
            let batch = batches
                .iter()
                .find(|b| b.num_rows() > 0)
                .ok_or_else(|| DataFusionError::Internal("leakage: no result row".into()))?;
            let s = batch.column(0).as_primitive::<Float64Type>();
            let sum_c_log_c = if s.is_null(0) { 0.0 } else { s.value(0) };
            let values = batch.column(1).as_primitive::<Int64Type>().value(0) as u64;
            Ok((
                attribute.to_string(),
                Sums {
                    sum_c_log_c,
                    values,
                },
            ))
        })
        .collect()
}

/// The normalized leakage of each of `attributes` of `frame` (of `rows` rows), highest first
/// (ties by name): the profile's ranking, for the post-analytics of a published output.
/// `known` holds the sums of attributes already counted elsewhere (the published
/// quasi-identifiers, from the written classes): the others take a `GROUP BY` each.
pub async fn attribute_leakage(
    frame: &DataFrame,
    attributes: &[&str],
    rows: u64,
    known: Vec<(String, Sums)>,
) -> Result<Vec<AttributeLeakage>> {
    let others: Vec<&str> = attributes
        .iter()
        .copied()
        .filter(|a| !known.iter().any(|(name, _)| name == a))
        .collect();
    let mut sums = attribute_sums(frame, &others).await?;
    sums.extend(
        known
            .into_iter()
            .filter(|(name, _)| attributes.contains(&name.as_str())),
    );
    let mut leakage: Vec<AttributeLeakage> = sums
        .into_iter()
        .map(|(attribute, sums)| AttributeLeakage {
            attribute,
            leakage: normalized(rows, sums.sum_c_log_c),
        })
        .collect();
    leakage.sort_by(|a, b| {
        b.leakage
            .total_cmp(&a.leakage)
            .then_with(|| a.attribute.cmp(&b.attribute))
    });
    Ok(leakage)
}

/// [`Sums`] of each quasi-identifier, from the classes: a value's count is the sum of the
/// sizes of the classes holding it (#classes rows, not n).
fn quasi_identifier_sums(classes: &ClassData) -> Result<Vec<Sums>> {
    classes
        .keys
        .iter()
        .map(|column| {
            let mut interner = KeyInterner::new(std::slice::from_ref(column.data_type()))?;
            let mut ids = Vec::with_capacity(column.len());
            interner.intern(std::slice::from_ref(column), &mut ids)?;
            let mut counts = vec![0u64; interner.len()];
            for (&id, &size) in ids.iter().zip(&classes.sizes) {
                counts[id as usize] += size;
            }
            Ok(Sums {
                sum_c_log_c: counts
                    .iter()
                    .map(|&c| {
                        let c = c as f64;
                        c * c.log2()
                    })
                    .sum(),
                values: counts.len() as u64,
            })
        })
        .collect()
}

/// The ranking: highest leakage first (ties by name), from the sums of the other attributes
/// and the classes.
pub(crate) fn ranking(
    options: &ProfileOptions,
    schema: &SchemaRef,
    classes: &ClassData,
    others: &[(String, Sums)],
) -> Result<LeakageRanking> {
    let n = classes.rows();
    let qi_sums = quasi_identifier_sums(classes)?;
    let mut ranking = Vec::new();
    for attribute in ranked(options, schema) {
        let qi = options
            .quasi_identifiers
            .iter()
            .position(|q| q == attribute);
        let sums = match qi {
            Some(j) => qi_sums[j],
            None => others
                .iter()
                .find(|(name, _)| name == attribute)
                .map(|(_, s)| *s)
                .ok_or_else(|| DataFusionError::Internal("leakage: attribute missing".into()))?,
        };
        ranking.push(Leakage {
            attribute: attribute.to_string(),
            quasi_identifier: qi.is_some(),
            distinct_values: sums.values,
            leakage: normalized(n, sums.sum_c_log_c),
        });
    }
    ranking.sort_by(|a, b| {
        b.leakage
            .total_cmp(&a.leakage)
            .then_with(|| a.attribute.cmp(&b.attribute))
    });
    let quasi_identifiers = classes
        .sizes
        .iter()
        .filter_map(|&size| entropy_leakage(size, n))
        .sum::<f64>()
        .min(1.0);
    Ok(LeakageRanking {
        attributes: ranking,
        quasi_identifiers,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iab_sex_example() {
        // docs/definitions.md: 27 F and 33 M of 60 → 0.168
        let s = 27.0 * 27f64.log2() + 33.0 * 33f64.log2();
        assert!((normalized(60, s) - 0.168).abs() < 5e-4);
        // all rows distinct: 1; one value: 0
        assert!((normalized(8, 0.0) - 1.0).abs() < 1e-12);
        assert!(normalized(8, 8.0 * 3.0).abs() < 1e-12);
        assert_eq!(normalized(1, 0.0), 1.0);
    }
}
