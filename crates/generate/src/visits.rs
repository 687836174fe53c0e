//! The synthetic visits table: hospital visits of patients, one row per visit, in the shape of
//! a clinical trial's 1:M microdata (about 228,000 persons in 500,000 rows).
//!
//! - **Persons.** Each patient has 1 to [`MAX_VISITS`] visits, drawn with weights
//!   1/v^[`VISITS_EXPONENT`] (a truncated Zipf law: about 64% have one visit, a few hundred
//!   of 228,000 have all 22; mean ≈ 2.19). Ids run 1, 2, … in order of first appearance.
//! - **Per-person constant demographics** (the same on every visit): `sex`, `birth_date`
//!   (an age by the census shares of [`super::draw_age`] on 2024-01-01, then a day within
//!   the year) and `zip` (the patients table's Zipf-skewed codes). They come from a generator
//!   seeded by the person alone, as in the patients table.
//! - **Per visit:** `department` (a specialty of the medical table: with probability
//!   [`HOME_DEPARTMENT_SHARE`] the patient's own department, else one drawn by the
//!   specialties' shares), `diagnosis` (in the patient's own department, with probability
//!   [`HOME_DIAGNOSIS_SHARE`] the patient's own diagnosis; otherwise one of the department's
//!   diagnoses with weights 1/rank), `visit_date` (uniform over 2019–2023, never before the
//!   birth date) and `cost` (log-normal around the department's median, in cents: about 4
//!   in 5 amounts are unique).
//!
//! A person's visits are generated together and the rows of each batch are then shuffled, so
//! a person's rows are scattered through the batch (a person whose visits cross a batch
//! boundary continues in the next batch).

use std::path::Path;
use std::sync::Arc;

use datafusion::arrow::array::{
    ArrayRef, Date32Array, Float64Array, Int64Array, RecordBatch, StringArray,
};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::error::Result;

use super::medical::{SPECIALTIES, shuffle};
use super::{
    BatchSource, Categorical, age_decades, cumulative, draw_age, draw_index, label_column, sexes,
    write_table, zip_codes,
};
use datafusion_anonymity::rng::SplitMix64;

/// The most visits of one person.
pub const MAX_VISITS: usize = 22;
/// Visits per person are drawn with weights 1/v^this on 1..=[`MAX_VISITS`]: mean ≈ 2.19, so
/// 500,000 rows hold about 228,000 persons.
pub const VISITS_EXPONENT: f64 = 2.06;
/// The share of a person's visits to the person's own department.
pub const HOME_DEPARTMENT_SHARE: f64 = 0.6;
/// The share of the visits to the person's own department with the person's own diagnosis.
pub const HOME_DIAGNOSIS_SHARE: f64 = 0.7;
/// 2024-01-01, the day ages are counted to (days since 1970-01-01).
const AGE_REFERENCE_DAY: i32 = 19_723;
/// Visits fall in 2019-01-01 ..= 2023-12-31 (days since 1970-01-01).
const FIRST_VISIT_DAY: i32 = 17_897;
const LAST_VISIT_DAY: i32 = 19_722;
/// The median cost of a visit (in currency units) per department, in the order of
/// [`SPECIALTIES`]; a visit costs the median times exp(0.9 z), z about standard normal.
const MEDIAN_COSTS: [f64; 12] = [
    4_200.0, 18_000.0, 6_500.0, 3_800.0, 1_600.0, 3_000.0, 3_500.0, 1_800.0, 1_400.0, 5_200.0,
    2_400.0, 1_200.0,
];

/// The visits table's schema: `patient_id` (the person), the per-person quasi-identifiers
/// `sex`, `birth_date` and `zip`, then the per-visit `department`, `diagnosis` (sensitive),
/// `visit_date` and `cost`. Every column is non-null.
pub fn visits_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("patient_id", DataType::Int64, false),
        Field::new("sex", DataType::Utf8, false),
        Field::new("birth_date", DataType::Date32, false),
        Field::new("zip", DataType::Utf8, false),
        Field::new("department", DataType::Utf8, false),
        Field::new("diagnosis", DataType::Utf8, false),
        Field::new("visit_date", DataType::Date32, false),
        Field::new("cost", DataType::Float64, false),
    ]))
}

/// Writes `rows` generated visits ([`visits_schema`]) to `out` (Parquet, zstd), `seed`
/// deciding every value. Like [`super::write_patients`]: a batch at a time in bounded memory,
/// and `out` is the whole table or is left as it was.
pub fn write_visits(out: &Path, rows: usize, seed: u64) -> Result<()> {
    write_table(out, rows, VisitsGenerator::new(seed))
}

/// The person whose visits are being generated.
struct Person {
    id: i64,
    /// visits still to generate
    remaining: usize,
    sex: u16,
    birth_day: i32,
    zip: u16,
    /// the person's own department (index in [`SPECIALTIES`]) and diagnosis (global code)
    department: u16,
    diagnosis: u16,
}

/// Draws the visits table, batch by batch.
struct VisitsGenerator {
    seed: u64,
    rng: SplitMix64,
    schema: SchemaRef,
    zips: Categorical,
    sexes: Categorical,
    age_decades: Vec<f64>,
    /// cumulative weights of 1..=MAX_VISITS visits
    visits: Vec<f64>,
    /// the departments by the specialties' shares
    departments: Categorical,
    /// per department: its first diagnosis code and the cumulative weights 1/rank of its
    /// diagnoses
    diagnoses_of: Vec<(u16, Vec<f64>)>,
    /// every diagnosis name, department by department
    diagnoses: ArrayRef,
    current: Option<Person>,
    next_id: i64,
}

impl VisitsGenerator {
    fn new(seed: u64) -> Self {
        let mut rng = SplitMix64(seed);
        // first, as for the patients table: the same seed gives the same zip codes
        let zips = zip_codes(&mut rng);
        let departments = Categorical::from_labels(
            StringArray::from_iter_values(SPECIALTIES.iter().map(|s| s.name)),
            SPECIALTIES.iter().map(|s| s.share).collect(),
        );
        let mut first = 0u16;
        let diagnoses_of = SPECIALTIES
            .iter()
            .map(|specialty| {
                let count = specialty.diagnoses.len();
                let start = first;
                first += count as u16;
                (start, cumulative((1..=count).map(|rank| 1.0 / rank as f64)))
            })
            .collect();
        let diagnoses = Arc::new(StringArray::from(
            SPECIALTIES
                .iter()
                .flat_map(|s| s.diagnoses)
                .map(|d| d.name)
                .collect::<Vec<_>>(),
        ));
        Self {
            seed,
            rng,
            schema: visits_schema(),
            zips,
            sexes: sexes(),
            age_decades: age_decades(),
            visits: cumulative((1..=MAX_VISITS).map(|v| (v as f64).powf(-VISITS_EXPONENT))),
            departments,
            diagnoses_of,
            diagnoses,
            current: None,
            next_id: 1,
        }
    }

    /// A diagnosis of `department`, its diagnoses weighted 1/rank.
    fn diagnosis_in(&self, department: u16, rng: &mut SplitMix64) -> u16 {
        let (first, cumulative) = &self.diagnoses_of[department as usize];
        first + draw_index(cumulative, rng) as u16
    }

    /// The next person: drawn from a generator seeded by the person alone.
    fn new_person(&mut self) -> Person {
        let id = self.next_id;
        self.next_id += 1;
        let mut own = SplitMix64(SplitMix64(self.seed ^ id as u64).next_u64());
        let remaining = 1 + draw_index(&self.visits, &mut own);
        let sex = self.sexes.draw(&mut own);
        let age = draw_age(&self.age_decades, &mut own);
        // a day within the year before the birthday of `age`
        let days = ((age as f64 + own.unit()) * 365.2425) as i32;
        let zip = self.zips.draw(&mut own);
        let department = self.departments.draw(&mut own);
        let diagnosis = self.diagnosis_in(department, &mut own);
        Person {
            id,
            remaining,
            sex,
            birth_day: AGE_REFERENCE_DAY - 1 - days,
            zip,
            department,
            diagnosis,
        }
    }
}

impl BatchSource for VisitsGenerator {
    fn schema(&self) -> SchemaRef {
        Arc::clone(&self.schema)
    }

    fn batch(&mut self, rows: usize) -> Result<RecordBatch> {
        let mut ids = Vec::with_capacity(rows);
        let mut births = Vec::with_capacity(rows);
        let mut visit_days = Vec::with_capacity(rows);
        let mut costs = Vec::with_capacity(rows);
        let mut codes: [Vec<u16>; 4] = Default::default();
        for _ in 0..rows {
            let mut person = match self.current.take() {
                Some(person) if person.remaining > 0 => person,
                _ => self.new_person(),
            };
            person.remaining -= 1;
            let mut rng = SplitMix64(self.rng.next_u64());
            let at_home = rng.unit() < HOME_DEPARTMENT_SHARE;
            let department = if at_home {
                person.department
            } else {
                self.departments.draw(&mut rng)
            };
            let diagnosis = if at_home && rng.unit() < HOME_DIAGNOSIS_SHARE {
                person.diagnosis
            } else {
                self.diagnosis_in(department, &mut rng)
            };
            let first_day = FIRST_VISIT_DAY.max(person.birth_day);
            let span = (LAST_VISIT_DAY - first_day + 1) as u64;
            visit_days.push(first_day + rng.below(span) as i32);
            // about standard normal (Irwin–Hall of 12), then log-normal in cents
            let z: f64 = (0..12).map(|_| rng.unit()).sum::<f64>() - 6.0;
            let cost = MEDIAN_COSTS[department as usize] * (0.9 * z).exp();
            costs.push((cost * 100.0).round() / 100.0);
            ids.push(person.id);
            births.push(person.birth_day);
            let [sex, zip, departments, diagnoses] = &mut codes;
            sex.push(person.sex);
            zip.push(person.zip);
            departments.push(department);
            diagnoses.push(diagnosis);
            self.current = Some(person);
        }
        // scatter each person's rows through the batch
        let mut order: Vec<u32> = (0..rows as u32).collect();
        shuffle(&mut order, &mut self.rng);
        let permute_codes =
            |column: &[u16]| -> Vec<u16> { order.iter().map(|&i| column[i as usize]).collect() };
        let [sex, zip, departments, diagnoses] = &codes;
        let columns: Vec<ArrayRef> = vec![
            Arc::new(Int64Array::from_iter_values(
                order.iter().map(|&i| ids[i as usize]),
            )),
            self.sexes.column(permute_codes(sex))?,
            Arc::new(Date32Array::from_iter_values(
                order.iter().map(|&i| births[i as usize]),
            )),
            self.zips.column(permute_codes(zip))?,
            self.departments.column(permute_codes(departments))?,
            label_column(&self.diagnoses, permute_codes(diagnoses))?,
            Arc::new(Date32Array::from_iter_values(
                order.iter().map(|&i| visit_days[i as usize]),
            )),
            Arc::new(Float64Array::from_iter_values(
                order.iter().map(|&i| costs[i as usize]),
            )),
        ];
        Ok(RecordBatch::try_new(Arc::clone(&self.schema), columns)?)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::{HashMap, HashSet};

    use datafusion::arrow::array::{Array, AsArray};
    use datafusion::arrow::datatypes::{Date32Type, Float64Type, Int64Type};

    use super::*;

    #[test]
    fn costs_cover_every_department() {
        assert_eq!(MEDIAN_COSTS.len(), SPECIALTIES.len());
    }

    #[test]
    fn same_seed_same_batch() {
        let first = VisitsGenerator::new(7).batch(5000).unwrap();
        let again = VisitsGenerator::new(7).batch(5000).unwrap();
        let other = VisitsGenerator::new(8).batch(5000).unwrap();
        assert_eq!(first, again);
        assert_ne!(first, other);
        assert_eq!(first.schema(), visits_schema());
        for column in first.columns() {
            assert_eq!(column.null_count(), 0);
        }
    }

    /// 500,000 rows: the shape of the trial (about 228,000 persons, 1 to 22 visits each,
    /// skewed), per-person constant demographics, visits after birth in 2019–2023, costs
    /// nearly unique.
    #[test]
    fn has_the_trial_shape() {
        let mut generator = VisitsGenerator::new(42);
        let batches: Vec<RecordBatch> = [131_072, 131_072, 131_072, 106_784]
            .iter()
            .map(|&rows| generator.batch(rows).unwrap())
            .collect();
        let mut visits: HashMap<i64, usize> = HashMap::new();
        // per person: (sex, birth day, zip)
        let mut demographics: HashMap<i64, (String, i32, String)> = HashMap::new();
        let mut departments: HashMap<i64, HashSet<String>> = HashMap::new();
        let mut distinct_costs: HashSet<u64> = HashSet::new();
        let mut rows = 0;
        for batch in &batches {
            let ids = batch.column(0).as_primitive::<Int64Type>();
            let sex = batch.column(1).as_string::<i32>();
            let birth = batch.column(2).as_primitive::<Date32Type>();
            let zip = batch.column(3).as_string::<i32>();
            let department = batch.column(4).as_string::<i32>();
            let visit = batch.column(6).as_primitive::<Date32Type>();
            let cost = batch.column(7).as_primitive::<Float64Type>();
            for row in 0..batch.num_rows() {
                rows += 1;
                let id = ids.value(row);
                *visits.entry(id).or_default() += 1;
                let person = (
                    sex.value(row).to_string(),
                    birth.value(row),
                    zip.value(row).to_string(),
                );
                assert_eq!(*demographics.entry(id).or_insert(person.clone()), person);
                departments
                    .entry(id)
                    .or_default()
                    .insert(department.value(row).to_string());
                assert!(visit.value(row) >= birth.value(row));
                assert!((FIRST_VISIT_DAY..=LAST_VISIT_DAY).contains(&visit.value(row)));
                assert!(birth.value(row) < AGE_REFERENCE_DAY);
                // about 101 years before 2024 at the most
                assert!(birth.value(row) > AGE_REFERENCE_DAY - 102 * 366);
                assert!(cost.value(row) > 0.0);
                distinct_costs.insert(cost.value(row).to_bits());
            }
        }
        assert_eq!(rows, 500_000);
        let persons = visits.len();
        // expected 500,000 / 2.19 ≈ 228,000
        assert!((220_000..236_000).contains(&persons), "{persons}");
        // ids 1..=persons, each used
        assert_eq!(visits.keys().copied().max(), Some(persons as i64));
        let most = visits.values().copied().max().unwrap();
        assert_eq!(most, MAX_VISITS, "some person has all 22 visits");
        let single = visits.values().filter(|&&v| v == 1).count();
        // P(1 visit) = 1/Σ_{v=1}^{22} v^-2.06 ≈ 0.642, give or take 0.001 (the last person
        // may be cut short)
        let share = single as f64 / persons as f64;
        assert!((0.636..0.648).contains(&share), "{share}");
        // repeat visits mostly stay in one department, not always
        let multi: Vec<&HashSet<String>> = visits
            .iter()
            .filter(|&(_, &v)| v >= 2)
            .map(|(id, _)| &departments[id])
            .collect();
        let in_one = multi.iter().filter(|d| d.len() == 1).count() as f64 / multi.len() as f64;
        assert!((0.2..0.6).contains(&in_one), "{in_one}");
        // costs are nearly unique: about 405,000 distinct amounts in cents (simulated)
        assert!(distinct_costs.len() > 380_000, "{}", distinct_costs.len());
    }

    #[test]
    fn writes_complete_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("v.parquet");
        write_visits(&path, 200_000, 1).unwrap();
        let file = std::fs::File::open(&path).unwrap();
        let reader = datafusion::parquet::file::reader::SerializedFileReader::new(file).unwrap();
        use datafusion::parquet::file::reader::FileReader;
        assert_eq!(reader.metadata().file_metadata().num_rows(), 200_000);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }
}
