//! The brute-force reference of every function, straight from the formulas of
//! `docs/definitions.md` and the NULL rules of `docs/functions.md`: seeded random rows, the
//! formulas over them, and the comparison with SQL. Shared by the SQL crate's tests
//! (`tests/sql/against_reference.rs`) and the engine's cluster tests, each using part of it.

#![allow(dead_code)]

use std::cell::RefCell;
use std::cmp::Ordering;
use std::collections::{HashMap, HashSet};
use std::rc::Rc;
use std::sync::Arc;

use datafusion::arrow::array::{
    Array, ArrayRef, AsArray, Float64Array, Int64Array, RecordBatch, StringArray,
};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Field, Float64Type, Schema, TimeUnit};
use datafusion::datasource::MemTable;
use datafusion::parquet::arrow::ArrowWriter;
use datafusion::prelude::{ParquetReadOptions, SessionConfig, SessionContext};
use datafusion_anonymity::options::AnonymityOptions;

pub(crate) const TOL: f64 = 1e-9;

// ---------------------------------------------------------------- data

/// splitmix64 (shared by the integration tests)
pub(crate) struct Rng(pub(crate) u64);

impl Rng {
    pub(crate) fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    pub(crate) fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    /// true with probability pct/100
    fn chance(&mut self, pct: u64) -> bool {
        self.below(100) < pct
    }
}

#[derive(Clone, Debug)]
pub(crate) struct Row {
    /// QI, 4 values
    pub(crate) g1: Option<i64>,
    /// QI, 3 strings
    pub(crate) g2: Option<String>,
    /// person id, 20 persons
    pub(crate) pid: Option<i64>,
    /// categorical SA, 5 skewed values
    pub(crate) s: Option<String>,
    /// small numeric SA/QI, 0..7
    pub(crate) n: Option<i64>,
    /// float SA with NaN, -1.0..2.5 in steps of 0.5
    pub(crate) f: Option<f64>,
    /// categorical QI for ncp, 4 values
    pub(crate) c: Option<String>,
    /// high-cardinality numeric SA, 0..250 skewed
    pub(crate) h: Option<i64>,
    /// near-unique person id (negative and positive, a few repeats and NULLs)
    pub(crate) u: Option<i64>,
    /// numeric SA with about as many distinct values as rows
    pub(crate) w: Option<i64>,
}

pub(crate) fn gen_rows(seed: u64, count: usize) -> Vec<Row> {
    let mut r = Rng(seed);
    let strs = |r: &mut Rng, vals: &[&str], null_pct: u64| -> Option<String> {
        if r.chance(null_pct) {
            None
        } else {
            // skewed: the first value is more likely
            let i = if r.chance(30) {
                0
            } else {
                r.below(vals.len() as u64) as usize
            };
            Some(vals[i].to_string())
        }
    };
    (0..count)
        .map(|i| Row {
            g1: (!r.chance(10)).then(|| r.below(4) as i64),
            g2: strs(
                &mut r,
                &["a", "b", "c, a group key longer than 12 bytes"],
                10,
            ),
            pid: (!r.chance(15)).then(|| r.below(20) as i64),
            s: strs(
                &mut r,
                &[
                    "x",
                    "y",
                    "z",
                    "w",
                    "v, a sensitive value longer than 12 bytes",
                ],
                15,
            ),
            n: (!r.chance(10)).then(|| r.below(7) as i64),
            f: if r.chance(10) {
                None
            } else if r.chance(4) {
                Some(f64::NAN)
            } else {
                Some(r.below(8) as f64 * 0.5 - 1.0)
            },
            c: strs(
                &mut r,
                &["p", "q", "r", "s, a long quasi-identifier value"],
                10,
            ),
            h: if r.chance(5) {
                None
            } else if r.chance(40) {
                Some(r.below(5) as i64)
            } else {
                Some(r.below(250) as i64)
            },
            u: if r.chance(3) {
                None
            } else if r.chance(10) {
                // a person seen before (or not yet seen)
                Some((r.below(count as u64) as i64 - count as i64 / 2) * 1_000_003)
            } else {
                Some((i as i64 - count as i64 / 2) * 1_000_003)
            },
            w: (!r.chance(4)).then(|| r.below(5 * count as u64) as i64 - 100),
        })
        .collect()
}

pub(crate) fn schema() -> Arc<Schema> {
    Arc::new(Schema::new(vec![
        Field::new("g1", DataType::Int64, true),
        Field::new("g2", DataType::Utf8, true),
        Field::new("pid", DataType::Int64, true),
        Field::new("s", DataType::Utf8, true),
        Field::new("n", DataType::Int64, true),
        Field::new("f", DataType::Float64, true),
        Field::new("c", DataType::Utf8, true),
        Field::new("h", DataType::Int64, true),
        Field::new("u", DataType::Int64, true),
        Field::new("w", DataType::Int64, true),
    ]))
}

pub(crate) fn to_batch(rows: &[Row]) -> RecordBatch {
    let cols: Vec<ArrayRef> = vec![
        Arc::new(Int64Array::from_iter(rows.iter().map(|r| r.g1))),
        Arc::new(StringArray::from_iter(rows.iter().map(|r| r.g2.clone()))),
        Arc::new(Int64Array::from_iter(rows.iter().map(|r| r.pid))),
        Arc::new(StringArray::from_iter(rows.iter().map(|r| r.s.clone()))),
        Arc::new(Int64Array::from_iter(rows.iter().map(|r| r.n))),
        Arc::new(Float64Array::from_iter(rows.iter().map(|r| r.f))),
        Arc::new(StringArray::from_iter(rows.iter().map(|r| r.c.clone()))),
        Arc::new(Int64Array::from_iter(rows.iter().map(|r| r.h))),
        Arc::new(Int64Array::from_iter(rows.iter().map(|r| r.u))),
        Arc::new(Int64Array::from_iter(rows.iter().map(|r| r.w))),
    ];
    RecordBatch::try_new(schema(), cols).unwrap()
}

/// Uneven cut points splitting `len` rows into 4 parts.
pub(crate) fn cuts(len: usize) -> [usize; 5] {
    [0, len / 5, len / 2, len * 3 / 4, len]
}

/// Writes the rows as several Parquet files of uneven sizes into `dir`.
pub(crate) fn write_parquet(dir: &std::path::Path, rows: &[Row]) {
    for (i, w) in cuts(rows.len()).windows(2).enumerate() {
        let file = std::fs::File::create(dir.join(format!("part-{i}.parquet"))).unwrap();
        let mut writer = ArrowWriter::try_new(file, schema(), None).unwrap();
        // several small batches per file so row groups/pages vary
        for chunk in rows[w[0]..w[1]].chunks(11) {
            writer.write(&to_batch(chunk)).unwrap();
        }
        writer.close().unwrap();
    }
}

/// The same rows with other column types, as a 4-partition in-memory table:
/// g1 Int16, g2 Dictionary(Int32, Utf8), pid Int32, s LargeUtf8, n Decimal128(12, 3),
/// f Float32 (the values are exact in f32), c Dictionary(Int32, Utf8), h Date32.
pub(crate) fn typed_mem_table(rows: &[Row]) -> MemTable {
    let dict = DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8));
    let types = [
        DataType::Int16,
        dict.clone(),
        DataType::Int32,
        DataType::LargeUtf8,
        DataType::Decimal128(12, 3),
        DataType::Float32,
        dict,
        DataType::Date32,
        DataType::Timestamp(TimeUnit::Microsecond, Some("+01:00".into())),
        DataType::Float64,
    ];
    let schema = Arc::new(Schema::new(
        schema()
            .fields()
            .iter()
            .zip(&types)
            .map(|(f, t)| Field::new(f.name(), t.clone(), true))
            .collect::<Vec<_>>(),
    ));
    let convert = |chunk: &[Row]| {
        let b = to_batch(chunk);
        let cols = b
            .columns()
            .iter()
            .zip(&types)
            .map(|(c, t)| {
                let c = if *t == DataType::Date32 {
                    cast(c, &DataType::Int32).unwrap()
                } else {
                    Arc::clone(c)
                };
                cast(&c, t).unwrap()
            })
            .collect();
        RecordBatch::try_new(Arc::clone(&schema), cols).unwrap()
    };
    let partitions = cuts(rows.len())
        .windows(2)
        .map(|w| rows[w[0]..w[1]].chunks(13).map(convert).collect())
        .collect();
    MemTable::try_new(schema, partitions).unwrap()
}

// ---------------------------------------------------------------- reference formulas

/// The whole table T with its statistics memoized per attribute (the formulas below take them
/// from here instead of recomputing them for every class).
pub(crate) struct Tab<'a> {
    pub(crate) rows: Vec<&'a Row>,
    pub(crate) dist: RefCell<HashMap<usize, Rc<Dist>>>,
    pub(crate) ordered: RefCell<HashMap<usize, Rc<OrderedDist>>>,
    pub(crate) range: RefCell<HashMap<usize, f64>>,
    pub(crate) distinct: RefCell<HashMap<usize, usize>>,
}

/// A distribution over the categories of an attribute, NULL a category of its own.
pub(crate) type Dist = HashMap<Option<String>, f64>;

/// T's sorted categories and their probabilities.
pub(crate) type OrderedDist = (Vec<Cat>, HashMap<String, f64>);

impl<'a> Tab<'a> {
    pub(crate) fn new(rows: Vec<&'a Row>) -> Self {
        Tab {
            rows,
            dist: RefCell::default(),
            ordered: RefCell::default(),
            range: RefCell::default(),
            distinct: RefCell::default(),
        }
    }
    fn len(&self) -> usize {
        self.rows.len()
    }
    fn dist(&self, get: CatGet) -> Rc<Dist> {
        let mut m = self.dist.borrow_mut();
        Rc::clone(
            m.entry(get as usize)
                .or_insert_with(|| Rc::new(dist(&self.rows, get))),
        )
    }
    fn ordered(&self, get: NumGet) -> Rc<OrderedDist> {
        let mut m = self.ordered.borrow_mut();
        Rc::clone(m.entry(get as usize).or_insert_with(|| {
            let mut domain: Vec<Cat> = self.rows.iter().map(|r| Cat::of(get(r))).collect();
            domain.sort_by(Cat::cmp);
            domain.dedup_by(|a, b| a.cmp(b) == Ordering::Equal);
            Rc::new((domain, ordered_dist(&self.rows, get)))
        }))
    }
    fn range(&self, get: NumGet) -> f64 {
        *self
            .range
            .borrow_mut()
            .entry(get as usize)
            .or_insert_with(|| num_range(&self.rows, get))
    }
    fn distinct(&self, get: CatGet) -> usize {
        *self
            .distinct
            .borrow_mut()
            .entry(get as usize)
            .or_insert_with(|| distinct(&self.rows, get))
    }
}

/// A value as a category (for counting distinct values and histograms): NaN is one value.
pub(crate) fn key_i(v: Option<i64>) -> Option<String> {
    v.map(|x| x.to_string())
}

pub(crate) fn key_f(v: Option<f64>) -> Option<String> {
    v.map(|x| {
        if x.is_nan() {
            "NaN".into()
        } else {
            x.to_string()
        }
    })
}

pub(crate) type CatGet = fn(&Row) -> Option<String>;
pub(crate) type NumGet = fn(&Row) -> Option<f64>;

/// Distinct persons: the non-null ids; a NULL id may be any of them, so it adds none, except
/// that a class of NULL ids only is one person.
pub(crate) fn persons(e: &[&Row], get: CatGet) -> usize {
    let ids: HashSet<String> = e.iter().filter_map(|r| get(r)).collect();
    ids.len()
        .max(usize::from(e.iter().any(|r| get(r).is_none())))
}

/// Counts of the non-null values, and the number of NULLs.
pub(crate) fn counts(e: &[&Row], get: CatGet) -> (HashMap<String, usize>, usize) {
    let mut m = HashMap::new();
    let mut nulls = 0;
    for r in e {
        match get(r) {
            Some(v) => *m.entry(v).or_insert(0) += 1,
            None => nulls += 1,
        }
    }
    (m, nulls)
}

/// Distinct non-null values; NULLs add nothing; an all-NULL class has l = 1.
pub(crate) fn l_div(e: &[&Row], get: CatGet) -> f64 {
    let (m, _) = counts(e, get);
    m.len().max(1) as f64
}

/// Counts sorted descending, NULLs added to the largest (an all-NULL class is one count).
pub(crate) fn sorted_counts_worst(e: &[&Row], get: CatGet) -> Vec<usize> {
    let (m, nulls) = counts(e, get);
    let mut v: Vec<usize> = m.into_values().collect();
    v.sort_unstable_by(|a, b| b.cmp(a));
    if v.is_empty() {
        v.push(nulls);
    } else {
        v[0] += nulls;
    }
    v
}

pub(crate) fn entropy_l(e: &[&Row], get: CatGet) -> f64 {
    let v = sorted_counts_worst(e, get);
    let total: usize = v.iter().sum();
    let h: f64 = v
        .iter()
        .filter(|&&c| c > 0)
        .map(|&c| {
            let p = c as f64 / total as f64;
            -p * p.ln()
        })
        .sum();
    h.exp()
}

/// Largest l in 2..m with r1 < c (r_l + ... + r_m), else 1.
pub(crate) fn recursive_l(e: &[&Row], get: CatGet, c: f64) -> f64 {
    let v = sorted_counts_worst(e, get);
    for l in (2..=v.len()).rev() {
        let tail: usize = v[l - 1..].iter().sum();
        if (v[0] as f64) < c * tail as f64 {
            return l as f64;
        }
    }
    1.0
}

/// Distribution with NULL as a category of its own.
pub(crate) fn dist(rows: &[&Row], get: CatGet) -> Dist {
    let mut m = Dist::new();
    for r in rows {
        *m.entry(get(r)).or_insert(0.0) += 1.0;
    }
    for p in m.values_mut() {
        *p /= rows.len() as f64;
    }
    m
}

/// ½ Σ_v |p_E(v) − p_T(v)|, NULL a category.
pub(crate) fn t_equal(e: &[&Row], t: &Tab, get: CatGet) -> f64 {
    let (pe, pt) = (dist(e, get), t.dist(get));
    let keys: HashSet<&Option<String>> = pe.keys().chain(pt.keys()).collect();
    0.5 * keys
        .into_iter()
        .map(|k| (pe.get(k).unwrap_or(&0.0) - pt.get(k).unwrap_or(&0.0)).abs())
        .sum::<f64>()
}

/// α of (α,k)-anonymity: the largest share of one value, NULLs counted as copies of the
/// most frequent value (an all-NULL class: 1).
pub(crate) fn alpha(e: &[&Row], get: CatGet) -> f64 {
    sorted_counts_worst(e, get)[0] as f64 / e.len() as f64
}

/// The (p_E(v), p_T(v)) of every category v present in E or T, NULL a category.
pub(crate) fn shares(e: &[&Row], t: &Tab, get: CatGet) -> Vec<(f64, f64)> {
    let (pe, pt) = (dist(e, get), t.dist(get));
    let keys: HashSet<&Option<String>> = pe.keys().chain(pt.keys()).collect();
    keys.into_iter()
        .map(|k| (*pe.get(k).unwrap_or(&0.0), *pt.get(k).unwrap_or(&0.0)))
        .collect()
}

/// Basic β-likeness: max over v with p_E(v) > p_T(v) of (p_E − p_T)/p_T; 0 if none.
pub(crate) fn beta(e: &[&Row], t: &Tab, get: CatGet) -> f64 {
    shares(e, t, get)
        .into_iter()
        .filter(|(pe, pt)| pe > pt)
        .map(|(pe, pt)| (pe - pt) / pt)
        .fold(0.0, f64::max)
}

/// Enhanced β-likeness: +∞ when a value's gain (p_E − p_T)/p_T exceeds −ln p_T, else the
/// basic β.
pub(crate) fn beta_enhanced(e: &[&Row], t: &Tab, get: CatGet) -> f64 {
    let capped = shares(e, t, get)
        .into_iter()
        .any(|(pe, pt)| pe > 0.0 && (pe - pt) / pt > -pt.ln());
    if capped {
        f64::INFINITY
    } else {
        beta(e, t, get)
    }
}

/// δ-disclosure: max over the values of T of |ln(p_E/p_T)|; +∞ when one is absent from E.
pub(crate) fn delta(e: &[&Row], t: &Tab, get: CatGet) -> f64 {
    shares(e, t, get)
        .into_iter()
        .map(|(pe, pt)| {
            if pe == 0.0 {
                f64::INFINITY
            } else {
                (pe / pt).ln().abs()
            }
        })
        .fold(0.0, f64::max)
}

/// Ordered category of a numeric value: NULL first, numbers ascending, NaN last.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Cat {
    Null,
    Num(f64),
    NaN,
}

impl Cat {
    fn of(v: Option<f64>) -> Cat {
        match v {
            None => Cat::Null,
            Some(x) if x.is_nan() => Cat::NaN,
            Some(x) => Cat::Num(x),
        }
    }
    fn cmp(&self, o: &Cat) -> Ordering {
        let rank = |c: &Cat| match c {
            Cat::Null => 0,
            Cat::Num(_) => 1,
            Cat::NaN => 2,
        };
        match (self, o) {
            (Cat::Num(a), Cat::Num(b)) => a.partial_cmp(b).unwrap(),
            _ => rank(self).cmp(&rank(o)),
        }
    }
    fn key(&self) -> String {
        format!("{self:?}")
    }
}

/// Probabilities of the ordered categories (keyed by `Cat::key`).
pub(crate) fn ordered_dist(rows: &[&Row], get: NumGet) -> HashMap<String, f64> {
    let mut h: HashMap<String, f64> = HashMap::new();
    for r in rows {
        *h.entry(Cat::of(get(r)).key()).or_insert(0.0) += 1.0 / rows.len() as f64;
    }
    h
}

/// (1/(m−1)) Σ_i |Σ_{j≤i} (p_E(v_j) − p_T(v_j))| over T's m categories sorted; 0 when m = 1.
pub(crate) fn t_ordered(e: &[&Row], t: &Tab, get: NumGet) -> f64 {
    let ordered = t.ordered(get);
    let (domain, pt) = (&ordered.0, &ordered.1);
    let m = domain.len();
    if m <= 1 {
        return 0.0;
    }
    let pe = ordered_dist(e, get);
    let mut cum = 0.0;
    let mut sum = 0.0;
    for v in domain {
        let k = v.key();
        cum += pe.get(&k).unwrap_or(&0.0) - pt.get(&k).unwrap_or(&0.0);
        sum += f64::abs(cum);
    }
    sum / (m - 1) as f64
}

/// max − min of the non-null, non-NaN values; 0 when there are none.
pub(crate) fn num_range(rows: &[&Row], get: NumGet) -> f64 {
    let vals: Vec<f64> = rows
        .iter()
        .filter_map(|r| get(r))
        .filter(|x| !x.is_nan())
        .collect();
    if vals.is_empty() {
        return 0.0;
    }
    let max = vals.iter().cloned().fold(f64::MIN, f64::max);
    let min = vals.iter().cloned().fold(f64::MAX, f64::min);
    max - min
}

/// Numeric spread (max_E − min_E)/(max_T − min_T), NULL and NaN ignored; 0 when the table's
/// range is 0 or the class has no value left.
pub(crate) fn ncp_num(e: &[&Row], t: &Tab, get: NumGet) -> f64 {
    let rt = t.range(get);
    if rt == 0.0 {
        0.0
    } else {
        num_range(e, get) / rt
    }
}

/// Distinct non-null values.
pub(crate) fn distinct(rows: &[&Row], get: CatGet) -> usize {
    rows.iter()
        .filter_map(|r| get(r))
        .collect::<HashSet<_>>()
        .len()
}

/// Categorical: 0 if E has at most one distinct non-null value, else distinct_E / distinct_T.
pub(crate) fn ncp_cat(e: &[&Row], t: &Tab, get: CatGet) -> f64 {
    let de = distinct(e, get);
    if de <= 1 {
        0.0
    } else {
        de as f64 / t.distinct(get) as f64
    }
}

/// (|E|/n)(log2 n − log2 |E|)/log2 n; 1 for a one-row table.
pub(crate) fn leakage(e: &[&Row], t: &Tab) -> f64 {
    let (ne, n) = (e.len() as f64, t.len() as f64);
    if t.len() == 1 {
        return 1.0;
    }
    (ne / n) * (n.log2() - ne.log2()) / n.log2()
}

// ---------------------------------------------------------------- measures

/// One SQL expression and its reference value for class E of table T.
pub(crate) struct Measure {
    pub(crate) sql: &'static str,
    pub(crate) int: bool,
    pub(crate) eval: fn(&[&Row], &Tab) -> f64,
}

pub(crate) fn get_s(r: &Row) -> Option<String> {
    r.s.clone()
}
pub(crate) fn get_c(r: &Row) -> Option<String> {
    r.c.clone()
}
pub(crate) fn get_pid(r: &Row) -> Option<String> {
    key_i(r.pid)
}
pub(crate) fn get_h(r: &Row) -> Option<String> {
    key_i(r.h)
}
pub(crate) fn get_n(r: &Row) -> Option<String> {
    key_i(r.n)
}
pub(crate) fn get_f(r: &Row) -> Option<String> {
    key_f(r.f)
}
pub(crate) fn num_n(r: &Row) -> Option<f64> {
    r.n.map(|x| x as f64)
}
pub(crate) fn get_u(r: &Row) -> Option<String> {
    key_i(r.u)
}
pub(crate) fn get_w(r: &Row) -> Option<String> {
    key_i(r.w)
}
pub(crate) fn num_w(r: &Row) -> Option<f64> {
    r.w.map(|x| x as f64)
}
pub(crate) fn num_h(r: &Row) -> Option<f64> {
    r.h.map(|x| x as f64)
}
pub(crate) fn num_f(r: &Row) -> Option<f64> {
    r.f
}

pub(crate) const MEASURES: &[Measure] = &[
    Measure {
        sql: "k_anonymity()",
        int: true,
        eval: |e, _| e.len() as f64,
    },
    Measure {
        sql: "k_anonymity(pid)",
        int: true,
        eval: |e, _| persons(e, get_pid) as f64,
    },
    Measure {
        sql: "k_anonymity('#' || CAST(pid AS VARCHAR))",
        int: true,
        eval: |e, _| persons(e, get_pid) as f64,
    },
    Measure {
        sql: "k_anonymity(h)",
        int: true,
        eval: |e, _| persons(e, get_h) as f64,
    },
    Measure {
        sql: "l_diversity(s)",
        int: true,
        eval: |e, _| l_div(e, get_s),
    },
    Measure {
        sql: "entropy_l_diversity(s)",
        int: false,
        eval: |e, _| entropy_l(e, get_s),
    },
    Measure {
        sql: "recursive_cl_diversity(s, 2)",
        int: true,
        eval: |e, _| recursive_l(e, get_s, 2.0),
    },
    Measure {
        sql: "recursive_cl_diversity(s, 3)",
        int: true,
        eval: |e, _| recursive_l(e, get_s, 3.0),
    },
    Measure {
        sql: "t_closeness(s)",
        int: false,
        eval: |e, t| t_equal(e, t, get_s),
    },
    Measure {
        sql: "t_closeness_ordered(n)",
        int: false,
        eval: |e, t| t_ordered(e, t, num_n),
    },
    Measure {
        sql: "t_closeness_ordered(f)",
        int: false,
        eval: |e, t| t_ordered(e, t, num_f),
    },
    Measure {
        sql: "ncp(f, c)",
        int: false,
        eval: |e, t| (ncp_num(e, t, num_f) + ncp_cat(e, t, get_c)) / 2.0,
    },
    Measure {
        sql: "ncp(n)",
        int: false,
        eval: |e, t| ncp_num(e, t, num_n),
    },
    Measure {
        sql: "entropy_leakage()",
        int: false,
        eval: leakage,
    },
    Measure {
        sql: "reidentification_risk()",
        int: false,
        eval: |e, _| 1.0 / e.len() as f64,
    },
    Measure {
        sql: "reidentification_risk(pid)",
        int: false,
        eval: |e, _| 1.0 / persons(e, get_pid) as f64,
    },
    // the same attribute under several functions (shared histograms in the rewrite)
    Measure {
        sql: "l_diversity(n)",
        int: true,
        eval: |e, _| l_div(e, get_n),
    },
    Measure {
        sql: "t_closeness(n)",
        int: false,
        eval: |e, t| t_equal(e, t, get_n),
    },
    Measure {
        sql: "t_closeness(f)",
        int: false,
        eval: |e, t| t_equal(e, t, get_f),
    },
    Measure {
        sql: "entropy_l_diversity(f)",
        int: false,
        eval: |e, _| entropy_l(e, get_f),
    },
    // high cardinality
    Measure {
        sql: "l_diversity(h)",
        int: true,
        eval: |e, _| l_div(e, get_h),
    },
    Measure {
        sql: "entropy_l_diversity(h)",
        int: false,
        eval: |e, _| entropy_l(e, get_h),
    },
    Measure {
        sql: "recursive_cl_diversity(h, 1.5)",
        int: true,
        eval: |e, _| recursive_l(e, get_h, 1.5),
    },
    Measure {
        sql: "t_closeness(h)",
        int: false,
        eval: |e, t| t_equal(e, t, get_h),
    },
    Measure {
        sql: "t_closeness_ordered(h)",
        int: false,
        eval: |e, t| t_ordered(e, t, num_h),
    },
    Measure {
        sql: "ncp(h)",
        int: false,
        eval: |e, t| ncp_num(e, t, num_h),
    },
    Measure {
        sql: "t_closeness('#' || CAST(h AS VARCHAR))",
        int: false,
        eval: |e, t| t_equal(e, t, get_h),
    },
    Measure {
        sql: "ncp('#' || CAST(h AS VARCHAR))",
        int: false,
        eval: |e, t| ncp_cat(e, t, get_h),
    },
    Measure {
        sql: "l_diversity('#' || CAST(h AS VARCHAR))",
        int: true,
        eval: |e, _| l_div(e, get_h),
    },
    // near-unique person ids (the distinct-value accumulator: integer keys, timestamps in the
    // typed table, interned strings), and a numeric SA with about as many values as rows
    Measure {
        sql: "k_anonymity(u)",
        int: true,
        eval: |e, _| persons(e, get_u) as f64,
    },
    Measure {
        sql: "reidentification_risk(u)",
        int: false,
        eval: |e, _| 1.0 / persons(e, get_u) as f64,
    },
    Measure {
        sql: "k_anonymity('#' || CAST(u AS VARCHAR))",
        int: true,
        eval: |e, _| persons(e, get_u) as f64,
    },
    Measure {
        sql: "t_closeness_ordered(w)",
        int: false,
        eval: |e, t| t_ordered(e, t, num_w),
    },
    Measure {
        sql: "t_closeness(w)",
        int: false,
        eval: |e, t| t_equal(e, t, get_w),
    },
    Measure {
        sql: "entropy_l_diversity(w)",
        int: false,
        eval: |e, _| entropy_l(e, get_w),
    },
    // the histogram's whole-table functions together (one finalizer for s, n and h each)
    // and α beside the other measures of s
    Measure {
        sql: "alpha_anonymity(s)",
        int: false,
        eval: |e, _| alpha(e, get_s),
    },
    Measure {
        sql: "beta_likeness(s)",
        int: false,
        eval: |e, t| beta(e, t, get_s),
    },
    Measure {
        sql: "enhanced_beta_likeness(s)",
        int: false,
        eval: |e, t| beta_enhanced(e, t, get_s),
    },
    Measure {
        sql: "delta_disclosure(s)",
        int: false,
        eval: |e, t| delta(e, t, get_s),
    },
    Measure {
        sql: "beta_likeness(n)",
        int: false,
        eval: |e, t| beta(e, t, get_n),
    },
    Measure {
        sql: "delta_disclosure(h)",
        int: false,
        eval: |e, t| delta(e, t, get_h),
    },
    Measure {
        sql: "enhanced_beta_likeness(f)",
        int: false,
        eval: |e, t| beta_enhanced(e, t, get_f),
    },
    Measure {
        sql: "ncp(c, n, h, f)",
        int: false,
        eval: |e, t| {
            (ncp_cat(e, t, get_c)
                + ncp_num(e, t, num_n)
                + ncp_num(e, t, num_h)
                + ncp_num(e, t, num_f))
                / 4.0
        },
    },
];

// ---------------------------------------------------------------- comparison

pub(crate) type Key = Vec<Option<String>>;

/// Group-key value as compared between reference and SQL: numbers normalized through f64
/// (so Int16 `3`, Decimal `3.000` and `3` agree).
pub(crate) fn norm_key(v: Option<String>) -> Option<String> {
    v.map(|s| match s.parse::<f64>() {
        Ok(x) => x.to_string(),
        Err(_) => s,
    })
}

pub(crate) fn key_of(r: &Row, group_by: &[&str]) -> Key {
    group_by
        .iter()
        .map(|g| {
            norm_key(match *g {
                "g1" => key_i(r.g1),
                "g2" => r.g2.clone(),
                "n" => key_i(r.n),
                "h" => key_i(r.h),
                "c" => r.c.clone(),
                _ => unreachable!("{g}"),
            })
        })
        .collect()
}

pub(crate) fn reference(
    rows: &[Row],
    filter: fn(&Row) -> bool,
    group_by: &[&str],
) -> HashMap<Key, Vec<f64>> {
    let t = Tab::new(rows.iter().filter(|r| filter(r)).collect());
    let mut classes: HashMap<Key, Vec<&Row>> = HashMap::new();
    for r in &t.rows {
        classes.entry(key_of(r, group_by)).or_default().push(r);
    }
    if group_by.is_empty() && t.len() == 0 {
        // no GROUP BY over zero rows: one row, the counting functions 0, the ratio functions
        // NULL (NaN here)
        let counting = [
            "k_anonymity(",
            "l_diversity(",
            "entropy_l_diversity(",
            "recursive_cl",
        ];
        let row = MEASURES
            .iter()
            .map(|m| {
                if counting.iter().any(|c| m.sql.starts_with(c)) {
                    0.0
                } else {
                    f64::NAN
                }
            })
            .collect();
        return HashMap::from([(Vec::new(), row)]);
    }
    classes
        .into_iter()
        .map(|(k, e)| (k, MEASURES.iter().map(|m| (m.eval)(&e, &t)).collect()))
        .collect()
}

/// Every measure aliased. (Measures on a cast column are written `'#' || CAST(x AS VARCHAR)`:
/// DataFusion names `f(CAST(x AS ...))` like `f(x)`, and an aggregation with both fails with
/// "duplicate unqualified field name" even with aliases, as it does for `count`.)
pub(crate) fn select_list() -> String {
    MEASURES
        .iter()
        .enumerate()
        .map(|(i, m)| format!("{} AS m{i}", m.sql))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Reads result batches: the first `nk` columns are group keys, then one column per measure
/// (whose return type is checked). NULL results become NaN.
pub(crate) fn collect_results(
    batches: &[RecordBatch],
    nk: usize,
    names: &[&str],
    ints: &[bool],
) -> HashMap<Key, Vec<f64>> {
    let mut out = HashMap::new();
    for b in batches {
        for (i, (name, int)) in names.iter().zip(ints).enumerate() {
            let want = if *int {
                DataType::Int64
            } else {
                DataType::Float64
            };
            assert_eq!(b.column(nk + i).data_type(), &want, "return type of {name}");
        }
        let key_cols: Vec<ArrayRef> = (0..nk)
            .map(|i| {
                let c = b.column(i);
                let c = if c.data_type() == &DataType::Date32 {
                    cast(c, &DataType::Int32).unwrap()
                } else {
                    Arc::clone(c)
                };
                cast(&c, &DataType::Utf8).unwrap()
            })
            .collect();
        let val_cols: Vec<ArrayRef> = (nk..b.num_columns())
            .map(|i| cast(b.column(i), &DataType::Float64).unwrap())
            .collect();
        for r in 0..b.num_rows() {
            let key: Key = key_cols
                .iter()
                .map(|c| {
                    let c = c.as_string::<i32>();
                    norm_key((!c.is_null(r)).then(|| c.value(r).to_string()))
                })
                .collect();
            let vals: Vec<f64> = val_cols
                .iter()
                .map(|c| {
                    let c = c.as_primitive::<Float64Type>();
                    if c.is_null(r) { f64::NAN } else { c.value(r) }
                })
                .collect();
            assert!(
                out.insert(key.clone(), vals).is_none(),
                "duplicate group {key:?}"
            );
        }
    }
    out
}

pub(crate) async fn sql_values(
    ctx: &SessionContext,
    table: &str,
    filter: &str,
    group_by: &[&str],
) -> HashMap<Key, Vec<f64>> {
    let keys = group_by.join(", ");
    let list = select_list();
    let sql = if group_by.is_empty() {
        format!("SELECT {list} FROM {table} WHERE {filter}")
    } else {
        format!("SELECT {keys}, {list} FROM {table} WHERE {filter} GROUP BY {keys}")
    };
    let batches = ctx
        .sql(&sql)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"))
        .collect()
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"));
    let names: Vec<&str> = MEASURES.iter().map(|m| m.sql).collect();
    let ints: Vec<bool> = MEASURES.iter().map(|m| m.int).collect();
    collect_results(&batches, group_by.len(), &names, &ints)
}

/// How a `GROUP BY` with the crate's functions is executed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Phases {
    /// The default: rows hash-repartitioned by the keys and aggregated once per partition
    /// (`rewrite::SinglePhaseAggregation`); with one partition, DataFusion's single mode.
    Single,
    /// DataFusion's partial and final aggregation (`anonymity.single_phase_aggregation` off):
    /// states emitted, repartitioned and merged.
    Two,
    /// Two phases with the skip-partial-aggregation probe forced on: every row converted to a
    /// state (`convert_to_state`), then merged.
    SkipPartial,
}

pub(crate) fn config(target_partitions: usize, phases: Phases) -> SessionConfig {
    let mut config = SessionConfig::new()
        .with_target_partitions(target_partitions)
        .with_batch_size(7);
    if phases == Phases::SkipPartial {
        let exec = &mut config.options_mut().execution;
        exec.skip_partial_aggregation_probe_rows_threshold = 1;
        exec.skip_partial_aggregation_probe_ratio_threshold = 0.0;
    }
    let mut options = AnonymityOptions::default();
    options.single_phase_aggregation = phases == Phases::Single;
    // skipping partial aggregation is a probe of DataFusion's own aggregation, which the
    // packed kernel replaces
    options.packed_aggregation = phases != Phases::SkipPartial;
    config.with_option_extension(options)
}

pub(crate) fn make_ctx(target_partitions: usize, phases: Phases) -> SessionContext {
    let ctx = SessionContext::new_with_config(config(target_partitions, phases));
    datafusion_anonymity::register(&ctx).unwrap();
    ctx
}

/// Equal within the tolerance; NaN (a NULL result) only equals NaN.
pub(crate) fn close(a: f64, b: f64) -> bool {
    (a.is_nan() && b.is_nan()) || a == b || (a - b).abs() <= TOL * (1.0 + b.abs())
}

pub(crate) struct Case {
    pub(crate) filter_sql: &'static str,
    pub(crate) filter: fn(&Row) -> bool,
}

pub(crate) static CASES: [Case; 4] = [
    Case {
        filter_sql: "TRUE",
        filter: |_| true,
    },
    Case {
        filter_sql: "g1 IS DISTINCT FROM 0",
        filter: |r| r.g1 != Some(0),
    },
    Case {
        filter_sql: "pid > 3",
        filter: |r| r.pid.is_some_and(|p| p > 3),
    },
    // a WHERE leaving nothing
    Case {
        filter_sql: "pid > 1000",
        filter: |_| false,
    },
];

pub(crate) const GROUPINGS: [&[&str]; 7] = [
    &["g1", "g2"],
    &["g2"],
    &["g1"],
    &[],
    &["n"],
    &["h"],
    &["g1", "c", "n"],
];

/// The queries compared: every filter (CASES) with every grouping (GROUPINGS), except that the
/// filter leaving no rows is only run without GROUP BY and with one grouping.
pub(crate) fn queries() -> Vec<(&'static Case, &'static [&'static str])> {
    CASES
        .iter()
        .flat_map(|case| GROUPINGS.iter().map(move |g| (case, *g)))
        .filter(|(case, g)| case.filter_sql != "pid > 1000" || g.len() != 1)
        .collect()
}

/// Reference values for every query of [`queries`], in that order.
pub(crate) fn all_references(rows: &[Row]) -> Vec<HashMap<Key, Vec<f64>>> {
    queries()
        .into_iter()
        .map(|(case, g)| reference(rows, case.filter, g))
        .collect()
}

/// Compares every measure for every filter and grouping on `table` with the reference values
/// of [`all_references`]; returns the failures and the number of values checked.
pub(crate) async fn compare_table(
    ctx: &SessionContext,
    table: &str,
    wants: &[HashMap<Key, Vec<f64>>],
    desc: &str,
) -> (Vec<String>, usize) {
    compare_queries(ctx, table, &queries(), wants, desc).await
}

/// Compares the given queries (filter, grouping) with their reference values `wants`.
pub(crate) async fn compare_queries(
    ctx: &SessionContext,
    table: &str,
    queries: &[(&Case, &[&str])],
    wants: &[HashMap<Key, Vec<f64>>],
    desc: &str,
) -> (Vec<String>, usize) {
    let mut failures = Vec::new();
    let mut checked = 0usize;
    for (&(case, group_by), want) in queries.iter().zip(wants) {
        let got = sql_values(ctx, table, case.filter_sql, group_by).await;
        let ctx_desc = format!("{desc}, WHERE {}, GROUP BY {group_by:?}", case.filter_sql);
        if want.len() != got.len() {
            failures.push(format!(
                "{ctx_desc}: {} groups expected, {} returned",
                want.len(),
                got.len()
            ));
            continue;
        }
        for (key, w) in want {
            let Some(g) = got.get(key) else {
                failures.push(format!("{ctx_desc}: group {key:?} missing"));
                continue;
            };
            for (i, m) in MEASURES.iter().enumerate() {
                checked += 1;
                if !close(g[i], w[i]) {
                    failures.push(format!(
                        "{ctx_desc}: group {key:?}: {} = {} expected {}",
                        m.sql, g[i], w[i]
                    ));
                }
            }
        }
    }
    (failures, checked)
}

pub(crate) fn report(failures: Vec<String>, checked: usize) {
    assert!(checked > 1000, "only {checked} values checked");
    assert!(
        failures.is_empty(),
        "{} mismatches (of {checked}); first ones:\n{}",
        failures.len(),
        failures
            .iter()
            .take(40)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
}

/// Registers the Parquet files of `dir` as `t`.
pub(crate) async fn register_t(ctx: &SessionContext, dir: &std::path::Path) {
    ctx.register_parquet("t", dir.to_str().unwrap(), ParquetReadOptions::default())
        .await
        .unwrap();
}
