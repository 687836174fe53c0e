//! Type inference that loses nothing: a column gets a type other than text only when every
//! value is the exact spelling of its value in that type.

use datafusion::arrow::compute::kernels::cast_utils::string_to_timestamp_nanos;
use datafusion::arrow::datatypes::{DataType, Date32Type, TimeUnit};
use datafusion::arrow::temporal_conversions::{date32_to_datetime, timestamp_ns_to_datetime};

/// The types a column may still be read as, narrowed by each of its values: a type stays
/// only while every value is the exact text the type would print for it, so reading the
/// column as that type loses nothing (`02134`, `+49`, ` 7`, `1,234` or `1.50` keep a column
/// text). A style shared by the whole column is allowed: floats printed plainly (`1`, `0.5`)
/// or with a decimal point (`1.0`, `1e20`), timestamps with `T` or a space and 0, 3, 6 or 9
/// fraction digits. Empty values (NULL) narrow nothing.
#[derive(Debug, Clone, Copy)]
pub(super) struct Candidates {
    bits: u8,
    /// Whether a non-NULL value was seen.
    seen: bool,
    /// The timestamp style of the column: the separator and the fraction digits.
    timestamp: Option<(u8, usize)>,
}

const BOOL: u8 = 1;
const INT: u8 = 2;
const FLOAT_PLAIN: u8 = 4;
const FLOAT_POINT: u8 = 8;
const DATE: u8 = 16;
const TIMESTAMP: u8 = 32;
const NUMBERS: u8 = INT | FLOAT_PLAIN | FLOAT_POINT;

impl Default for Candidates {
    fn default() -> Self {
        Self {
            bits: BOOL | NUMBERS | DATE | TIMESTAMP,
            seen: false,
            timestamp: None,
        }
    }
}

impl Candidates {
    /// Narrows by every non-NULL value of `values`.
    pub(super) fn update(&mut self, values: &datafusion::arrow::array::StringArray) {
        for value in values.iter().flatten() {
            if self.bits == 0 {
                return;
            }
            self.add(value);
        }
    }

    /// Narrows by one non-NULL value.
    pub(super) fn add(&mut self, text: &str) {
        self.seen = true;
        self.narrow(text);
    }

    pub(super) fn narrow(&mut self, text: &str) {
        let mut bits = 0;
        if self.bits & BOOL != 0 && (text == "true" || text == "false") {
            bits |= BOOL;
        }
        if self.bits & NUMBERS != 0 && starts_like_a_number(text) {
            if self.bits & INT != 0 && text.parse::<i64>().is_ok_and(|v| v.to_string() == text) {
                bits |= INT;
            }
            if let Ok(v) = text.parse::<f64>()
                && v.is_finite()
            {
                if self.bits & FLOAT_PLAIN != 0 && format!("{v}") == text {
                    bits |= FLOAT_PLAIN;
                }
                if self.bits & FLOAT_POINT != 0 && format!("{v:?}") == text {
                    bits |= FLOAT_POINT;
                }
            }
        }
        if self.bits & DATE != 0 && is_canonical_date(text) {
            bits |= DATE;
        }
        if self.bits & TIMESTAMP != 0
            && let Some(style) = timestamp_style(text)
            && self.timestamp.is_none_or(|s| s == style)
        {
            self.timestamp = Some(style);
            bits |= TIMESTAMP;
        }
        self.bits &= bits;
    }

    /// The most specific type left: integers before floats; text when none is left or no
    /// value was seen.
    pub(super) fn data_type(&self) -> DataType {
        if !self.seen {
            return DataType::Utf8;
        }
        if self.bits & INT != 0 {
            DataType::Int64
        } else if self.bits & (FLOAT_PLAIN | FLOAT_POINT) != 0 {
            DataType::Float64
        } else if self.bits & BOOL != 0 {
            DataType::Boolean
        } else if self.bits & DATE != 0 {
            DataType::Date32
        } else if let (true, Some((_, digits))) = (self.bits & TIMESTAMP != 0, self.timestamp) {
            let unit = match digits {
                0 => TimeUnit::Second,
                3 => TimeUnit::Millisecond,
                6 => TimeUnit::Microsecond,
                _ => TimeUnit::Nanosecond,
            };
            DataType::Timestamp(unit, None)
        } else {
            DataType::Utf8
        }
    }
}

/// A digit, or `-` and a digit: rules out `+1`, `.5`, ` 1`, `inf` and `NaN` at once.
pub(super) fn starts_like_a_number(text: &str) -> bool {
    let digits = text.strip_prefix('-').unwrap_or(text);
    digits.starts_with(|c: char| c.is_ascii_digit())
}

/// Whether `pattern` (`d` a digit, anything else itself) matches `text` exactly.
pub(super) fn shaped(text: &[u8], pattern: &[u8]) -> bool {
    text.len() == pattern.len()
        && text.iter().zip(pattern).all(|(&t, &p)| match p {
            b'd' => t.is_ascii_digit(),
            _ => t == p,
        })
}

/// `YYYY-MM-DD`, a valid date.
pub(super) fn is_canonical_date(text: &str) -> bool {
    shaped(text.as_bytes(), b"dddd-dd-dd")
        && <Date32Type as datafusion::arrow::compute::kernels::cast_utils::Parser>::parse(text)
            .and_then(date32_to_datetime)
            .is_some_and(|d| d.date().to_string() == text)
}

/// The style (separator, fraction digits) of `YYYY-MM-DD[T ]HH:MM:SS[.f]`, a valid timestamp
/// with 0, 3, 6 or 9 fraction digits printed back exactly as written.
pub(super) fn timestamp_style(text: &str) -> Option<(u8, usize)> {
    let bytes = text.as_bytes();
    if bytes.len() < 19 || !matches!(bytes[10], b'T' | b' ') {
        return None;
    }
    let separator = bytes[10];
    let mut pattern = b"dddd-dd-ddTdd:dd:dd".to_vec();
    pattern[10] = separator;
    if !shaped(&bytes[..19], &pattern) {
        return None;
    }
    let digits = match &bytes[19..] {
        [] => 0,
        [b'.', fraction @ ..] if fraction.iter().all(u8::is_ascii_digit) => fraction.len(),
        _ => return None,
    };
    if ![0, 3, 6, 9].contains(&digits) {
        return None;
    }
    let datetime = timestamp_ns_to_datetime(string_to_timestamp_nanos(text).ok()?)?;
    let format = format!(
        "%Y-%m-%d{}%H:%M:%S{}",
        separator as char,
        match digits {
            0 => "",
            3 => "%.3f",
            6 => "%.6f",
            _ => "%.9f",
        }
    );
    (datetime.format(&format).to_string() == text).then_some((separator, digits))
}
