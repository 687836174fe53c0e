//! How PRAM changes a categorical attribute's association with the others: the figures
//! `pram[].associations` of a perturbed release's report, each computed on the original and on
//! the published records.
//!
//! - With another categorical attribute (another PRAMed one): **Cramér's V**,
//!   √(χ²/n / (min(r, c) − 1)) over the r × c table of the categories present; 0 when either
//!   side has a single category.
//! - With a numeric attribute: the **correlation ratio η**, √(SS_between / SS_total) of the
//!   numbers grouped by category (η² is the share of the variance the category explains); 0
//!   when the numbers do not vary.
//!
//! A record with a NULL category or a NaN number is left out of that pair's figure (PRAM keeps
//! NULLs; a numeric perturbed attribute's NULL or NaN records are not published).

use serde::Serialize;

/// One association of a PRAMed attribute, before and after.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Association {
    /// The other attribute.
    pub with: String,
    /// `cramers_v` or `eta`.
    pub measure: &'static str,
    /// On the original records.
    pub before: f64,
    /// On the published records.
    pub after: f64,
}

/// Cramér's V of two categorical columns (codes, `None` for NULL), over the records where both
/// are set.
pub fn cramers_v(a: &[Option<u32>], b: &[Option<u32>]) -> f64 {
    let pairs: Vec<(u32, u32)> = a
        .iter()
        .zip(b)
        .filter_map(|(x, y)| Some(((*x)?, (*y)?)))
        .collect();
    let n = pairs.len();
    if n == 0 {
        return 0.0;
    }
    let (rows, columns) = pairs
        .iter()
        .fold((0, 0), |(r, c), &(x, y)| (r.max(x + 1), c.max(y + 1)));
    let (rows, columns) = (rows as usize, columns as usize);
    let mut table = vec![0u64; rows * columns];
    let (mut row_sums, mut column_sums) = (vec![0u64; rows], vec![0u64; columns]);
    for &(x, y) in &pairs {
        table[x as usize * columns + y as usize] += 1;
        row_sums[x as usize] += 1;
        column_sums[y as usize] += 1;
    }
    let present = |sums: &[u64]| sums.iter().filter(|&&s| s > 0).count();
    let smaller = present(&row_sums).min(present(&column_sums));
    if smaller < 2 {
        return 0.0;
    }
    let mut chi_squared = 0.0;
    for (x, &row) in row_sums.iter().enumerate() {
        for (y, &column) in column_sums.iter().enumerate() {
            if row == 0 || column == 0 {
                continue;
            }
            let expected = row as f64 * column as f64 / n as f64;
            let observed = table[x * columns + y] as f64;
            chi_squared += (observed - expected).powi(2) / expected;
        }
    }
    (chi_squared / n as f64 / (smaller - 1) as f64)
        .sqrt()
        .min(1.0)
}

/// The correlation ratio η of `values` by category (`codes`), over the records with a
/// category and a number that is not NaN.
pub fn correlation_ratio(codes: &[Option<u32>], values: &[f64]) -> f64 {
    let pairs: Vec<(u32, f64)> = codes
        .iter()
        .zip(values)
        .filter_map(|(c, &v)| (!v.is_nan()).then_some(((*c)?, v)))
        .collect();
    if pairs.is_empty() {
        return 0.0;
    }
    let categories = pairs
        .iter()
        .map(|&(c, _)| c as usize + 1)
        .max()
        .unwrap_or(0);
    let (mut sums, mut counts) = (vec![0.0f64; categories], vec![0u64; categories]);
    for &(c, v) in &pairs {
        sums[c as usize] += v;
        counts[c as usize] += 1;
    }
    let mean = pairs.iter().map(|&(_, v)| v).sum::<f64>() / pairs.len() as f64;
    let total: f64 = pairs.iter().map(|&(_, v)| (v - mean).powi(2)).sum();
    if total <= 0.0 {
        return 0.0;
    }
    let between: f64 = sums
        .iter()
        .zip(&counts)
        .filter(|&(_, &count)| count > 0)
        .map(|(&sum, &count)| count as f64 * (sum / count as f64 - mean).powi(2))
        .sum();
    (between / total).sqrt().min(1.0)
}

#[cfg(test)]
mod tests {
    use super::{correlation_ratio, cramers_v};

    fn codes(values: &[u32]) -> Vec<Option<u32>> {
        values.iter().copied().map(Some).collect()
    }

    /// By hand: equal columns V = 1; crossed (each pair once) V = 0; the table
    /// [[2, 1], [1, 2]] (n = 6, every expected count 1.5): χ² = 4 · 0.5²/1.5 = 2/3, so
    /// V = √(2/3 / 6) = 1/3. A NULL leaves its record out; one category alone gives 0.
    #[test]
    fn cramers_v_by_hand() {
        assert_eq!(cramers_v(&codes(&[0, 0, 1, 1]), &codes(&[0, 0, 1, 1])), 1.0);
        assert_eq!(cramers_v(&codes(&[0, 0, 1, 1]), &codes(&[0, 1, 0, 1])), 0.0);
        let v = cramers_v(&codes(&[0, 0, 0, 1, 1, 1]), &codes(&[0, 0, 1, 0, 1, 1]));
        assert!((v - 1.0 / 3.0).abs() < 1e-12, "{v}");
        let with_null = cramers_v(
            &[Some(0), Some(0), Some(1), Some(1), None],
            &codes(&[0, 0, 1, 1, 0]),
        );
        assert_eq!(with_null, 1.0);
        assert_eq!(cramers_v(&codes(&[2, 2, 2]), &codes(&[0, 1, 0])), 0.0);
    }

    /// By hand: [1, 2 | 3, 4] by two categories: mean 2.5, SS_total = 2.25 + 0.25 + 0.25 +
    /// 2.25 = 5, SS_between = 2 · 1² + 2 · 1² = 4, η = √0.8. Numbers set by category: 1;
    /// numbers independent of it: 0; constant numbers: 0.
    #[test]
    fn correlation_ratio_by_hand() {
        let eta = correlation_ratio(&codes(&[0, 0, 1, 1]), &[1.0, 2.0, 3.0, 4.0]);
        assert!((eta - 0.8f64.sqrt()).abs() < 1e-12, "{eta}");
        assert_eq!(
            correlation_ratio(&codes(&[0, 0, 1, 1]), &[1.0, 1.0, 3.0, 3.0]),
            1.0
        );
        assert_eq!(
            correlation_ratio(&codes(&[0, 0, 1, 1]), &[1.0, 3.0, 1.0, 3.0]),
            0.0
        );
        assert_eq!(correlation_ratio(&codes(&[0, 1]), &[5.0, 5.0]), 0.0);
        let skipped = correlation_ratio(
            &[Some(0), Some(0), Some(1), Some(1), None],
            &[1.0, 1.0, 3.0, f64::NAN, 100.0],
        );
        assert_eq!(skipped, 1.0);
    }
}
