//! How figures and names are written in messages and reports: digits grouped by thousands,
//! SQL identifiers quoted. A building block below every module that prints.

/// `name` as a SQL identifier (double-quoted, quotes doubled).
pub fn quote_ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// Thousands separators: 1234567 → `1,234,567`.
pub fn group_digits(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A count held as a float (discernibility, an expected count), rounded to a whole number and
/// grouped by thousands like [`group_digits`]; a value that is not finite prints as it is.
pub fn whole_number(x: f64) -> String {
    if !x.is_finite() {
        return format!("{x}");
    }
    let rounded = x.round();
    let digits = group_digits(rounded.abs() as u64);
    if rounded < 0.0 {
        format!("-{digits}")
    } else {
        digits
    }
}

/// A share as a percentage with two decimals.
pub fn percent(share: f64) -> String {
    format!("{:.2}%", 100.0 * share)
}

/// A ratio with four decimals.
pub fn ratio(x: f64) -> String {
    format!("{x:.4}")
}
