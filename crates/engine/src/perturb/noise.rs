//! Noise addition (Brand 2002; sdcMicro's `addNoise`), seeded. The level a means the same for
//! every kind: the noise's standard deviation is a times the attribute's.
//! - **additive**: x′_j = x_j + ε, ε ~ N(0, (a·σ_j)²), σ_j the attribute's sample standard
//!   deviation, drawn independently per record and attribute;
//! - **correlated**: ε ~ N(0, a²·Σ) over the attributes together, Σ their sample covariance,
//!   so each attribute's noise has SD a·σ_j as above, the noisy data's covariance is
//!   (1 + a²)·Σ in expectation and the correlations are kept;
//! - **multiplicative** (positive quantities): x′ = x · exp(a·z − a²/2), z ~ N(0, 1): the
//!   factor is log-normal with mean 1 (E[x′] = x) and log-SD a, so a value keeps its sign, zero
//!   stays zero, and a tip or an hour count never turns negative.
//!
//! [`reflect_into`] keeps noisy values inside bounds (the policy's `bounds`) by reflecting
//! them at the edges: the same draws, a density that stays continuous at the bounds (clamping
//! would pile the overflow onto the edge values, re-drawing would need more draws).
//!
//! Normal draws come from [`SplitMix64`] by the Box–Muller transform, so a seed means the same
//! noise on every machine.

use crate::rng::SplitMix64;

use super::points::mean_sd;

/// A standard normal draw (Box–Muller; the cosine branch, one draw per two uniforms, so that
/// the stream is simple to reproduce).
pub fn standard_normal(rng: &mut SplitMix64) -> f64 {
    // (0, 1]: ln never sees 0
    let u = 1.0 - rng.unit();
    let v = rng.unit();
    (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
}

/// `column` with additive noise of standard deviation `level` · σ (the column's sample SD).
pub fn additive(column: &[f64], level: f64, rng: &mut SplitMix64) -> Vec<f64> {
    let (_, sd) = mean_sd(column);
    let scale = level * sd;
    column
        .iter()
        .map(|x| x + scale * standard_normal(rng))
        .collect()
}

/// `column` with multiplicative log-normal noise of log-SD `level` and mean 1 (see the
/// module documentation).
pub fn multiplicative(column: &[f64], level: f64, rng: &mut SplitMix64) -> Vec<f64> {
    let shift = level * level / 2.0;
    column
        .iter()
        .map(|x| x * (level * standard_normal(rng) - shift).exp())
        .collect()
}

/// `x` reflected into `[low, high]` (folded at the edges as often as needed); `low` for an
/// empty range or a NaN.
pub fn reflect_into(x: f64, low: f64, high: f64) -> f64 {
    let width = high - low;
    // a NaN width fails `>` as a NaN x does: both give `low`
    if width.is_nan() || width <= 0.0 || x.is_nan() {
        return low;
    }
    let folded = (x - low).rem_euclid(2.0 * width);
    low + if folded > width {
        2.0 * width - folded
    } else {
        folded
    }
}

/// The sample covariance matrix of `columns` (d × d, row-major).
pub fn covariance(columns: &[&[f64]]) -> Vec<f64> {
    let d = columns.len();
    let n = columns.first().map_or(0, |c| c.len());
    let means: Vec<f64> = columns.iter().map(|c| mean_sd(c).0).collect();
    let mut sigma = vec![0.0; d * d];
    if n < 2 {
        return sigma;
    }
    for a in 0..d {
        for b in a..d {
            let s: f64 = (0..n)
                .map(|i| (columns[a][i] - means[a]) * (columns[b][i] - means[b]))
                .sum::<f64>()
                / (n - 1) as f64;
            sigma[a * d + b] = s;
            sigma[b * d + a] = s;
        }
    }
    sigma
}

/// The lower Cholesky factor L (L·Lᵀ = m) of a positive semi-definite `m` (d × d); a
/// direction of zero variance gets a zero column.
pub fn cholesky(m: &[f64], d: usize) -> Vec<f64> {
    let mut l = vec![0.0; d * d];
    for i in 0..d {
        for j in 0..=i {
            let s: f64 = (0..j).map(|p| l[i * d + p] * l[j * d + p]).sum();
            if i == j {
                let v = m[i * d + i] - s;
                l[i * d + i] = if v > 0.0 { v.sqrt() } else { 0.0 };
            } else if l[j * d + j] > 0.0 {
                l[i * d + j] = (m[i * d + j] - s) / l[j * d + j];
            }
        }
    }
    l
}

/// `columns` with correlated noise ε ~ N(0, `level`² · Σ).
pub fn correlated(columns: &[&[f64]], level: f64, rng: &mut SplitMix64) -> Vec<Vec<f64>> {
    let d = columns.len();
    let n = columns.first().map_or(0, |c| c.len());
    let scaled: Vec<f64> = covariance(columns)
        .iter()
        .map(|s| s * level * level)
        .collect();
    let l = cholesky(&scaled, d);
    let mut out: Vec<Vec<f64>> = columns.iter().map(|c| c.to_vec()).collect();
    let mut z = vec![0.0; d];
    for i in 0..n {
        z.iter_mut().for_each(|z| *z = standard_normal(rng));
        for (a, column) in out.iter_mut().enumerate() {
            let e: f64 = (0..=a).map(|b| l[a * d + b] * z[b]).sum();
            column[i] += e;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 10^6 draws of ε for a = 0.5 on a column with σ = 2 (values ±2·√(n/(n−1))… made exact
    /// below): the target is N(0, 1). The sample mean has standard error 1/√n = 0.001; the
    /// sample variance 1·√(2/(n−1)) ≈ 0.0014. Both within 5 standard errors.
    #[test]
    fn additive_noise_has_the_target_mean_and_variance() {
        let n = 1_000_000;
        // alternating 0 and c: mean c/2, sample variance c²/4 · n/(n−1); choose c so σ = 2
        let c = 4.0 * ((n - 1) as f64 / n as f64).sqrt();
        let column: Vec<f64> = (0..n).map(|i| if i % 2 == 0 { 0.0 } else { c }).collect();
        let (_, sd) = mean_sd(&column);
        assert!((sd - 2.0).abs() < 1e-9);
        let noisy = additive(&column, 0.5, &mut SplitMix64(42));
        let eps: Vec<f64> = noisy.iter().zip(&column).map(|(y, x)| y - x).collect();
        let (mean, sd) = mean_sd(&eps);
        let n = n as f64;
        assert!(mean.abs() < 5.0 / n.sqrt(), "mean {mean}");
        assert!(
            (sd * sd - 1.0).abs() < 5.0 * (2.0 / (n - 1.0)).sqrt(),
            "var {}",
            sd * sd
        );
    }

    /// `n` draws of a bivariate normal with Σ = [[1, 0.8], [0.8, 1]] (its x column), their
    /// sample covariance, and the sample covariance of correlated noise of `level` added to
    /// them (the generator seeded by `seed`, the noise by `seed + 1`).
    fn correlated_noise_of(n: usize, level: f64, seed: u64) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
        let mut rng = SplitMix64(seed);
        let (mut x, mut y) = (Vec::with_capacity(n), Vec::with_capacity(n));
        for _ in 0..n {
            let (a, b) = (standard_normal(&mut rng), standard_normal(&mut rng));
            x.push(a);
            y.push(0.8 * a + 0.6 * b);
        }
        let sigma = covariance(&[&x, &y]);
        let noisy = correlated(&[&x, &y], level, &mut SplitMix64(seed + 1));
        let ex: Vec<f64> = noisy[0].iter().zip(&x).map(|(p, q)| p - q).collect();
        let ey: Vec<f64> = noisy[1].iter().zip(&y).map(|(p, q)| p - q).collect();
        (x, sigma, covariance(&[&ex, &ey]))
    }

    /// Correlated noise on two attributes with Σ = [[1, 0.8], [0.8, 1]] (a bivariate normal
    /// made by the test), a = 1: ε's covariance must be Σ within 5 standard errors (the
    /// standard error of a sample covariance of unit-variance normals is ≤ √(2/n)).
    #[test]
    fn correlated_noise_keeps_the_covariance() {
        let n = 1_000_000;
        let (_, sigma, noise) = correlated_noise_of(n, 1.0, 9);
        let tolerance = 5.0 * (2.0 / n as f64).sqrt();
        for (got, want) in noise.iter().zip(&sigma) {
            assert!((got - want).abs() < tolerance, "{noise:?} vs {sigma:?}");
        }
    }

    /// The level means the same for both kinds (issue 52): at a = 0.5 each attribute's
    /// correlated noise has variance 0.25·σ² (Σ here has unit variances: 0.25), as additive
    /// noise of the same level has, and covariance 0.25 · 0.8 = 0.2; within 5 standard errors.
    #[test]
    fn correlated_noise_of_a_level_has_the_additive_noise_variance() {
        let n = 1_000_000;
        let (x, sigma, noise) = correlated_noise_of(n, 0.5, 19);
        let tolerance = 5.0 * (2.0 / n as f64).sqrt();
        for (got, want) in noise.iter().zip(&sigma) {
            assert!(
                (got - 0.25 * want).abs() < tolerance,
                "{noise:?} vs {sigma:?}"
            );
        }
        let additive_variance = mean_sd(
            &additive(&x, 0.5, &mut SplitMix64(21))
                .iter()
                .zip(&x)
                .map(|(p, q)| p - q)
                .collect::<Vec<_>>(),
        )
        .1
        .powi(2);
        assert!((additive_variance - noise[0]).abs() < 2.0 * tolerance);
    }

    /// Multiplicative noise: a factor of mean 1, so a column of 10s keeps mean 10 (standard
    /// error of the mean 10·√(e^{a²} − 1)/√n ≈ 0.0032 at a = 0.1, n = 10⁶); every positive
    /// value stays positive, zero stays zero, a negative value stays negative.
    #[test]
    fn multiplicative_noise_keeps_the_mean_and_the_sign() {
        let n = 1_000_000;
        let noisy = multiplicative(&vec![10.0; n], 0.1, &mut SplitMix64(5));
        let (mean, _) = mean_sd(&noisy);
        assert!((mean - 10.0).abs() < 5.0 * 0.0032, "{mean}");
        assert!(noisy.iter().all(|&v| v > 0.0));
        let signs = multiplicative(&[0.0, -3.0, 2.0], 2.0, &mut SplitMix64(6));
        assert_eq!(signs[0], 0.0);
        assert!(signs[1] < 0.0 && signs[2] > 0.0);
    }

    /// Reflection by hand into [0, 10]: 12 → 8, −3 → 3, 25 → 5 (25 − 20 = 5), −12 → 8
    /// (12 beyond 0 is 8 after folding at 10), inside values unchanged, the edges kept.
    #[test]
    fn reflection_by_hand() {
        for (x, want) in [
            (12.0, 8.0),
            (-3.0, 3.0),
            (25.0, 5.0),
            (-12.0, 8.0),
            (4.5, 4.5),
            (0.0, 0.0),
            (10.0, 10.0),
        ] {
            assert_eq!(reflect_into(x, 0.0, 10.0), want, "{x}");
        }
        assert_eq!(reflect_into(7.0, 3.0, 3.0), 3.0);
    }

    #[test]
    fn cholesky_of_a_worked_matrix() {
        // [[4, 2], [2, 5]] = L·Lᵀ with L = [[2, 0], [1, 2]]
        assert_eq!(cholesky(&[4.0, 2.0, 2.0, 5.0], 2), vec![2.0, 0.0, 1.0, 2.0]);
    }
}
