//! Brute-force reference implementation of every function, straight from the formulas of
//! `METRICS.md` and the NULL rules of `docs/functions.md`, compared with SQL on seeded random
//! data written as several Parquet files (so partial/final state merging runs), with
//! target_partitions 1 and 4, batch size 7, and once with the skip-partial-aggregation probe
//! forced on (the `convert_to_state` path).

use std::cmp::Ordering;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use datafusion::arrow::array::{
    Array, ArrayRef, AsArray, Float64Array, Int64Array, RecordBatch, StringArray,
};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Field, Float64Type, Schema};
use datafusion::parquet::arrow::ArrowWriter;
use datafusion::prelude::{ParquetReadOptions, SessionConfig, SessionContext};

const TOL: f64 = 1e-9;

/// splitmix64
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    /// true with probability pct/100
    fn chance(&mut self, pct: u64) -> bool {
        self.below(100) < pct
    }
}

#[derive(Clone, Debug)]
struct Row {
    g1: Option<i64>,
    g2: Option<String>,
    pid: Option<i64>,
    s: Option<String>,
    n: Option<i64>,
    f: Option<f64>,
    c: Option<String>,
}

fn gen_rows(seed: u64, count: usize) -> Vec<Row> {
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
        .map(|_| Row {
            g1: (!r.chance(10)).then(|| r.below(4) as i64),
            g2: strs(&mut r, &["a", "b", "c"], 10),
            pid: (!r.chance(15)).then(|| r.below(20) as i64),
            s: strs(&mut r, &["x", "y", "z", "w", "v"], 15),
            n: (!r.chance(10)).then(|| r.below(7) as i64),
            f: if r.chance(10) {
                None
            } else if r.chance(4) {
                Some(f64::NAN)
            } else {
                Some(r.below(8) as f64 * 0.5 - 1.0)
            },
            c: strs(&mut r, &["p", "q", "r", "s"], 10),
        })
        .collect()
}

fn schema() -> Arc<Schema> {
    Arc::new(Schema::new(vec![
        Field::new("g1", DataType::Int64, true),
        Field::new("g2", DataType::Utf8, true),
        Field::new("pid", DataType::Int64, true),
        Field::new("s", DataType::Utf8, true),
        Field::new("n", DataType::Int64, true),
        Field::new("f", DataType::Float64, true),
        Field::new("c", DataType::Utf8, true),
    ]))
}

fn to_batch(rows: &[Row]) -> RecordBatch {
    let cols: Vec<ArrayRef> = vec![
        Arc::new(Int64Array::from_iter(rows.iter().map(|r| r.g1))),
        Arc::new(StringArray::from_iter(rows.iter().map(|r| r.g2.clone()))),
        Arc::new(Int64Array::from_iter(rows.iter().map(|r| r.pid))),
        Arc::new(StringArray::from_iter(rows.iter().map(|r| r.s.clone()))),
        Arc::new(Int64Array::from_iter(rows.iter().map(|r| r.n))),
        Arc::new(Float64Array::from_iter(rows.iter().map(|r| r.f))),
        Arc::new(StringArray::from_iter(rows.iter().map(|r| r.c.clone()))),
    ];
    RecordBatch::try_new(schema(), cols).unwrap()
}

/// Writes the rows as several Parquet files of uneven sizes into `dir`.
fn write_parquet(dir: &std::path::Path, rows: &[Row]) {
    let cuts = [
        0,
        rows.len() / 5,
        rows.len() / 2,
        rows.len() * 3 / 4,
        rows.len(),
    ];
    for (i, w) in cuts.windows(2).enumerate() {
        let file = std::fs::File::create(dir.join(format!("part-{i}.parquet"))).unwrap();
        let mut writer = ArrowWriter::try_new(file, schema(), None).unwrap();
        // several small batches per file so row groups/pages vary
        for chunk in rows[w[0]..w[1]].chunks(11) {
            writer.write(&to_batch(chunk)).unwrap();
        }
        writer.close().unwrap();
    }
}

// ---------------------------------------------------------------- reference formulas

/// Distinct persons: non-null ids, plus one for all NULL ids together.
fn persons(e: &[&Row]) -> usize {
    let ids: HashSet<i64> = e.iter().filter_map(|r| r.pid).collect();
    ids.len() + usize::from(e.iter().any(|r| r.pid.is_none()))
}

/// Counts of the non-null values of s, and the number of NULLs.
fn s_counts(e: &[&Row]) -> (HashMap<String, usize>, usize) {
    let mut m = HashMap::new();
    let mut nulls = 0;
    for r in e {
        match &r.s {
            Some(v) => *m.entry(v.clone()).or_insert(0) += 1,
            None => nulls += 1,
        }
    }
    (m, nulls)
}

fn l_div(e: &[&Row]) -> f64 {
    let (m, _) = s_counts(e);
    m.len().max(1) as f64
}

/// Sorted counts descending, NULLs added to the largest.
fn sorted_counts_worst(e: &[&Row]) -> Vec<usize> {
    let (m, nulls) = s_counts(e);
    let mut v: Vec<usize> = m.into_values().collect();
    v.sort_unstable_by(|a, b| b.cmp(a));
    if v.is_empty() {
        v.push(nulls);
    } else {
        v[0] += nulls;
    }
    v
}

fn entropy_l(e: &[&Row]) -> f64 {
    let v = sorted_counts_worst(e);
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

fn recursive_l(e: &[&Row], c: f64) -> f64 {
    let v = sorted_counts_worst(e);
    let m = v.len();
    for l in (2..=m).rev() {
        let tail: usize = v[l - 1..].iter().sum();
        if (v[0] as f64) < c * tail as f64 {
            return l as f64;
        }
    }
    1.0
}

fn t_equal(e: &[&Row], t: &[&Row]) -> f64 {
    let dist = |rows: &[&Row]| {
        let mut m: HashMap<Option<String>, f64> = HashMap::new();
        for r in rows {
            *m.entry(r.s.clone()).or_insert(0.0) += 1.0 / rows.len() as f64;
        }
        m
    };
    let (pe, pt) = (dist(e), dist(t));
    let keys: HashSet<&Option<String>> = pe.keys().chain(pt.keys()).collect();
    0.5 * keys
        .into_iter()
        .map(|k| (pe.get(k).unwrap_or(&0.0) - pt.get(k).unwrap_or(&0.0)).abs())
        .sum::<f64>()
}

/// Ordered category of a numeric value: NULL first, numbers ascending, NaN last.
#[derive(Clone, Copy, Debug)]
enum Cat {
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
}

fn t_ordered(e: &[&Row], t: &[&Row], get: fn(&Row) -> Option<f64>) -> f64 {
    let mut domain: Vec<Cat> = t.iter().map(|r| Cat::of(get(r))).collect();
    domain.sort_by(Cat::cmp);
    domain.dedup_by(|a, b| a.cmp(b) == Ordering::Equal);
    let m = domain.len();
    if m <= 1 {
        return 0.0;
    }
    let p = |rows: &[&Row], v: &Cat| {
        rows.iter()
            .filter(|r| Cat::of(get(r)).cmp(v) == Ordering::Equal)
            .count() as f64
            / rows.len() as f64
    };
    let mut cum = 0.0;
    let mut sum = 0.0;
    for v in &domain {
        cum += p(e, v) - p(t, v);
        sum += cum.abs();
    }
    sum / (m - 1) as f64
}

/// Numeric spread (max_E - min_E)/(max_T - min_T), NULL and NaN ignored; 0 when the table's
/// range is 0 or the class has no value.
fn ncp_num(e: &[&Row], t: &[&Row], get: fn(&Row) -> Option<f64>) -> f64 {
    let range = |rows: &[&Row]| {
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
    };
    let rt = range(t);
    if rt == 0.0 { 0.0 } else { range(e) / rt }
}

fn ncp_cat(e: &[&Row], t: &[&Row]) -> f64 {
    let distinct = |rows: &[&Row]| {
        rows.iter()
            .filter_map(|r| r.c.clone())
            .collect::<HashSet<_>>()
            .len()
    };
    let de = distinct(e);
    if de <= 1 {
        0.0
    } else {
        de as f64 / distinct(t) as f64
    }
}

fn leakage(e: &[&Row], t: &[&Row]) -> f64 {
    let (ne, n) = (e.len() as f64, t.len() as f64);
    if t.len() == 1 {
        return 1.0;
    }
    (ne / n) * (n.log2() - ne.log2()) / n.log2()
}

const SELECT_LIST: &str = "k_anonymity(), k_anonymity(pid), l_diversity(s), \
    entropy_l_diversity(s), recursive_cl_diversity(s, 2), recursive_cl_diversity(s, 3), \
    t_closeness(s), t_closeness_ordered(n), t_closeness_ordered(f), ncp(f, c), ncp(n), \
    entropy_leakage(), reidentification_risk(), reidentification_risk(pid)";

const NAMES: [&str; 14] = [
    "k_anonymity()",
    "k_anonymity(pid)",
    "l_diversity(s)",
    "entropy_l_diversity(s)",
    "recursive_cl_diversity(s, 2)",
    "recursive_cl_diversity(s, 3)",
    "t_closeness(s)",
    "t_closeness_ordered(n)",
    "t_closeness_ordered(f)",
    "ncp(f, c)",
    "ncp(n)",
    "entropy_leakage()",
    "reidentification_risk()",
    "reidentification_risk(pid)",
];

fn reference_values(e: &[&Row], t: &[&Row]) -> Vec<f64> {
    let n = |r: &Row| r.n.map(|x| x as f64);
    let f = |r: &Row| r.f;
    vec![
        e.len() as f64,
        persons(e) as f64,
        l_div(e),
        entropy_l(e),
        recursive_l(e, 2.0),
        recursive_l(e, 3.0),
        t_equal(e, t),
        t_ordered(e, t, n),
        t_ordered(e, t, f),
        (ncp_num(e, t, f) + ncp_cat(e, t)) / 2.0,
        ncp_num(e, t, n),
        leakage(e, t),
        1.0 / e.len() as f64,
        1.0 / persons(e) as f64,
    ]
}

type Key = Vec<Option<String>>;

fn key_of(r: &Row, group_by: &[&str]) -> Key {
    group_by
        .iter()
        .map(|g| match *g {
            "g1" => r.g1.map(|x| x.to_string()),
            "g2" => r.g2.clone(),
            _ => unreachable!(),
        })
        .collect()
}

fn reference(rows: &[Row], filter: fn(&Row) -> bool, group_by: &[&str]) -> HashMap<Key, Vec<f64>> {
    let t: Vec<&Row> = rows.iter().filter(|r| filter(r)).collect();
    let mut classes: HashMap<Key, Vec<&Row>> = HashMap::new();
    for r in &t {
        classes.entry(key_of(r, group_by)).or_default().push(r);
    }
    classes
        .into_iter()
        .map(|(k, e)| (k, reference_values(&e, &t)))
        .collect()
}

async fn sql_values(
    ctx: &SessionContext,
    filter: &str,
    group_by: &[&str],
) -> HashMap<Key, Vec<f64>> {
    let keys = group_by.join(", ");
    let sql = if group_by.is_empty() {
        format!("SELECT {SELECT_LIST} FROM t WHERE {filter}")
    } else {
        format!("SELECT {keys}, {SELECT_LIST} FROM t WHERE {filter} GROUP BY {keys}")
    };
    let batches = ctx
        .sql(&sql)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"))
        .collect()
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"));
    let mut out = HashMap::new();
    for b in &batches {
        let nk = group_by.len();
        for (i, name) in NAMES.iter().enumerate() {
            let want = if matches!(i, 0 | 1 | 2 | 4 | 5) {
                DataType::Int64
            } else {
                DataType::Float64
            };
            assert_eq!(b.column(nk + i).data_type(), &want, "return type of {name}");
        }
        let key_cols: Vec<ArrayRef> = (0..nk)
            .map(|i| cast(b.column(i), &DataType::Utf8).unwrap())
            .collect();
        let val_cols: Vec<ArrayRef> = (nk..b.num_columns())
            .map(|i| cast(b.column(i), &DataType::Float64).unwrap())
            .collect();
        for r in 0..b.num_rows() {
            let key: Key = key_cols
                .iter()
                .map(|c| {
                    let c = c.as_string::<i32>();
                    (!c.is_null(r)).then(|| c.value(r).to_string())
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

fn make_ctx(target_partitions: usize, skip_partial: bool) -> SessionContext {
    let mut config = SessionConfig::new()
        .with_target_partitions(target_partitions)
        .with_batch_size(7);
    if skip_partial {
        let exec = &mut config.options_mut().execution;
        exec.skip_partial_aggregation_probe_rows_threshold = 1;
        exec.skip_partial_aggregation_probe_ratio_threshold = 0.0;
    }
    let ctx = SessionContext::new_with_config(config);
    datafusion_anonymity::register(&ctx).unwrap();
    ctx
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= TOL * (1.0 + b.abs())
}

struct Case {
    filter_sql: &'static str,
    filter: fn(&Row) -> bool,
}

const CASES: [Case; 3] = [
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
];

const GROUPINGS: [&[&str]; 4] = [&["g1", "g2"], &["g2"], &["g1"], &[]];

async fn compare_all(skip_partial: bool, partitions: &[usize]) {
    let mut failures = Vec::new();
    let mut checked = 0usize;
    for seed in [1u64, 42, 2024] {
        let rows = gen_rows(seed, 160 + seed as usize % 50);
        let dir = tempfile::tempdir().unwrap();
        write_parquet(dir.path(), &rows);
        for &tp in partitions {
            let ctx = make_ctx(tp, skip_partial);
            ctx.register_parquet(
                "t",
                dir.path().to_str().unwrap(),
                ParquetReadOptions::default(),
            )
            .await
            .unwrap();
            for case in &CASES {
                for group_by in GROUPINGS {
                    let want = reference(&rows, case.filter, group_by);
                    let got = sql_values(&ctx, case.filter_sql, group_by).await;
                    let ctx_desc = format!(
                        "seed {seed}, target_partitions {tp}, skip_partial {skip_partial}, \
                         WHERE {}, GROUP BY {group_by:?}",
                        case.filter_sql
                    );
                    if want.len() != got.len() {
                        failures.push(format!(
                            "{ctx_desc}: {} groups expected, {} returned",
                            want.len(),
                            got.len()
                        ));
                        continue;
                    }
                    for (key, w) in &want {
                        let Some(g) = got.get(key) else {
                            failures.push(format!("{ctx_desc}: group {key:?} missing"));
                            continue;
                        };
                        for (i, name) in NAMES.iter().enumerate() {
                            checked += 1;
                            if !close(g[i], w[i]) {
                                failures.push(format!(
                                    "{ctx_desc}: group {key:?}: {name} = {} expected {}",
                                    g[i], w[i]
                                ));
                            }
                        }
                    }
                }
            }
        }
    }
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reference_matches_sql() {
    compare_all(false, &[1, 4]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reference_matches_sql_skip_partial_aggregation() {
    compare_all(true, &[4]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn t_closeness_plan_scans_once() {
    let rows = gen_rows(7, 50);
    let dir = tempfile::tempdir().unwrap();
    write_parquet(dir.path(), &rows);
    let ctx = make_ctx(4, false);
    ctx.register_parquet(
        "t",
        dir.path().to_str().unwrap(),
        ParquetReadOptions::default(),
    )
    .await
    .unwrap();
    let batches = ctx
        .sql("EXPLAIN SELECT g1, t_closeness(s), ncp(f, c), entropy_leakage() FROM t GROUP BY g1")
        .await
        .unwrap()
        .collect()
        .await
        .unwrap();
    let mut physical = String::new();
    for b in &batches {
        let kind = cast(b.column(0), &DataType::Utf8).unwrap();
        let plan = cast(b.column(1), &DataType::Utf8).unwrap();
        let (kind, plan) = (kind.as_string::<i32>(), plan.as_string::<i32>());
        for r in 0..b.num_rows() {
            if kind.value(r) == "physical_plan" {
                physical.push_str(plan.value(r));
            }
        }
    }
    assert!(
        !physical.is_empty(),
        "no physical_plan row in EXPLAIN output"
    );
    assert_eq!(
        physical.matches("DataSourceExec").count(),
        1,
        "expected exactly one DataSourceExec:\n{physical}"
    );
}
