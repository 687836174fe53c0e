//! Post-analytics (seed 000 §3): the risk and leakage figures of the written output.

use datafusion::error::Result;
use datafusion::prelude::SessionContext;

use super::classes::ClassCounter;
use super::verify::{Verification, register_written};
use crate::policy::PostAnalytics;
use crate::profile::leakage::Sums;
use crate::storage::Location;

/// Post-analytics of the written output at `path` (seed 000 §3): the re-identification risk of
/// its classes (from `verification`) and the leakage of every published attribute except
/// the sensitive ones and the person id, read back from the files.
///
/// With a person id (`person`, the policy's `person_id`), a record's risk is 1/persons(E), the
/// higher one, as in the profile: the prosecutor risk is 1/k_persons, and the average and
/// marketer risks Σ_E |E|/persons(E) / n over every written class (one more `GROUP BY` of the
/// files; persons counted by `k_anonymity(person_id)`, a NULL id adding none).
///
/// `written` holds the written classes over `quasi_identifiers`: those columns' leakage
/// comes from it (the same counts as a `GROUP BY` of the files, without reading them again);
/// the other columns' leakage comes from the value counts of the uniqueness pass.
///
/// Every other column but the person id, sensitive or not, is also measured with the
/// quasi-identifiers: the rows it makes unique and their joint leakage (`uniqueness.rs`).
pub(crate) async fn post_analytics(
    ctx: &SessionContext,
    path: &Location,
    sensitive: &[String],
    person: Option<&str>,
    verification: &Verification,
    written: (&ClassCounter, &[String]),
) -> Result<PostAnalytics> {
    let table = register_written(ctx, path, "post_analytics").await?;
    let result = async {
        let frame = ctx.table(table.as_str()).await?;
        let attributes: Vec<&str> = frame
            .schema()
            .fields()
            .iter()
            .map(|f| f.name().as_str())
            .filter(|name| !sensitive.iter().any(|s| s == name) && person != Some(*name))
            .collect();
        let (classes, quasi_identifiers) = written;
        let others: Vec<&str> = frame
            .schema()
            .fields()
            .iter()
            .map(|f| f.name().as_str())
            .filter(|name| !quasi_identifiers.iter().any(|q| q == name) && person != Some(*name))
            .collect();
        let measured =
            super::uniqueness::column_uniqueness(&frame, quasi_identifiers, &others).await?;
        // the leakage of the quasi-identifiers from the written classes, of the other columns
        // from the uniqueness pass's value counts: no scan of the files of their own
        let known = quasi_identifiers
            .iter()
            .enumerate()
            .map(|(q, name)| (name.clone(), Sums::of_counts(classes.label_sizes(q))))
            .chain(measured.value_sums)
            .collect();
        let uniqueness = measured.columns;
        let leakage = crate::profile::leakage::attribute_leakage(
            &frame,
            &attributes,
            verification.rows,
            known,
        )
        .await?;
        let (rows, classes) = (verification.rows as f64, verification.classes as f64);
        // no row published: nothing to re-identify
        let mut average = if rows > 0.0 { classes / rows } else { 0.0 };
        let mut prosecutor_max = if verification.k > 0 {
            1.0 / verification.k as f64
        } else {
            0.0
        };
        if let Some(person) = person {
            let (max, mean) = person_risks(frame.clone(), quasi_identifiers, person).await?;
            prosecutor_max = prosecutor_max.max(max);
            average = average.max(mean);
        }
        Ok(PostAnalytics {
            prosecutor_max,
            prosecutor_average: average,
            marketer: average,
            journalist: verification.population.map(|p| p.journalist_risk()),
            population_marketer: verification
                .population
                .map(|p| p.marketer_risk(verification.rows)),
            leakage,
            uniqueness,
        })
    }
    .await;
    ctx.deregister_table(table.as_str())?;
    result
}

/// The largest and the row-average person-level risk of the written classes: max_E
/// 1/persons(E) and Σ_E |E|/persons(E) / Σ_E |E| (0 and 0 without rows).
async fn person_risks(
    frame: datafusion::prelude::DataFrame,
    quasi_identifiers: &[String],
    person: &str,
) -> Result<(f64, f64)> {
    use datafusion::arrow::array::{Array, AsArray};
    use datafusion::arrow::datatypes::{Float64Type, Int64Type};
    use datafusion::functions_aggregate::expr_fn::count;
    use datafusion::prelude::{col, lit};
    let keys = quasi_identifiers
        .iter()
        .map(|q| col(format!("\"{q}\"")))
        .collect();
    let persons = crate::functions::k_anonymity::k_anonymity_udaf()
        .call(vec![col(format!("\"{person}\""))])
        .alias("persons");
    let classes = frame
        .aggregate(keys, vec![count(lit(1)).alias("rows"), persons])?
        .select(vec![
            col("rows"),
            datafusion::prelude::cast(
                col("persons"),
                datafusion::arrow::datatypes::DataType::Float64,
            )
            .alias("persons"),
        ])?
        .collect()
        .await?;
    let (mut max, mut weighted, mut rows) = (0.0f64, 0.0f64, 0u64);
    for batch in &classes {
        let sizes = batch.column(0).as_primitive::<Int64Type>();
        let persons = batch.column(1).as_primitive::<Float64Type>();
        for i in 0..batch.num_rows() {
            let size = sizes.value(i) as u64;
            // no person counted (never for a class of rows): the worst case, risk 1
            let risk = if persons.is_null(i) || persons.value(i) < 1.0 {
                1.0
            } else {
                1.0 / persons.value(i)
            };
            max = max.max(risk);
            weighted += size as f64 * risk;
            rows += size;
        }
    }
    Ok((
        max,
        if rows > 0 {
            weighted / rows as f64
        } else {
            0.0
        },
    ))
}
