//! Date hierarchies: level 0 is the value itself (cast to text: `2024-03-15`, or
//! `2024-03-15T10:30:00` for a timestamp), each further level truncates to a coarser calendar
//! unit, the top level is `*`.
//!
//! | unit | label | example for 2024-03-15 |
//! |---|---|---|
//! | `day` | `YYYY-MM-DD` | `2024-03-15` |
//! | `week` | ISO 8601 week, `YYYY-Www` (the ISO week-numbering year) | `2024-W11` |
//! | `month` | `YYYY-MM` | `2024-03` |
//! | `quarter` | `YYYY-Qn` | `2024-Q1` |
//! | `year` | `YYYY` | `2024` |
//! | `decade` | `YYY0s` | `2020s` |
//!
//! Labels sort as the periods they name (within one unit, for years 0 to 9999). A hierarchy's
//! units must nest: day → week | month | quarter | year | decade, month → quarter | year |
//! decade, quarter → year | decade, year → decade. ISO weeks straddle months and years
//! (2024-12-30 is in 2025-W01), so a week level can only be followed by the top level.
//!
//! Input: Date32, Date64, timestamps of any unit (the calendar day of a timestamp with a time
//! zone is the day in that zone), and dictionaries of them. Output: Utf8View. NULL stays NULL.

use std::fmt;

use datafusion::arrow::array::{Array, ArrayRef, AsArray};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{
    DataType, Date32Type, Date64Type, TimeUnit, TimestampMicrosecondType, TimestampMillisecondType,
    TimestampNanosecondType, TimestampSecondType,
};
use datafusion::error::{DataFusionError, Result};

use super::common::{
    TOP_LABEL, constant_label, is_temporal, label_codes, through_dictionary, to_labels,
};

/// A calendar unit a date is truncated to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DateUnit {
    Day,
    Week,
    Month,
    Quarter,
    Year,
    Decade,
}

impl DateUnit {
    /// Every unit, finest first.
    pub const ALL: [DateUnit; 6] = [
        DateUnit::Day,
        DateUnit::Week,
        DateUnit::Month,
        DateUnit::Quarter,
        DateUnit::Year,
        DateUnit::Decade,
    ];

    /// The unit's name as used in SQL and policies (`day`, `week`, `month`, `quarter`, `year`,
    /// `decade`).
    pub fn name(self) -> &'static str {
        match self {
            DateUnit::Day => "day",
            DateUnit::Week => "week",
            DateUnit::Month => "month",
            DateUnit::Quarter => "quarter",
            DateUnit::Year => "year",
            DateUnit::Decade => "decade",
        }
    }

    /// The unit named `name` (case-insensitive).
    pub fn from_name(name: &str) -> Result<Self> {
        Self::ALL
            .into_iter()
            .find(|u| u.name().eq_ignore_ascii_case(name.trim()))
            .ok_or_else(|| {
                DataFusionError::Plan(format!(
                    "unknown date unit '{name}': expected one of day, week, month, quarter, \
                     year, decade"
                ))
            })
    }

    /// Whether every period of `self` lies inside one period of `coarser`.
    pub fn nests_in(self, coarser: DateUnit) -> bool {
        use DateUnit::*;
        match self {
            Day => coarser != Day,
            Week => false,
            Month => matches!(coarser, Quarter | Year | Decade),
            Quarter => matches!(coarser, Year | Decade),
            Year => coarser == Decade,
            Decade => false,
        }
    }

    /// The period code of day `days` (since 1970-01-01): equal codes, equal labels.
    #[inline]
    fn code(self, days: i64) -> i64 {
        match self {
            DateUnit::Day => days,
            // 1970-01-01 is a Thursday; an ISO week is named after the year of its Thursday
            DateUnit::Week => iso_thursday(days).div_euclid(7),
            _ => {
                let (y, m, _) = civil_from_days(days);
                match self {
                    DateUnit::Month => y * 12 + (m - 1),
                    DateUnit::Quarter => y * 4 + (m - 1) / 3,
                    DateUnit::Year => y,
                    _ => y.div_euclid(10),
                }
            }
        }
    }

    /// The period of day `days` (since 1970-01-01): its first day and the first day of the
    /// next period (the labels of [`Self::code`] name exactly these days).
    pub fn period(self, days: i64) -> (i64, i64) {
        let (y, m, _) = civil_from_days(days);
        let month_start = |y: i64, m: i64| {
            // month m of year y, m possibly past December
            days_from_civil(y + (m - 1).div_euclid(12), (m - 1).rem_euclid(12) + 1, 1)
        };
        match self {
            DateUnit::Day => (days, days + 1),
            DateUnit::Week => {
                let monday = iso_thursday(days) - 3;
                (monday, monday + 7)
            }
            DateUnit::Month => (month_start(y, m), month_start(y, m + 1)),
            DateUnit::Quarter => {
                let first = (m - 1) / 3 * 3 + 1;
                (month_start(y, first), month_start(y, first + 3))
            }
            DateUnit::Year => (days_from_civil(y, 1, 1), days_from_civil(y + 1, 1, 1)),
            DateUnit::Decade => {
                let first = y.div_euclid(10) * 10;
                (
                    days_from_civil(first, 1, 1),
                    days_from_civil(first + 10, 1, 1),
                )
            }
        }
    }

    fn label(self, code: i64) -> String {
        match self {
            DateUnit::Day => {
                let (y, m, d) = civil_from_days(code);
                format!("{y:04}-{m:02}-{d:02}")
            }
            DateUnit::Week => {
                let thursday = code * 7;
                let (year, _, _) = civil_from_days(thursday);
                let week = (thursday - days_from_civil(year, 1, 1)) / 7 + 1;
                format!("{year:04}-W{week:02}")
            }
            DateUnit::Month => format!("{:04}-{:02}", code.div_euclid(12), code.rem_euclid(12) + 1),
            DateUnit::Quarter => format!("{:04}-Q{}", code.div_euclid(4), code.rem_euclid(4) + 1),
            DateUnit::Year => format!("{code:04}"),
            DateUnit::Decade => format!("{}s", code * 10),
        }
    }
}

impl fmt::Display for DateUnit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The Thursday of the ISO week (Monday to Sunday) of day `days`.
fn iso_thursday(days: i64) -> i64 {
    let weekday = (days + 3).rem_euclid(7); // Monday 0 … Sunday 6
    days - weekday + 3
}

/// Year, month (1-12), day (1-31) of day `z` since 1970-01-01 (proleptic Gregorian; H. Hinnant's
/// `civil_from_days`).
fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

/// Days since 1970-01-01 of a date (inverse of [`civil_from_days`]).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let mp = if m > 2 { m - 3 } else { m + 9 };
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// A date hierarchy: level 0 the value, levels 1 ..= n the units, level n + 1 `*`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct DateHierarchy {
    units: Vec<DateUnit>,
}

impl DateHierarchy {
    /// A hierarchy over these units (finest first), e.g. `[Month, Year, Decade]`; they must
    /// nest (see the module documentation).
    pub fn new(units: Vec<DateUnit>) -> Result<Self> {
        for pair in units.windows(2) {
            if !pair[0].nests_in(pair[1]) {
                let why = if pair[0] == DateUnit::Week {
                    " (ISO weeks straddle months and years: a week level can only be followed \
                     by the top level)"
                } else {
                    ""
                };
                return Err(DataFusionError::Plan(format!(
                    "invalid date hierarchy: '{}' cannot follow '{}'{why}",
                    pair[1], pair[0]
                )));
            }
        }
        Ok(Self { units })
    }

    /// A hierarchy over units given by name (`["month", "year", "decade"]`).
    pub fn from_names<S: AsRef<str>>(names: &[S]) -> Result<Self> {
        Self::new(
            names
                .iter()
                .map(|n| DateUnit::from_name(n.as_ref()))
                .collect::<Result<_>>()?,
        )
    }

    /// The units of levels 1 ..= n.
    pub fn units(&self) -> &[DateUnit] {
        &self.units
    }

    /// Levels including level 0 and the top `*`: units + 2.
    pub fn height(&self) -> usize {
        self.units.len() + 2
    }

    /// Recodes `values` at `level` (checked by the caller).
    pub fn generalize(&self, values: &ArrayRef, level: usize) -> Result<ArrayRef> {
        if level == 0 {
            return to_labels(values);
        }
        match self.units.get(level - 1) {
            Some(&unit) => truncate_dates(values, unit),
            None => constant_label(values, TOP_LABEL),
        }
    }
}

/// Whether a date hierarchy accepts a column of this type.
pub fn accepts(data_type: &DataType) -> bool {
    is_temporal(data_type) || data_type == &DataType::Null
}

/// Each date or timestamp as the label of its `unit` period (the SQL function
/// `generalize_date`). Output Utf8View, NULL stays NULL.
pub fn truncate_dates(values: &ArrayRef, unit: DateUnit) -> Result<ArrayRef> {
    if let Some(out) = through_dictionary(values, |v| truncate_dates(v, unit))? {
        return Ok(out);
    }
    let days = days_since_epoch(values)?;
    let codes: Vec<i64> = days.iter().map(|&d| unit.code(d)).collect();
    label_codes(&codes, values.logical_nulls().as_ref(), |c| unit.label(c))
}

/// Days since 1970-01-01 of every row (anything for null rows).
fn days_since_epoch(values: &ArrayRef) -> Result<Vec<i64>> {
    const DAY_SECONDS: i64 = 86_400;
    let per_day = |unit: &TimeUnit| match unit {
        TimeUnit::Second => DAY_SECONDS,
        TimeUnit::Millisecond => DAY_SECONDS * 1_000,
        TimeUnit::Microsecond => DAY_SECONDS * 1_000_000,
        TimeUnit::Nanosecond => DAY_SECONDS * 1_000_000_000,
    };
    let by_division = |values: &[i64], per_day: i64| -> Vec<i64> {
        values.iter().map(|v| v.div_euclid(per_day)).collect()
    };
    Ok(match values.data_type() {
        DataType::Null => vec![0; values.len()],
        DataType::Date32 => values
            .as_primitive::<Date32Type>()
            .values()
            .iter()
            .map(|&d| i64::from(d))
            .collect(),
        DataType::Date64 => by_division(
            values.as_primitive::<Date64Type>().values(),
            DAY_SECONDS * 1_000,
        ),
        DataType::Timestamp(unit, None) => {
            let raw: &[i64] = match unit {
                TimeUnit::Second => values.as_primitive::<TimestampSecondType>().values(),
                TimeUnit::Millisecond => values.as_primitive::<TimestampMillisecondType>().values(),
                TimeUnit::Microsecond => values.as_primitive::<TimestampMicrosecondType>().values(),
                TimeUnit::Nanosecond => values.as_primitive::<TimestampNanosecondType>().values(),
            };
            by_division(raw, per_day(unit))
        }
        DataType::Timestamp(_, Some(_)) => {
            // the local calendar day: Arrow's cast applies the time zone
            let dates = cast(values, &DataType::Date32)?;
            dates
                .as_primitive::<Date32Type>()
                .values()
                .iter()
                .map(|&d| i64::from(d))
                .collect()
        }
        other => {
            return Err(DataFusionError::Plan(format!(
                "a date hierarchy needs a Date32, Date64 or Timestamp column, not {other}"
            )));
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::{
        Date32Array, Date64Array, TimestampMillisecondArray, TimestampSecondArray,
    };
    use std::sync::Arc;

    fn strings(a: &ArrayRef) -> Vec<Option<&str>> {
        assert_eq!(a.data_type(), &DataType::Utf8View);
        a.as_string_view().iter().collect()
    }

    fn day(y: i64, m: i64, d: i64) -> i32 {
        days_from_civil(y, m, d) as i32
    }

    #[test]
    fn calendar_arithmetic() {
        assert_eq!(days_from_civil(1970, 1, 1), 0);
        assert_eq!(days_from_civil(2000, 3, 1), 11_017);
        for z in [-800_000, -1, 0, 59, 11_016, 19_797, 2_932_896] {
            let (y, m, d) = civil_from_days(z);
            assert_eq!(days_from_civil(y, m, d), z);
        }
        assert_eq!(civil_from_days(-1), (1969, 12, 31));
    }

    /// Every unit's period of 2024-02-29 (a Thursday of ISO week 9) by hand, and every day of
    /// three years against the codes: a period's days are exactly those of one code.
    #[test]
    fn periods_by_hand_and_against_codes() {
        let leap = days_from_civil(2024, 2, 29);
        let want = [
            (DateUnit::Day, (2024, 2, 29), (2024, 3, 1)),
            (DateUnit::Week, (2024, 2, 26), (2024, 3, 4)),
            (DateUnit::Month, (2024, 2, 1), (2024, 3, 1)),
            (DateUnit::Quarter, (2024, 1, 1), (2024, 4, 1)),
            (DateUnit::Year, (2024, 1, 1), (2025, 1, 1)),
            (DateUnit::Decade, (2020, 1, 1), (2030, 1, 1)),
        ];
        for (unit, (y0, m0, d0), (y1, m1, d1)) in want {
            assert_eq!(
                unit.period(leap),
                (days_from_civil(y0, m0, d0), days_from_civil(y1, m1, d1)),
                "{unit}"
            );
        }
        for unit in DateUnit::ALL {
            for day in days_from_civil(1969, 6, 1)..days_from_civil(1972, 6, 1) {
                let (start, end) = unit.period(day);
                assert!(start <= day && day < end, "{unit} {day}");
                assert_eq!(unit.code(start), unit.code(day), "{unit} {day}");
                assert_ne!(unit.code(start - 1), unit.code(day), "{unit} {day}");
                assert_eq!(unit.code(end - 1), unit.code(day), "{unit} {day}");
                assert_ne!(unit.code(end), unit.code(day), "{unit} {day}");
            }
        }
    }

    #[test]
    fn every_unit_by_hand() {
        // 2024-03-15 is a Friday of ISO week 11 (week 1 of 2024 starts Monday 2024-01-01);
        // 2024-12-30 (a Monday) belongs to 2025-W01; 2021-01-03 (a Sunday) to 2020-W53
        let dates: ArrayRef = Arc::new(Date32Array::from(vec![
            Some(day(2024, 3, 15)),
            None,
            Some(day(2024, 12, 30)),
            Some(day(2021, 1, 3)),
            Some(day(1969, 12, 31)),
        ]));
        let want = |unit: DateUnit| -> Vec<Option<&str>> {
            match unit {
                DateUnit::Day => vec![
                    Some("2024-03-15"),
                    None,
                    Some("2024-12-30"),
                    Some("2021-01-03"),
                    Some("1969-12-31"),
                ],
                DateUnit::Week => vec![
                    Some("2024-W11"),
                    None,
                    Some("2025-W01"),
                    Some("2020-W53"),
                    Some("1970-W01"),
                ],
                DateUnit::Month => vec![
                    Some("2024-03"),
                    None,
                    Some("2024-12"),
                    Some("2021-01"),
                    Some("1969-12"),
                ],
                DateUnit::Quarter => vec![
                    Some("2024-Q1"),
                    None,
                    Some("2024-Q4"),
                    Some("2021-Q1"),
                    Some("1969-Q4"),
                ],
                DateUnit::Year => {
                    vec![Some("2024"), None, Some("2024"), Some("2021"), Some("1969")]
                }
                DateUnit::Decade => vec![
                    Some("2020s"),
                    None,
                    Some("2020s"),
                    Some("2020s"),
                    Some("1960s"),
                ],
            }
        };
        for unit in DateUnit::ALL {
            assert_eq!(
                strings(&truncate_dates(&dates, unit).unwrap()),
                want(unit),
                "{unit}"
            );
        }
    }

    #[test]
    fn hierarchy_levels_and_timestamps() {
        let h = DateHierarchy::from_names(&["month", "year", "decade"]).unwrap();
        assert_eq!(h.height(), 5);
        // 2024-03-15T23:30:00 UTC
        let ts = days_from_civil(2024, 3, 15) * 86_400 + 23 * 3600 + 1800;
        let values: ArrayRef = Arc::new(TimestampSecondArray::from(vec![Some(ts), None]));
        let want: [[Option<&str>; 2]; 5] = [
            [Some("2024-03-15T23:30:00"), None],
            [Some("2024-03"), None],
            [Some("2024"), None],
            [Some("2020s"), None],
            [Some("*"), None],
        ];
        for (level, w) in want.iter().enumerate() {
            assert_eq!(strings(&h.generalize(&values, level).unwrap()), w.to_vec());
        }
        // the same instant in Tokyo (UTC+9) is already 2024-03-16
        let tokyo: ArrayRef =
            Arc::new(TimestampMillisecondArray::from(vec![ts * 1000]).with_timezone("+09:00"));
        assert_eq!(
            strings(&truncate_dates(&tokyo, DateUnit::Day).unwrap()),
            vec![Some("2024-03-16")]
        );
        // Date64 before the epoch rounds down to its day
        let d64: ArrayRef = Arc::new(Date64Array::from(vec![-1]));
        assert_eq!(
            strings(&truncate_dates(&d64, DateUnit::Day).unwrap()),
            vec![Some("1969-12-31")]
        );
    }

    #[test]
    fn units_must_nest() {
        assert!(DateHierarchy::from_names(&["day", "week"]).is_ok());
        let e = DateHierarchy::from_names(&["week", "year"])
            .unwrap_err()
            .to_string();
        assert!(e.contains("'year' cannot follow 'week'"), "{e}");
        assert!(DateHierarchy::from_names(&["year", "month"]).is_err());
        assert!(DateHierarchy::from_names(&["fortnight"]).is_err());
        assert!(DateUnit::from_name("Quarter").is_ok());
    }
}
