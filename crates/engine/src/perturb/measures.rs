//! Utility and disclosure-risk figures of a perturbed release, each record against its own
//! original (definitions in docs/definitions.md, "Perturbation"):
//! - **IL** = 100 · SSE / SST on the attributes standardized by the original's mean and
//!   sample SD: SSE = Σ_i |x_i − x′_i|², SST = Σ_i |x_i − x̄|² (for microaggregation by the
//!   mean, SSE is the within-group sum of squares of the CASC literature);
//! - **IL1s** (sdcMicro's `dUtility`): (1 / (n·p)) Σ_j Σ_i |x_ij − x′_ij| / (√2 · S_j);
//! - the largest change of any correlation coefficient, |r_ab − r′_ab|;
//! - each attribute's mean and variance before and after;
//! - **SDID**, interval disclosure: the share of records whose original values all lie
//!   within ±p % of the published ones, |x_ij − x′_ij| ≤ p/100 · |x′_ij| for every j.

use serde::Serialize;

use super::points::mean_sd;

/// SDID's interval when none is given: ± 10 %.
pub const DEFAULT_DISCLOSURE_PERCENT: f64 = 10.0;

/// The utility figures of one release.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Utility {
    /// 100 · SSE / SST (standardized).
    pub il: f64,
    /// sdcMicro's IL1s.
    pub il1s: f64,
    /// The largest change of a pairwise correlation (0 with one attribute).
    pub max_correlation_change: f64,
    /// Per attribute, in order.
    pub moments: Vec<Moments>,
}

/// An attribute's mean and sample variance, original and published.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Moments {
    pub attribute: String,
    pub mean: f64,
    pub published_mean: f64,
    pub variance: f64,
    pub published_variance: f64,
}

/// The figures of `original` against `published` (one column per attribute, records aligned).
pub fn utility(names: &[String], original: &[&[f64]], published: &[&[f64]]) -> Utility {
    let n = original.first().map_or(0, |c| c.len());
    let p = original.len();
    let mut sse = 0.0;
    let mut sst = 0.0;
    let mut il1 = 0.0;
    // each column's mean and SD once: the correlations of every pair reuse them
    let original_moments: Vec<(f64, f64)> = original.iter().map(|c| mean_sd(c)).collect();
    let published_moments: Vec<(f64, f64)> = published.iter().map(|c| mean_sd(c)).collect();
    let mut moments = Vec::with_capacity(p);
    for j in 0..p {
        let (mean, sd) = original_moments[j];
        let (published_mean, published_sd) = published_moments[j];
        let scale = if sd > 0.0 { 1.0 / sd } else { 0.0 };
        for i in 0..n {
            let (x, y) = (original[j][i], published[j][i]);
            sse += ((x - y) * scale).powi(2);
            sst += ((x - mean) * scale).powi(2);
            il1 += (x - y).abs() * scale / std::f64::consts::SQRT_2;
        }
        moments.push(Moments {
            attribute: names[j].clone(),
            mean,
            published_mean,
            variance: sd * sd,
            published_variance: published_sd * published_sd,
        });
    }
    let mut max_correlation_change: f64 = 0.0;
    for a in 0..p {
        for b in a + 1..p {
            let before = correlation_given(
                (original[a], original_moments[a]),
                (original[b], original_moments[b]),
            );
            let after = correlation_given(
                (published[a], published_moments[a]),
                (published[b], published_moments[b]),
            );
            max_correlation_change = max_correlation_change.max((before - after).abs());
        }
    }
    Utility {
        il: if sst > 0.0 { 100.0 * sse / sst } else { 0.0 },
        il1s: if n * p > 0 { il1 / (n * p) as f64 } else { 0.0 },
        max_correlation_change,
        moments,
    }
}

/// Pearson's correlation (0 when either side is constant).
pub fn correlation(x: &[f64], y: &[f64]) -> f64 {
    correlation_given((x, mean_sd(x)), (y, mean_sd(y)))
}

/// [`correlation`] of two columns given with their mean and sample SD.
fn correlation_given(
    (x, (mx, sx)): (&[f64], (f64, f64)),
    (y, (my, sy)): (&[f64], (f64, f64)),
) -> f64 {
    if sx == 0.0 || sy == 0.0 || x.len() < 2 {
        return 0.0;
    }
    let c: f64 = x.iter().zip(y).map(|(a, b)| (a - mx) * (b - my)).sum();
    c / ((x.len() - 1) as f64 * sx * sy)
}

/// SDID: the share of records whose every original value lies within ±`percent` % of its
/// published value.
pub fn interval_disclosure(original: &[&[f64]], published: &[&[f64]], percent: f64) -> f64 {
    let n = original.first().map_or(0, |c| c.len());
    if n == 0 {
        return 0.0;
    }
    let share = percent / 100.0;
    let disclosed = (0..n)
        .filter(|&i| {
            original
                .iter()
                .zip(published)
                .all(|(x, y)| (x[i] - y[i]).abs() <= share * y[i].abs())
        })
        .count();
    disclosed as f64 / n as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    /// x = 1, 2, 3, 4 (mean 2.5, sample variance 5/3); published 1.5, 1.5, 3.5, 3.5 (pairs
    /// averaged). SSE = 4 · 0.25 = 1 (raw), SST = 2.25 + 0.25 + 0.25 + 2.25 = 5 (raw): the
    /// scale cancels, IL = 100 · 1/5 = 20. IL1s = (4 · 0.5 / √(5/3)) / √2 / 4.
    #[test]
    fn information_loss_of_a_worked_pairing() {
        let x = [1.0, 2.0, 3.0, 4.0];
        let y = [1.5, 1.5, 3.5, 3.5];
        let u = utility(&["x".into()], &[&x], &[&y]);
        assert!((u.il - 20.0).abs() < 1e-9, "{}", u.il);
        let expected = 4.0 * 0.5 / (5.0f64 / 3.0).sqrt() / std::f64::consts::SQRT_2 / 4.0;
        assert!((u.il1s - expected).abs() < 1e-12);
        assert_eq!(u.moments[0].mean, 2.5);
        assert_eq!(u.moments[0].published_mean, 2.5);
    }

    /// Brute force on a small table: SDID counted record by record by the definition.
    #[test]
    fn interval_disclosure_equals_a_count_by_the_definition() {
        let x = [100.0, 50.0, 10.0, 0.0];
        let y = [105.0, 60.0, 10.5, 1.0];
        // within ±10 %: 100 vs 105 (5 ≤ 10.5) yes; 50 vs 60 (10 > 6) no; 10 vs 10.5 (0.5 ≤
        // 1.05) yes; 0 vs 1 (1 > 0.1) no → 2 of 4
        assert_eq!(interval_disclosure(&[&x], &[&y], 10.0), 0.5);
        // a second attribute that fails for the first record: 1 of 4
        let x2 = [1.0, 1.0, 1.0, 1.0];
        let y2 = [2.0, 1.0, 1.0, 1.0];
        assert_eq!(interval_disclosure(&[&x, &x2], &[&y, &y2], 10.0), 0.25);
    }

    #[test]
    fn correlation_change_of_a_broken_relation() {
        let x = [1.0, 2.0, 3.0, 4.0];
        let y = [2.0, 4.0, 6.0, 8.0];
        let y_swapped = [8.0, 6.0, 4.0, 2.0];
        let u = utility(&["x".into(), "y".into()], &[&x, &y], &[&x, &y_swapped]);
        // r goes from 1 to −1
        assert!((u.max_correlation_change - 2.0).abs() < 1e-12);
    }
}
