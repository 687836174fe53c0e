//! Shuffled publishing (issue 16, the unsorted matching attack of seed 004 §3.2): the written
//! rows are not in the input's order, the same seed writes the same bytes, another seed
//! another order, and the rows themselves are those of the unshuffled release.

use std::collections::HashMap;
use std::path::Path;

use datafusion::arrow::util::display::{ArrayFormatter, FormatOptions};
use datafusion::prelude::{ParquetReadOptions, SessionConfig, SessionContext};
use datafusion_anonymity_engine::policy::Policy;
use datafusion_anonymity_engine::publish::{self, RowOrder};
use datafusion_anonymity_engine::release::Release;

use crate::{anon, stderr};

/// Every row of the Parquet file at `path`, in file order, as `column=value|…` text.
pub(crate) async fn file_rows(path: &Path) -> Vec<String> {
    let ctx = SessionContext::new_with_config(SessionConfig::new().with_target_partitions(1));
    let batches = ctx
        .read_parquet(path.display().to_string(), ParquetReadOptions::default())
        .await
        .unwrap()
        .collect()
        .await
        .unwrap();
    let options = FormatOptions::default().with_null("NULL");
    let mut rows = Vec::new();
    for batch in &batches {
        let formatters: Vec<_> = batch
            .columns()
            .iter()
            .map(|c| ArrayFormatter::try_new(c.as_ref(), &options).unwrap())
            .collect();
        let names: Vec<String> = batch
            .schema()
            .fields()
            .iter()
            .map(|f| f.name().clone())
            .collect();
        for row in 0..batch.num_rows() {
            let cells: Vec<String> = names
                .iter()
                .zip(&formatters)
                .map(|(name, f)| format!("{name}={}", f.value(row)))
                .collect();
            rows.push(cells.join("|"));
        }
    }
    rows
}

/// The values of `column` in `rows` (as [`file_rows`] gives them).
fn column<'a>(rows: &'a [String], column: &str) -> Vec<&'a str> {
    let prefix = format!("{column}=");
    rows.iter()
        .map(|r| {
            r.split('|')
                .find_map(|cell| cell.strip_prefix(prefix.as_str()))
                .unwrap()
        })
        .collect()
}

/// The share of positions where `a` and `b` hold the same value.
fn same_at_position(a: &[&str], b: &[&str]) -> f64 {
    let same = a.iter().zip(b).filter(|(x, y)| x == y).count();
    same as f64 / a.len().min(b.len()) as f64
}

/// The chance that two rows drawn at random hold the same value: Σ (n_v / n)².
fn chance_level(values: &[&str]) -> f64 {
    let mut counts: HashMap<&str, usize> = HashMap::new();
    for v in values {
        *counts.entry(v).or_default() += 1;
    }
    let n = values.len() as f64;
    counts.values().map(|&c| (c as f64 / n).powi(2)).sum()
}

fn sorted(mut rows: Vec<String>) -> Vec<String> {
    rows.sort_unstable();
    rows
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shuffled_rows_leave_the_input_order_and_keep_the_multiset() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("patients.parquet");
    let rows = 30_000;
    crate::generate_patients(&input, rows, 3);
    // masked, so that every input row is written and positions are comparable
    let text = crate::patients_policy("patients.parquet", 2, 1.0, 2, 1)
        .replace("[privacy]\n", "[privacy]\nsuppression = \"mask\"\n");
    let mut policy = Policy::from_toml("policy.toml", dir.path(), &text).unwrap();
    let ctx = SessionContext::new_with_config(SessionConfig::new().with_target_partitions(2));
    datafusion_anonymity_engine::register(&ctx).unwrap();
    policy.register(&ctx).await.unwrap();
    let release = Release::FullDomain(policy.transformation().unwrap());
    let publish = |name: &str, order| {
        let out = dir.path().join(name);
        let (ctx, policy, release) = (&ctx, &policy, &release);
        async move {
            let report = publish::publish_ordered(
                ctx,
                policy,
                release,
                None,
                &out.as_path().into(),
                false,
                order,
            )
            .await
            .unwrap();
            assert_eq!(report.input_rows as usize, rows);
            assert_eq!(report.verification.rows as usize, rows);
            assert_eq!(report.seed, order.seed());
            out
        }
    };
    let kept = publish("kept.parquet", RowOrder::Input).await;
    let a = publish("a.parquet", RowOrder::Shuffled(7)).await;
    let again = publish("again.parquet", RowOrder::Shuffled(7)).await;
    let other = publish("other.parquet", RowOrder::Shuffled(8)).await;

    let input_rows = file_rows(&input).await;
    let (kept, a_rows, other_rows) = (
        file_rows(&kept).await,
        file_rows(&a).await,
        file_rows(&other).await,
    );
    assert_eq!(a_rows.len(), rows);

    // the same seed: the same bytes
    assert_eq!(std::fs::read(&a).unwrap(), std::fs::read(&again).unwrap());
    // the same rows as the release in input order, in another order; another seed, another
    // order
    assert!(sorted(a_rows.clone()) == sorted(kept.clone()), "other rows");
    assert!(
        sorted(other_rows.clone()) == sorted(kept.clone()),
        "other rows"
    );
    assert!(a_rows != kept, "the shuffled release is in input order");
    assert!(a_rows != other_rows, "seeds 7 and 8 write the same order");

    // the disease at a position is the input row's no more often than chance:
    // Σ p_v² over the diseases, within 5 standard deviations of a share of `rows` trials
    let disease = column(&input_rows, "disease");
    let chance = chance_level(&disease);
    let tolerance = 5.0 * (chance * (1.0 - chance) / rows as f64).sqrt();
    for (name, written) in [("a", &a_rows), ("other", &other_rows)] {
        let share = same_at_position(&disease, &column(written, "disease"));
        assert!(
            (share - chance).abs() <= tolerance,
            "{name}: {share:.4} of the rows keep their input row's disease, chance is {chance:.4}"
        );
        // the unsorted matching attack: release against release, position against position
        let share = same_at_position(&column(&a_rows, "disease"), &column(written, "disease"));
        if name != "a" {
            assert!(
                (share - chance).abs() <= tolerance,
                "a against {name}: {share:.4}"
            );
        }
    }
    // the statistic sees an unshuffled release: in input order every row keeps its disease
    // (the income too, a nearly unique column)
    let kept_share = same_at_position(&disease, &column(&kept, "disease"));
    let income = column(&input_rows, "income");
    assert!(
        kept_share > chance + tolerance,
        "kept order: {kept_share:.4}, chance {chance:.4}"
    );
    assert!(same_at_position(&income, &column(&a_rows, "income")) < 0.01);
}

#[test]
fn apply_prints_its_seed_and_the_same_seed_writes_the_same_bytes() {
    let dir = tempfile::tempdir().unwrap();
    crate::generate_patients(&dir.path().join("patients.parquet"), 5_000, 4);
    let policy = dir.path().join("policy.toml");
    std::fs::write(
        &policy,
        crate::patients_policy("patients.parquet", 2, 1.0, 2, 1),
    )
    .unwrap();
    let apply = |out: &str, seed: Option<&str>| {
        let out = dir.path().join(out);
        let (policy, out_arg) = (policy.display().to_string(), out.display().to_string());
        let mut args = vec!["apply", "--policy", &policy, "--out", &out_arg];
        if let Some(seed) = seed {
            args.extend(["--seed", seed]);
        }
        let output = anon(&args);
        assert!(output.status.success(), "{}", stderr(&output));
        let stdout = String::from_utf8_lossy(&output.stdout).to_string();
        let seed = stdout
            .lines()
            .find_map(|l| l.strip_prefix("order: shuffled, seed: "))
            .unwrap_or_else(|| panic!("no seed line in {stdout}"))
            .to_string();
        (std::fs::read(&out).unwrap(), seed)
    };
    let (first, seed) = apply("first.parquet", None);
    let (second, second_seed) = apply("second.parquet", None);
    // a random seed each time, and the printed one reproduces its run
    assert_ne!(seed, second_seed);
    assert_ne!(first, second);
    let (replayed, replayed_seed) = apply("replayed.parquet", Some(&seed));
    assert_eq!(replayed_seed, seed);
    assert_eq!(replayed, first);
}
