//! The formulas of `docs/definitions.md`, on plain counts: no Arrow, no DataFusion, so that
//! each can be checked against the literature's worked examples in isolation.

/// The weighted hierarchical distance (seed 004 §3.1) of generalizing a cell from level
/// `from_level` to `to_level` of a hierarchy of `height` levels (this crate's levels: 0 the
/// leaf, `height − 1` the top). The seed numbers levels 1 (top) … h (leaf), so our level a is
/// the seed's h − a, and WHD(p, q) = Σ_{j=q+1..p} w_{j,j−1} / Σ_{j=2..h} w_{j,j−1} with
/// w = 1 (`beta` None) or w_{j,j−1} = 1/(j−1)^β. 0 when nothing is generalized.
pub fn weighted_hierarchical_distance(
    height: usize,
    from_level: usize,
    to_level: usize,
    beta: Option<f64>,
) -> f64 {
    if height < 2 {
        return 0.0;
    }
    let to_level = to_level.min(height - 1);
    if to_level <= from_level {
        return 0.0;
    }
    let weight = |j: usize| match beta {
        None => 1.0,
        Some(b) => 1.0 / ((j - 1) as f64).powf(b),
    };
    let (p, q) = (height - from_level, height - to_level);
    let part: f64 = (q + 1..=p).map(weight).sum();
    let total: f64 = (2..=height).map(weight).sum();
    part / total
}

/// exp(H) with H = −Σ p ln p over `counts` (natural log). 0 for an empty class.
pub fn entropy_l(counts: &[u64]) -> f64 {
    let total: u64 = counts.iter().sum();
    if total == 0 {
        return 0.0;
    }
    let n = total as f64;
    // H = ln n − (1/n) Σ c ln c: one pass, no division per value
    let sum_c_ln_c: f64 = counts
        .iter()
        .filter(|&&c| c > 0)
        .map(|&c| {
            let c = c as f64;
            c * c.ln()
        })
        .sum();
    (n.ln() - sum_c_ln_c / n).exp()
}

/// Recursive (c, l)-diversity: with counts sorted r1 ≥ … ≥ rm, the largest l in 2..m with
/// r1 < c·(r_l + … + r_m); 1 if there is none; 0 for an empty class. Sorts `counts` in place.
pub fn recursive_l(counts: &mut [u64], c: f64) -> usize {
    counts.sort_unstable_by(|a, b| b.cmp(a));
    let m = counts.iter().take_while(|&&r| r > 0).count();
    if m == 0 {
        return 0;
    }
    let r1 = counts[0] as f64;
    // tail(l) = r_l + … + r_m shrinks as l grows, so scan l downwards from m
    let mut tail = 0.0;
    for l in (2..=m).rev() {
        tail += counts[l - 1] as f64;
        if r1 < c * tail {
            return l;
        }
    }
    1
}

/// Earth mover's distance with equal ground distance between a class histogram and the table
/// histogram: ½ Σ_v |p_E(v) − p_T(v)|.
///
/// `class` lists `(table_count, class_count)` for each value present in the class;
/// values absent from the class contribute their table share, so only the class's values are
/// visited.
pub fn equal_emd(class: &[(u64, u64)], class_rows: u64, table_rows: u64) -> f64 {
    let (ne, nt) = (class_rows as f64, table_rows as f64);
    let mut present_table_share = 0.0;
    let mut diff = 0.0;
    for &(tc, ec) in class {
        let pt = tc as f64 / nt;
        present_table_share += pt;
        diff += (ec as f64 / ne - pt).abs();
    }
    0.5 * (diff + (1.0 - present_table_share).max(0.0))
}

/// The table's distribution over the ordered domain, prepared once for [`ordered_emd`].
#[derive(Debug, Clone)]
pub struct OrderedDomain {
    /// cumulative table share up to and including position i
    cumulative: Vec<f64>,
    /// prefix sums of `cumulative`: `prefix[i]` = Σ_{j<i} cumulative[j]
    prefix: Vec<f64>,
    /// the quantile index: `quantile[j]` is the first position whose cumulative share is at
    /// least j / [`Self::buckets`] (`len` if none), for j in 0..=buckets, plus `len`
    quantile: Vec<usize>,
}

impl OrderedDomain {
    /// `table_counts[i]` is the table count of the i-th smallest value.
    pub fn new(table_counts: &[u64]) -> Self {
        let n: u64 = table_counts.iter().sum();
        let mut cumulative = Vec::with_capacity(table_counts.len());
        let mut prefix = Vec::with_capacity(table_counts.len() + 1);
        let (mut running, mut running_sum) = (0u64, 0.0);
        prefix.push(0.0);
        for &c in table_counts {
            running += c;
            let cum = running as f64 / n as f64;
            cumulative.push(cum);
            running_sum += cum;
            prefix.push(running_sum);
        }
        // about two buckets per value, a power of two so that j / buckets is exact
        let buckets = (2 * cumulative.len()).next_power_of_two().clamp(2, 1 << 16);
        let mut quantile = Vec::with_capacity(buckets + 2);
        let mut at = 0;
        for j in 0..=buckets {
            let share = j as f64 / buckets as f64;
            while at < cumulative.len() && cumulative[at] < share {
                at += 1;
            }
            quantile.push(at);
        }
        quantile.push(cumulative.len());
        Self {
            cumulative,
            prefix,
            quantile,
        }
    }

    pub fn len(&self) -> usize {
        self.cumulative.len()
    }

    pub fn is_empty(&self) -> bool {
        self.cumulative.is_empty()
    }

    fn buckets(&self) -> usize {
        self.quantile.len() - 2
    }

    /// The first position whose cumulative share is at least `level` (`len` if none). With
    /// j = ⌊level · buckets⌋ (exact: buckets is a power of two), j / buckets ≤ level <
    /// (j + 1) / buckets, so the position lies between `quantile[j]` and `quantile[j + 1]`,
    /// about two values apart: a search of the whole domain per segment was most of the
    /// finalizer's time.
    fn first_at_least(&self, level: f64) -> usize {
        let scaled = level * self.buckets() as f64;
        // NaN and negative levels start at 0; levels of 1 and more in the last bucket
        let j = if scaled >= 0.0 {
            (scaled as usize).min(self.buckets())
        } else {
            0
        };
        let (lo, hi) = (self.quantile[j], self.quantile[j + 1]);
        lo + self.cumulative[lo..hi].partition_point(|&x| x < level)
    }

    /// Σ_{i in a..b} |level − cumulative[i]|, in O(1) for a domain without heavy ties:
    /// `cumulative` is nondecreasing, so the terms change sign once, at the first position
    /// whose share reaches `level`.
    fn segment(&self, a: usize, b: usize, level: f64) -> f64 {
        if a >= b {
            return 0.0;
        }
        let split = self.first_at_least(level).clamp(a, b);
        let below = level * (split - a) as f64 - (self.prefix[split] - self.prefix[a]);
        let above = (self.prefix[b] - self.prefix[split]) - level * (b - split) as f64;
        below + above
    }
}

/// Ordered-distance EMD of Li et al.: (1/(m−1)) Σ_i |Σ_{j≤i} (p_E(v_j) − p_T(v_j))| over the
/// m values of the table's domain; 0 when m = 1.
///
/// `class` lists `(position, class_count)` of the class's values sorted by position. The
/// class's cumulative share is a step function, so the sum is taken segment by segment:
/// O(|class| · log m) instead of O(m).
pub fn ordered_emd(domain: &OrderedDomain, class: &[(usize, u64)], class_rows: u64) -> f64 {
    let m = domain.len();
    if m <= 1 {
        return 0.0;
    }
    let ne = class_rows as f64;
    let mut total = 0.0;
    let mut level = 0.0;
    let mut start = 0;
    for &(position, count) in class {
        total += domain.segment(start, position, level);
        level += count as f64 / ne;
        start = position;
    }
    total += domain.segment(start, m, level);
    total / (m - 1) as f64
}

/// A class's share of the table's range, (max_E − min_E)/(max_T − min_T): the spread of an
/// ordered attribute in `ncp` and tuple diversity (Loukides & Shao 2008). 0 when the class
/// has at most one value (`hi ≤ lo`, also for an empty class's `lo = +∞, hi = −∞`) and when
/// the table has (`table_range` 0).
pub fn range_share(lo: f64, hi: f64, table_range: f64) -> f64 {
    if hi > lo && table_range > 0.0 {
        (hi - lo) / table_range
    } else {
        0.0
    }
}

/// α of (α,k)-anonymity (Wong et al. 2006) for a class whose non-NULL values have `counts`
/// and which has `nulls` NULLs: the largest share of one value, with the NULLs counted as
/// copies of the most frequent value (the worst case). 1 for an all-NULL class, 0 for an empty
/// one.
pub fn alpha(counts: &[u64], nulls: u64) -> f64 {
    let size = counts.iter().sum::<u64>() + nulls;
    if size == 0 {
        return 0.0;
    }
    (counts.iter().copied().max().unwrap_or(0) + nulls) as f64 / size as f64
}

/// Relative excess of a value's share in a class over its share in the table,
/// (p_E − p_T)/p_T, and the enhanced-β-likeness cap −ln p_T of that value.
fn relative_gain(
    table_count: u64,
    class_count: u64,
    class_rows: f64,
    table_rows: f64,
) -> (f64, f64) {
    let (pe, pt) = (
        class_count as f64 / class_rows,
        table_count as f64 / table_rows,
    );
    ((pe - pt) / pt, -pt.ln())
}

/// Basic β-likeness of a class (Cao & Karras 2012): the largest (p_E(v) − p_T(v))/p_T(v)
/// over the values more frequent in the class than in the table; 0 if there is none.
/// `class` lists `(table_count, class_count)` of the values present in the class (a value
/// absent from the class only lowers its share, so only present values are visited).
pub fn beta_likeness(class: &[(u64, u64)], class_rows: u64, table_rows: u64) -> f64 {
    let (ne, nt) = (class_rows as f64, table_rows as f64);
    class
        .iter()
        .map(|&(tc, ec)| relative_gain(tc, ec, ne, nt).0)
        .fold(0.0, f64::max)
}

/// Enhanced β-likeness of a class (Cao & Karras 2012): the class meets β exactly when every
/// value has (p_E − p_T)/p_T ≤ min(β, −ln p_T). Returned as the smallest β the class meets:
/// its basic β when no value exceeds its −ln p_T cap, +∞ when one does (no β is then met).
pub fn enhanced_beta_likeness(class: &[(u64, u64)], class_rows: u64, table_rows: u64) -> f64 {
    let (ne, nt) = (class_rows as f64, table_rows as f64);
    let mut beta: f64 = 0.0;
    for &(tc, ec) in class {
        let (gain, cap) = relative_gain(tc, ec, ne, nt);
        // the relative tolerance only absorbs rounding, as in `PrivacyRequirements`
        if gain > cap * (1.0 + 1e-12) + 1e-15 {
            return f64::INFINITY;
        }
        beta = beta.max(gain);
    }
    beta
}

/// δ-disclosure of a class (Brickell & Shmatikov 2008): max over the table's values of
/// |ln(p_E(v)/p_T(v))|. A value of the table absent from the class makes it +∞ (the textbook
/// definition, which never understates the disclosure); `table_values` is the number of
/// distinct values of the table (NULL a value of its own), `class` the present values'
/// `(table_count, class_count)`.
pub fn delta_disclosure(
    class: &[(u64, u64)],
    class_rows: u64,
    table_rows: u64,
    table_values: usize,
) -> f64 {
    if class.len() < table_values {
        return f64::INFINITY;
    }
    let (ne, nt) = (class_rows as f64, table_rows as f64);
    class
        .iter()
        .map(|&(tc, ec)| ((ec as f64 / ne) / (tc as f64 / nt)).ln().abs())
        .fold(0.0, f64::max)
}

/// Longpre's normalized leakage share of a class of `class_rows` in a table of `table_rows`:
/// (|E|/n)·(log2 n − log2 |E|)/log2 n. `None` for an empty table; 1 for a one-row table.
pub fn entropy_leakage(class_rows: u64, table_rows: u64) -> Option<f64> {
    match table_rows {
        0 => None,
        1 => Some(1.0),
        n => {
            let (e, n) = (class_rows as f64, n as f64);
            if class_rows == 0 {
                return Some(0.0);
            }
            Some((e / n) * (n.log2() - e.log2()) / n.log2())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-4
    }

    #[test]
    fn entropy_of_a_a_b_c() {
        // docs/definitions.md: {a, a, b, c} → exp(1.0397) = 2.828
        assert!(close(entropy_l(&[2, 1, 1]), 2.8284));
        assert!(close(entropy_l(&[7]), 1.0));
        assert_eq!(entropy_l(&[]), 0.0);
    }

    #[test]
    fn recursive_5_3_2() {
        // docs/definitions.md: (5, 3, 2) → 2 for c = 2, 3 for c = 3
        assert_eq!(recursive_l(&mut [2, 5, 3], 2.0), 2);
        assert_eq!(recursive_l(&mut [3, 2, 5], 3.0), 3);
        // one value: no l in 2..1
        assert_eq!(recursive_l(&mut [4], 2.0), 1);
        // r1 = 5 is not < 1·(3+2): 1
        assert_eq!(recursive_l(&mut [5, 3, 2], 1.0), 1);
        assert_eq!(recursive_l(&mut [], 2.0), 0);
    }

    #[test]
    fn equal_emd_worked_example() {
        // Li et al.: class {gastric ulcer, gastritis, stomach cancer} of a table with counts
        // gastric ulcer 1, gastritis 2, stomach cancer 2, flu 1, bronchitis 2, pneumonia 1:
        // ½ (2/9 + 1/9 + 1/9 + 1/9 + 2/9 + 1/9) = 4/9
        assert!(close(equal_emd(&[(1, 1), (2, 1), (2, 1)], 3, 9), 4.0 / 9.0));
        // identical distributions: 0
        assert!(close(equal_emd(&[(3, 1), (6, 2)], 3, 9), 0.0));
    }

    #[test]
    fn ordered_emd_worked_example() {
        // salaries 3..11 (k), each once; class {3, 4, 5}: 0.375; class {6, 8, 11}: 0.1667;
        // class {7, 9, 10}: 0.2361 (docs/definitions.md, t-closeness paper)
        let domain = OrderedDomain::new(&[1; 9]);
        assert!(close(
            ordered_emd(&domain, &[(0, 1), (1, 1), (2, 1)], 3),
            0.375
        ));
        assert!(close(
            ordered_emd(&domain, &[(3, 1), (5, 1), (8, 1)], 3),
            0.1667
        ));
        assert!(close(
            ordered_emd(&domain, &[(4, 1), (6, 1), (7, 1)], 3),
            0.2361
        ));
        assert_eq!(ordered_emd(&OrderedDomain::new(&[5]), &[(0, 5)], 5), 0.0);
    }

    #[test]
    fn quantile_index_finds_the_split_of_a_full_search() {
        // uneven shares, ties of the cumulative share (zero counts) and levels at the bucket
        // edges, at 0 and 1, above 1 (rounding), below 0 and NaN
        let domain = OrderedDomain::new(&[3, 0, 0, 1, 4, 1, 5, 9, 0, 2, 6, 500, 1]);
        let mut levels: Vec<f64> = (0..=200).map(|i| i as f64 / 200.0).collect();
        let buckets = domain.buckets() as f64;
        levels.extend((0..=domain.buckets()).map(|j| j as f64 / buckets));
        levels.extend([1.0 + 1e-12, -0.5, f64::NAN, 3.0 / 532.0, 7.0 / 532.0]);
        for level in levels {
            let full = domain.cumulative.partition_point(|&x| x < level);
            let want = if level.is_nan() { 0 } else { full };
            assert_eq!(domain.first_at_least(level), want, "level {level}");
        }
    }

    #[test]
    fn ordered_emd_matches_direct_sum() {
        // the segment shortcut against the definition, on an uneven table
        let table = [3u64, 1, 4, 1, 5, 9, 2, 6];
        let class = [(1usize, 1u64), (4, 2), (5, 3)];
        let (n, ne) = (table.iter().sum::<u64>() as f64, 6.0);
        let (mut cum, mut direct) = (0.0, 0.0);
        for (i, &tc) in table.iter().enumerate() {
            let ec = class.iter().find(|(p, _)| *p == i).map_or(0, |&(_, c)| c);
            cum += ec as f64 / ne - tc as f64 / n;
            direct += f64::abs(cum);
        }
        direct /= (table.len() - 1) as f64;
        let fast = ordered_emd(&OrderedDomain::new(&table), &class, 6);
        assert!((fast - direct).abs() < 1e-12, "{fast} vs {direct}");
    }

    #[test]
    fn leakage() {
        // 9 rows in 3 classes of 3: each 1/6, sum 1/2
        assert!(close(entropy_leakage(3, 9).unwrap(), 1.0 / 6.0));
        // IAB: 27 F + 33 M of 60 → 0.168
        let sum = entropy_leakage(27, 60).unwrap() + entropy_leakage(33, 60).unwrap();
        assert!((sum - 0.168).abs() < 5e-4, "{sum}");
        assert_eq!(entropy_leakage(0, 0), None);
        assert_eq!(entropy_leakage(1, 1), Some(1.0));
    }

    #[test]
    fn alpha_counts_nulls_as_the_most_frequent_value() {
        // {a, a, b, NULL}: the NULL may be an a, so α = 3/4
        assert_eq!(alpha(&[2, 1], 1), 0.75);
        assert_eq!(alpha(&[1, 1, 1, 1], 0), 0.25);
        assert_eq!(alpha(&[], 3), 1.0);
        assert_eq!(alpha(&[], 0), 0.0);
    }

    #[test]
    fn beta_and_delta_by_hand() {
        // table of 10: a 5, b 4, c 1; class of 4: a 1, b 2, c 1
        // p_E = (1/4, 1/2, 1/4), p_T = (1/2, 2/5, 1/10)
        // gains: a −1/2, b (1/2 − 2/5)/(2/5) = 1/4, c (1/4 − 1/10)/(1/10) = 3/2 → β = 1.5
        let class = [(5, 1), (4, 2), (1, 1)];
        assert!(close(beta_likeness(&class, 4, 10), 1.5));
        // caps −ln p_T: c −ln 0.1 = 2.303 ≥ 1.5, b −ln 0.4 = 0.916 ≥ 0.25: enhanced β = 1.5
        assert!(close(enhanced_beta_likeness(&class, 4, 10), 1.5));
        // class of 2: c 2 → gain of c is (1 − 0.1)/0.1 = 9 > 2.303: no β is met
        assert_eq!(enhanced_beta_likeness(&[(1, 2)], 2, 10), f64::INFINITY);
        assert!(close(beta_likeness(&[(1, 2)], 2, 10), 9.0));
        // δ: |ln(p_E/p_T)| = |ln 0.5|, |ln 1.25|, |ln 2.5| → ln 2.5 = 0.9163
        assert!(close(delta_disclosure(&class, 4, 10, 3), 2.5f64.ln()));
        // a class without c: +∞
        assert_eq!(delta_disclosure(&[(5, 1), (4, 2)], 3, 10, 3), f64::INFINITY);
        // the table itself: all 0
        assert!(close(
            delta_disclosure(&[(5, 5), (4, 4), (1, 1)], 10, 10, 3),
            0.0
        ));
        assert!(close(beta_likeness(&[(5, 5), (4, 4), (1, 1)], 10, 10), 0.0));
    }
}
