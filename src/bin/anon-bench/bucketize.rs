//! `anon-bench --suite bucketize` and `--suite bucketize-experiments` on the generated medical
//! table (`anon generate --table medical`).
//!
//! - `bucketize`: (c,k)-anonymization end to end (read, bucketize, write GT and ST, verify)
//!   under a 2 GiB memory pool against a plain COPY of the same table to Parquet, with its
//!   phases and peak RSS, then the fingerprint-correlation attack on the written ST.
//! - `bucketize-experiments`: the figures of seed 002 §6 for (c,k) and (p,k) on the same
//!   table: NCP against k, query error against k and θ, vulnerable records against k and the
//!   number of sensitive attributes. Printed as Markdown tables.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use datafusion::error::Result;
use datafusion::prelude::SessionContext;

use crate::measure::{interleaved, peak_rss_mib, print_row, run_once};
use datafusion_anonymity_engine::bucketize::attack::{attack_table, fingerprint_attack};
use datafusion_anonymity_engine::bucketize::{
    CkOptions, MsaTable, Refinement, encode, groups, utility, weights,
};
use datafusion_anonymity_engine::policy::Policy;
use datafusion_anonymity_engine::publish::bucketized::publish_policy;
use datafusion_anonymity_engine::publish::{Output, PublishRequest};

/// The policy of the benchmark: three quasi-identifiers and five sensitive attributes
/// (physician, specialty, diagnosis, symptom, treatment; the diagnostic method is left out).
const CK_POLICY: &str = r#"
[input]
path = "medical.parquet"
[privacy]
method = "ck-anonymization"
k = 5
c = 1
lambda = 2
external_factor = "physician"
[attributes]
patient_id = { role = "identifier" }
age = { role = "quasi_identifier" }
sex = { role = "quasi_identifier" }
zip = { role = "quasi_identifier" }
physician = { role = "sensitive" }
specialty = { role = "sensitive" }
diagnosis = { role = "sensitive" }
symptom = { role = "sensitive" }
diagnostic_method = { role = "identifier" }
treatment = { role = "sensitive" }
"#;

/// Memory pool of the case.
const MEMORY_LIMIT: usize = 2 * 1024 * 1024 * 1024;

/// The generated medical table of `rows` rows next to the other bench data.
pub(super) fn medical_path(dir: &Path, rows: usize, seed: u64) -> Result<PathBuf> {
    let path = dir.join(format!("medical-{rows}-{seed}.parquet"));
    if !path.exists() {
        eprintln!("generating {rows} medical rows into {}", path.display());
        let start = Instant::now();
        datafusion_anonymity_generate::write_medical(&path, rows, seed)?;
        eprintln!("generated in {:.1} s", start.elapsed().as_secs_f64());
    }
    Ok(path)
}

/// (c,k)-anonymization end to end against COPY; prints a row and returns whether the ratio is
/// within its target of 3.
pub(super) async fn ck_case(path: &Path, iterations: usize) -> Result<bool> {
    const TARGET: f64 = 3.0;
    let ctx = SessionContext::new();
    ctx.register_parquet("medical", &path.display().to_string(), Default::default())
        .await?;
    let scratch = path.with_extension("bench-ck");
    std::fs::create_dir_all(&scratch)?;
    let copy_dir = scratch.join("copy");
    let out_dir = scratch.join("release");
    let copy = format!(
        "COPY (SELECT * FROM medical) TO '{}/' STORED AS PARQUET",
        copy_dir.display()
    );
    let copy_once = async || -> Result<Duration> {
        let _ = std::fs::remove_dir_all(&copy_dir);
        Ok(run_once(&ctx, &copy).await?.0)
    };
    let mut phases = String::new();
    let anonymize_once = async || -> Result<Duration> {
        let start = Instant::now();
        let ctx = datafusion_anonymity_engine::session::context(Some(MEMORY_LIMIT))?;
        let mut policy = Policy::from_toml("bench (c,k) policy", Path::new("."), CK_POLICY)?;
        policy.set_input(datafusion_anonymity_engine::storage::Location::Local(
            path.to_path_buf(),
        ));
        policy.register_with(&ctx, false).await?;
        let output = Output::Files {
            location: datafusion_anonymity_engine::storage::Location::Local(out_dir.clone()),
            overwrite: true,
        };
        let outcome =
            publish_policy(PublishRequest::new(&ctx, &policy, &output), &mut |_| {}).await?;
        let report = &outcome.report;
        phases = format!(
            "read {:.2} s, bucketize {:.2} s ({} FBs, {} GBs), write {:.2} s, verify {:.2} s \
             (attack included); NCP {:.2} %, {} records pinned",
            outcome.read_seconds,
            outcome.bucketize_seconds,
            report.fingerprint_buckets,
            report.generalized_buckets,
            report.write_seconds,
            report.verify_seconds,
            report.ncp_percent,
            report.attack.partially_pinned,
        );
        Ok(start.elapsed())
    };
    let (floor, query) = interleaved(iterations, copy_once, anonymize_once).await?;
    let peak = peak_rss_mib();
    // the attack on the written ST, as `anon attack fingerprint` runs it
    let attack_ctx = SessionContext::new();
    attack_ctx
        .register_parquet(
            "st",
            &out_dir.join("st.parquet").display().to_string(),
            Default::default(),
        )
        .await?;
    let started = Instant::now();
    let determined = ["specialty".to_string()];
    let (attack, _) = attack_table(
        &attack_ctx,
        "st",
        "bucket_id",
        "physician",
        Some(&determined),
    )
    .await?;
    let attack_seconds = started.elapsed().as_secs_f64();
    let _ = std::fs::remove_dir_all(&scratch);
    let pass = print_row("anonymize (c,k)", &floor, &query, TARGET, "-");
    println!("                       (last run: {phases})");
    println!(
        "                       (memory pool 2 GiB; peak RSS of the process since the case began, COPY included: {})",
        peak.map_or("n/a".to_string(), |m| format!("{m} MiB"))
    );
    println!(
        "                       (anon attack fingerprint on the written ST: {attack_seconds:.2} s, {} of {} records pinned)",
        attack.partially_pinned, attack.records
    );
    Ok(pass)
}

/// The sensitive attributes of the experiments, in the order they are added.
const SENSITIVE: [&str; 6] = [
    "physician",
    "specialty",
    "diagnosis",
    "symptom",
    "diagnostic_method",
    "treatment",
];

fn ck_options(k: usize) -> CkOptions {
    CkOptions {
        c: 1,
        k,
        lambda: 2,
        refinement: Refinement::Strict,
        external_factor: Some("physician".into()),
        dependency_threshold: 0.5,
    }
}

/// (partially, fully) pinned records of a release, attacked with the attributes the linking
/// value determines in the data.
fn vulnerable(
    table: &MsaTable,
    release: &datafusion_anonymity_engine::bucketize::BucketizedRelease,
    k: usize,
) -> Result<(u64, u64)> {
    let dependencies = weights::analyse(table, &ck_options(k))?;
    let st = release.sensitive_buckets(table);
    let report =
        fingerprint_attack(&st, dependencies.linking, &dependencies.determined).report(&st);
    Ok((report.partially_pinned, report.fully_pinned))
}

/// Prints the experiment tables of seed 002 §6 for the medical table at `path`.
pub(super) async fn experiments(path: &Path) -> Result<()> {
    let ctx = SessionContext::new();
    ctx.register_parquet("medical", &path.display().to_string(), Default::default())
        .await?;
    let qis = ["age", "sex", "zip"].map(String::from);
    let all: Vec<String> = SENSITIVE.iter().map(|s| s.to_string()).collect();
    let table = encode::read_table(&ctx, "medical", &qis, &all).await?;
    println!(
        "{} records; quasi-identifiers age, sex, zip; (c,k): c = 1, λ = 2, strict; (p,k): p = 2",
        table.rows()
    );
    println!();
    println!(
        "NCP %, query error (θ = 0.1, 1,000 queries) and vulnerable records (partially / fully pinned) against k, all six sensitive attributes:"
    );
    println!();
    println!(
        "| k | NCP % (c,k) | NCP % (p,k) | query error (c,k) | query error (p,k) | vulnerable (c,k) | vulnerable (p,k) |"
    );
    println!("|---|---|---|---|---|---|---|");
    for k in [2, 4, 6, 8, 10] {
        let (ck, _) = datafusion_anonymity_engine::bucketize::ck_anonymize(&table, &ck_options(k))?;
        let pk = groups::pk_angelize(&table, 2, k)?;
        let (ck_error, pk_error) = (
            utility::query_error(&table, &ck, 1000, 0.1, 42),
            utility::query_error(&table, &pk, 1000, 0.1, 42),
        );
        let (ck_v, pk_v) = (vulnerable(&table, &ck, k)?, vulnerable(&table, &pk, k)?);
        println!(
            "| {k} | {:.2} | {:.2} | {:.3} | {:.3} | {} / {} | {} / {} |",
            utility::ncp_percent(&table, &ck),
            utility::ncp_percent(&table, &pk),
            ck_error.mean_relative_error,
            pk_error.mean_relative_error,
            ck_v.0,
            ck_v.1,
            pk_v.0,
            pk_v.1
        );
    }
    println!();
    println!("Query error against the selectivity θ, k = 6:");
    println!();
    println!("| θ | query error (c,k) | query error (p,k) | mean actual count |");
    println!("|---|---|---|---|");
    let (ck, _) = datafusion_anonymity_engine::bucketize::ck_anonymize(&table, &ck_options(6))?;
    let pk = groups::pk_angelize(&table, 2, 6)?;
    for theta in [0.01, 0.05, 0.1, 0.2, 0.4] {
        let (c, p) = (
            utility::query_error(&table, &ck, 1000, theta, 42),
            utility::query_error(&table, &pk, 1000, theta, 42),
        );
        println!(
            "| {theta} | {:.3} | {:.3} | {:.0} |",
            c.mean_relative_error, p.mean_relative_error, c.mean_actual
        );
    }
    println!();
    println!(
        "Vulnerable records (partially / fully pinned) against the number of sensitive attributes, k = 6 (physician, then specialty, diagnosis, symptom, diagnostic_method, treatment):"
    );
    println!();
    println!("| sensitive attributes | vulnerable (c,k) | vulnerable (p,k) |");
    println!("|---|---|---|");
    for m in 2..=SENSITIVE.len() {
        let mut subset = table.clone();
        subset.sensitive.truncate(m);
        let (ck, _) =
            datafusion_anonymity_engine::bucketize::ck_anonymize(&subset, &ck_options(6))?;
        let pk = groups::pk_angelize(&subset, 2, 6)?;
        let (c, p) = (vulnerable(&subset, &ck, 6)?, vulnerable(&subset, &pk, 6)?);
        println!("| {m} | {} / {} | {} / {} |", c.0, c.1, p.0, p.1);
    }
    Ok(())
}
