//! Per-release pseudonyms of the person column (`[privacy] person`, issue 32).
//!
//! A release that counts persons must know each row's person, but must not publish the
//! person's real identifier. The generalized table replaces the person column by a keyed
//! hash of it: BLAKE3 in keyed mode (a pseudo-random function) under a 256-bit key drawn from
//! the operating system for each release, kept in memory only and never written, truncated to
//! 64 bits (Int64). So:
//! - within one release, the same identifier always gives the same pseudonym: persons are
//!   counted on pseudonyms exactly as on identifiers;
//! - two releases use two keys, so their pseudonyms can't be joined with each other, nor
//!   with the identifier, by anyone without the key (which nobody has once the process ends);
//! - two identifiers may share a pseudonym (probability about n²/2⁶⁵: 10⁻⁹ for 228,000
//!   persons). A collision merges two persons into one, so persons are then *under*counted:
//!   never more privacy claimed than there is;
//! - NULL stays NULL (a NULL identifier adds no person, as `k_anonymity(person)` counts).
//!
//! Identifiers are hashed as their UTF-8 text (other types cast to Utf8 first), so the same
//! identifier read as Int64 from Parquet or as text from CSV gets the same pseudonym.

use std::fmt;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, Int64Builder};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::DataType;
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::{
    ColumnarValue, Expr, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};

/// The name the function has in plans (it is never registered on a session: only a release
/// holds its key).
pub const PSEUDONYM_FUNCTION: &str = "__anon_person_pseudonym";

/// The key of one release's pseudonyms. Its `Debug` shows no byte of it.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct PseudonymKey([u8; 32]);

impl PseudonymKey {
    /// A fresh key from the operating system's random source.
    pub fn random() -> Result<Self> {
        let mut key = [0u8; 32];
        getrandom::fill(&mut key).map_err(|e| {
            DataFusionError::Execution(format!(
                "cannot draw a key for the person pseudonyms from the operating system: {e}"
            ))
        })?;
        Ok(Self(key))
    }

    /// A key given by its bytes (a plan received from a cluster scheduler; tests).
    pub fn from_bytes(bytes: [u8; 32]) -> Self {
        Self(bytes)
    }

    /// The key's bytes, for the cluster codec only.
    pub fn bytes(&self) -> &[u8; 32] {
        &self.0
    }

    /// The pseudonym of one identifier's text.
    pub fn pseudonym(&self, identifier: &[u8]) -> i64 {
        let hash = blake3::keyed_hash(&self.0, identifier);
        let mut first = [0u8; 8];
        first.copy_from_slice(&hash.as_bytes()[..8]);
        i64::from_le_bytes(first)
    }
}

impl fmt::Debug for PseudonymKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("PseudonymKey(<secret>)")
    }
}

/// `pseudonym(person)` under one key; see the module docs.
#[derive(Debug)]
pub struct PseudonymFunction {
    key: PseudonymKey,
    signature: Signature,
}

impl PartialEq for PseudonymFunction {
    fn eq(&self, other: &Self) -> bool {
        self.key == other.key
    }
}

impl Eq for PseudonymFunction {}

impl Hash for PseudonymFunction {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.key.hash(state);
    }
}

impl PseudonymFunction {
    /// The function under `key`.
    pub fn new(key: PseudonymKey) -> Self {
        Self {
            key,
            signature: Signature::any(1, Volatility::Immutable),
        }
    }

    /// Its key (for the cluster codec).
    pub fn key(&self) -> &PseudonymKey {
        &self.key
    }

    /// `expr`'s pseudonyms under `key`.
    pub fn call(key: &PseudonymKey, expr: Expr) -> Expr {
        ScalarUDF::new_from_impl(Self::new(key.clone())).call(vec![expr])
    }
}

/// The pseudonyms of `values`, NULL for NULL.
pub fn pseudonyms(key: &PseudonymKey, values: &ArrayRef) -> Result<ArrayRef> {
    let text = match values.data_type() {
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => Arc::clone(values),
        _ => cast(values, &DataType::Utf8)?,
    };
    let mut out = Int64Builder::with_capacity(text.len());
    macro_rules! hash_all {
        ($strings:expr) => {
            for value in $strings.iter() {
                out.append_option(value.map(|v| key.pseudonym(v.as_bytes())));
            }
        };
    }
    match text.data_type() {
        DataType::Utf8 => hash_all!(text.as_string::<i32>()),
        DataType::LargeUtf8 => hash_all!(text.as_string::<i64>()),
        DataType::Utf8View => hash_all!(text.as_string_view()),
        other => {
            return Err(DataFusionError::Internal(format!(
                "person pseudonyms: a cast to text gave {other}"
            )));
        }
    }
    Ok(Arc::new(out.finish()))
}

impl ScalarUDFImpl for PseudonymFunction {
    fn name(&self) -> &str {
        PSEUDONYM_FUNCTION
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Int64)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let [value] = args.args.as_slice() else {
            return Err(DataFusionError::Internal(
                "the person pseudonym takes one argument".into(),
            ));
        };
        let values = value.to_array(args.number_rows)?;
        Ok(ColumnarValue::Array(pseudonyms(&self.key, &values)?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::{Int64Array, StringArray};

    #[test]
    fn same_identifier_same_pseudonym_under_one_key_and_not_across_keys() {
        let a = PseudonymKey::from_bytes([1; 32]);
        let b = PseudonymKey::from_bytes([2; 32]);
        let ids: ArrayRef = Arc::new(StringArray::from(vec![Some("17"), None, Some("17")]));
        let under_a = pseudonyms(&a, &ids).unwrap();
        let under_a = under_a.as_primitive::<datafusion::arrow::datatypes::Int64Type>();
        assert_eq!(under_a.value(0), under_a.value(2));
        assert!(under_a.is_null(1), "NULL stays NULL");
        let under_b = pseudonyms(&b, &ids).unwrap();
        let under_b = under_b.as_primitive::<datafusion::arrow::datatypes::Int64Type>();
        assert_ne!(under_a.value(0), under_b.value(0));
        // the pseudonym is not the identifier
        assert_ne!(under_a.value(0), 17);
    }

    #[test]
    fn an_integer_identifier_hashes_as_its_text() {
        let key = PseudonymKey::from_bytes([7; 32]);
        let ints: ArrayRef = Arc::new(Int64Array::from(vec![42]));
        let text: ArrayRef = Arc::new(StringArray::from(vec!["42"]));
        assert_eq!(
            pseudonyms(&key, &ints).unwrap().as_ref(),
            pseudonyms(&key, &text).unwrap().as_ref()
        );
    }

    #[test]
    fn fresh_keys_differ_and_never_print() {
        let (a, b) = (
            PseudonymKey::random().unwrap(),
            PseudonymKey::random().unwrap(),
        );
        assert_ne!(a, b);
        assert_eq!(format!("{a:?}"), "PseudonymKey(<secret>)");
    }
}
