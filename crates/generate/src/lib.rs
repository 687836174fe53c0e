//! `anon generate`: deterministic synthetic tables with realistic skew, for tests and
//! benchmarks. The patients table (here): about 10% of the rows are further visits of an
//! earlier patient (same id and demographics, a new disease), as in 1:M medical microdata. The
//! medical table ([`write_medical`], in `medical.rs`): one row per patient with several
//! correlated sensitive attributes, for multiple-sensitive-attribute experiments. The visits
//! table ([`write_visits`], in `visits.rs`): one row per hospital visit, about 2.2 visits per
//! person, in the shape of a clinical trial's 1:M data (person-level k). The firms table
//! ([`write_firms`], in `firms.rs`): one row per business with five correlated, heavy-tailed
//! numeric attributes, for microaggregation. The trips table ([`write_trips`], in `trips.rs`):
//! location pings of devices commuting in a city over a week, for location cloaking. Rows are
//! generated and written a batch at a time, so 10M rows need under 100 MB of memory.

mod firms;
mod medical;
mod trips;
mod visits;

pub use firms::{firms_schema, write_firms};
pub use medical::{medical_schema, write_medical};
pub use trips::{trips_schema, write_trips};
pub use visits::{visits_schema, write_visits};

use std::fs::File;
use std::path::Path;
use std::sync::Arc;

use datafusion::arrow::array::{
    ArrayRef, DictionaryArray, Int32Array, Int64Array, RecordBatch, StringArray, UInt16Array,
};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef, UInt16Type};
use datafusion::error::{DataFusionError, Result};
use datafusion::parquet::arrow::ArrowWriter;
use datafusion::parquet::basic::{Compression, ZstdLevel};
use datafusion::parquet::file::properties::WriterProperties;

use datafusion_anonymity::rng::SplitMix64;

/// Rows per generated batch.
const BATCH_ROWS: usize = 131_072;
/// Rows per Parquet row group: large enough for good compression, small enough that a
/// multi-core scan splits a 10M-row file into several partitions.
const ROW_GROUP_ROWS: usize = 1024 * 1024;
/// Distinct zip codes; drawn with a Zipf-like skew so some are rare.
const ZIPS: usize = 3_000;
/// Five-digit codes 10000..=99999.
const ZIP_RANGE: u64 = 90_000;

const RACES: &[(&str, f64)] = &[
    ("White", 0.72),
    ("Black", 0.13),
    ("Asian", 0.06),
    ("Hispanic", 0.06),
    ("Other", 0.03),
];
const MARITAL: &[(&str, f64)] = &[
    ("Married", 0.48),
    ("Never-married", 0.33),
    ("Divorced", 0.12),
    ("Widowed", 0.05),
    ("Separated", 0.02),
];
const EDUCATION: &[(&str, f64)] = &[
    ("HS-grad", 0.32),
    ("Some-college", 0.22),
    ("Bachelors", 0.17),
    ("Masters", 0.08),
    ("Assoc", 0.08),
    ("11th", 0.05),
    ("Doctorate", 0.02),
    ("Prof-school", 0.02),
    ("9th", 0.04),
];
const DISEASES: &[(&str, f64)] = &[
    ("hypertension", 0.22),
    ("diabetes", 0.14),
    ("asthma", 0.11),
    ("flu", 0.10),
    ("bronchitis", 0.08),
    ("gastritis", 0.07),
    ("migraine", 0.06),
    ("arthritis", 0.05),
    ("depression", 0.05),
    ("pneumonia", 0.04),
    ("gastric ulcer", 0.03),
    ("heart disease", 0.02),
    ("stroke", 0.013),
    ("stomach cancer", 0.007),
    ("HIV", 0.005),
    ("tuberculosis", 0.005),
];

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 { a } else { gcd(b, a % b) }
}

/// Shares of the population by age decade (0-9, 10-19, ..., 90-100), roughly those of a
/// census: flat up to 60, then thinning out.
const AGE_DECADES: [f64; 10] = [
    0.120, 0.128, 0.138, 0.135, 0.125, 0.130, 0.115, 0.070, 0.032, 0.007,
];

/// A categorical column: its labels and the cumulative distribution to draw from.
struct Categorical {
    labels: ArrayRef,
    cumulative: Vec<f64>,
}

/// The running sums of `weights`, scaled to end at 1.
fn cumulative(weights: impl Iterator<Item = f64> + Clone) -> Vec<f64> {
    let total: f64 = weights.clone().sum();
    weights
        .scan(0.0, |running, w| {
            *running += w / total;
            Some(*running)
        })
        .collect()
}

/// An index drawn with the probabilities whose running sums are `cumulative`.
fn draw_index(cumulative: &[f64], rng: &mut SplitMix64) -> usize {
    let u = rng.unit();
    // rounding may leave the last sum a hair below 1
    cumulative
        .partition_point(|&c| c <= u)
        .min(cumulative.len() - 1)
}

impl Categorical {
    fn new(table: &[(&str, f64)]) -> Self {
        let labels: StringArray = table.iter().map(|(l, _)| Some(*l)).collect();
        Self::from_labels(labels, table.iter().map(|(_, w)| *w).collect())
    }

    fn from_labels(labels: StringArray, weights: Vec<f64>) -> Self {
        Self {
            labels: Arc::new(labels),
            cumulative: cumulative(weights.into_iter()),
        }
    }

    fn draw(&self, rng: &mut SplitMix64) -> u16 {
        // at most u16::MAX labels: the dictionary keys are u16
        draw_index(&self.cumulative, rng) as u16
    }

    /// The labels of `codes` as a plain Utf8 column.
    fn column(&self, codes: Vec<u16>) -> Result<ArrayRef> {
        label_column(&self.labels, codes)
    }
}

/// The `labels` of `codes` as a plain Utf8 column: a dictionary `take`, no per-row string.
fn label_column(labels: &ArrayRef, codes: Vec<u16>) -> Result<ArrayRef> {
    let keys = UInt16Array::from(codes);
    let dictionary = DictionaryArray::<UInt16Type>::try_new(keys, Arc::clone(labels))?;
    Ok(cast(&dictionary, &DataType::Utf8)?)
}

/// Distinct five-digit zip codes spread over 10000..99999, drawn with a Zipf-like skew (weights
/// 1/rank) so the tail is rare. Their placement takes two draws from `rng`.
fn zip_codes(rng: &mut SplitMix64) -> Categorical {
    // a stride coprime to the range visits each code at most once
    let stride = loop {
        let candidate = 1 + rng.next_u64() % (ZIP_RANGE - 1);
        if gcd(candidate, ZIP_RANGE) == 1 {
            break candidate;
        }
    };
    let offset = rng.next_u64() % ZIP_RANGE;
    let zip_labels: StringArray = (0..ZIPS as u64)
        .map(|i| Some(format!("{:05}", 10_000 + (offset + i * stride) % ZIP_RANGE)))
        .collect();
    let zip_weights = (1..=ZIPS).map(|rank| 1.0 / rank as f64).collect();
    Categorical::from_labels(zip_labels, zip_weights)
}

/// "F" and "M" in their population shares.
fn sexes() -> Categorical {
    Categorical::new(&[("F", 0.51), ("M", 0.49)])
}

/// Cumulative shares of the age decades 0-9, ..., 90-100, for [`draw_age`].
fn age_decades() -> Vec<f64> {
    cumulative(AGE_DECADES.iter().copied())
}

/// An age: a decade by its share of the population, then a year within it (the last band is
/// 90..=100). Two draws from `rng`.
fn draw_age(age_decades: &[f64], rng: &mut SplitMix64) -> i32 {
    let decade = draw_index(age_decades, rng) as f64;
    let width = if decade == 9.0 { 11.0 } else { 10.0 };
    (10.0 * decade + width * rng.unit()) as i32
}

/// The generated table's schema.
pub fn patients_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("patient_id", DataType::Int64, false),
        Field::new("zip", DataType::Utf8, false),
        Field::new("age", DataType::Int32, false),
        Field::new("sex", DataType::Utf8, false),
        Field::new("race", DataType::Utf8, false),
        Field::new("marital_status", DataType::Utf8, false),
        Field::new("education", DataType::Utf8, false),
        Field::new("disease", DataType::Utf8, false),
        Field::new("income", DataType::Int64, false),
    ]))
}

/// Draws the columns of the table, batch by batch.
struct Generator {
    seed: u64,
    rng: SplitMix64,
    schema: SchemaRef,
    zips: Categorical,
    sexes: Categorical,
    races: Categorical,
    marital: Categorical,
    education: Categorical,
    diseases: Categorical,
    /// Cumulative shares of the age decades 0-9, ..., 90-100.
    age_decades: Vec<f64>,
    next_id: i64,
}

impl Generator {
    fn new(seed: u64) -> Self {
        let mut rng = SplitMix64(seed);
        let zips = zip_codes(&mut rng);
        Self {
            seed,
            rng,
            schema: patients_schema(),
            zips,
            sexes: sexes(),
            races: Categorical::new(RACES),
            marital: Categorical::new(MARITAL),
            education: Categorical::new(EDUCATION),
            diseases: Categorical::new(DISEASES),
            age_decades: age_decades(),
            next_id: 1,
        }
    }
}

impl BatchSource for Generator {
    fn schema(&self) -> SchemaRef {
        Arc::clone(&self.schema)
    }

    fn batch(&mut self, rows: usize) -> Result<RecordBatch> {
        let rng = &mut self.rng;
        let mut ids = Vec::with_capacity(rows);
        let mut ages = Vec::with_capacity(rows);
        let mut incomes = Vec::with_capacity(rows);
        let mut codes: [Vec<u16>; 6] = Default::default();
        for _ in 0..rows {
            // about 10% of rows belong to a person already seen (1:M microdata)
            let id = if self.next_id > 1 && rng.unit() < 0.1 {
                1 + (rng.next_u64() % (self.next_id - 1) as u64) as i64
            } else {
                self.next_id += 1;
                self.next_id - 1
            };
            ids.push(id);
            // a person's attributes come from a generator seeded by the person alone, so a
            // repeated person has the same demographics on every row without remembering
            // anyone; only the disease is drawn per row (per visit)
            let mut person = SplitMix64(SplitMix64(self.seed ^ id as u64).next_u64());
            ages.push(draw_age(&self.age_decades, &mut person));
            // incomes: log-normal-ish, heavy right tail
            let z = (person.unit() + person.unit() + person.unit() - 1.5) * 2.0;
            incomes.push((35_000.0 * (0.6 * z).exp()) as i64 / 100 * 100);
            for (column, table) in codes.iter_mut().zip([
                &self.zips,
                &self.sexes,
                &self.races,
                &self.marital,
                &self.education,
            ]) {
                column.push(table.draw(&mut person));
            }
            codes[5].push(self.diseases.draw(rng));
        }
        let [zips, sexes, races, marital, education, diseases] = codes;
        let columns: Vec<ArrayRef> = vec![
            Arc::new(Int64Array::from(ids)),
            self.zips.column(zips)?,
            Arc::new(Int32Array::from(ages)),
            self.sexes.column(sexes)?,
            self.races.column(races)?,
            self.marital.column(marital)?,
            self.education.column(education)?,
            self.diseases.column(diseases)?,
            Arc::new(Int64Array::from(incomes)),
        ];
        Ok(RecordBatch::try_new(Arc::clone(&self.schema), columns)?)
    }
}

/// Writes `rows` generated patients to `out` (Parquet, zstd), `seed` deciding every value.
/// Rows are generated and written a batch at a time, so memory stays bounded whatever `rows`.
/// The file is written next to `out` under a temporary name, synced and renamed when complete,
/// so `out` is never partial: it is the whole table or it is left as it was.
pub fn write_patients(out: &Path, rows: usize, seed: u64) -> Result<()> {
    write_table(out, rows, Generator::new(seed))
}

/// The tables [`write_named`] writes, by the names `anon generate --table` and Python's
/// `generate(table=...)` take.
pub const TABLES: [&str; 5] = ["patients", "medical", "visits", "firms", "trips"];

/// Writes `rows` rows of the table called `name` (one of [`TABLES`]) to `out`, as its
/// `write_*` function does; another name is refused, naming the tables.
pub fn write_named(name: &str, out: &Path, rows: usize, seed: u64) -> Result<()> {
    match name {
        "patients" => write_patients(out, rows, seed),
        "medical" => write_medical(out, rows, seed),
        "visits" => write_visits(out, rows, seed),
        "firms" => write_firms(out, rows, seed),
        "trips" => write_trips(out, rows, seed),
        other => Err(datafusion::error::DataFusionError::Plan(format!(
            "no generated table '{other}': choose one of {}",
            TABLES.join(", ")
        ))),
    }
}

/// A generator of a table's rows, a batch at a time.
trait BatchSource {
    /// The schema of every batch.
    fn schema(&self) -> SchemaRef;
    /// The next `rows` rows.
    fn batch(&mut self, rows: usize) -> Result<RecordBatch>;
}

/// Writes `rows` rows of `source` to `out` (Parquet, zstd), a batch at a time, through a
/// temporary sibling synced and renamed when complete: `out` is the whole table or is left as
/// it was.
fn write_table(out: &Path, rows: usize, source: impl BatchSource) -> Result<()> {
    let file_name = out.file_name().ok_or_else(|| {
        DataFusionError::Plan(format!("output path {} has no file name", out.display()))
    })?;
    let temporary = out.with_file_name(format!(".{}.tmp", file_name.to_string_lossy()));
    let result = write_to(&temporary, rows, source)
        .and_then(|()| std::fs::rename(&temporary, out).map_err(DataFusionError::from))
        .map_err(|e| {
            DataFusionError::Execution(format!("cannot write {}: {}", out.display(), e.message()))
        });
    if result.is_err() {
        // best effort: the error above is what matters
        let _ = std::fs::remove_file(&temporary);
    }
    result
}

fn write_to(path: &Path, rows: usize, mut source: impl BatchSource) -> Result<()> {
    let file = File::create(path)?;
    let properties = WriterProperties::builder()
        .set_compression(Compression::ZSTD(ZstdLevel::default()))
        .set_max_row_group_row_count(Some(ROW_GROUP_ROWS))
        .build();
    let mut writer = ArrowWriter::try_new(file, source.schema(), Some(properties))?;
    let mut remaining = rows;
    while remaining > 0 {
        let batch_rows = remaining.min(BATCH_ROWS);
        writer.write(&source.batch(batch_rows)?)?;
        remaining -= batch_rows;
    }
    // on disk before the rename makes it visible
    writer.into_inner()?.sync_all()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_rows_and_skew() {
        let first = Generator::new(7).batch(1000).unwrap();
        let again = Generator::new(7).batch(1000).unwrap();
        let other = Generator::new(8).batch(1000).unwrap();
        assert_eq!(first, again);
        assert_ne!(first, other);
        assert_eq!(first.num_rows(), 1000);
        // some persons have several rows
        let ids = first
            .column(0)
            .as_any()
            .downcast_ref::<Int64Array>()
            .unwrap();
        let distinct: std::collections::HashSet<i64> = ids.values().iter().copied().collect();
        assert!(
            distinct.len() < 1000 && distinct.len() > 800,
            "{}",
            distinct.len()
        );
        // ... and the same demographics on each of them
        let mut seen = std::collections::HashMap::new();
        let zips = first
            .column(1)
            .as_any()
            .downcast_ref::<StringArray>()
            .unwrap();
        let ages = first
            .column(2)
            .as_any()
            .downcast_ref::<Int32Array>()
            .unwrap();
        for row in 0..first.num_rows() {
            let person = (zips.value(row), ages.value(row));
            assert_eq!(*seen.entry(ids.value(row)).or_insert(person), person);
        }
    }

    #[test]
    fn zip_codes_are_distinct_five_digit_strings() {
        let generator = Generator::new(3);
        let labels = generator
            .zips
            .labels
            .as_any()
            .downcast_ref::<StringArray>()
            .unwrap();
        let distinct: std::collections::HashSet<&str> = labels.iter().flatten().collect();
        assert_eq!(distinct.len(), ZIPS);
        assert!(
            distinct
                .iter()
                .all(|z| z.len() == 5 && z.parse::<u32>().is_ok())
        );
    }

    #[test]
    fn writes_complete_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p.parquet");
        write_patients(&path, 300_000, 1).unwrap();
        let file = File::open(&path).unwrap();
        let reader = datafusion::parquet::file::reader::SerializedFileReader::new(file).unwrap();
        use datafusion::parquet::file::reader::FileReader;
        assert_eq!(reader.metadata().file_metadata().num_rows(), 300_000);
        // no temporary file left behind
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }
}
