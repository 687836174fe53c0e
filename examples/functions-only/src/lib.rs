//! A host that adds datafusion-anonymity only for its SQL functions: one dependency, one
//! `register` call. `tests/structure.rs` (command-line package) checks that nothing of the
//! cluster, cloud or command-line stacks is compiled into it.

use std::sync::Arc;

use datafusion::arrow::array::{Int64Array, RecordBatch, StringArray};
use datafusion::arrow::datatypes::{DataType, Field, Schema};
use datafusion::datasource::MemTable;
use datafusion::error::Result;
use datafusion::prelude::SessionContext;

/// A session with the anonymity functions and a small `patients` table (zip, age, disease).
pub fn session() -> Result<SessionContext> {
    let ctx = SessionContext::new();
    datafusion_anonymity::register(&ctx)?;
    let schema = Arc::new(Schema::new(vec![
        Field::new("zip", DataType::Utf8, false),
        Field::new("age", DataType::Int64, false),
        Field::new("disease", DataType::Utf8, false),
    ]));
    let batch = RecordBatch::try_new(
        Arc::clone(&schema),
        vec![
            Arc::new(StringArray::from(vec![
                "130*", "130*", "130*", "148*", "148*",
            ])),
            Arc::new(Int64Array::from(vec![28, 29, 21, 50, 55])),
            Arc::new(StringArray::from(vec![
                "flu", "cancer", "flu", "flu", "flu",
            ])),
        ],
    )?;
    ctx.register_table(
        "patients",
        Arc::new(MemTable::try_new(schema, vec![vec![batch]])?),
    )?;
    Ok(ctx)
}

/// The smallest k and l of the table's classes over `zip`.
pub async fn k_and_l(ctx: &SessionContext) -> Result<(i64, i64)> {
    let batches = ctx
        .sql(
            "SELECT min(k), min(l) FROM (SELECT k_anonymity() AS k, l_diversity(disease) AS l \
             FROM patients GROUP BY zip)",
        )
        .await?
        .collect()
        .await?;
    let column = |i: usize| {
        batches[0]
            .column(i)
            .as_any()
            .downcast_ref::<Int64Array>()
            .map(|a| a.value(0))
    };
    match (column(0), column(1)) {
        (Some(k), Some(l)) => Ok((k, l)),
        _ => Err(datafusion::error::DataFusionError::Internal(
            "k and l are not Int64".to_string(),
        )),
    }
}

#[cfg(test)]
mod tests {
    /// Classes: 130* has 3 rows (flu, cancer, flu: l = 2), 148* has 2 rows (flu, flu: l = 1),
    /// so min k = 2 and min l = 1, counted by hand.
    #[tokio::test]
    async fn the_functions_run_in_a_lean_host() {
        let ctx = super::session().unwrap();
        assert_eq!(super::k_and_l(&ctx).await.unwrap(), (2, 1));
    }
}
