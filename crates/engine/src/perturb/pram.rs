//! PRAM, the post-randomization method (Gouweleeuw, Kooiman, Willenborg & de Wolf 1998): each
//! record's category i of a categorical attribute is replaced by category j with probability
//! P_ij, drawn independently per record. A transition the matrix gives probability 0 never
//! happens (sdcMicro's `pram` once performed such transitions).
//!
//! - **The matrix**: given in full, or built with a retention probability α: P_ii = α and
//!   P_ij = (1 − α)/(m − 1) for the m − 1 other categories.
//! - **Invariant PRAM**: R = P·Q with Q_ij = P_ji·π_j / Σ_l P_li·π_l (π the input's
//!   frequencies) leaves the expected frequencies unchanged: π·R = π.
//! - **Bias-corrected estimates**: the published frequencies f′ have E[f′] = Pᵀ·f, so
//!   f̂ = (Pᵀ)⁻¹·f′ estimates the original frequencies ([`PramMatrix::estimate`]).

use crate::rng::SplitMix64;

/// A transition matrix over m categories (row-major, rows sum to 1).
#[derive(Debug, Clone, PartialEq)]
pub struct PramMatrix {
    m: usize,
    p: Vec<f64>,
}

/// Rows must sum to 1 within this.
const TOLERANCE: f64 = 1e-9;

impl PramMatrix {
    /// A matrix from its rows; errors name the row (1-based) that is not a distribution.
    pub fn new(rows: Vec<Vec<f64>>) -> std::result::Result<Self, String> {
        let m = rows.len();
        let mut p = Vec::with_capacity(m * m);
        for (i, row) in rows.iter().enumerate() {
            if row.len() != m {
                return Err(format!(
                    "row {} of the PRAM matrix has {} entries, not one per category ({m})",
                    i + 1,
                    row.len()
                ));
            }
            if row.iter().any(|x| !(0.0..=1.0).contains(x)) {
                return Err(format!(
                    "row {} of the PRAM matrix has an entry outside [0, 1]",
                    i + 1
                ));
            }
            let sum: f64 = row.iter().sum();
            if (sum - 1.0).abs() > TOLERANCE {
                return Err(format!(
                    "row {} of the PRAM matrix sums to {sum}, not 1",
                    i + 1
                ));
            }
            p.extend_from_slice(row);
        }
        Ok(Self { m, p })
    }

    /// P_ii = α, P_ij = (1 − α)/(m − 1).
    pub fn with_retention(m: usize, alpha: f64) -> std::result::Result<Self, String> {
        if !(0.0..=1.0).contains(&alpha) {
            return Err(format!(
                "PRAM's retention is a probability in [0, 1], got {alpha}"
            ));
        }
        let off = if m > 1 {
            (1.0 - alpha) / (m - 1) as f64
        } else {
            0.0
        };
        let rows = (0..m)
            .map(|i| {
                (0..m)
                    .map(|j| {
                        if i == j {
                            if m > 1 { alpha } else { 1.0 }
                        } else {
                            off
                        }
                    })
                    .collect()
            })
            .collect();
        Self::new(rows)
    }

    /// Categories.
    pub fn categories(&self) -> usize {
        self.m
    }

    /// P_ij.
    pub fn get(&self, i: usize, j: usize) -> f64 {
        self.p[i * self.m + j]
    }

    /// The rows.
    pub fn rows(&self) -> Vec<Vec<f64>> {
        self.p.chunks(self.m.max(1)).map(<[f64]>::to_vec).collect()
    }

    /// The invariant matrix R = P·Q for the frequencies `counts` (see the module docs).
    pub fn invariant(&self, counts: &[u64]) -> Self {
        let m = self.m;
        let total: f64 = counts.iter().sum::<u64>() as f64;
        let pi: Vec<f64> = counts.iter().map(|&c| c as f64 / total.max(1.0)).collect();
        // Q_ij = P_ji π_j / Σ_l P_li π_l
        let mut q = vec![0.0; m * m];
        for i in 0..m {
            let norm: f64 = (0..m).map(|l| self.get(l, i) * pi[l]).sum();
            for j in 0..m {
                q[i * m + j] = if norm > 0.0 {
                    self.get(j, i) * pi[j] / norm
                } else if i == j {
                    1.0
                } else {
                    0.0
                };
            }
        }
        let mut r = vec![0.0; m * m];
        for i in 0..m {
            for j in 0..m {
                r[i * m + j] = (0..m).map(|l| self.get(i, l) * q[l * m + j]).sum();
            }
        }
        // rounding: renormalize rows, and keep exact zeros zero
        for row in r.chunks_mut(m) {
            let sum: f64 = row.iter().sum();
            row.iter_mut().for_each(|x| *x /= sum);
        }
        Self { m, p: r }
    }

    /// Each code of `codes` (categories 0..m) replaced by a draw from its row.
    pub fn apply(&self, codes: &[u32], rng: &mut SplitMix64) -> Vec<u32> {
        let m = self.m;
        // cumulative rows, and per row the last category of positive probability
        let mut cumulative = vec![0.0; m * m];
        let mut last = vec![0u32; m];
        for i in 0..m {
            let mut sum = 0.0;
            for j in 0..m {
                sum += self.get(i, j);
                cumulative[i * m + j] = sum;
                if self.get(i, j) > 0.0 {
                    last[i] = j as u32;
                }
            }
        }
        codes
            .iter()
            .map(|&code| {
                let i = code as usize;
                let u = rng.unit();
                let row = &cumulative[i * m..(i + 1) * m];
                // the first j whose cumulative exceeds u: a zero entry never raises the
                // cumulative, so it is never the first to exceed u
                row.iter()
                    .position(|&c| u < c)
                    .map_or(last[i], |j| j as u32)
            })
            .collect()
    }

    /// f̂ = (Pᵀ)⁻¹·f′, the original frequencies estimated from the published `counts`;
    /// `None` when P is singular.
    pub fn estimate(&self, counts: &[u64]) -> Option<Vec<f64>> {
        let m = self.m;
        // augmented [Pᵀ | f′], Gaussian elimination with partial pivoting
        let mut a = vec![0.0; m * (m + 1)];
        for i in 0..m {
            for j in 0..m {
                a[i * (m + 1) + j] = self.get(j, i);
            }
            a[i * (m + 1) + m] = counts[i] as f64;
        }
        for col in 0..m {
            let pivot = (col..m).max_by(|&x, &y| {
                a[x * (m + 1) + col]
                    .abs()
                    .total_cmp(&a[y * (m + 1) + col].abs())
            })?;
            if a[pivot * (m + 1) + col].abs() < 1e-12 {
                return None;
            }
            for j in 0..=m {
                a.swap(col * (m + 1) + j, pivot * (m + 1) + j);
            }
            for row in 0..m {
                if row != col {
                    let factor = a[row * (m + 1) + col] / a[col * (m + 1) + col];
                    for j in col..=m {
                        a[row * (m + 1) + j] -= factor * a[col * (m + 1) + j];
                    }
                }
            }
        }
        Some(
            (0..m)
                .map(|i| a[i * (m + 1) + m] / a[i * (m + 1) + i])
                .collect(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 300,000 records of category 0 through the matrix [[0.7, 0.3, 0], [0.2, 0.5, 0.3],
    /// [0, 0, 1]]: the share going to each category is within 5 standard errors
    /// (√(p(1−p)/n)) of its row, and 0 → 2 (probability 0) never happens; likewise from 1
    /// and 2.
    #[test]
    fn transitions_follow_the_matrix_and_zero_probabilities_never_happen() {
        let matrix = PramMatrix::new(vec![
            vec![0.7, 0.3, 0.0],
            vec![0.2, 0.5, 0.3],
            vec![0.0, 0.0, 1.0],
        ])
        .unwrap();
        let n = 300_000;
        for from in 0..3u32 {
            let out = matrix.apply(&vec![from; n], &mut SplitMix64(from as u64));
            for to in 0..3 {
                let p = matrix.get(from as usize, to);
                let share = out.iter().filter(|&&c| c == to as u32).count() as f64 / n as f64;
                if p == 0.0 {
                    assert_eq!(share, 0.0, "{from} → {to} has probability 0");
                } else {
                    let se = (p * (1.0 - p) / n as f64).sqrt().max(1e-12);
                    assert!(
                        (share - p).abs() <= 5.0 * se,
                        "{from} → {to}: {share} vs {p}"
                    );
                }
            }
        }
    }

    /// Invariant PRAM keeps the frequencies in expectation: π·R = π (checked exactly on the
    /// matrix), for P with retention 0.8 over three categories of frequencies 0.5, 0.3, 0.2.
    #[test]
    fn the_invariant_matrix_keeps_the_frequencies() {
        let p = PramMatrix::with_retention(3, 0.8).unwrap();
        let counts = [50, 30, 20];
        let r = p.invariant(&counts);
        for j in 0..3 {
            let expected: f64 = (0..3).map(|i| counts[i] as f64 / 100.0 * r.get(i, j)).sum();
            assert!((expected - counts[j] as f64 / 100.0).abs() < 1e-12);
        }
    }

    /// The estimate inverts the expectation: with f = (60, 40) and P = [[0.9, 0.1], [0.2,
    /// 0.8]], E[f′] = Pᵀ·f = (0.9·60 + 0.2·40, 0.1·60 + 0.8·40) = (62, 38); estimating from
    /// (62, 38) gives back (60, 40).
    #[test]
    fn the_estimate_inverts_the_expected_published_frequencies() {
        let p = PramMatrix::new(vec![vec![0.9, 0.1], vec![0.2, 0.8]]).unwrap();
        let f = p.estimate(&[62, 38]).unwrap();
        assert!(
            (f[0] - 60.0).abs() < 1e-9 && (f[1] - 40.0).abs() < 1e-9,
            "{f:?}"
        );
    }

    #[test]
    fn a_row_that_does_not_sum_to_one_is_refused_by_its_number() {
        let error = PramMatrix::new(vec![vec![0.5, 0.5], vec![0.5, 0.6]]).unwrap_err();
        assert!(
            error.contains("row 2 of the PRAM matrix sums to"),
            "{error}"
        );
    }
}
