//! Criterion benches of the generalization search on the Adult extract (30,162 rows; QIs sex,
//! age, race, marital-status, education, native-country, workclass, occupation with the ARX
//! hierarchies; sensitive salary-class): the frequency-set build (one DataFusion query) and
//! each search on an already built frequency set, in process.
//!
//! Local recoding (Mondrian, KACA, IAB) runs on the same frequency set; before measuring, each
//! release's figures and its time as a multiple of the frequency-set build (the one scan of the
//! data, the floor every algorithm starts from) are printed.
//!
//! `cargo bench --bench search`. Before measuring, the chosen node of each policy is printed.

use std::hint::black_box;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use datafusion::prelude::{ParquetReadOptions, SessionContext};
use datafusion_anonymity::generalize::Hierarchy;
use datafusion_anonymity_engine::policy::{
    LDiversity, LDiversityKind, PrivacyRequirements, SensitiveRequirement, TCloseness,
    TClosenessKind,
};
use datafusion_anonymity_engine::search::local::{self, LocalAlgorithm, LocalOptions};
use datafusion_anonymity_engine::search::{Algorithm, FrequencySet, Metric, search};
use tokio::runtime::Runtime;

// the same allocator as the `anon` binary
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

const QIS: [&str; 8] = [
    "sex",
    "age",
    "race",
    "marital-status",
    "education",
    "native-country",
    "workclass",
    "occupation",
];
const SALARY: &str = "salary-class";

fn adult() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("examples/adult")
}

fn setup(runtime: &Runtime) -> (SessionContext, Vec<(String, Arc<Hierarchy>)>) {
    let ctx = SessionContext::new();
    let path = adult().join("adult.parquet");
    runtime
        .block_on(ctx.register_parquet(
            "adult",
            path.to_string_lossy().as_ref(),
            ParquetReadOptions::default(),
        ))
        .expect("register adult");
    let qis = QIS
        .iter()
        .map(|c| {
            let file = adult().join(format!("hierarchies/adult_hierarchy_{c}.csv"));
            let h = Hierarchy::tree_from_csv_file(*c, file).expect("hierarchy");
            (c.to_string(), Arc::new(h))
        })
        .collect();
    (ctx, qis)
}

fn policy(max_suppression: f64, l: Option<f64>, t: Option<f64>) -> PrivacyRequirements {
    PrivacyRequirements {
        suppression: Default::default(),
        population: None,
        k: 5,
        max_suppression,
        sensitive: vec![SensitiveRequirement {
            attribute: SALARY.into(),
            l: l.map(|l| LDiversity {
                kind: LDiversityKind::Distinct,
                l,
                c: None,
            }),
            t: t.map(|t| TCloseness {
                kind: TClosenessKind::Equal,
                t,
            }),
            ..Default::default()
        }],
    }
}

fn searches() -> Vec<(&'static str, Algorithm, PrivacyRequirements)> {
    vec![
        (
            "optimal k=5 0%",
            Algorithm::Optimal,
            policy(0.0, None, None),
        ),
        (
            "optimal k=5 2%",
            Algorithm::Optimal,
            policy(0.02, None, None),
        ),
        (
            "optimal k=5 l=2 0%",
            Algorithm::Optimal,
            policy(0.0, Some(2.0), None),
        ),
        (
            "optimal k=5 l=2 2%",
            Algorithm::Optimal,
            policy(0.02, Some(2.0), None),
        ),
        (
            "optimal k=5 t=0.2 0%",
            Algorithm::Optimal,
            policy(0.0, None, Some(0.2)),
        ),
        (
            "optimal k=5 t=0.2 2%",
            Algorithm::Optimal,
            policy(0.02, None, Some(0.2)),
        ),
        (
            "iab k=5 0%",
            Algorithm::IabFullDomain,
            policy(0.0, None, None),
        ),
        (
            "iab k=5 2%",
            Algorithm::IabFullDomain,
            policy(0.02, None, None),
        ),
    ]
}

fn local_runs() -> Vec<(&'static str, LocalAlgorithm, PrivacyRequirements)> {
    let mut runs = Vec::new();
    for (algorithm, names) in [
        (
            LocalAlgorithm::Mondrian,
            [
                "mondrian k=5 0%",
                "mondrian k=5 2%",
                "mondrian k=5 l=2 0%",
                "mondrian k=5 t=0.2 0%",
            ],
        ),
        (
            LocalAlgorithm::Kaca,
            [
                "kaca k=5 0%",
                "kaca k=5 2%",
                "kaca k=5 l=2 0%",
                "kaca k=5 t=0.2 0%",
            ],
        ),
        (
            LocalAlgorithm::Iab,
            [
                "iab k=5 0%",
                "iab k=5 2%",
                "iab k=5 l=2 0%",
                "iab k=5 t=0.2 0%",
            ],
        ),
    ] {
        let policies = [
            policy(0.0, None, None),
            policy(0.02, None, None),
            policy(0.0, Some(2.0), None),
            policy(0.0, None, Some(0.2)),
        ];
        for (name, req) in names.into_iter().zip(policies) {
            runs.push((name, algorithm, req));
        }
    }
    runs
}

fn bench(c: &mut Criterion) {
    let runtime = Runtime::new().expect("tokio runtime");
    let (ctx, qis) = setup(&runtime);
    let sensitive = vec![SALARY.to_string()];
    let freq = runtime
        .block_on(FrequencySet::build(&ctx, "adult", &qis, &sensitive))
        .expect("frequency set");
    eprintln!(
        "frequency set: {} rows, {} combinations, {} distinct QI tuples, lattice {:?}",
        freq.rows(),
        freq.combinations(),
        freq.leaf_classes(),
        freq.heights()
    );
    for (name, algorithm, req) in searches() {
        let outcome = search(&freq, &req, algorithm, Metric::Loss, &mut |_, _| {}).expect(name);
        match &outcome.solution {
            Some(s) => eprintln!(
                "{name}: levels {:?}, Loss {:.4}, suppressed {}, classes {}, min class {:?}, \
                 l {:?}, t {:?}, {} of {} nodes evaluated, {:?}",
                s.levels,
                s.evaluation.loss,
                s.evaluation.suppressed_rows,
                s.evaluation.classes,
                s.evaluation.min_class_size,
                s.evaluation.sensitive.first().and_then(|a| a.l()),
                s.evaluation.sensitive.first().and_then(|a| a.t()),
                outcome.nodes_checked,
                outcome.lattice_size,
                outcome.elapsed
            ),
            None => eprintln!("{name}: no solution"),
        }
    }

    // the floor: one build of the frequency set (the data's single scan)
    let started = std::time::Instant::now();
    let builds = 5;
    for _ in 0..builds {
        runtime
            .block_on(FrequencySet::build(&ctx, "adult", &qis, &sensitive))
            .expect("frequency set");
    }
    let floor = started.elapsed().as_secs_f64() / builds as f64;
    eprintln!("floor: frequency set build {:.1} ms", floor * 1e3);
    for (name, algorithm, req) in local_runs() {
        // one warm-up, then the mean of a few runs
        let run = || local::anonymize(&freq, &req, algorithm, LocalOptions::default());
        let first = run();
        let started = std::time::Instant::now();
        let runs = 3;
        for _ in 0..runs {
            let _ = black_box(run());
        }
        let seconds = started.elapsed().as_secs_f64() / runs as f64;
        match first {
            Ok((release, e)) => eprintln!(
                "{name}: Loss {:.4}, classes {}, suppressed {}, discernibility {:.0}, min class \
                 {:?}, l {:?}, t {:?}; {:.1} ms = {:.2}x the frequency set build",
                e.loss,
                release.classes(),
                e.suppressed_rows,
                e.discernibility,
                e.min_class_size,
                e.sensitive.first().and_then(|a| a.l()),
                e.sensitive.first().and_then(|a| a.t()),
                seconds * 1e3,
                seconds / floor
            ),
            Err(e) => eprintln!("{name}: {e}"),
        }
    }

    let mut group = c.benchmark_group("search");
    group.sample_size(10);
    group.warm_up_time(Duration::from_secs(1));
    group.measurement_time(Duration::from_secs(3));
    group.bench_function("frequency set build", |b| {
        b.iter(|| {
            runtime
                .block_on(FrequencySet::build(&ctx, "adult", &qis, &sensitive))
                .expect("frequency set")
        })
    });
    for (name, algorithm, req) in searches() {
        group.bench_function(name, |b| {
            b.iter(|| {
                search(
                    black_box(&freq),
                    &req,
                    algorithm,
                    Metric::Loss,
                    &mut |_, _| {},
                )
                .expect(name)
            })
        });
    }
    for (name, algorithm, req) in local_runs() {
        if local::anonymize(&freq, &req, algorithm, LocalOptions::default()).is_err() {
            continue;
        }
        group.bench_function(name, |b| {
            b.iter(|| local::anonymize(black_box(&freq), &req, algorithm, LocalOptions::default()))
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
