//! Criterion bench of rank swapping next to its floor, a sort of the same values (ranking them
//! is the least a rank swap must do): `cargo bench --bench perturb`. After criterion's report,
//! one line gives the ratio of the medians of a few runs of each, measured in the same run.
//! The end-to-end figures (10M records against a COPY) are in BENCHMARKS.md.

use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use datafusion_anonymity::rng::SplitMix64;
use datafusion_anonymity_engine::perturb::swap::rank_swap;

const RECORDS: usize = 2_000_000;

/// Turnover-like values: a heavy right tail, with ties among the small ones.
fn column() -> Vec<f64> {
    let mut rng = SplitMix64(7);
    (0..RECORDS)
        .map(|_| {
            let u = rng.unit();
            (1_000.0 * (-(1.0 - u).ln()).powi(3)).round()
        })
        .collect()
}

fn floor(column: &[f64]) -> Vec<f64> {
    let mut sorted = column.to_vec();
    sorted.sort_unstable_by(f64::total_cmp);
    sorted
}

fn swapped(column: &[f64]) -> Vec<f64> {
    rank_swap(column, 5.0, &mut SplitMix64(1)).expect("p is valid")
}

fn median_seconds(run: impl Fn() -> Vec<f64>) -> f64 {
    let mut times: Vec<f64> = (0..5)
        .map(|_| {
            let started = Instant::now();
            std::hint::black_box(run());
            started.elapsed().as_secs_f64()
        })
        .collect();
    times.sort_by(f64::total_cmp);
    times[2]
}

fn bench(c: &mut Criterion) {
    let column = column();
    let mut group = c.benchmark_group("rank swap, 2M records, p = 5");
    group
        .sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(4));
    group.bench_function("floor: sort the values", |b| b.iter(|| floor(&column)));
    group.bench_function("rank_swap", |b| b.iter(|| swapped(&column)));
    group.finish();
    let (floor_s, swap_s) = (
        median_seconds(|| floor(&column)),
        median_seconds(|| swapped(&column)),
    );
    println!(
        "rank swap: {:.1} ms, sort floor {:.1} ms, ratio {:.2}",
        swap_s * 1e3,
        floor_s * 1e3,
        swap_s / floor_s
    );
}

criterion_group!(benches, bench);
criterion_main!(benches);
