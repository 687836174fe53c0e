//! Embedding datafusion-anonymity in your own DataFusion application:
//! `cargo run --example embed`.

use datafusion::error::Result;
use datafusion::prelude::{ParquetReadOptions, SessionContext};
use datafusion_anonymity::AnonymityContextExt;

#[tokio::main]
async fn main() -> Result<()> {
    // your own context, with your own tables, object stores and settings
    let ctx = SessionContext::new();
    // one call registers every anonymity function and the whole-table rewrite rule
    ctx.register_anonymity()?;
    ctx.register_parquet(
        "adult",
        concat!(env!("CARGO_MANIFEST_DIR"), "/examples/adult/adult.parquet"),
        ParquetReadOptions::default(),
    )
    .await?;
    ctx.sql(
        r#"SELECT sex, race,
                  k_anonymity()                       AS k,
                  l_diversity("salary-class")         AS l,
                  round(t_closeness("salary-class"), 4) AS t,
                  round(reidentification_risk(), 6)   AS risk
           FROM adult
           GROUP BY sex, race
           ORDER BY k"#,
    )
    .await?
    .show()
    .await?;
    Ok(())
}
