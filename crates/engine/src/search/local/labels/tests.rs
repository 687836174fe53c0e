//! The grid of value-free labels by hand, per hierarchy kind and column type.

use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, AsArray, StringArray};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Date32Type, TimeUnit, TimestampSecondType};

use super::*;
use crate::generalize::{DateUnit, Hierarchy, IntervalHierarchy};

const INF: f64 = f64::INFINITY;

/// Days since 1970-01-01 of `yyyy-mm-dd`, through Arrow's own parser.
fn day(date: &str) -> f64 {
    let text: ArrayRef = Arc::new(StringArray::from(vec![date]));
    let dates = cast(&text, &DataType::Date32).unwrap();
    f64::from(dates.as_primitive::<Date32Type>().value(0))
}

/// Seconds since the epoch of `yyyy-mm-ddThh:mm:ss`, through Arrow's own parser.
fn second(timestamp: &str) -> f64 {
    let text: ArrayRef = Arc::new(StringArray::from(vec![timestamp]));
    let t = cast(&text, &DataType::Timestamp(TimeUnit::Second, None)).unwrap();
    t.as_primitive::<TimestampSecondType>().value(0) as f64
}

fn grid(hierarchy: Hierarchy, data_type: DataType) -> Grid {
    Grid::new(&hierarchy, &data_type).expect("a grid")
}

/// Integer ages with buckets [30, 35), [35, 40), …: a class 31 … 42 covers the cells
/// [30, 35) … [40, 45), i.e. 30 … 44, published `(29, 45)`; a class starting at 30 the same
/// (its cell starts there: the end is 29, the integer before); one ending at 35 reaches 39.
#[test]
fn integer_buckets() {
    let g = grid(
        Hierarchy::interval_widths("age", &[5.0, 10.0]).unwrap(),
        DataType::Int64,
    );
    assert_eq!(g.level(), 1);
    assert_eq!((g.below(31.0), g.above(42.0)), (29.0, 45.0));
    assert_eq!((g.below(30.0), g.above(34.0)), (29.0, 35.0));
    assert_eq!((g.below(34.0), g.above(35.0)), (29.0, 40.0));
    assert_eq!((g.below(-3.0), g.above(-3.0)), (-6.0, 0.0));
    // width 1 holds one integer a bucket (the value itself): the grid is the next level
    let g = grid(
        Hierarchy::interval_widths("age", &[1.0, 5.0]).unwrap(),
        DataType::Int32,
    );
    assert_eq!(g.level(), 2);
    assert_eq!((g.below(31.0), g.above(31.0)), (29.0, 35.0));
    // widths 2.5 from 0 on integers: [0, 2.5) is 0 … 2, [2.5, 5) is 3 … 4
    let g = grid(
        Hierarchy::interval_widths("n", &[2.5]).unwrap(),
        DataType::Int64,
    );
    assert_eq!((g.below(3.0), g.above(2.0)), (2.0, 3.0));
    assert_eq!((g.below(1.0), g.above(4.0)), (-1.0, 5.0));
    // with only width 1 below the top there is no grid
    let h = Hierarchy::interval_widths("age", &[1.0]).unwrap();
    assert!(Grid::new(&h, &DataType::Int64).is_none());
}

/// Floats with buckets of 5: a class from 31.5 publishes from 30 (below it), one from 30.0
/// exactly from 25 (30 would be a member's value); the upper end is the bucket's end.
#[test]
fn float_buckets() {
    let g = grid(
        Hierarchy::interval_widths("w", &[5.0]).unwrap(),
        DataType::Float64,
    );
    assert_eq!(g.level(), 1);
    assert_eq!((g.below(31.5), g.above(34.9)), (30.0, 35.0));
    assert_eq!((g.below(30.0), g.above(35.0)), (25.0, 40.0));
    // width 1 is a grid on floats (a bucket holds many values)
    let g = grid(
        Hierarchy::interval_widths("w", &[1.0]).unwrap(),
        DataType::Float64,
    );
    assert_eq!((g.below(2.5), g.above(2.5)), (2.0, 3.0));
}

/// Bottom coding 18 and top coding 90 with buckets of 5 on integers: 10 is in `< 18`
/// ((-inf, 18): no lower end, the upper end 18); 18 in [18, 20) (from 17); 92 in `>= 90`
/// (no upper end; a class from 90 starts at 89). Breakpoints 18, 25, 65: 20 is in [18, 25),
/// 70 in `>= 65`, 10 in `< 18`.
#[test]
fn coded_and_breakpoint_buckets() {
    let coded = IntervalHierarchy::widths(&[5.0])
        .unwrap()
        .with_bottom_coding(18.0)
        .unwrap()
        .with_top_coding(90.0)
        .unwrap();
    let g = grid(Hierarchy::interval("age", coded.clone()), DataType::Int64);
    assert_eq!((g.below(10.0), g.above(10.0)), (-INF, 18.0));
    assert_eq!((g.below(18.0), g.above(19.0)), (17.0, 20.0));
    assert_eq!((g.below(90.0), g.above(92.0)), (89.0, INF));
    // floats: a class from 18.0 exactly reaches into `< 18`, which has no lower end
    let g = grid(Hierarchy::interval("age", coded), DataType::Float64);
    assert_eq!((g.below(18.0), g.above(18.0)), (-INF, 20.0));
    assert_eq!((g.below(18.5), g.above(89.5)), (18.0, 90.0));
    let g = grid(
        Hierarchy::interval_breaks("age", vec![vec![18.0, 25.0, 65.0]]).unwrap(),
        DataType::Int64,
    );
    assert_eq!((g.below(20.0), g.above(20.0)), (17.0, 25.0));
    assert_eq!((g.below(70.0), g.above(70.0)), (64.0, INF));
    assert_eq!((g.below(10.0), g.above(10.0)), (-INF, 18.0));
}

/// Birth dates with a month grid: 1980-03-14 … 1980-07-02 publishes
/// `(1980-02-29, 1980-08-01)` (March … July 1980); a class from 1980-03-01 the same (the day
/// before its month); `day` is skipped on a date column.
#[test]
fn date_months() {
    let g = grid(
        Hierarchy::date("born", &[DateUnit::Day, DateUnit::Month, DateUnit::Year]).unwrap(),
        DataType::Date32,
    );
    assert_eq!(g.level(), 2);
    assert_eq!(
        (g.below(day("1980-03-14")), g.above(day("1980-07-02"))),
        (day("1980-02-29"), day("1980-08-01"))
    );
    assert_eq!(g.below(day("1980-03-01")), day("1980-02-29"));
    assert_eq!(g.above(day("1980-12-31")), day("1981-01-01"));
    let h = Hierarchy::date("born", &[DateUnit::Day]).unwrap();
    assert!(Grid::new(&h, &DataType::Date32).is_none());
    // Date64 counts milliseconds
    let g = grid(
        Hierarchy::date("born", &[DateUnit::Year]).unwrap(),
        DataType::Date64,
    );
    let ms = 86_400_000.0;
    assert_eq!(
        (
            g.below(day("1980-03-14") * ms),
            g.above(day("1980-03-14") * ms)
        ),
        (day("1979-12-31") * ms, day("1981-01-01") * ms)
    );
}

/// Timestamps with a day grid: a class from 10:00 starts at its midnight; one from midnight
/// exactly at the midnight before (midnight is then a member's value).
#[test]
fn timestamp_days() {
    let g = grid(
        Hierarchy::date("seen", &[DateUnit::Day, DateUnit::Month]).unwrap(),
        DataType::Timestamp(TimeUnit::Second, None),
    );
    assert_eq!(g.level(), 1);
    assert_eq!(
        g.below(second("1980-03-14T10:00:00")),
        second("1980-03-14T00:00:00")
    );
    assert_eq!(
        g.below(second("1980-03-14T00:00:00")),
        second("1980-03-13T00:00:00")
    );
    assert_eq!(
        g.above(second("1980-03-14T00:00:00")),
        second("1980-03-15T00:00:00")
    );
}

/// A tree over 1 … 6 with nodes {1, 2}, {3, 4}, {5, 6}: a class 3 … 4 publishes (2, 5), one
/// reaching 1 or 6 has no lower or upper end. Interleaved nodes ({1, 3}, {2, 4}) are no
/// grid: the next level is taken; single leaves only, or a mask, give none.
#[test]
fn tree_levels() {
    let rows: Vec<Vec<String>> = (1..=6)
        .map(|v| vec![v.to_string(), format!("n{}", (v + 1) / 2), "*".into()])
        .collect();
    let g = grid(
        Hierarchy::tree_from_rows("t", &rows).unwrap(),
        DataType::Int64,
    );
    assert_eq!(g.level(), 1);
    assert_eq!((g.below(3.0), g.above(4.0)), (2.0, 5.0));
    assert_eq!((g.below(1.0), g.above(6.0)), (-INF, INF));
    assert_eq!((g.below(4.0), g.above(3.0)), (2.0, 5.0));
    // level 1: {1, 3}, {2, 4}, {5, 6} interleave; level 2: {1 … 4}, {5, 6}
    let interleaved: Vec<Vec<&str>> = vec![
        vec!["1", "a", "x", "*"],
        vec!["2", "b", "x", "*"],
        vec!["3", "a", "x", "*"],
        vec!["4", "b", "x", "*"],
        vec!["5", "c", "y", "*"],
        vec!["6", "c", "y", "*"],
    ];
    let g = grid(
        Hierarchy::tree_from_rows("t", &interleaved).unwrap(),
        DataType::Int64,
    );
    assert_eq!(g.level(), 2);
    assert_eq!((g.below(2.0), g.above(3.0)), (-INF, 5.0));
    assert_eq!((g.below(5.0), g.above(6.0)), (4.0, INF));
    let singles: Vec<Vec<&str>> = vec![vec!["1", "1", "*"], vec!["2", "2", "*"]];
    let h = Hierarchy::tree_from_rows("t", &singles).unwrap();
    assert!(Grid::new(&h, &DataType::Int64).is_none());
    assert!(Grid::new(&Hierarchy::mask("zip", 3), &DataType::Utf8).is_none());
}

/// Ends print as the column's values print, infinities as `-inf` / `inf`, and read back.
#[test]
fn ends_print_and_read_back() {
    let ends = [29.0, 45.0, -INF, INF];
    let text = end_labels(&ends, &DataType::Int64).unwrap();
    assert_eq!(text, ["29", "45", "-inf", "inf"]);
    let text: Vec<&str> = text.iter().map(String::as_str).collect();
    let back = end_values(&text, &DataType::Int64).unwrap();
    assert_eq!(back, ends.map(Some));
    let dates = [day("1980-02-29"), day("1980-08-01")];
    let text = end_labels(&dates, &DataType::Date32).unwrap();
    assert_eq!(text, ["1980-02-29", "1980-08-01"]);
    assert_eq!(
        open_interval_label(&text[0], &text[1]),
        "(1980-02-29, 1980-08-01)"
    );
    assert_eq!(end_labels(&[30.5], &DataType::Float64).unwrap(), ["30.5"]);
    assert_eq!(
        end_values(&["30.5", "x"], &DataType::Float64).unwrap(),
        [Some(30.5), None]
    );
}

#[test]
fn policy_names() {
    assert_eq!(
        "value_free".parse::<LocalLabels>().unwrap(),
        LocalLabels::ValueFree
    );
    assert_eq!("exact".parse::<LocalLabels>().unwrap(), LocalLabels::Exact);
    let e = "min_max".parse::<LocalLabels>().unwrap_err().to_string();
    assert!(e.contains("value_free or exact"), "{e}");
    assert_eq!(LocalLabels::default(), LocalLabels::ValueFree);
}
