//! Function 1 of seed 002 (sensitive-attribute weights) and the category table.
//!
//! The seed's weight of attribute s is "the number of attributes dependent on s"; its formula
//! was lost. Here attribute j **depends on** attribute i when knowing i removes at least a
//! share τ of j's uncertainty: the uncertainty coefficient (Theil's U)
//!
//! ```text
//! U(j | i) = (H(j) − H(j | i)) / H(j)          (0 when H(j) = 0)
//! ```
//!
//! computed from the joint counts of the two attributes, is at least τ
//! ([`CkOptions::dependency_threshold`], 0.5 by default). A functional dependency (each
//! physician has one specialty) has U = 1. The weight of i counts the attributes that depend
//! on it.
//!
//! **Maximum-weighted (linking) attribute.** The highest weight wins. A tie goes to the
//! external factor χ (the policy names the attribute χ is added to, as in the seed), then to
//! the larger total dependency Σ_j U(j | i), then to the earlier attribute in the policy.
//!
//! **Category table** (the seed's Table 8, lost in extraction): the linking attribute is
//! *top secret*; attributes with the next highest weight above zero are *secret*, lower
//! positive weights *less secret*; attributes nothing depends on (weight 0) are *non-secret*,
//! the seed's minimum-weighted attributes that relaxed refinement may leave linkable.
//!
//! **Determined attributes.** The attributes whose value the linking value fixes exactly in
//! the data (U = 1: one value per linking value, NULL counted as a value) are those the
//! fingerprint-correlation attack can link across buckets.

use datafusion::error::Result;
use hashbrown::HashMap;
use serde::Serialize;

use super::{CkOptions, MsaTable};

/// A sensitivity level of the category table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Category {
    /// The linking attribute.
    TopSecret,
    /// The next highest positive weight.
    Secret,
    /// Lower positive weights.
    LessSecret,
    /// Weight 0: no other attribute depends on it.
    NonSecret,
}

/// The dependency analysis of the sensitive attributes.
#[derive(Debug, Clone, Serialize)]
pub struct Dependencies {
    /// Attribute names, in the policy's order.
    pub attributes: Vec<String>,
    /// `uncertainty[i][j]` = U(j | i), 0 on the diagonal.
    pub uncertainty: Vec<Vec<f64>>,
    /// Per attribute, how many attributes depend on it.
    pub weights: Vec<usize>,
    /// The maximum-weighted attribute.
    pub linking: usize,
    /// Why it won: `weight`, `external factor`, `total dependency` or `policy order`.
    pub linking_reason: &'static str,
    /// Per attribute, its sensitivity level.
    pub categories: Vec<Category>,
    /// Per attribute, whether the linking value determines it exactly in the data.
    pub determined: Vec<bool>,
    /// `determines[i][j]`: attribute i determines attribute j exactly in the data (false on
    /// the diagonal) — the links an adversary knowing i could use.
    pub determines: Vec<Vec<bool>>,
}

impl Dependencies {
    /// Whether relaxed refinement may leave attribute `a` linkable.
    pub fn is_non_secret(&self, a: usize) -> bool {
        self.categories[a] == Category::NonSecret
    }
}

/// Measures the dependencies of `table`'s sensitive attributes and picks the linking one.
pub fn analyse(table: &MsaTable, options: &CkOptions) -> Result<Dependencies> {
    let attributes: Vec<String> = table.sensitive.iter().map(|c| c.name.clone()).collect();
    if let Some(name) = &options.external_factor
        && !attributes.contains(name)
    {
        return Err(datafusion::error::DataFusionError::Plan(format!(
            "(c,k)-anonymization: external_factor names '{name}', which is not a sensitive attribute"
        )));
    }
    let m = attributes.len();
    let mut uncertainty = vec![vec![0.0; m]; m];
    let mut functional = vec![vec![false; m]; m];
    let entropies: Vec<f64> = table
        .sensitive
        .iter()
        .map(|c| entropy(&counts(&c.codes, c.cardinality())))
        .collect();
    // one joint count per pair serves both directions
    for i in 0..m {
        for j in i + 1..m {
            let (h_joint, i_determines_j, j_determines_i) = joint_entropy(
                &table.sensitive[i].codes,
                table.sensitive[i].cardinality(),
                &table.sensitive[j].codes,
                table.sensitive[j].cardinality(),
            );
            for (given, of, determines) in [(i, j, i_determines_j), (j, i, j_determines_i)] {
                // H(of | given) = H(given, of) − H(given); exactly 0 when given determines of
                // (the difference of the two sums may be a rounding error away from it)
                let conditional = if determines {
                    0.0
                } else {
                    (h_joint - entropies[given]).max(0.0)
                };
                functional[given][of] = determines;
                uncertainty[given][of] = if entropies[of] > 0.0 {
                    ((entropies[of] - conditional) / entropies[of]).clamp(0.0, 1.0)
                } else {
                    0.0
                };
            }
        }
    }
    let weights: Vec<usize> = (0..m)
        .map(|i| {
            (0..m)
                .filter(|&j| j != i && uncertainty[i][j] >= options.dependency_threshold)
                .count()
        })
        .collect();
    let external = options
        .external_factor
        .as_ref()
        .and_then(|name| attributes.iter().position(|a| a == name));
    let total = |i: usize| uncertainty[i].iter().sum::<f64>();
    let top = weights.iter().copied().max().unwrap_or(0);
    let tied: Vec<usize> = (0..m).filter(|&i| weights[i] == top).collect();
    let (linking, linking_reason) = if tied.len() == 1 {
        (tied[0], "weight")
    } else if let Some(x) = external.filter(|x| tied.contains(x)) {
        (x, "external factor")
    } else {
        let best = tied
            .iter()
            .copied()
            .max_by(|&a, &b| total(a).total_cmp(&total(b)).then(b.cmp(&a)))
            .unwrap_or(0);
        let unique = tied.iter().filter(|&&i| total(i) == total(best)).count() == 1;
        (
            best,
            if unique {
                "total dependency"
            } else {
                "policy order"
            },
        )
    };
    let secret_weight = (0..m)
        .filter(|&i| i != linking && weights[i] > 0)
        .map(|i| weights[i])
        .max();
    let categories = (0..m)
        .map(|i| {
            if i == linking {
                Category::TopSecret
            } else if weights[i] == 0 {
                Category::NonSecret
            } else if Some(weights[i]) == secret_weight {
                Category::Secret
            } else {
                Category::LessSecret
            }
        })
        .collect();
    let determined = (0..m)
        .map(|j| j != linking && functional[linking][j])
        .collect();
    Ok(Dependencies {
        attributes,
        uncertainty,
        weights,
        linking,
        linking_reason,
        categories,
        determined,
        determines: functional,
    })
}

fn counts(codes: &[u32], cardinality: usize) -> Vec<u64> {
    let mut counts = vec![0u64; cardinality];
    for &c in codes {
        counts[c as usize] += 1;
    }
    counts
}

/// Shannon entropy (nats) of a distribution given by counts.
fn entropy(counts: &[u64]) -> f64 {
    let n: u64 = counts.iter().sum();
    if n == 0 {
        return 0.0;
    }
    let n = n as f64;
    counts
        .iter()
        .filter(|&&c| c > 0)
        .map(|&c| {
            let p = c as f64 / n;
            -p * p.ln()
        })
        .sum()
}

/// H(a, b) from the joint counts, whether a determines b (one b value per a value) and
/// whether b determines a. A dense table when the pair of domains is small, a hash map
/// otherwise.
fn joint_entropy(
    a: &[u32],
    a_cardinality: usize,
    b: &[u32],
    b_cardinality: usize,
) -> (f64, bool, bool) {
    let n = a.len() as f64;
    let entropy_and_pairs = |joint: &mut dyn Iterator<Item = (u32, u32, u64)>| {
        let mut h = 0.0;
        let mut per_a = vec![0u32; a_cardinality];
        let mut per_b = vec![0u32; b_cardinality];
        for (x, y, c) in joint {
            let p = c as f64 / n;
            h -= p * p.ln();
            per_a[x as usize] += 1;
            per_b[y as usize] += 1;
        }
        (
            h,
            per_a.iter().all(|&v| v <= 1),
            per_b.iter().all(|&v| v <= 1),
        )
    };
    if a_cardinality.saturating_mul(b_cardinality) <= 1 << 24 {
        let mut joint = vec![0u64; a_cardinality * b_cardinality];
        for (&x, &y) in a.iter().zip(b) {
            joint[x as usize * b_cardinality + y as usize] += 1;
        }
        entropy_and_pairs(&mut joint.iter().enumerate().filter(|(_, c)| **c > 0).map(
            |(cell, &c)| {
                (
                    (cell / b_cardinality) as u32,
                    (cell % b_cardinality) as u32,
                    c,
                )
            },
        ))
    } else {
        let mut joint: HashMap<u64, u64> = HashMap::new();
        for (&x, &y) in a.iter().zip(b) {
            *joint.entry(((x as u64) << 32) | y as u64).or_insert(0) += 1;
        }
        entropy_and_pairs(
            &mut joint
                .iter()
                .map(|(&key, &c)| ((key >> 32) as u32, key as u32, c)),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::SplitMix64;
    use std::collections::{BTreeMap, BTreeSet};

    #[test]
    fn joint_entropy_matches_a_brute_force_count_in_both_layouts() {
        let mut rng = SplitMix64(5);
        // dense (20 × 30 cells) and hashed (5,000 × 4,000 > 2^24 cells); b a function of a in
        // some trials, so both answers of "determines" are exercised
        for (a_card, b_card) in [(20u64, 30u64), (5_000, 4_000)] {
            for trial in 0..6 {
                let rows = 3_000;
                let a: Vec<u32> = (0..rows).map(|_| rng.below(a_card) as u32).collect();
                let b: Vec<u32> = if trial % 2 == 0 {
                    a.iter().map(|&x| (x as u64 * 7 % b_card) as u32).collect()
                } else {
                    (0..rows).map(|_| rng.below(b_card) as u32).collect()
                };
                let mut pairs: BTreeMap<(u32, u32), u64> = BTreeMap::new();
                for (&x, &y) in a.iter().zip(&b) {
                    *pairs.entry((x, y)).or_insert(0) += 1;
                }
                let h: f64 = pairs
                    .values()
                    .map(|&c| {
                        let p = c as f64 / rows as f64;
                        -p * p.ln()
                    })
                    .sum();
                let determines =
                    |left: &dyn Fn(&(u32, u32)) -> u32, right: &dyn Fn(&(u32, u32)) -> u32| {
                        let mut images: BTreeMap<u32, BTreeSet<u32>> = BTreeMap::new();
                        for pair in pairs.keys() {
                            images.entry(left(pair)).or_default().insert(right(pair));
                        }
                        images.values().all(|s| s.len() == 1)
                    };
                let a_b = determines(&|p| p.0, &|p| p.1);
                let b_a = determines(&|p| p.1, &|p| p.0);
                let (got_h, got_a_b, got_b_a) =
                    joint_entropy(&a, a_card as usize, &b, b_card as usize);
                assert!((got_h - h).abs() < 1e-9, "{got_h} against {h}");
                assert_eq!((got_a_b, got_b_a), (a_b, b_a), "{a_card} × {b_card}");
                assert_eq!(a_b, trial % 2 == 0);
            }
        }
    }
}
