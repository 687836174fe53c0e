//! Re-identification risk: against the sample itself (prosecutor, marketer) from the class
//! sizes, and against a population table (k-map, journalist, marketer).

use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::ident;
use datafusion::prelude::SessionContext;
use futures::StreamExt;

use super::anonymity::{ClassData, count_rows};
use super::{
    PopulationRisk, ProfileOptions, RISK_THRESHOLDS, Risk, RiskBucket, RiskThreshold, check_column,
    table,
};

/// Risk ranges of the distribution, highest first: (0.5, 1], (0.2, 0.5], (0.1, 0.2],
/// (0.05, 0.1], [0, 0.05].
const RISK_RANGES: [(f64, f64); 5] = [(0.5, 1.0), (0.2, 0.5), (0.1, 0.2), (0.05, 0.1), (0.0, 0.05)];

/// Rows whose risk (one per class) exceeds each of [`RISK_THRESHOLDS`].
fn thresholds(risks: impl Iterator<Item = (f64, u64)> + Clone, n: u64) -> Vec<RiskThreshold> {
    RISK_THRESHOLDS
        .iter()
        .map(|&threshold| {
            let rows: u64 = risks
                .clone()
                .filter(|&(risk, _)| risk > threshold)
                .map(|(_, rows)| rows)
                .sum();
            RiskThreshold {
                threshold,
                rows,
                share: rows as f64 / n as f64,
            }
        })
        .collect()
}

/// The per-record risk of a class whose size (rows or persons) is `size`: 1/size, and 1 for
/// an empty count (never below the worst case).
fn risk_of(size: u64) -> f64 {
    1.0 / size.max(1) as f64
}

/// Prosecutor and marketer risk of the sample (the sample taken as the population).
pub(crate) fn sample_risk(classes: &ClassData) -> Risk {
    let n = classes.rows();
    let nf = n as f64;
    let risk_sizes = classes.risk_sizes();
    let risks = risk_sizes
        .iter()
        .zip(&classes.sizes)
        .map(|(&size, &rows)| (risk_of(size), rows));
    let max = risks.clone().map(|(r, _)| r).fold(0.0, f64::max);
    let average = risks.clone().map(|(r, rows)| r * rows as f64).sum::<f64>() / nf;
    let mut distribution: Vec<RiskBucket> = RISK_RANGES
        .iter()
        .map(|&(min, max)| RiskBucket {
            min,
            max,
            classes: 0,
            rows: 0,
            share: 0.0,
        })
        .collect();
    for (risk, rows) in risks.clone() {
        // the first range (highest first) whose lower bound the risk exceeds
        let index = RISK_RANGES
            .iter()
            .position(|&(min, _)| risk > min)
            .unwrap_or(RISK_RANGES.len() - 1);
        distribution[index].classes += 1;
        distribution[index].rows += rows;
    }
    for bucket in &mut distribution {
        bucket.share = bucket.rows as f64 / nf;
    }
    Risk {
        prosecutor_max: max,
        prosecutor_average: average,
        marketer: average,
        thresholds: thresholds(risks, n),
        distribution,
        population: None,
    }
}

/// Risk against the population table `population`: F_E counts its rows with class E's
/// quasi-identifier values (its columns cast to the input's types).
pub(crate) async fn population_risk(
    ctx: &SessionContext,
    options: &ProfileOptions,
    population: &str,
    classes: &ClassData,
) -> Result<PopulationRisk> {
    let frame = table(ctx, population, "population").await?;
    let schema = frame.schema().inner().clone();
    let what = format!("population '{}'", options.label_of(population));
    for qi in &options.quasi_identifiers {
        check_column(&schema, qi, "quasi-identifier", &what)?;
    }
    let d = options.quasi_identifiers.len();
    let frame = frame.aggregate(
        options.quasi_identifiers.iter().map(ident).collect(),
        vec![count_rows()],
    )?;
    let interner = classes.interner()?;
    let mut matches = vec![0u64; classes.classes()];
    let mut rows = 0u64;
    let mut stream = frame.execute_stream().await?;
    while let Some(batch) = stream.next().await {
        let batch = batch?;
        let ids = interner.lookup(&batch.columns()[..d]).map_err(|e| {
            DataFusionError::Plan(format!(
                "the quasi-identifiers of {what} cannot be compared with the input's \
                     (types {}): {}",
                interner
                    .types()
                    .iter()
                    .map(|t| t.to_string())
                    .collect::<Vec<_>>()
                    .join(", "),
                crate::tables::redact(&e.message())
            ))
        })?;
        let counts = batch
            .column(d)
            .as_any()
            .downcast_ref::<datafusion::arrow::array::Int64Array>()
            .ok_or_else(|| DataFusionError::Internal("a count is not Int64".into()))?;
        for (id, &c) in ids.iter().zip(counts.values()) {
            rows += c as u64;
            if let Some(id) = id {
                matches[*id as usize] += c as u64;
            }
        }
    }
    let n = classes.rows();
    let risks = matches
        .iter()
        .zip(&classes.sizes)
        .map(|(&f, &rows)| (risk_of(f), rows));
    let marketer = risks.clone().map(|(r, rows)| r * rows as f64).sum::<f64>() / n as f64;
    Ok(PopulationRisk {
        population: options.label_of(population),
        rows,
        k_map: matches.iter().copied().min().unwrap_or(0),
        journalist: risks.clone().map(|(r, _)| r).fold(0.0, f64::max),
        marketer,
        classes_not_covered: matches
            .iter()
            .zip(&classes.sizes)
            .filter(|&(&f, &size)| f < size)
            .count() as u64,
        thresholds: thresholds(risks, n),
    })
}
