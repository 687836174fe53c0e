//! Points in d dimensions, row-major, standardized per attribute (zero mean, unit sample
//! variance): the space in which microaggregation measures distances and SSE, so that no
//! attribute dominates by its unit. A constant attribute (sample variance 0) is centred and
//! left unscaled: it adds nothing to any distance.

/// n points of d coordinates, row-major.
#[derive(Debug, Clone, PartialEq)]
pub struct Points {
    d: usize,
    values: Vec<f64>,
}

impl Points {
    /// Points from row-major `values` (a multiple of `d` long, d ≥ 1).
    pub fn new(d: usize, values: Vec<f64>) -> Self {
        debug_assert!(d > 0 && values.len().is_multiple_of(d));
        Self { d, values }
    }

    /// The points of `columns` (each one attribute, all the same length), standardized.
    pub fn standardized(columns: &[&[f64]]) -> Self {
        let n = columns.first().map_or(0, |c| c.len());
        Self::standardized_in(columns, &(0..n as u32).collect::<Vec<_>>())
    }

    /// As [`Self::standardized`], with row r holding record `records[r]` (a permutation of
    /// the records).
    pub fn standardized_in(columns: &[&[f64]], records: &[u32]) -> Self {
        let d = columns.len();
        let mut values = vec![0.0; records.len() * d];
        for (j, column) in columns.iter().enumerate() {
            let (mean, sd) = mean_sd(column);
            let scale = if sd > 0.0 { 1.0 / sd } else { 1.0 };
            for (r, &i) in records.iter().enumerate() {
                values[r * d + j] = (column[i as usize] - mean) * scale;
            }
        }
        Self { d, values }
    }

    /// The coordinates, row-major, to reorder rows in place.
    pub fn values_mut(&mut self) -> &mut [f64] {
        &mut self.values
    }

    /// Dimensions.
    pub fn d(&self) -> usize {
        self.d
    }

    /// Points.
    pub fn len(&self) -> usize {
        self.values.len() / self.d
    }

    /// No points.
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// Point `i`.
    #[inline]
    pub fn row(&self, i: usize) -> &[f64] {
        &self.values[i * self.d..(i + 1) * self.d]
    }

    /// The points at `range`, in order.
    pub fn range(&self, range: std::ops::Range<usize>) -> Points {
        Points {
            d: self.d,
            values: self.values[range.start * self.d..range.end * self.d].to_vec(),
        }
    }

    /// The points `indices`, in that order.
    pub fn subset(&self, indices: &[u32]) -> Points {
        let mut values = Vec::with_capacity(indices.len() * self.d);
        for &i in indices {
            values.extend_from_slice(self.row(i as usize));
        }
        Points { d: self.d, values }
    }

    /// The mean of the points `indices`, into `out`.
    pub fn centroid_into(&self, indices: &[u32], out: &mut [f64]) {
        out.fill(0.0);
        for &i in indices {
            for (o, x) in out.iter_mut().zip(self.row(i as usize)) {
                *o += x;
            }
        }
        let scale = 1.0 / indices.len().max(1) as f64;
        out.iter_mut().for_each(|o| *o *= scale);
    }

    /// Sum over the groups of the squared distances of their points to their centroid.
    pub fn sse(&self, groups: &[Vec<u32>]) -> f64 {
        let mut centroid = vec![0.0; self.d];
        groups
            .iter()
            .map(|g| {
                self.centroid_into(g, &mut centroid);
                g.iter()
                    .map(|&i| squared_distance(self.row(i as usize), &centroid))
                    .sum::<f64>()
            })
            .sum()
    }

    /// Sum of the squared distances of all points to their centroid.
    pub fn sst(&self) -> f64 {
        let all: Vec<u32> = (0..self.len() as u32).collect();
        self.sse(&[all])
    }
}

/// Squared Euclidean distance.
#[inline]
pub fn squared_distance(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| (x - y) * (x - y)).sum()
}

/// The mean and the sample standard deviation (n − 1 in the denominator; 0 for fewer than
/// two values).
pub fn mean_sd(values: &[f64]) -> (f64, f64) {
    let n = values.len();
    if n == 0 {
        return (0.0, 0.0);
    }
    let mean = values.iter().sum::<f64>() / n as f64;
    if n < 2 {
        return (mean, 0.0);
    }
    let ss: f64 = values.iter().map(|x| (x - mean) * (x - mean)).sum();
    (mean, (ss / (n - 1) as f64).sqrt())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn standardized_columns_have_zero_mean_and_unit_sample_variance() {
        // x = 1, 2, 3: mean 2, sample variance ((1 + 0 + 1) / 2) = 1, so unchanged but centred
        let x = [1.0, 2.0, 3.0];
        // y = 10, 10, 10: constant, centred to 0
        let y = [10.0, 10.0, 10.0];
        let p = Points::standardized(&[&x, &y]);
        assert_eq!(p.row(0), &[-1.0, 0.0]);
        assert_eq!(p.row(2), &[1.0, 0.0]);
        // SST = 1 + 0 + 1
        assert!((p.sst() - 2.0).abs() < 1e-12);
    }
}
