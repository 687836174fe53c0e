//! The synthetic firms table: one row per business, with five correlated, heavy-tailed numeric
//! attributes, the shape of the economic microdata statistics offices microaggregate (the
//! CASC Tarragona set is of this kind):
//!
//! - `firm_id` (1, 2, …), `region` (12 regions, skewed), `sector` (20 sectors, skewed);
//! - a latent log-size s ~ N(sector mean, 1.2²); `employees` = max(1, round(e^s));
//!   `turnover`, `wages`, `assets` and `costs` (euros) each e^(s + sector offset + N(0, σ²)) times
//!   a scale, so they are strongly but not perfectly correlated, and long-tailed.

use std::path::Path;
use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, Float64Array, Int64Array, RecordBatch, StringArray};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::error::Result;

use super::{BatchSource, cumulative, draw_index, label_column, write_table};
use datafusion_anonymity::rng::SplitMix64;

const REGIONS: usize = 12;
const SECTORS: usize = 20;

/// The firms table's schema.
pub fn firms_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("firm_id", DataType::Int64, false),
        Field::new("region", DataType::Utf8, false),
        Field::new("sector", DataType::Utf8, false),
        Field::new("employees", DataType::Int64, false),
        Field::new("turnover", DataType::Float64, false),
        Field::new("wages", DataType::Float64, false),
        Field::new("assets", DataType::Float64, false),
        Field::new("costs", DataType::Float64, false),
    ]))
}

/// Writes `rows` generated firms to `out` (Parquet, zstd; whole or not at all).
pub fn write_firms(out: &Path, rows: usize, seed: u64) -> Result<()> {
    write_table(out, rows, Firms::new(seed))
}

struct Firms {
    rng: SplitMix64,
    schema: SchemaRef,
    regions: ArrayRef,
    sectors: ArrayRef,
    region_weights: Vec<f64>,
    sector_weights: Vec<f64>,
    next_id: i64,
}

impl Firms {
    fn new(seed: u64) -> Self {
        let labels = |prefix: &str, n: usize| -> ArrayRef {
            Arc::new(StringArray::from_iter_values(
                (1..=n).map(|i| format!("{prefix}{i:02}")),
            ))
        };
        Self {
            rng: SplitMix64(seed),
            schema: firms_schema(),
            regions: labels("R", REGIONS),
            sectors: labels("S", SECTORS),
            region_weights: cumulative((1..=REGIONS).map(|r| 1.0 / r as f64)),
            sector_weights: cumulative((1..=SECTORS).map(|s| 1.0 / (s as f64).sqrt())),
            next_id: 1,
        }
    }
}

fn normal(rng: &mut SplitMix64) -> f64 {
    let u = 1.0 - rng.unit();
    let v = rng.unit();
    (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
}

impl BatchSource for Firms {
    fn schema(&self) -> SchemaRef {
        Arc::clone(&self.schema)
    }

    fn batch(&mut self, rows: usize) -> Result<RecordBatch> {
        let mut ids = Vec::with_capacity(rows);
        let mut regions = Vec::with_capacity(rows);
        let mut sectors = Vec::with_capacity(rows);
        let mut employees = Vec::with_capacity(rows);
        let mut columns: [Vec<f64>; 4] = std::array::from_fn(|_| Vec::with_capacity(rows));
        // euros per unit of size, and each attribute's own spread
        let scales = [120_000.0, 35_000.0, 200_000.0, 90_000.0];
        let spreads = [0.35, 0.25, 0.6, 0.4];
        for _ in 0..rows {
            ids.push(self.next_id);
            self.next_id += 1;
            regions.push(draw_index(&self.region_weights, &mut self.rng) as u16);
            let sector = draw_index(&self.sector_weights, &mut self.rng);
            sectors.push(sector as u16);
            let size = 1.0 + 0.08 * sector as f64 + 1.2 * normal(&mut self.rng);
            employees.push((size.exp().round() as i64).max(1));
            for (j, column) in columns.iter_mut().enumerate() {
                let offset = 0.02 * ((sector * (j + 3)) % 7) as f64;
                let value = scales[j] * (size + offset + spreads[j] * normal(&mut self.rng)).exp();
                column.push((value * 100.0).round() / 100.0);
            }
        }
        let [turnover, wages, assets, costs] = columns;
        let arrays: Vec<ArrayRef> = vec![
            Arc::new(Int64Array::from(ids)),
            label_column(&self.regions, regions)?,
            label_column(&self.sectors, sectors)?,
            Arc::new(Int64Array::from(employees)),
            Arc::new(Float64Array::from(turnover)),
            Arc::new(Float64Array::from(wages)),
            Arc::new(Float64Array::from(assets)),
            Arc::new(Float64Array::from(costs)),
        ];
        Ok(RecordBatch::try_new(Arc::clone(&self.schema), arrays)?)
    }
}
