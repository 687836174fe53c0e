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
/// the sensitive ones, read back from the files.
///
/// `written` holds the written classes over `quasi_identifiers`: those columns' leakage
/// comes from it (the same counts as a `GROUP BY` of the files, without reading them again).
pub(crate) async fn post_analytics(
    ctx: &SessionContext,
    path: &Location,
    sensitive: &[String],
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
            .filter(|name| !sensitive.iter().any(|s| s == name))
            .collect();
        let (classes, quasi_identifiers) = written;
        let known = quasi_identifiers
            .iter()
            .enumerate()
            .map(|(q, name)| (name.clone(), Sums::of_counts(classes.label_sizes(q))))
            .collect();
        let leakage = crate::profile::leakage::attribute_leakage(
            &frame,
            &attributes,
            verification.rows,
            known,
        )
        .await?;
        let (rows, classes) = (verification.rows as f64, verification.classes as f64);
        // no row published: nothing to re-identify
        let average = if rows > 0.0 { classes / rows } else { 0.0 };
        Ok(PostAnalytics {
            prosecutor_max: if verification.k > 0 {
                1.0 / verification.k as f64
            } else {
                0.0
            },
            prosecutor_average: average,
            marketer: average,
            journalist: verification.population.map(|p| p.journalist_risk()),
            population_marketer: verification
                .population
                .map(|p| p.marketer_risk(verification.rows)),
            leakage,
        })
    }
    .await;
    ctx.deregister_table(table.as_str())?;
    result
}
