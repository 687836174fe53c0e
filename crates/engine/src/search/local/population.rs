//! How many population rows a local class covers (F_E, for k-map and δ-presence): the local
//! releases' cells tested on the population's encoded values
//! ([`super::super::population`]).

use super::{Cell, IntervalBounds, QiAxis};
use crate::search::frequency::FrequencySet;
use crate::search::population::PopulationCounts;

/// F_E of a local class with `cells` (one per QI; `axes` from [`super::axes`] of `freq`, the
/// frequency set `population` was encoded for), whose members are the leaf classes `members`
/// of `freq`: a set cell publishes its members' values, so a population value counts when it
/// is one of them.
pub fn covered(
    population: &PopulationCounts,
    cells: &[Cell],
    axes: &[QiAxis],
    freq: &FrequencySet,
    members: &[u32],
) -> u64 {
    let mut tests = Vec::with_capacity(cells.len());
    for (j, &cell) in cells.iter().enumerate() {
        match cell {
            Cell::Top => {}
            Cell::Node { level, code } => {
                tests.push((
                    j,
                    Test::Code(&population.level_codes[j][level as usize], code),
                ));
            }
            // the members' raw values, as level-0 codes (a set never holds NULL: NULL
            // among values publishes `*`)
            Cell::Set { .. } => {
                let qi = &freq.qis()[j];
                let leaf_codes = &freq.leaf_codes()[j];
                let mut set: Vec<u32> = members
                    .iter()
                    .map(|&m| qi.leaf_map(0)[leaf_codes[m as usize] as usize])
                    .collect();
                set.sort_unstable();
                set.dedup();
                tests.push((j, Test::Member(&population.level_codes[j][0], set)));
            }
            Cell::Interval { lo, hi } => match &population.numbers[j] {
                Some(numbers) => {
                    tests.push((j, Test::Range(numbers, axes[j].interval_bounds(lo, hi))));
                }
                // an interval on an unordered QI cannot happen; count nothing rather
                // than everything
                None => return 0,
            },
        }
    }
    let mut total = 0;
    'combinations: for (row, &count) in population.counts.iter().enumerate() {
        for (j, test) in &tests {
            let value = population.values[*j][row] as usize;
            let covers = match test {
                Test::Code(codes, code) => codes[value] == *code,
                Test::Member(codes, set) => set.binary_search(&codes[value]).is_ok(),
                Test::Range(numbers, bounds) => numbers[value].is_some_and(|v| bounds.holds(v)),
            };
            if !covers {
                continue 'combinations;
            }
        }
        total += count;
    }
    total
}

/// One cell's membership test on the population's values of its QI.
enum Test<'a> {
    /// the value's level code equals the node's
    Code(&'a [u32], u32),
    /// the value's level-0 code is one of the (sorted) codes, a set cell's values
    Member(&'a [u32], Vec<u32>),
    /// the value is non-NULL and within the interval (`[lo, hi]` or `(lo, hi)`)
    Range(&'a [Option<f64>], IntervalBounds),
}
