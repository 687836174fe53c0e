//! Interval hierarchies for numeric columns: level 0 is the value itself, levels 1 ..= m put
//! the value into ever wider buckets, the top level m + 1 is `*`.
//!
//! Each bucket level is either
//! - a **width** w (with an origin o, 0 by default): buckets `[o + k·w, o + (k+1)·w)`, e.g.
//!   widths 5, 10, 20, 40 for age; each width must be a multiple of the previous one (and the
//!   origins aligned), so that every bucket lies inside one bucket of the next level; or
//! - explicit **breakpoints** b0 < b1 < … < bn: buckets `< b0`, `[b0, b1)`, …, `>= bn`; each
//!   level's breakpoints must be boundaries of the previous level.
//!
//! Optional **bottom coding** (every value below b is `< b`) and **top coding** (every value
//! at or above t is `>= t`) apply at every bucket level; buckets that straddle b or t are
//! clipped to them, so a label never claims values that are coded elsewhere (age 18 with
//! bottom coding 18 and width 5 is `[18, 20)`, not `[15, 20)`).
//!
//! ## Labels
//! - `[lo, hi)`: lo ≤ value < hi (a half-open interval, as in mathematics);
//! - `< b` (bottom coding or below the first breakpoint), `>= t` (top coding or at or above the
//!   last breakpoint);
//! - numbers are printed without a fraction when integral (`[20, 30)`), otherwise in their
//!   shortest decimal form; the boundaries of a width level are computed to the decimals of
//!   the width and origin, so width 0.1 gives `[0.3, 0.4)` (and holds 0.3), never
//!   `0.30000000000000004`;
//! - NaN is `NaN` and, when not top or bottom coded, infinities are `inf` / `-inf`, at every
//!   bucket level;
//! - `*` at the top level; level 0 is the value cast to text (Arrow's `CAST(x AS VARCHAR)`).
//!
//! Labels are stable: a value's label depends only on the value and the hierarchy, never on
//! the batch or the rest of the data. They sort by their lower bound: `< b` first, then the
//! buckets in increasing order (the number after `[`), then `>= t`; within one level of a
//! hierarchy whose bounds have the same number of digits, plain string order is that order.
//!
//! Input: integers, floats and decimals (and dictionaries of them), computed in f64 (integers
//! beyond ±2^53 lose precision). Output: Utf8View. NULL stays NULL.

use datafusion::arrow::array::{Array, ArrayRef, AsArray, DictionaryArray};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Float64Type, UInt32Type};
use datafusion::error::{DataFusionError, Result};

use super::common::{
    TOP_LABEL, constant_label, format_number, gather_labels, is_number, label_codes_dictionary,
    through_dictionary, to_labels,
};

/// One bucket level of an [`IntervalHierarchy`].
#[derive(Debug, Clone, PartialEq)]
pub enum IntervalLevel {
    /// Buckets `[origin + k·width, origin + (k+1)·width)` for every integer k.
    Width { width: f64, origin: f64 },
    /// Buckets between strictly increasing breakpoints: `< b0`, `[b0, b1)`, …, `>= bn`.
    Breaks(Vec<f64>),
}

impl IntervalLevel {
    /// Buckets of `width` from origin 0.
    pub fn width(width: f64) -> Self {
        IntervalLevel::Width { width, origin: 0.0 }
    }

    /// Whether `x` is a bucket boundary of this level.
    fn is_boundary(&self, x: f64) -> bool {
        match self {
            IntervalLevel::Width { width, origin } => is_integral((x - origin) / width),
            IntervalLevel::Breaks(breaks) => breaks.iter().any(|&b| close(b, x)),
        }
    }

    fn describe(&self) -> String {
        match self {
            IntervalLevel::Width { width, origin } if *origin == 0.0 => {
                format!("width {}", format_number(*width))
            }
            IntervalLevel::Width { width, origin } => format!(
                "width {} from {}",
                format_number(*width),
                format_number(*origin)
            ),
            IntervalLevel::Breaks(b) => format!("{} breakpoints", b.len()),
        }
    }
}

fn is_integral(x: f64) -> bool {
    (x - x.round()).abs() <= 1e-9 * x.abs().max(1.0)
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-12 * a.abs().max(b.abs()).max(1.0)
}

/// A level prepared for recoding. A width level's boundaries `origin + k·width` are snapped to
/// the decimals of width and origin (when they have at most 12), so that `3 × 0.1` is the
/// boundary 0.3 (the number a user wrote) rather than 0.30000000000000004; membership and
/// labels use the same snapped boundaries.
#[derive(Debug, Clone, Copy)]
enum Plan<'a> {
    Width {
        width: f64,
        origin: f64,
        /// 10^decimals, when width and origin have at most 12 decimals
        scale: Option<f64>,
    },
    Breaks(&'a [f64]),
}

impl<'a> Plan<'a> {
    fn new(level: &'a IntervalLevel) -> Self {
        match level {
            IntervalLevel::Width { width, origin } => {
                let scale = (0..=12).map(|d| 10f64.powi(d)).find(|p| {
                    let integral = |x: f64| (x - x.round()).abs() <= 1e-9 * x.abs().max(1.0);
                    integral(width * p) && integral(origin * p)
                });
                Plan::Width {
                    width: *width,
                    origin: *origin,
                    scale,
                }
            }
            IntervalLevel::Breaks(breaks) => Plan::Breaks(breaks),
        }
    }

    /// The lower boundary of width bucket k.
    #[inline]
    fn boundary(width: f64, origin: f64, scale: Option<f64>, k: f64) -> f64 {
        let raw = origin + k * width;
        match scale {
            Some(p) if raw.abs() < 1e15 => (raw * p).round() / p,
            _ => raw,
        }
    }

    /// The bucket index of a finite value.
    #[inline]
    fn index(&self, v: f64) -> i64 {
        match *self {
            Plan::Width {
                width,
                origin,
                scale,
            } => {
                let mut k = ((v - origin) / width).floor();
                if Self::boundary(width, origin, scale, k) > v {
                    k -= 1.0;
                } else if Self::boundary(width, origin, scale, k + 1.0) <= v {
                    k += 1.0;
                }
                (k as i64).clamp(i64::MIN + 2, i64::MAX - 2)
            }
            Plan::Breaks(breaks) => breaks.partition_point(|&b| b <= v) as i64,
        }
    }

    /// The bounds of bucket `index` (infinite for the outer buckets of breakpoints).
    fn bounds(&self, index: i64) -> (f64, f64) {
        match *self {
            Plan::Width {
                width,
                origin,
                scale,
            } => {
                let k = index as f64;
                (
                    Self::boundary(width, origin, scale, k),
                    Self::boundary(width, origin, scale, k + 1.0),
                )
            }
            Plan::Breaks(breaks) => {
                let i = index as usize;
                let lo = if i == 0 {
                    f64::NEG_INFINITY
                } else {
                    breaks[i - 1]
                };
                let hi = breaks.get(i).copied().unwrap_or(f64::INFINITY);
                (lo, hi)
            }
        }
    }
}

// codes of values that are not in a regular bucket (regular indexes are clamped away from them)
const NAN_CODE: i64 = i64::MIN;
const NEG_INF_CODE: i64 = i64::MIN + 1;
const POS_INF_CODE: i64 = i64::MAX;

/// A numeric interval hierarchy (see the module documentation).
#[derive(Debug, Clone, PartialEq)]
pub struct IntervalHierarchy {
    levels: Vec<IntervalLevel>,
    bottom: Option<f64>,
    top: Option<f64>,
}

impl IntervalHierarchy {
    /// A hierarchy with these bucket levels (finest first), and optional bottom coding
    /// (values `< bottom`) and top coding (values `>= top`). Checks that every level is a
    /// coarsening of the previous one.
    pub fn new(levels: Vec<IntervalLevel>, bottom: Option<f64>, top: Option<f64>) -> Result<Self> {
        let h = Self {
            levels,
            bottom,
            top,
        };
        h.validate()?;
        Ok(h)
    }

    /// Buckets of growing widths from origin 0, e.g. `&[5.0, 10.0, 20.0, 40.0]`.
    pub fn widths(widths: &[f64]) -> Result<Self> {
        Self::new(
            widths.iter().map(|&w| IntervalLevel::width(w)).collect(),
            None,
            None,
        )
    }

    /// Explicit breakpoints per level (finest first), e.g.
    /// `vec![vec![18., 25., 35., 50., 65.], vec![25., 50.]]`.
    pub fn breaks(levels: Vec<Vec<f64>>) -> Result<Self> {
        Self::new(
            levels.into_iter().map(IntervalLevel::Breaks).collect(),
            None,
            None,
        )
    }

    /// The same hierarchy with values below `bottom` coded `< bottom`.
    pub fn with_bottom_coding(self, bottom: f64) -> Result<Self> {
        Self::new(self.levels, Some(bottom), self.top)
    }

    /// The same hierarchy with values at or above `top` coded `>= top`.
    pub fn with_top_coding(self, top: f64) -> Result<Self> {
        Self::new(self.levels, self.bottom, Some(top))
    }

    /// The bucket levels, finest (level 1) first.
    pub fn levels(&self) -> &[IntervalLevel] {
        &self.levels
    }

    /// The bottom coding bound.
    pub fn bottom(&self) -> Option<f64> {
        self.bottom
    }

    /// The top coding bound.
    pub fn top(&self) -> Option<f64> {
        self.top
    }

    /// Levels including level 0 and the top `*`: bucket levels + 2.
    pub fn height(&self) -> usize {
        self.levels.len() + 2
    }

    fn invalid(&self, message: String) -> DataFusionError {
        DataFusionError::Plan(format!("invalid interval hierarchy: {message}"))
    }

    fn validate(&self) -> Result<()> {
        for (name, bound) in [("bottom coding", self.bottom), ("top coding", self.top)] {
            if bound.is_some_and(|b| !b.is_finite()) {
                return Err(self.invalid(format!("the {name} bound must be a finite number")));
            }
        }
        if let (Some(b), Some(t)) = (self.bottom, self.top)
            && b >= t
        {
            return Err(self.invalid(format!(
                "bottom coding {} must be below top coding {}",
                format_number(b),
                format_number(t)
            )));
        }
        for (i, level) in self.levels.iter().enumerate() {
            let n = i + 1;
            match level {
                IntervalLevel::Width { width, origin } => {
                    if !(width.is_finite() && *width > 0.0) {
                        return Err(
                            self.invalid(format!("level {n}: the width must be a positive number"))
                        );
                    }
                    if !origin.is_finite() {
                        return Err(
                            self.invalid(format!("level {n}: the origin must be a finite number"))
                        );
                    }
                }
                IntervalLevel::Breaks(breaks) => {
                    if breaks.is_empty() {
                        return Err(self.invalid(format!("level {n} has no breakpoints")));
                    }
                    if breaks.iter().any(|b| !b.is_finite()) {
                        return Err(
                            self.invalid(format!("level {n}: breakpoints must be finite numbers"))
                        );
                    }
                    if breaks.windows(2).any(|w| w[0] >= w[1]) {
                        return Err(self.invalid(format!(
                            "level {n}: breakpoints must be strictly increasing"
                        )));
                    }
                }
            }
        }
        for (i, pair) in self.levels.windows(2).enumerate() {
            self.check_coarsening(i + 1, &pair[0], &pair[1])?;
        }
        Ok(())
    }

    fn inside(&self, x: f64) -> bool {
        self.bottom.is_none_or(|b| x > b) && self.top.is_none_or(|t| x < t)
    }

    /// Every boundary of `coarse` (level n + 1) inside the coded range must be a boundary of
    /// `fine` (level n), so each fine bucket lies in one coarse bucket.
    fn check_coarsening(
        &self,
        n: usize,
        fine: &IntervalLevel,
        coarse: &IntervalLevel,
    ) -> Result<()> {
        let not_nested = |detail: String| {
            self.invalid(format!(
                "level {} ({}) is not a coarsening of level {n} ({}): {detail}",
                n + 1,
                coarse.describe(),
                fine.describe()
            ))
        };
        match (fine, coarse) {
            (
                IntervalLevel::Width {
                    width: fw,
                    origin: fo,
                },
                IntervalLevel::Width {
                    width: cw,
                    origin: co,
                },
            ) => {
                if !is_integral(cw / fw) || cw < fw {
                    return Err(not_nested(format!(
                        "width {} is not a multiple of width {}",
                        format_number(*cw),
                        format_number(*fw)
                    )));
                }
                if !is_integral((co - fo) / fw) {
                    return Err(not_nested("the origins are not aligned".to_string()));
                }
            }
            (_, IntervalLevel::Breaks(breaks)) => {
                if let Some(b) = breaks
                    .iter()
                    .find(|&&b| self.inside(b) && !fine.is_boundary(b))
                {
                    return Err(not_nested(format!(
                        "its boundary {} is not a boundary of level {n}",
                        format_number(*b)
                    )));
                }
            }
            (IntervalLevel::Breaks(breaks), IntervalLevel::Width { .. }) => {
                let (Some(bottom), Some(top)) = (self.bottom, self.top) else {
                    return Err(not_nested(
                        "a width level can only follow a breakpoint level when both top and \
                         bottom coding bound the range"
                            .to_string(),
                    ));
                };
                let plan = Plan::new(coarse);
                let (first, last) = (plan.index(bottom), plan.index(top));
                if last - first > breaks.len() as i64 + 1 {
                    return Err(not_nested(format!(
                        "it has more boundaries in the coded range than level {n}"
                    )));
                }
                for k in first..=last + 1 {
                    let b = plan.bounds(k).0;
                    if self.inside(b) && !fine.is_boundary(b) {
                        return Err(not_nested(format!(
                            "its boundary {} is not a boundary of level {n}",
                            format_number(b)
                        )));
                    }
                }
            }
        }
        Ok(())
    }

    /// Recodes `values` at `level` (checked by the caller).
    pub fn generalize(&self, values: &ArrayRef, level: usize) -> Result<ArrayRef> {
        if level == 0 {
            return to_labels(values);
        }
        if level > self.levels.len() {
            return constant_label(values, TOP_LABEL);
        }
        if let Some(out) = through_dictionary(values, |v| self.generalize(v, level))? {
            return Ok(out);
        }
        gather_labels(&self.generalize_to_dictionary(values, level)?)
    }

    /// The labels of `values` (plain, not a dictionary) at a bucket level (1 ..= the bucket
    /// levels) as a dictionary: each row's label id and each label once, what
    /// [`IntervalHierarchy::generalize`] gathers (builders of hierarchy files use it to handle
    /// each label once).
    pub fn generalize_to_dictionary(
        &self,
        values: &ArrayRef,
        level: usize,
    ) -> Result<DictionaryArray<UInt32Type>> {
        if level == 0 || level > self.levels.len() {
            return Err(DataFusionError::Internal(format!(
                "level {level} is not a bucket level (1 to {})",
                self.levels.len()
            )));
        }
        if !accepts(values.data_type()) || values.as_any_dictionary_opt().is_some() {
            return Err(DataFusionError::Plan(format!(
                "an interval hierarchy needs a numeric column, not {}",
                values.data_type()
            )));
        }
        let spec = Plan::new(&self.levels[level - 1]);
        let (bottom_code, top_code) = self.coded(&spec);
        let code_of = |v: f64| {
            if v.is_nan() {
                NAN_CODE
            } else if self.bottom.is_some_and(|b| v < b) {
                bottom_code
            } else if self.top.is_some_and(|t| v >= t) {
                top_code
            } else if v.is_infinite() {
                if v > 0.0 { POS_INF_CODE } else { NEG_INF_CODE }
            } else {
                spec.index(v)
            }
        };
        let label = |code| self.label(&spec, code, bottom_code, top_code);
        if let Some(codes) = integer_codes(values, &code_of)? {
            return label_codes_dictionary(&codes, values.nulls(), label);
        }
        let numbers = cast(values, &DataType::Float64)?;
        let numbers = numbers.as_primitive::<Float64Type>();
        let codes: Vec<i64> = numbers.values().iter().map(|&v| code_of(v)).collect();
        label_codes_dictionary(&codes, numbers.nulls(), label)
    }
}

/// The codes of the valid rows of an integer column whose values span a small range: each
/// value of the range is coded once (as the Float64 it casts to, so exactly as the general
/// path codes it) and the rows look their code up, instead of a division, a floor and two
/// roundings per row. `None` for other columns.
fn integer_codes(values: &ArrayRef, code_of: &impl Fn(f64) -> i64) -> Result<Option<Vec<i64>>> {
    if !values.data_type().is_integer() || values.is_empty() {
        return Ok(None);
    }
    let wide = cast(values, &DataType::Int64)?;
    // a u64 beyond i64 does not cast: leave such columns to the general path
    if wide.null_count() != values.null_count() {
        return Ok(None);
    }
    let wide = wide.as_primitive::<datafusion::arrow::datatypes::Int64Type>();
    let (Some(min), Some(max)) = (
        datafusion::arrow::compute::min(wide),
        datafusion::arrow::compute::max(wide),
    ) else {
        return Ok(None);
    };
    let span = max as i128 - min as i128;
    if span >= 4096.max(wide.len() as i128) {
        return Ok(None);
    }
    let table: Vec<i64> = (0..=span as i64)
        .map(|d| code_of((min + d) as f64))
        .collect();
    // null rows hold arbitrary values: clamp them into the table (their code is ignored)
    Ok(Some(
        wide.values()
            .iter()
            .map(|&v| table[(v.clamp(min, max) - min) as usize])
            .collect(),
    ))
}

impl IntervalHierarchy {
    /// The bounds `[lo, hi)` of the bucket of finite value `v` at bucket level `level` (1 ..=
    /// the bucket levels): the bounds its label names, clipped to the bottom and top coding
    /// (`< b` is `(-inf, b)`, `>= t` is `[t, inf)`), infinite for the outer buckets of
    /// breakpoints.
    pub fn bucket_bounds(&self, level: usize, v: f64) -> (f64, f64) {
        if let Some(b) = self.bottom.filter(|&b| v < b) {
            return (f64::NEG_INFINITY, b);
        }
        if let Some(t) = self.top.filter(|&t| v >= t) {
            return (t, f64::INFINITY);
        }
        let plan = Plan::new(&self.levels[level - 1]);
        let (mut lo, mut hi) = plan.bounds(plan.index(v));
        if let Some(b) = self.bottom {
            lo = lo.max(b);
        }
        if let Some(t) = self.top {
            hi = hi.min(t);
        }
        (lo, hi)
    }

    /// The codes of bottom- and top-coded values at this level: next to the regular buckets'
    /// codes, so the code range stays small.
    fn coded(&self, spec: &Plan) -> (i64, i64) {
        let bottom = self.bottom.map_or(NAN_CODE, |b| spec.index(b) - 1);
        let top = self.top.map_or(NAN_CODE, |t| spec.index(t) + 1);
        (bottom, top)
    }

    fn label(&self, spec: &Plan, code: i64, bottom_code: i64, top_code: i64) -> String {
        match code {
            NAN_CODE => "NaN".to_string(),
            NEG_INF_CODE => "-inf".to_string(),
            POS_INF_CODE => "inf".to_string(),
            _ if self.bottom.is_some() && code == bottom_code => {
                format!("< {}", format_number(self.bottom.unwrap_or_default()))
            }
            _ if self.top.is_some() && code == top_code => {
                format!(">= {}", format_number(self.top.unwrap_or_default()))
            }
            _ => {
                let (mut lo, mut hi) = spec.bounds(code);
                if let Some(b) = self.bottom {
                    lo = lo.max(b);
                }
                if let Some(t) = self.top {
                    hi = hi.min(t);
                }
                if lo == f64::NEG_INFINITY {
                    format!("< {}", format_number(hi))
                } else if hi == f64::INFINITY {
                    format!(">= {}", format_number(lo))
                } else {
                    format!("[{}, {})", format_number(lo), format_number(hi))
                }
            }
        }
    }
}

/// Whether an interval hierarchy accepts a column of this type.
pub fn accepts(data_type: &DataType) -> bool {
    is_number(data_type) || data_type == &DataType::Null
}

/// `[lo, lo + width)` with `lo` the multiple of `width` at or below each value (the SQL
/// function `bucket`). Numeric input, Utf8View output, NULL stays NULL.
pub fn bucket_values(values: &ArrayRef, width: f64) -> Result<ArrayRef> {
    IntervalHierarchy::widths(&[width])?.generalize(values, 1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::{Decimal128Array, Float64Array, Int32Array, Int64Array};
    use std::sync::Arc;

    fn strings(a: &ArrayRef) -> Vec<Option<&str>> {
        assert_eq!(a.data_type(), &DataType::Utf8View);
        a.as_string_view().iter().collect()
    }

    /// The bounds of a value's bucket are those its label names: `[lo, hi)`, `< b` as
    /// (-inf, b), `>= t` as [t, inf), on random values of hierarchies with coding, widths,
    /// origins and breakpoints; and each value lies in its bounds.
    #[test]
    fn bucket_bounds_are_the_labels_bounds() {
        let mut rng = crate::rng::SplitMix64(5);
        let hierarchies = [
            IntervalHierarchy::widths(&[5.0, 10.0, 20.0])
                .unwrap()
                .with_bottom_coding(-20.0)
                .unwrap()
                .with_top_coding(90.0)
                .unwrap(),
            IntervalHierarchy::new(
                vec![
                    IntervalLevel::Width {
                        width: 2.5,
                        origin: 1.0,
                    },
                    IntervalLevel::Breaks(vec![-4.0, 1.0, 6.0]),
                ],
                None,
                None,
            )
            .unwrap(),
            IntervalHierarchy::widths(&[0.1, 0.5]).unwrap(),
        ];
        for h in &hierarchies {
            let values: Vec<f64> = (0..300)
                .map(|_| (rng.below(2400) as f64 - 1200.0) / 10.0)
                .collect();
            let array: ArrayRef = Arc::new(Float64Array::from(values.clone()));
            for level in 1..=h.levels().len() {
                let labels = h.generalize(&array, level).unwrap();
                for (v, label) in values.iter().zip(strings(&labels)) {
                    let (lo, hi) = h.bucket_bounds(level, *v);
                    let expected = if lo == f64::NEG_INFINITY {
                        format!("< {}", format_number(hi))
                    } else if hi == f64::INFINITY {
                        format!(">= {}", format_number(lo))
                    } else {
                        format!("[{}, {})", format_number(lo), format_number(hi))
                    };
                    assert_eq!(label, Some(expected.as_str()), "{v} at level {level}");
                    assert!(lo <= *v && *v < hi, "{v} in [{lo}, {hi})");
                }
            }
        }
    }

    #[test]
    fn integer_columns_code_like_their_float_values() {
        // the integer path (a table over the batch's range) against the general Float64
        // path, on random integers with NULLs around bottom and top coding, negative values,
        // odd origins and breakpoints; and a range too wide for a table
        let mut rng = crate::rng::SplitMix64(11);
        let hierarchies = [
            IntervalHierarchy::widths(&[5.0, 10.0, 20.0, 40.0])
                .unwrap()
                .with_bottom_coding(-20.0)
                .unwrap()
                .with_top_coding(90.0)
                .unwrap(),
            IntervalHierarchy::new(
                vec![
                    IntervalLevel::Width {
                        width: 2.5,
                        origin: 1.0,
                    },
                    IntervalLevel::Breaks(vec![-4.0, 1.0, 6.0]),
                ],
                None,
                None,
            )
            .unwrap(),
        ];
        for (span, len) in [(130i64, 500usize), (1 << 40, 50)] {
            let values: Vec<Option<i64>> = (0..len)
                .map(|_| (rng.below(10) > 0).then(|| rng.below(span as u64 + 1) as i64 - span / 3))
                .collect();
            let ints: ArrayRef = Arc::new(Int64Array::from(values.clone()));
            let small: ArrayRef = Arc::new(Int32Array::from(
                values
                    .iter()
                    .map(|v| v.map(|v| v.clamp(i32::MIN as i64, i32::MAX as i64) as i32))
                    .collect::<Vec<_>>(),
            ));
            for h in &hierarchies {
                for level in 1..h.height() {
                    for column in [&ints, &small] {
                        let floats = cast(column, &DataType::Float64).unwrap();
                        let want = h.generalize(&floats, level).unwrap();
                        let got = h.generalize(column, level).unwrap();
                        assert_eq!(strings(&got), strings(&want), "level {level}");
                    }
                }
            }
        }
    }

    #[test]
    fn widths_grow_per_level() {
        let h = IntervalHierarchy::widths(&[5.0, 10.0, 20.0, 40.0]).unwrap();
        assert_eq!(h.height(), 6);
        let ages: ArrayRef = Arc::new(Int64Array::from(vec![Some(39), None, Some(0), Some(40)]));
        // by hand: 39 is in [35, 40) (w 5), [30, 40) (w 10), [20, 40) (w 20), [0, 40) (w 40);
        // 40 starts its buckets: [40, 45), [40, 50), [40, 60), [40, 80)
        let want: [[Option<&str>; 4]; 6] = [
            [Some("39"), None, Some("0"), Some("40")],
            [Some("[35, 40)"), None, Some("[0, 5)"), Some("[40, 45)")],
            [Some("[30, 40)"), None, Some("[0, 10)"), Some("[40, 50)")],
            [Some("[20, 40)"), None, Some("[0, 20)"), Some("[40, 60)")],
            [Some("[0, 40)"), None, Some("[0, 40)"), Some("[40, 80)")],
            [Some("*"), None, Some("*"), Some("*")],
        ];
        for (level, w) in want.iter().enumerate() {
            assert_eq!(strings(&h.generalize(&ages, level).unwrap()), w.to_vec());
        }
    }

    #[test]
    fn negative_values_and_fractions() {
        let v: ArrayRef = Arc::new(Float64Array::from(vec![-0.5, 0.3, 2.0, f64::NAN]));
        // -0.5 is in [-1, 0) for width 1; 0.3 in [0.3, 0.4) for width 0.1 (not [0.2, 0.3) as
        // 0.3 / 0.1 = 2.9999999999999996 would suggest)
        assert_eq!(
            strings(&bucket_values(&v, 1.0).unwrap()),
            vec![Some("[-1, 0)"), Some("[0, 1)"), Some("[2, 3)"), Some("NaN")]
        );
        assert_eq!(
            strings(&bucket_values(&v, 0.1).unwrap()),
            vec![
                Some("[-0.5, -0.4)"),
                Some("[0.3, 0.4)"),
                Some("[2, 2.1)"),
                Some("NaN")
            ]
        );
        let inf: ArrayRef = Arc::new(Float64Array::from(vec![f64::INFINITY, f64::NEG_INFINITY]));
        assert_eq!(
            strings(&bucket_values(&inf, 10.0).unwrap()),
            vec![Some("inf"), Some("-inf")]
        );
    }

    #[test]
    fn top_and_bottom_coding_clip_buckets() {
        let h = IntervalHierarchy::widths(&[5.0, 10.0])
            .unwrap()
            .with_bottom_coding(18.0)
            .unwrap()
            .with_top_coding(90.0)
            .unwrap();
        let ages: ArrayRef = Arc::new(Int32Array::from(vec![17, 18, 19, 20, 89, 90, 95]));
        // by hand, width 5: 17 < 18; 18 and 19 in [15, 20) clipped to [18, 20); 20 [20, 25);
        // 89 [85, 90); 90 and 95 >= 90
        assert_eq!(
            strings(&h.generalize(&ages, 1).unwrap()),
            vec![
                Some("< 18"),
                Some("[18, 20)"),
                Some("[18, 20)"),
                Some("[20, 25)"),
                Some("[85, 90)"),
                Some(">= 90"),
                Some(">= 90")
            ]
        );
        // width 10: [10, 20) clipped to [18, 20); [80, 90)
        assert_eq!(
            strings(&h.generalize(&ages, 2).unwrap()),
            vec![
                Some("< 18"),
                Some("[18, 20)"),
                Some("[18, 20)"),
                Some("[20, 30)"),
                Some("[80, 90)"),
                Some(">= 90"),
                Some(">= 90")
            ]
        );
    }

    #[test]
    fn explicit_breakpoints() {
        let h = IntervalHierarchy::breaks(vec![vec![18.0, 25.0, 50.0, 65.0], vec![25.0, 65.0]])
            .unwrap();
        assert_eq!(h.height(), 4);
        let ages: ArrayRef = Arc::new(Int64Array::from(vec![10, 18, 30, 64, 65, 99]));
        assert_eq!(
            strings(&h.generalize(&ages, 1).unwrap()),
            vec![
                Some("< 18"),
                Some("[18, 25)"),
                Some("[25, 50)"),
                Some("[50, 65)"),
                Some(">= 65"),
                Some(">= 65")
            ]
        );
        assert_eq!(
            strings(&h.generalize(&ages, 2).unwrap()),
            vec![
                Some("< 25"),
                Some("< 25"),
                Some("[25, 65)"),
                Some("[25, 65)"),
                Some(">= 65"),
                Some(">= 65")
            ]
        );
    }

    #[test]
    fn decimals_and_width_then_breaks() {
        let h = IntervalHierarchy::new(
            vec![
                IntervalLevel::width(10.0),
                IntervalLevel::Breaks(vec![50.0]),
            ],
            None,
            None,
        )
        .unwrap();
        let money: ArrayRef = Arc::new(
            Decimal128Array::from(vec![Some(4_999), Some(12_345), None])
                .with_precision_and_scale(10, 2)
                .unwrap(),
        );
        // 49.99 → [40, 50) → < 50; 123.45 → [120, 130) → >= 50
        assert_eq!(
            strings(&h.generalize(&money, 1).unwrap()),
            vec![Some("[40, 50)"), Some("[120, 130)"), None]
        );
        assert_eq!(
            strings(&h.generalize(&money, 2).unwrap()),
            vec![Some("< 50"), Some(">= 50"), None]
        );
    }

    #[test]
    fn levels_must_nest() {
        let e = IntervalHierarchy::widths(&[10.0, 15.0])
            .unwrap_err()
            .to_string();
        assert!(e.contains("width 15 is not a multiple of width 10"), "{e}");
        let e = IntervalHierarchy::breaks(vec![vec![10.0, 20.0], vec![15.0]])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("boundary 15 is not a boundary of level 1"),
            "{e}"
        );
        assert!(IntervalHierarchy::widths(&[0.0]).is_err());
        assert!(IntervalHierarchy::breaks(vec![vec![2.0, 1.0]]).is_err());
        assert!(
            IntervalHierarchy::widths(&[5.0])
                .unwrap()
                .with_bottom_coding(10.0)
                .unwrap()
                .with_top_coding(5.0)
                .is_err()
        );
        // a width level after breakpoints needs a bounded range whose boundaries it keeps
        assert!(IntervalHierarchy::breaks(vec![vec![10.0, 20.0]]).is_ok());
        assert!(
            IntervalHierarchy::new(
                vec![
                    IntervalLevel::Breaks(vec![10.0, 20.0, 30.0]),
                    IntervalLevel::width(20.0)
                ],
                Some(0.0),
                Some(40.0)
            )
            .is_ok()
        );
        assert!(
            IntervalHierarchy::new(
                vec![
                    IntervalLevel::Breaks(vec![10.0, 30.0]),
                    IntervalLevel::width(20.0)
                ],
                None,
                None
            )
            .is_err()
        );
    }
}
