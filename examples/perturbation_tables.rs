//! The risk–utility tables of BENCHMARKS.md ("Perturbation"), on the CASC sets:
//! microaggregation's IL by algorithm (MDAV against the default) on all nine cells, and IL,
//! IL1s, DBRL and SDID against k (microaggregation), a (noise) and p (rank swapping) on Census.
//!
//! `cargo run --release --example perturbation_tables`

use std::time::Instant;

use datafusion_anonymity_engine::perturb::casc::{casc_columns, information_loss};
use datafusion_anonymity_engine::perturb::release::{
    NumericInput, ReleaseInput, Transformation, compute,
};
use datafusion_anonymity_engine::perturb::{Aggregate, MicroAlgorithm, MicroOptions};

fn set(name: &str) -> Vec<Vec<f64>> {
    let path = format!("{}/examples/casc/{name}.csv", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).expect("the CASC sets are in examples/casc");
    let skip: &[&str] = if name == "eia" {
        &["UTILNAME", "STATE", "YEAR", "MONTH"]
    } else {
        &[]
    };
    casc_columns(&text, skip)
}

fn release(columns: &[Vec<f64>], transformation: Transformation, k: usize) -> String {
    let input = ReleaseInput {
        numeric: columns
            .iter()
            .enumerate()
            .map(|(j, values)| NumericInput {
                name: format!("a{j}"),
                transformation: transformation.clone(),
                values: values.clone(),
                bounds: None,
            })
            .collect(),
        categorical: Vec::new(),
        permuted: 0,
        strata: None,
        micro: MicroOptions::new(k),
        aggregate: Aggregate::Mean,
        disclosure_percent: 10.0,
        seed: 1,
    };
    let out = compute(&input, &|_| String::new()).expect("a CASC release");
    let (utility, risk) = out.measurement.expect("numeric attributes").measure();
    format!(
        "{:.2} | {:.4} | {:.3} | {:.1} % | {:.1} %",
        utility.il,
        utility.il1s,
        utility.max_correlation_change,
        100.0 * risk.dbrl,
        100.0 * risk.sdid
    )
}

fn main() {
    println!(
        "| set | k | MDAV IL (published) | MDAV IL | refined IL | projection IL | refined time |"
    );
    println!("|---|---|---|---|---|---|---|");
    let published = [
        ("census", [5.69, 9.09, 14.16]),
        ("tarragona", [16.93, 22.46, 33.19]),
        ("eia", [0.48, 1.67, 3.84]),
    ];
    for (name, figures) in published {
        let columns = set(name);
        for (k, figure) in [3, 5, 10].into_iter().zip(figures) {
            let mdav = information_loss(&columns, k, MicroAlgorithm::Mdav);
            let started = Instant::now();
            let refined = information_loss(&columns, k, MicroAlgorithm::Refined);
            let seconds = started.elapsed().as_secs_f64();
            let projection = information_loss(&columns, k, MicroAlgorithm::Projection);
            println!(
                "| {name} | {k} | {figure} | {mdav:.2} | {refined:.2} | {projection:.2} | {:.0} ms |",
                seconds * 1000.0
            );
        }
    }
    let census = set("census");
    println!();
    println!("| Census | IL | IL1s | largest correlation change | DBRL | SDID (±10 %) |");
    println!("|---|---|---|---|---|---|");
    for k in [2, 3, 5, 10, 20] {
        println!(
            "| microaggregation k = {k} | {} |",
            release(&census, Transformation::Microaggregation, k)
        );
    }
    for a in [0.01, 0.05, 0.1, 0.25, 0.5] {
        println!(
            "| noise a = {a} | {} |",
            release(&census, Transformation::Noise(a), 3)
        );
    }
    for a in [0.1, 0.5] {
        println!(
            "| correlated noise a = {a} | {} |",
            release(&census, Transformation::CorrelatedNoise(a), 3)
        );
    }
    for p in [1.0, 5.0, 10.0, 20.0] {
        println!(
            "| rank swap p = {p} % | {} |",
            release(&census, Transformation::RankSwap(p), 3)
        );
    }
}
