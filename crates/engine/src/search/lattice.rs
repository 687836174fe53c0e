//! The generalization lattice of full-domain recoding: a node chooses one level per
//! quasi-identifier, from the all-zero node (the raw table) to the all-top node (every QI `*`).
//!
//! Node `a` is a *generalization* of node `b` (`a ≥ b`) when every level of `a` is at least
//! the corresponding level of `b`; the *successors* of a node raise one QI by one level, its
//! *predecessors* lower one QI by one level. The *height* of a node is the sum of its levels.
//!
//! Nodes are numbered in mixed radix (QI 0 varies slowest): `index = Σ level_j · radix_j`,
//! which enumerates them in lexicographic order of their level vectors.

use datafusion::error::{DataFusionError, Result};

/// The largest lattice the search accepts: every node needs a few bytes of bookkeeping, and a
/// full-domain search over more nodes than this would not finish in reasonable time anyway.
pub const MAX_LATTICE_SIZE: usize = 20_000_000;

/// The lattice of level vectors for QIs with the given numbers of levels.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lattice {
    /// levels per QI (level 0 … heights[j] − 1)
    heights: Vec<usize>,
    /// index weight of each QI
    radix: Vec<usize>,
    size: usize,
}

impl Lattice {
    /// The lattice of QIs with `heights[j]` levels each (≥ 1). An error when there is no QI,
    /// a height is 0 or the lattice exceeds [`MAX_LATTICE_SIZE`] nodes.
    pub fn new(heights: &[usize]) -> Result<Self> {
        if heights.is_empty() {
            return Err(DataFusionError::Plan(
                "the search needs at least one quasi-identifier".to_string(),
            ));
        }
        if heights.contains(&0) {
            return Err(DataFusionError::Plan(
                "every quasi-identifier needs at least one level".to_string(),
            ));
        }
        let mut radix = vec![0; heights.len()];
        let mut size = 1usize;
        for j in (0..heights.len()).rev() {
            radix[j] = size;
            size = size
                .checked_mul(heights[j])
                .filter(|&s| s <= MAX_LATTICE_SIZE)
                .ok_or_else(|| {
                    DataFusionError::Plan(format!(
                        "the generalization lattice of {} quasi-identifiers has more than {} \
                         nodes; use fewer quasi-identifiers or shorter hierarchies",
                        heights.len(),
                        MAX_LATTICE_SIZE
                    ))
                })?;
        }
        Ok(Self {
            heights: heights.to_vec(),
            radix,
            size,
        })
    }

    /// Number of nodes: the product of the heights.
    pub fn size(&self) -> usize {
        self.size
    }

    /// Number of QIs.
    pub fn dimensions(&self) -> usize {
        self.heights.len()
    }

    /// Levels per QI.
    pub fn heights(&self) -> &[usize] {
        &self.heights
    }

    /// The top level of each QI.
    pub fn top_levels(&self) -> Vec<usize> {
        self.heights.iter().map(|h| h - 1).collect()
    }

    /// Height of the top node: Σ (heights − 1).
    pub fn max_height(&self) -> usize {
        self.heights.iter().map(|h| h - 1).sum()
    }

    /// Index of the all-zero node (0).
    pub fn bottom(&self) -> usize {
        0
    }

    /// Index of the all-top node.
    pub fn top(&self) -> usize {
        self.size - 1
    }

    /// The index of a level vector. Panics when `levels` does not fit the lattice (an internal
    /// error: callers validate levels with [`Lattice::check`]).
    pub fn index(&self, levels: &[usize]) -> usize {
        debug_assert_eq!(levels.len(), self.heights.len());
        levels.iter().zip(&self.radix).map(|(l, r)| l * r).sum()
    }

    /// An error unless `levels` has one valid level per QI.
    pub fn check(&self, levels: &[usize]) -> Result<()> {
        if levels.len() != self.heights.len() {
            return Err(DataFusionError::Plan(format!(
                "{} levels given for {} quasi-identifiers",
                levels.len(),
                self.heights.len()
            )));
        }
        for (j, (&l, &h)) in levels.iter().zip(&self.heights).enumerate() {
            if l >= h {
                return Err(DataFusionError::Plan(format!(
                    "level {l} of quasi-identifier {j} exceeds its top level {}",
                    h - 1
                )));
            }
        }
        Ok(())
    }

    /// The level vector of node `index`.
    pub fn levels(&self, index: usize) -> Vec<usize> {
        let mut out = vec![0; self.heights.len()];
        self.levels_into(index, &mut out);
        out
    }

    /// Writes the level vector of node `index` into `out` (no allocation).
    pub fn levels_into(&self, index: usize, out: &mut [usize]) {
        for (j, o) in out.iter_mut().enumerate() {
            *o = (index / self.radix[j]) % self.heights[j];
        }
    }

    /// Level of QI `j` in node `index`.
    pub fn level(&self, index: usize, j: usize) -> usize {
        (index / self.radix[j]) % self.heights[j]
    }

    /// Height (sum of levels) of node `index`.
    pub fn height(&self, index: usize) -> usize {
        (0..self.heights.len()).map(|j| self.level(index, j)).sum()
    }

    /// All node indices, in lexicographic order of their level vectors.
    pub fn nodes(&self) -> std::ops::Range<usize> {
        0..self.size
    }

    /// The successors of node `index`: one QI raised by one level.
    pub fn successors(&self, index: usize) -> impl Iterator<Item = usize> + '_ {
        (0..self.heights.len())
            .filter(move |&j| self.level(index, j) + 1 < self.heights[j])
            .map(move |j| index + self.radix[j])
    }

    /// The predecessors of node `index`: one QI lowered by one level.
    pub fn predecessors(&self, index: usize) -> impl Iterator<Item = usize> + '_ {
        (0..self.heights.len())
            .filter(move |&j| self.level(index, j) > 0)
            .map(move |j| index - self.radix[j])
    }

    /// Whether node `a` is a generalization of (or equal to) node `b`.
    pub fn generalizes(&self, a: usize, b: usize) -> bool {
        (0..self.heights.len()).all(|j| self.level(a, j) >= self.level(b, j))
    }

    /// Calls `f` on every node `m` with `low ≤ m ≤ high` (componentwise), given as level
    /// vectors; nothing when `low ≰ high`.
    pub fn for_each_between(&self, low: &[usize], high: &[usize], mut f: impl FnMut(usize)) {
        let d = self.heights.len();
        if (0..d).any(|j| low[j] > high[j]) {
            return;
        }
        // odometer over the box, the last QI fastest
        let mut current = low.to_vec();
        let mut index = self.index(low);
        loop {
            f(index);
            let mut j = d;
            loop {
                if j == 0 {
                    return;
                }
                j -= 1;
                if current[j] < high[j] {
                    current[j] += 1;
                    index += self.radix[j];
                    break;
                }
                index -= (current[j] - low[j]) * self.radix[j];
                current[j] = low[j];
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn size_index_levels() {
        // 2 × 3 × 2 = 12 nodes; [1, 2, 0] = 1·6 + 2·2 + 0 = 10
        let lattice = Lattice::new(&[2, 3, 2]).unwrap();
        assert_eq!(lattice.size(), 12);
        assert_eq!(lattice.max_height(), 1 + 2 + 1);
        assert_eq!(lattice.index(&[1, 2, 0]), 10);
        assert_eq!(lattice.levels(10), vec![1, 2, 0]);
        assert_eq!(lattice.height(10), 3);
        assert_eq!(lattice.levels(lattice.top()), vec![1, 2, 1]);
        for i in lattice.nodes() {
            assert_eq!(lattice.index(&lattice.levels(i)), i);
        }
        assert!(Lattice::new(&[]).is_err());
        assert!(Lattice::new(&[2, 0]).is_err());
        assert!(Lattice::new(&[1000; 4]).is_err());
        assert!(lattice.check(&[1, 3, 0]).is_err());
        assert!(lattice.check(&[1, 2]).is_err());
        assert!(lattice.check(&[1, 2, 1]).is_ok());
    }

    #[test]
    fn neighbours() {
        let lattice = Lattice::new(&[2, 3, 2]).unwrap();
        let node = lattice.index(&[0, 1, 1]);
        let mut up: Vec<Vec<usize>> = lattice
            .successors(node)
            .map(|s| lattice.levels(s))
            .collect();
        up.sort();
        assert_eq!(up, vec![vec![0, 2, 1], vec![1, 1, 1]]);
        let mut down: Vec<Vec<usize>> = lattice
            .predecessors(node)
            .map(|s| lattice.levels(s))
            .collect();
        down.sort();
        assert_eq!(down, vec![vec![0, 0, 1], vec![0, 1, 0]]);
        assert_eq!(lattice.successors(lattice.top()).count(), 0);
        assert_eq!(lattice.predecessors(0).count(), 0);
        assert!(lattice.generalizes(lattice.index(&[1, 1, 1]), node));
        assert!(!lattice.generalizes(lattice.index(&[1, 0, 1]), node));
    }

    #[test]
    fn boxes() {
        let lattice = Lattice::new(&[2, 3, 2]).unwrap();
        let mut seen = Vec::new();
        lattice.for_each_between(&[0, 1, 0], &[1, 2, 0], |i| seen.push(lattice.levels(i)));
        seen.sort();
        // 2 × 2 × 1 nodes
        assert_eq!(
            seen,
            vec![vec![0, 1, 0], vec![0, 2, 0], vec![1, 1, 0], vec![1, 2, 0]]
        );
        let mut all = 0;
        lattice.for_each_between(&[0, 0, 0], &lattice.top_levels(), |_| all += 1);
        assert_eq!(all, 12);
        let mut none = 0;
        lattice.for_each_between(&[1, 0, 0], &[0, 2, 1], |_| none += 1);
        assert_eq!(none, 0);
    }
}
