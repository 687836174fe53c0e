//! The search and the publish agree (issue 34): on random small tables and policies (the
//! five algorithms, drop and mask, l of every kind, t equal and ordered, α, β, δ, suppression
//! limits), whenever publishing every row as `*` meets the policy the command publishes
//! something, and whatever it publishes meets the policy when recomputed from the written
//! file by the brute force below (docs/definitions.md: classes are the written label
//! tuples; t, β and δ against the written rows; in mask mode the all-`*` class is left out,
//! as suppressed, when it fails).

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use datafusion::arrow::array::{Array, AsArray, Int64Array, RecordBatch, StringArray};
use datafusion::arrow::datatypes::{DataType, Field, Int64Type, Schema};
use datafusion::parquet::arrow::ArrowWriter;
use datafusion::prelude::{ParquetReadOptions, SessionConfig, SessionContext};
use datafusion_anonymity_engine::policy::Policy;
use datafusion_anonymity_engine::publish::{self, RowOrder};
use datafusion_anonymity_engine::search::local::{LocalAlgorithm, LocalOptions};
use datafusion_anonymity_engine::search::{self, Algorithm, Method, Metric};

use crate::reference::Rng;

/// One input row: quasi-identifiers `a` (0..9, NULL in some tables) and `b` (four codes), the
/// sensitive `s` (0..4, skewed, sometimes NULL).
struct Input {
    a: Vec<Option<i64>>,
    b: Vec<&'static str>,
    s: Vec<Option<i64>>,
}

fn input(rng: &mut Rng, null_qis: bool) -> Input {
    let n = 12 + rng.below(40) as usize;
    let skew = rng.below(60);
    let mut rows = Input {
        a: Vec::new(),
        b: Vec::new(),
        s: Vec::new(),
    };
    for _ in 0..n {
        rows.a
            .push((!(null_qis && rng.below(8) == 0)).then(|| rng.below(10) as i64));
        rows.b.push(["p1", "p2", "q1", "q2"][rng.below(4) as usize]);
        let s = if rng.below(100) < skew {
            0
        } else {
            rng.below(5) as i64
        };
        rows.s.push((rng.below(20) != 0).then_some(s));
    }
    rows
}

fn write_input(path: &std::path::Path, rows: &Input) {
    let schema = Arc::new(Schema::new(vec![
        Field::new("a", DataType::Int64, true),
        Field::new("b", DataType::Utf8, false),
        Field::new("s", DataType::Int64, true),
    ]));
    let batch = RecordBatch::try_new(
        Arc::clone(&schema),
        vec![
            Arc::new(Int64Array::from(rows.a.clone())),
            Arc::new(StringArray::from(rows.b.clone())),
            Arc::new(Int64Array::from(rows.s.clone())),
        ],
    )
    .unwrap();
    let mut writer =
        ArrowWriter::try_new(std::fs::File::create(path).unwrap(), schema, None).unwrap();
    writer.write(&batch).unwrap();
    writer.close().unwrap();
}

/// A requirement on `s`: its policy line and the brute-force check of one class against
/// the table's values.
#[derive(Debug, Clone, Copy)]
enum Requirement {
    None,
    DistinctL(f64),
    EntropyL(f64),
    RecursiveL(f64, f64),
    EqualT(f64),
    OrderedT(f64),
    Alpha(f64),
    Beta(f64),
    Delta(f64),
}

impl Requirement {
    fn random(rng: &mut Rng) -> Self {
        let x = rng.below(1000) as f64 / 1000.0;
        match rng.below(9) {
            0 => Requirement::None,
            1 => Requirement::DistinctL(2.0),
            2 => Requirement::EntropyL(1.3 + x),
            3 => Requirement::RecursiveL(1.0 + 2.0 * x, 2.0),
            4 => Requirement::EqualT(0.05 + 0.35 * x),
            5 => Requirement::OrderedT(0.05 + 0.25 * x),
            6 => Requirement::Alpha(0.4 + 0.5 * x),
            7 => Requirement::Beta(0.3 + 2.0 * x),
            _ => Requirement::Delta(0.5 + 2.0 * x),
        }
    }

    fn policy_line(self) -> String {
        match self {
            Requirement::None => String::new(),
            Requirement::DistinctL(l) => {
                format!("l_diversity = {{ kind = \"distinct\", l = {l} }}")
            }
            Requirement::EntropyL(l) => format!("l_diversity = {{ kind = \"entropy\", l = {l} }}"),
            Requirement::RecursiveL(c, l) => {
                format!("l_diversity = {{ kind = \"recursive\", c = {c}, l = {l} }}")
            }
            Requirement::EqualT(t) => format!("t_closeness = {{ kind = \"equal\", t = {t} }}"),
            Requirement::OrderedT(t) => format!("t_closeness = {{ kind = \"ordered\", t = {t} }}"),
            Requirement::Alpha(a) => format!("alpha = {a}"),
            Requirement::Beta(b) => format!("beta_likeness = {{ beta = {b} }}"),
            Requirement::Delta(d) => format!("delta_disclosure = {d}"),
        }
    }

    /// Whether a class with sensitive values `class` passes in a table with values `table`
    /// (NULL rules of docs/definitions.md; 1e-9 of slack for rounding only).
    fn passes(self, class: &[Option<i64>], table: &[Option<i64>]) -> bool {
        let (ne, nt) = (class.len() as f64, table.len() as f64);
        let histogram = |values: &[Option<i64>]| {
            let mut h: BTreeMap<Option<i64>, f64> = BTreeMap::new();
            for v in values {
                *h.entry(*v).or_default() += 1.0;
            }
            h
        };
        let (pe, pt) = (histogram(class), histogram(table));
        // non-NULL counts descending, the NULLs added to the largest (the worst completion)
        let worst_counts = || {
            let mut counts: Vec<f64> = pe
                .iter()
                .filter(|(v, _)| v.is_some())
                .map(|(_, &c)| c)
                .collect();
            counts.sort_by(|a, b| b.total_cmp(a));
            let nulls = pe.get(&None).copied().unwrap_or(0.0);
            match counts.first_mut() {
                Some(first) => *first += nulls,
                None => counts.push(nulls),
            }
            counts
        };
        let share = |h: &BTreeMap<Option<i64>, f64>, v: &Option<i64>, n: f64| {
            h.get(v).copied().unwrap_or(0.0) / n
        };
        match self {
            Requirement::None => true,
            Requirement::DistinctL(l) => {
                (pe.keys().filter(|v| v.is_some()).count().max(1) as f64) >= l - 1e-9
            }
            Requirement::EntropyL(l) => {
                let h: f64 = worst_counts()
                    .iter()
                    .map(|&c| -(c / ne) * (c / ne).ln())
                    .sum();
                h.exp() >= l * (1.0 - 1e-9)
            }
            Requirement::RecursiveL(c, l) => {
                let r = worst_counts();
                let mut achieved = 1.0;
                for m in (2..=r.len()).rev() {
                    if r[0] < c * r[m - 1..].iter().sum::<f64>() {
                        achieved = m as f64;
                        break;
                    }
                }
                achieved >= l - 1e-9
            }
            Requirement::Alpha(a) => worst_counts()[0] / ne <= a + 1e-9,
            Requirement::EqualT(t) => {
                let emd: f64 = pt
                    .keys()
                    .map(|v| (share(&pe, v, ne) - share(&pt, v, nt)).abs())
                    .sum::<f64>()
                    / 2.0;
                emd <= t + 1e-9
            }
            Requirement::OrderedT(t) => {
                // T's values in order, NULL first (BTreeMap: None < Some)
                let m = pt.len();
                if m <= 1 {
                    return true;
                }
                let (mut cumulative, mut sum) = (0.0, 0.0);
                for v in pt.keys() {
                    cumulative += share(&pe, v, ne) - share(&pt, v, nt);
                    sum += cumulative.abs();
                }
                sum / (m - 1) as f64 <= t + 1e-9
            }
            Requirement::Beta(b) => pe.keys().all(|v| {
                let (e, t) = (share(&pe, v, ne), share(&pt, v, nt));
                e <= t || (e - t) / t <= b + 1e-9
            }),
            // strict, and a value of T missing from E is +∞
            Requirement::Delta(d) => pt.keys().all(|v| {
                let e = share(&pe, v, ne);
                e > 0.0 && (e / share(&pt, v, nt)).ln().abs() < d * (1.0 - 1e-12)
            }),
        }
    }
}

/// A written class's labels of `a` and `b`.
type Labels = (Option<String>, Option<String>);

/// One random case: the table, its policy's terms, the algorithm.
struct Case {
    rows: Input,
    k: usize,
    requirement: Requirement,
    mask: bool,
    max_suppression: f64,
    method: Method,
}

fn case(seed: u64) -> Case {
    let mut rng = Rng(seed.wrapping_mul(0x2545_F491_4F6C_DD1D) ^ 34);
    let null_qis = rng.below(4) == 0;
    let rows = input(&mut rng, null_qis);
    Case {
        rows,
        k: [2, 3, 4, 5, 8][rng.below(5) as usize],
        requirement: Requirement::random(&mut rng),
        mask: rng.below(2) == 0,
        max_suppression: [0.0, 0.05, 0.1, 0.2][rng.below(4) as usize],
        method: [
            Method::FullDomain(Algorithm::Optimal),
            Method::FullDomain(Algorithm::IabFullDomain),
            Method::Local(LocalAlgorithm::Mondrian),
            Method::Local(LocalAlgorithm::Kaca),
            Method::Local(LocalAlgorithm::Iab),
        ][(seed % 5) as usize],
    }
}

impl Case {
    fn policy(&self, input: &std::path::Path) -> String {
        format!(
            "name = \"t\"\n[input]\npath = \"{}\"\n[privacy]\nk = {}\nmax_suppression = {}\n\
             suppression = \"{}\"\n{}\n[attributes]\n\
             a = {{ role = \"quasi_identifier\", hierarchy = {{ kind = \"interval\", widths = [2, 4] }} }}\n\
             b = {{ role = \"quasi_identifier\", hierarchy = {{ kind = \"tree\", rows = [[\"p1\", \"p\", \"*\"], [\"p2\", \"p\", \"*\"], [\"q1\", \"q\", \"*\"], [\"q2\", \"q\", \"*\"]] }} }}\n\
             s = {{ role = \"sensitive\" }}\n",
            input.display(),
            self.k,
            self.max_suppression,
            if self.mask { "mask" } else { "drop" },
            self.requirement.policy_line()
        )
    }

    /// Whether every row published as `*` (one class of the whole table, compared with
    /// itself) meets the policy.
    fn all_star_passes(&self) -> bool {
        self.rows.s.len() >= self.k && self.requirement.passes(&self.rows.s, &self.rows.s)
    }

    /// The brute-force check of the written rows `(a, b, s)`: every class passes, the
    /// suppressed rows fit the limit, some row is kept. An error names what fails.
    fn check_written(
        &self,
        written: &[(Option<String>, Option<String>, Option<i64>)],
    ) -> Result<(), String> {
        let n = self.rows.s.len();
        let all: Vec<Option<i64>> = written.iter().map(|r| r.2).collect();
        let mut classes: HashMap<Labels, Vec<Option<i64>>> = HashMap::new();
        for (a, b, s) in written {
            classes.entry((a.clone(), b.clone())).or_default().push(*s);
        }
        let star = (Some("*".to_string()), Some("*".to_string()));
        let mut suppressed = if self.mask { 0 } else { n - written.len() };
        for (labels, values) in &classes {
            let passes = values.len() >= self.k && self.requirement.passes(values, &all);
            if !passes {
                if self.mask && *labels == star {
                    suppressed += values.len();
                } else {
                    return Err(format!("class {labels:?} of {} rows fails", values.len()));
                }
            }
        }
        let allowed = (self.max_suppression * n as f64 + 1e-9).floor() as usize;
        if suppressed > allowed {
            return Err(format!("{suppressed} rows suppressed, {allowed} allowed"));
        }
        if suppressed == n {
            return Err("nothing kept".into());
        }
        Ok(())
    }
}

/// Runs case `seed`: `Some(published)` when it published (then checked), `None` when refused
/// (then the all-`*` release must fail the policy).
async fn run(seed: u64, dir: &std::path::Path) -> Option<bool> {
    let case = case(seed);
    let input = dir.join(format!("in-{seed}.parquet"));
    write_input(&input, &case.rows);
    let context = format!(
        "seed {seed}: {} rows, k {}, {:?}, mask {}, max_suppression {}, {}",
        case.rows.s.len(),
        case.k,
        case.requirement,
        case.mask,
        case.max_suppression,
        case.method.name()
    );
    let mut policy = Policy::from_toml("t.toml", dir, &case.policy(&input)).unwrap();
    let ctx = SessionContext::new_with_config(SessionConfig::new().with_target_partitions(1));
    policy.register_with(&ctx, false).await.unwrap();
    let freq = policy.frequency_set(&ctx, None).await.unwrap();
    let decision = search::decide(
        &freq,
        policy.requirements(),
        case.method,
        Metric::Loss,
        LocalOptions::default(),
        &mut |_, _| {},
    );
    let out = dir.join(format!("out-{seed}.parquet"));
    let published = match decision {
        Ok(decision) => publish::publish_ordered(
            &ctx,
            &policy,
            &decision.release,
            Some(decision.failing),
            &out.as_path().into(),
            false,
            RowOrder::Input,
        )
        .await
        .map_err(|e| e.to_string()),
        Err(e) => Err(e.to_string()),
    };
    let published = match published {
        Ok(_) => true,
        Err(e) => {
            assert!(
                !case.all_star_passes(),
                "{context}: refused ({e}) though every row as * meets the policy"
            );
            return Some(false);
        }
    };
    let read = SessionContext::new();
    read.register_parquet("w", out.to_str().unwrap(), ParquetReadOptions::default())
        .await
        .unwrap();
    let batches = read
        .sql("SELECT a, b, s FROM w")
        .await
        .unwrap()
        .collect()
        .await
        .unwrap();
    let mut written = Vec::new();
    for batch in &batches {
        let text =
            |i: usize| datafusion::arrow::compute::cast(batch.column(i), &DataType::Utf8).unwrap();
        let (a, b) = (text(0), text(1));
        let (a, b) = (a.as_string::<i32>(), b.as_string::<i32>());
        let s = batch.column(2).as_primitive::<Int64Type>();
        for r in 0..batch.num_rows() {
            written.push((
                a.is_valid(r).then(|| a.value(r).to_string()),
                b.is_valid(r).then(|| b.value(r).to_string()),
                s.is_valid(r).then(|| s.value(r)),
            ));
        }
    }
    if let Err(e) = case.check_written(&written) {
        panic!("{context}: the written file fails the policy: {e}");
    }
    Some(published)
}

/// Cases `seeds`: each publishes a release that meets the policy, or refuses one where
/// every row as `*` fails too; enough of them publish and refuse that both are exercised.
async fn agree(seeds: std::ops::Range<u64>) {
    let dir = tempfile::tempdir().unwrap();
    let (mut published, mut refused) = (0, 0);
    let mut failures = Vec::new();
    for seed in seeds.clone() {
        let dir = dir.path().to_path_buf();
        let outcome = tokio::spawn(async move { run(seed, &dir).await }).await;
        let Ok(outcome) = outcome else {
            failures.push(seed);
            continue;
        };
        match outcome {
            Some(true) => published += 1,
            _ => refused += 1,
        }
    }
    assert!(failures.is_empty(), "failing seeds {failures:?}");
    let cases = seeds.end - seeds.start;
    assert!(published * 4 > cases, "{published} of {cases} published");
    assert!(refused > 0, "no case refused");
}

// 2,000 cases in all, in eight tests that nextest runs side by side
#[tokio::test]
async fn search_and_publish_agree_0() {
    agree(0..250).await;
}

#[tokio::test]
async fn search_and_publish_agree_1() {
    agree(250..500).await;
}

#[tokio::test]
async fn search_and_publish_agree_2() {
    agree(500..750).await;
}

#[tokio::test]
async fn search_and_publish_agree_3() {
    agree(750..1000).await;
}

#[tokio::test]
async fn search_and_publish_agree_4() {
    agree(1000..1250).await;
}

#[tokio::test]
async fn search_and_publish_agree_5() {
    agree(1250..1500).await;
}

#[tokio::test]
async fn search_and_publish_agree_6() {
    agree(1500..1750).await;
}

#[tokio::test]
async fn search_and_publish_agree_7() {
    agree(1750..2000).await;
}

/// A drop-mode node whose t decision flips once its failing class is dropped, worked by hand.
/// QI g (tree: A, B, C → `*`), sensitive s; k = 3, equal t = 0.15:
/// - class A: y y y z (4 rows), class B: 5 y, 5 z (10 rows), class C: y y (2 rows, below k).
/// - Against the input (16 rows: 10 y, 6 z; p_T(y) = 0.625): A's EMD is |0.75 − 0.625| =
///   0.125 ≤ 0.15, B's |0.5 − 0.625| = 0.125: both pass, C alone is dropped (2 rows).
/// - Published without C (14 rows: 8 y, 6 z; p(y) = 8/14 ≈ 0.5714): A's EMD is
///   0.75 − 0.5714 ≈ 0.1786 > 0.15, so A fails and is dropped too; then B alone (10 rows) has
///   EMD 0. Level 0 publishes B only: 6 rows suppressed, not 2.
/// - At the top (`*`): one class of 16 rows, EMD 0, nothing suppressed; Loss 1.
///
/// With max_suppression 0.2 (⌊3.2⌋ = 3 rows) level 0 needs 6 > 3: the search chooses the top
/// and publishes all 16 rows as `*` (before, it chose level 0 and the publish refused, "6 of
/// 16 rows, above the limit of 3"). With 0.4 (6 rows) it chooses level 0 (Loss 6/16 = 0.375
/// against 1), and the file holds B's 10 rows.
#[tokio::test]
async fn drop_mode_t_is_judged_against_the_published_rows() {
    let dir = tempfile::tempdir().unwrap();
    let mut csv = String::from("g,s\n");
    for (g, s, n) in [
        ("A", "y", 3),
        ("A", "z", 1),
        ("B", "y", 5),
        ("B", "z", 5),
        ("C", "y", 2),
    ] {
        for _ in 0..n {
            csv.push_str(&format!("{g},{s}\n"));
        }
    }
    std::fs::write(dir.path().join("flip.csv"), csv).unwrap();
    for (max_suppression, level, rows) in [(0.2, 1, 16), (0.4, 0, 10)] {
        let text = format!(
            "name = \"flip\"\n[input]\npath = \"flip.csv\"\n[privacy]\nk = 3\n\
             max_suppression = {max_suppression}\n\
             t_closeness = {{ kind = \"equal\", t = 0.15 }}\n[attributes]\n\
             g = {{ role = \"quasi_identifier\", hierarchy = {{ kind = \"tree\", rows = [[\"A\", \"*\"], [\"B\", \"*\"], [\"C\", \"*\"]] }} }}\n\
             s = {{ role = \"sensitive\" }}\n"
        );
        let mut policy = Policy::from_toml("flip.toml", dir.path(), &text).unwrap();
        let ctx = SessionContext::new();
        policy.register_with(&ctx, false).await.unwrap();
        let freq = policy.frequency_set(&ctx, None).await.unwrap();
        let bottom = search::evaluate_levels(&freq, policy.requirements(), &[0]).unwrap();
        assert_eq!(bottom.suppressed_rows, 6, "A is dropped after C");
        assert_eq!(bottom.classes, 1);
        let decision = search::decide(
            &freq,
            policy.requirements(),
            Method::FullDomain(Algorithm::Optimal),
            Metric::Loss,
            LocalOptions::default(),
            &mut |_, _| {},
        )
        .unwrap();
        assert_eq!(
            decision.release.levels(),
            Some(&[level][..]),
            "{max_suppression}"
        );
        assert_eq!(decision.suppressed_rows, 16 - rows as u64);
        let out = dir.path().join(format!("flip-{level}.parquet"));
        let report = publish::publish_ordered(
            &ctx,
            &policy,
            &decision.release,
            Some(decision.failing),
            &out.as_path().into(),
            false,
            RowOrder::Input,
        )
        .await
        .unwrap();
        assert_eq!(report.suppressed_rows, 16 - rows as u64);
        assert_eq!(report.verification.rows, rows as u64);
        // either way the one published class is the whole published table: EMD 0
        assert!(report.verification.sensitive[0].t().unwrap().abs() <= 1e-12);
    }
}
