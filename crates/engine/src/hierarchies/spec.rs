//! What a hierarchy builder is asked for ([`BuilderSpec`]): the kind and its parameters, as
//! the command line and Python give them ([`BuilderOptions`]), checked before any data is
//! read.

use datafusion::arrow::datatypes::DataType;
use datafusion::error::{DataFusionError, Result};

use crate::generalize::common::{is_integer, is_number, is_string, is_temporal};
use crate::generalize::{DateHierarchy, DateUnit, IntervalHierarchy, IntervalLevel};

/// A builder and its parameters.
#[derive(Debug, Clone, PartialEq)]
pub enum BuilderSpec {
    /// Fixed-width intervals from `origin`, one level per width.
    Interval { widths: Vec<f64>, origin: f64 },
    /// Intervals of at least `min_sizes[i]` rows at level i + 1.
    Quantile { min_sizes: Vec<u64> },
    /// Prefixes of `keep[i]` characters at level i + 1 (`None`: every length, longest first).
    Prefix { keep: Option<Vec<usize>> },
    /// Calendar units, finest first.
    Date { units: Vec<DateUnit> },
    /// Rare groups merged until each holds at least `min_sizes[i]` rows at level i + 1.
    Category { min_sizes: Vec<u64> },
}

/// A builder as a shell's options give it: the kind's name and whichever parameters were
/// given (`None`: not given).
#[derive(Debug, Clone, Default)]
pub struct BuilderOptions {
    pub kind: String,
    pub widths: Option<Vec<f64>>,
    pub origin: Option<f64>,
    pub min_size: Option<Vec<u64>>,
    pub keep: Option<Vec<usize>>,
    pub units: Option<Vec<String>>,
}

impl BuilderSpec {
    /// The builder `options` ask for; a parameter of another kind is an error (so that a
    /// typo does not silently build something else).
    pub fn from_options(options: BuilderOptions) -> Result<Self> {
        let given: Vec<&str> = [
            ("widths", options.widths.is_some()),
            ("origin", options.origin.is_some()),
            ("min-size", options.min_size.is_some()),
            ("keep", options.keep.is_some()),
            ("units", options.units.is_some()),
        ]
        .into_iter()
        .filter_map(|(name, set)| set.then_some(name))
        .collect();
        let (spec, allowed): (BuilderSpec, &[&str]) = match options.kind.as_str() {
            "interval" => (
                BuilderSpec::Interval {
                    widths: options.widths.unwrap_or_default(),
                    origin: options.origin.unwrap_or(0.0),
                },
                &["widths", "origin"],
            ),
            "quantile" => (
                BuilderSpec::Quantile {
                    min_sizes: options.min_size.unwrap_or_default(),
                },
                &["min-size"],
            ),
            "prefix" => (BuilderSpec::Prefix { keep: options.keep }, &["keep"]),
            "date" => (
                BuilderSpec::Date {
                    units: options
                        .units
                        .unwrap_or_default()
                        .iter()
                        .map(|u| DateUnit::from_name(u.trim()))
                        .collect::<Result<_>>()?,
                },
                &["units"],
            ),
            "category" => (
                BuilderSpec::Category {
                    min_sizes: options.min_size.unwrap_or_default(),
                },
                &["min-size"],
            ),
            other => {
                return Err(DataFusionError::Plan(format!(
                    "unknown hierarchy kind '{other}' (interval, quantile, prefix, date or \
                     category)"
                )));
            }
        };
        if let Some(name) = given.iter().find(|name| !allowed.contains(name)) {
            return Err(DataFusionError::Plan(format!(
                "{name} does not apply to kind {} (it takes {})",
                spec.kind(),
                allowed.join(", ")
            )));
        }
        spec.check()?;
        Ok(spec)
    }

    /// The kind's name (`--kind`).
    pub fn kind(&self) -> &'static str {
        match self {
            BuilderSpec::Interval { .. } => "interval",
            BuilderSpec::Quantile { .. } => "quantile",
            BuilderSpec::Prefix { .. } => "prefix",
            BuilderSpec::Date { .. } => "date",
            BuilderSpec::Category { .. } => "category",
        }
    }

    /// What the kind needs of the column, for the error on a column it does not fit.
    pub(super) fn needs(&self) -> &'static str {
        match self {
            BuilderSpec::Interval { .. } | BuilderSpec::Quantile { .. } => {
                "a numeric column (integer, float or decimal); for text use kind prefix or \
                 category"
            }
            BuilderSpec::Prefix { .. } => "a text or integer column",
            BuilderSpec::Date { .. } => {
                "a date or timestamp column (text is not parsed: read the dates as dates)"
            }
            BuilderSpec::Category { .. } => "a text, numeric, boolean or temporal column",
        }
    }

    pub(super) fn accepts(&self, data_type: &DataType) -> bool {
        match self {
            BuilderSpec::Interval { .. } | BuilderSpec::Quantile { .. } => is_number(data_type),
            BuilderSpec::Prefix { .. } => is_string(data_type) || is_integer(data_type),
            BuilderSpec::Date { .. } => is_temporal(data_type),
            BuilderSpec::Category { .. } => crate::generalize::tree::accepts(data_type),
        }
    }

    /// Checks the parameters alone (before any data is read); errors name the option.
    pub fn check(&self) -> Result<()> {
        let plan = |m: String| Err(DataFusionError::Plan(m));
        match self {
            BuilderSpec::Interval { widths, origin } => {
                if widths.is_empty() {
                    return plan("kind interval needs widths (e.g. 5,10,20)".into());
                }
                interval_of(widths, *origin).map(|_| ())
            }
            BuilderSpec::Quantile { min_sizes } | BuilderSpec::Category { min_sizes } => {
                if min_sizes.is_empty() {
                    return plan(format!(
                        "kind {} needs min-size (rows per class at each level, \
                         increasing, e.g. 100,1000)",
                        self.kind()
                    ));
                }
                if min_sizes[0] < 2 || min_sizes.windows(2).any(|w| w[1] <= w[0]) {
                    return plan(
                        "min-size takes increasing sizes of at least 2 (one per level)".into(),
                    );
                }
                Ok(())
            }
            BuilderSpec::Prefix { keep: Some(keep) } => {
                if keep.is_empty() || keep.contains(&0) || keep.windows(2).any(|w| w[1] >= w[0]) {
                    return plan(
                        "keep takes decreasing prefix lengths of at least 1 (e.g. 3,1)".into(),
                    );
                }
                Ok(())
            }
            BuilderSpec::Prefix { keep: None } => Ok(()),
            BuilderSpec::Date { units } => {
                if units.is_empty() {
                    return plan("kind date needs units (e.g. month,year)".into());
                }
                DateHierarchy::new(units.clone()).map(|_| ())
            }
        }
    }
}

/// The interval hierarchy of fixed `widths` from `origin`.
pub(super) fn interval_of(widths: &[f64], origin: f64) -> Result<IntervalHierarchy> {
    let levels = widths
        .iter()
        .map(|&width| IntervalLevel::Width { width, origin })
        .collect();
    IntervalHierarchy::new(levels, None, None)
}
