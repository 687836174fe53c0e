//! Per-class distinct values without counts: the engine of `k_anonymity(person_id)` and
//! `reidentification_risk(person_id)`, where only distinctness matters and the attribute is
//! typically near-unique (one person id per row or nearly).
//!
//! Each row appends a `(class, key)` pair to a log; nothing is looked up per row. The log is
//! *compacted* — sorted by class with a counting sort over the dense class indices, then each
//! class's keys sorted and deduplicated — when the result or the state is read, and whenever
//! it has doubled since the last compaction (quadrupled when that one found the values
//! near-unique; never below [`MIN_COMPACTION`] entries), so memory stays within a small
//! multiple of the distinct `(class, value)` pairs even for a low-cardinality attribute over
//! many rows. Appends are
//! sequential writes and a compaction streams through memory a few times, where a hash set of
//! pairs (DataFusion's `count(DISTINCT)`, or a value dictionary plus per-class histograms) pays
//! a random probe per row into a table as large as the pairs: with millions of persons the log
//! is several times faster.
//!
//! Keys: integer and temporal values are their own key (their bits, zero-extended); values of
//! other types are interned once into dense codes with DataFusion's [`GroupValues`].
//!
//! Intermediate state: one `List<T>` per class, its distinct values, a NULL item standing for
//! "some rows of the class have a NULL value".

use std::sync::Arc;

use datafusion::arrow::array::{
    Array, ArrayRef, ArrowPrimitiveType, AsArray, BooleanArray, Float64Array, Int64Array,
    ListArray, PrimitiveArray, UInt64Array,
};
use datafusion::arrow::buffer::{BooleanBuffer, NullBuffer, OffsetBuffer, ScalarBuffer};
use datafusion::arrow::compute::take;
use datafusion::arrow::datatypes::{
    DataType, Date32Type, Date64Type, DurationMicrosecondType, DurationMillisecondType,
    DurationNanosecondType, DurationSecondType, Field, FieldRef, Int8Type, Int16Type, Int32Type,
    Int64Type, Time32MillisecondType, Time32SecondType, Time64MicrosecondType,
    Time64NanosecondType, TimeUnit, TimestampMicrosecondType, TimestampMillisecondType,
    TimestampNanosecondType, TimestampSecondType, UInt8Type, UInt16Type, UInt32Type, UInt64Type,
};
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::utils::format_state_name;
use datafusion::logical_expr::{EmitTo, GroupsAccumulator};
use datafusion::physical_plan::aggregates::group_values::GroupValues;

use super::class_log::{ClassLog, MIN_COMPACTION, next_compaction};
use super::histogram::new_dictionary;

/// What a [`DistinctGroupsAccumulator`] returns from `evaluate`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DistinctOutput {
    /// Int64: distinct non-null values; a class of NULLs only counts 1 (persons).
    Persons,
    /// Float64: 1 / distinct persons (NULL for an empty class).
    PersonRisk,
}

/// The one intermediate state field: the class's distinct values.
pub fn distinct_state_fields(base: &str, value_type: &DataType) -> Vec<FieldRef> {
    vec![Arc::new(Field::new(
        format_state_name(base, "distinct_values"),
        DataType::new_list(value_type.clone(), true),
        true,
    ))]
}

/// A value's bits as a key: equal keys exactly for equal values.
trait KeyBits: Copy {
    fn to_key(self) -> u64;
    fn from_key(key: u64) -> Self;
}

macro_rules! key_bits {
    ($($native:ty => $unsigned:ty),*) => {$(
        impl KeyBits for $native {
            #[inline]
            fn to_key(self) -> u64 {
                self as $unsigned as u64
            }
            #[inline]
            fn from_key(key: u64) -> Self {
                key as $unsigned as $native
            }
        }
    )*};
}

key_bits!(i8 => u8, i16 => u16, i32 => u32, i64 => u64, u8 => u8, u16 => u16, u32 => u32, u64 => u64);

type Encode = fn(&dyn Array, &mut Vec<u64>);
type Decode = fn(Vec<u64>, Option<NullBuffer>, &DataType) -> ArrayRef;

fn encode_bits<T: ArrowPrimitiveType>(array: &dyn Array, out: &mut Vec<u64>)
where
    T::Native: KeyBits,
{
    out.clear();
    out.extend(
        array
            .as_primitive::<T>()
            .values()
            .iter()
            .map(|v| v.to_key()),
    );
}

fn decode_bits<T: ArrowPrimitiveType>(
    keys: Vec<u64>,
    nulls: Option<NullBuffer>,
    data_type: &DataType,
) -> ArrayRef
where
    T::Native: KeyBits,
{
    let values: Vec<T::Native> = keys.into_iter().map(T::Native::from_key).collect();
    // `data_type` is the accumulator's input type, which selected `T`: compatible
    Arc::new(
        PrimitiveArray::<T>::new(ScalarBuffer::from(values), nulls)
            .with_data_type(data_type.clone()),
    )
}

/// The bit codec of integer-like types (integers, dates, times, timestamps, durations).
fn bits_codec(data_type: &DataType) -> Option<(Encode, Decode)> {
    macro_rules! codec {
        ($t:ty) => {
            Some((encode_bits::<$t> as Encode, decode_bits::<$t> as Decode))
        };
    }
    match data_type {
        DataType::Int8 => codec!(Int8Type),
        DataType::Int16 => codec!(Int16Type),
        DataType::Int32 => codec!(Int32Type),
        DataType::Int64 => codec!(Int64Type),
        DataType::UInt8 => codec!(UInt8Type),
        DataType::UInt16 => codec!(UInt16Type),
        DataType::UInt32 => codec!(UInt32Type),
        DataType::UInt64 => codec!(UInt64Type),
        DataType::Date32 => codec!(Date32Type),
        DataType::Date64 => codec!(Date64Type),
        DataType::Time32(TimeUnit::Second) => codec!(Time32SecondType),
        DataType::Time32(TimeUnit::Millisecond) => codec!(Time32MillisecondType),
        DataType::Time64(TimeUnit::Microsecond) => codec!(Time64MicrosecondType),
        DataType::Time64(TimeUnit::Nanosecond) => codec!(Time64NanosecondType),
        DataType::Timestamp(TimeUnit::Second, _) => codec!(TimestampSecondType),
        DataType::Timestamp(TimeUnit::Millisecond, _) => codec!(TimestampMillisecondType),
        DataType::Timestamp(TimeUnit::Microsecond, _) => codec!(TimestampMicrosecondType),
        DataType::Timestamp(TimeUnit::Nanosecond, _) => codec!(TimestampNanosecondType),
        DataType::Duration(TimeUnit::Second) => codec!(DurationSecondType),
        DataType::Duration(TimeUnit::Millisecond) => codec!(DurationMillisecondType),
        DataType::Duration(TimeUnit::Microsecond) => codec!(DurationMicrosecondType),
        DataType::Duration(TimeUnit::Nanosecond) => codec!(DurationNanosecondType),
        _ => None,
    }
}

/// Turns values into u64 keys and back.
enum ValueKeys {
    Bits {
        value_type: DataType,
        encode: Encode,
        decode: Decode,
    },
    Interned {
        value_type: DataType,
        dictionary: Box<dyn GroupValues>,
        /// scratch for the codes of one batch
        codes: Vec<usize>,
    },
}

impl ValueKeys {
    fn try_new(value_type: &DataType) -> Result<Self> {
        Ok(match bits_codec(value_type) {
            Some((encode, decode)) => Self::Bits {
                value_type: value_type.clone(),
                encode,
                decode,
            },
            None => Self::Interned {
                value_type: value_type.clone(),
                dictionary: new_dictionary(value_type)?,
                codes: Vec::new(),
            },
        })
    }

    /// The keys of every entry of `values` (NULL entries get some key, to be ignored).
    fn encode(&mut self, values: &ArrayRef, out: &mut Vec<u64>) -> Result<()> {
        match self {
            Self::Bits { encode, .. } => encode(values.as_ref(), out),
            Self::Interned {
                dictionary, codes, ..
            } => {
                dictionary.intern(std::slice::from_ref(values), codes)?;
                out.clear();
                out.extend(codes.iter().map(|&c| c as u64));
            }
        }
        Ok(())
    }

    /// The values of `keys`, NULL where `nulls` says so. `emit_to` says which classes are
    /// being emitted: the dictionary of interned values is reset once everything is.
    fn decode(
        &mut self,
        keys: Vec<u64>,
        nulls: Option<NullBuffer>,
        emit_to: EmitTo,
    ) -> Result<ArrayRef> {
        match self {
            Self::Bits {
                value_type, decode, ..
            } => Ok(decode(keys, nulls, value_type)),
            Self::Interned {
                value_type,
                dictionary,
                codes,
            } => {
                let values = dictionary
                    .emit(EmitTo::All)?
                    .into_iter()
                    .next()
                    .ok_or_else(|| {
                        DataFusionError::Internal("value dictionary emitted no column".into())
                    })?;
                if matches!(emit_to, EmitTo::First(_)) {
                    // interning the values in code order gives every value its old code back
                    dictionary.intern(std::slice::from_ref(&values), codes)?;
                } else {
                    *dictionary = new_dictionary(value_type)?;
                }
                let indices = UInt64Array::new(ScalarBuffer::from(keys), nulls);
                Ok(take(values.as_ref(), &indices, None)?)
            }
        }
    }

    /// Forgets the interned values (once every class has been emitted).
    fn reset(&mut self) -> Result<()> {
        if let Self::Interned {
            value_type,
            dictionary,
            ..
        } = self
        {
            *dictionary = new_dictionary(value_type)?;
        }
        Ok(())
    }

    fn size(&self) -> usize {
        match self {
            Self::Bits { .. } => 0,
            Self::Interned {
                dictionary, codes, ..
            } => dictionary.size() + codes.capacity() * size_of::<usize>(),
        }
    }
}

impl std::fmt::Debug for ValueKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Bits { value_type, .. } => write!(f, "Bits({value_type})"),
            Self::Interned { value_type, .. } => write!(f, "Interned({value_type})"),
        }
    }
}

/// `(class, key)` pairs, deduplicated per class when compacted.
#[derive(Debug)]
struct PairLog {
    log: ClassLog,
    /// compact when the log reaches this length
    limit: usize,
    /// [`MIN_COMPACTION`], smaller in tests
    min_compaction: usize,
}

impl Default for PairLog {
    fn default() -> Self {
        Self {
            log: ClassLog::default(),
            limit: 0,
            min_compaction: MIN_COMPACTION,
        }
    }
}

/// Classes of at most this many keys are counted pairwise by [`count_distinct`].
const PAIRWISE_KEYS: usize = 48;

/// The distinct keys of one class (reordered when sorted): a small class compares each key
/// with the keys before it, with no branch per pair (the comparisons vectorize: about 200 for
/// a class of 20, against a sort's few dozen mispredicted branches); a larger one is sorted.
fn count_distinct(keys: &mut [u64]) -> usize {
    if keys.len() <= PAIRWISE_KEYS {
        let mut distinct = 0;
        for (i, &key) in keys.iter().enumerate() {
            let seen = keys[..i].iter().fold(false, |seen, &k| seen | (k == key));
            distinct += usize::from(!seen);
        }
        distinct
    } else {
        keys.sort_unstable();
        1 + keys.windows(2).filter(|w| w[0] != w[1]).count()
    }
}

impl PairLog {
    /// Empties the log and releases its memory (DataFusion expects `size` to drop once the
    /// state is out, when it spills), keeping its compaction threshold.
    fn clear(&mut self) {
        *self = PairLog {
            min_compaction: self.min_compaction,
            ..PairLog::default()
        };
    }

    /// Each class's number of distinct keys, emptying the log: what [`Self::compact`] gives
    /// as class lengths, without sorting the classes (the final result needs no keys).
    fn distinct_counts(&mut self, num_groups: usize) -> Vec<usize> {
        let (offsets, mut keys) = self.log.take_grouped(num_groups);
        offsets
            .windows(2)
            .map(|w| count_distinct(&mut keys[w[0]..w[1]]))
            .collect()
    }

    fn maybe_compact(&mut self, num_groups: usize) {
        if self.log.len() >= self.limit.max(self.min_compaction) {
            let before = self.log.len();
            let (offsets, keys) = self.compact(num_groups);
            self.limit = next_compaction(before, keys.len());
            self.log.put_grouped(&offsets, keys);
        }
    }

    /// Empties the log into each class's distinct keys: class g's are
    /// `keys[offsets[g]..offsets[g + 1]]`, ascending.
    fn compact(&mut self, num_groups: usize) -> (Vec<usize>, Vec<u64>) {
        let (mut offsets, mut keys) = self.log.take_grouped(num_groups);
        // each class sorted and deduplicated, packed towards the front
        let (mut read, mut write) = (0, 0);
        for g in 0..num_groups {
            let end = offsets[g + 1];
            keys[read..end].sort_unstable();
            let mut last = None;
            for i in read..end {
                let key = keys[i];
                if last != Some(key) {
                    keys[write] = key;
                    write += 1;
                    last = Some(key);
                }
            }
            offsets[g + 1] = write;
            read = end;
        }
        keys.truncate(write);
        (offsets, keys)
    }
}

/// Distinct values per class (see module docs).
#[derive(Debug)]
pub struct DistinctGroupsAccumulator {
    output: DistinctOutput,
    keys: ValueKeys,
    /// keys of the current batch (reused: no allocation per batch)
    batch_keys: Vec<u64>,
    log: PairLog,
    /// per class: some row has a NULL value
    has_null: Vec<bool>,
}

/// Drained classes: `offsets[g]..offsets[g + 1]` of `keys` are class g's distinct keys.
struct Drained {
    offsets: Vec<usize>,
    keys: Vec<u64>,
    has_null: Vec<bool>,
}

impl DistinctGroupsAccumulator {
    pub fn try_new(value_type: &DataType, output: DistinctOutput) -> Result<Self> {
        Ok(Self {
            output,
            keys: ValueKeys::try_new(value_type)?,
            batch_keys: Vec::new(),
            log: PairLog::default(),
            has_null: Vec::new(),
        })
    }

    fn resize(&mut self, total_num_groups: usize) -> Result<()> {
        if total_num_groups > u32::MAX as usize {
            return Err(DataFusionError::Execution(format!(
                "too many equivalence classes ({total_num_groups}) for one partition"
            )));
        }
        if self.has_null.len() < total_num_groups {
            self.has_null.resize(total_num_groups, false);
        }
        Ok(())
    }

    /// Takes the classes selected by `emit_to` out; the others are renumbered from 0.
    fn drain(&mut self, emit_to: EmitTo) -> Drained {
        let num_groups = self.has_null.len();
        let (mut offsets, mut keys) = self.log.compact(num_groups);
        let has_null = emit_to.take_needed(&mut self.has_null);
        match emit_to {
            EmitTo::All => {
                self.log.clear();
                Drained {
                    offsets,
                    keys,
                    has_null,
                }
            }
            EmitTo::First(n) => {
                let rest = keys.split_off(offsets[n]);
                self.log.limit = 2 * rest.len();
                self.log.log.put_grouped(&offsets[n..], rest);
                offsets.truncate(n + 1);
                Drained {
                    offsets,
                    keys,
                    has_null,
                }
            }
        }
    }
}

impl GroupsAccumulator for DistinctGroupsAccumulator {
    fn update_batch(
        &mut self,
        values: &[ArrayRef],
        group_indices: &[usize],
        opt_filter: Option<&BooleanArray>,
        total_num_groups: usize,
    ) -> Result<()> {
        self.resize(total_num_groups)?;
        let values = &values[0];
        self.keys.encode(values, &mut self.batch_keys)?;
        let nulls = values.logical_nulls();
        match (nulls.as_ref(), opt_filter) {
            (None, None) => {
                self.log.log.extend(group_indices, &self.batch_keys);
            }
            _ => {
                for (row, (&group, &key)) in group_indices.iter().zip(&self.batch_keys).enumerate()
                {
                    if let Some(filter) = opt_filter
                        && !(filter.is_valid(row) && filter.value(row))
                    {
                        continue;
                    }
                    if nulls.as_ref().is_some_and(|n| n.is_null(row)) {
                        self.has_null[group] = true;
                    } else {
                        self.log.log.push(group, key);
                    }
                }
            }
        }
        self.log.maybe_compact(total_num_groups);
        Ok(())
    }

    fn evaluate(&mut self, emit_to: EmitTo) -> Result<ArrayRef> {
        let (distinct, has_null) = match emit_to {
            // the usual final result: counts only, no class sorted
            EmitTo::All => {
                let distinct = self.log.distinct_counts(self.has_null.len());
                self.log.clear();
                self.keys.reset()?;
                (distinct, emit_to.take_needed(&mut self.has_null))
            }
            EmitTo::First(_) => {
                let drained = self.drain(emit_to);
                let distinct = drained.offsets.windows(2).map(|w| w[1] - w[0]).collect();
                (distinct, drained.has_null)
            }
        };
        let persons = distinct
            .into_iter()
            .zip(&has_null)
            .map(|(keys, &null)| keys.max(usize::from(null)) as u64);
        Ok(match self.output {
            DistinctOutput::Persons => {
                Arc::new(Int64Array::from_iter_values(persons.map(|p| p as i64)))
            }
            DistinctOutput::PersonRisk => Arc::new(
                persons
                    .map(|p| (p > 0).then(|| 1.0 / p as f64))
                    .collect::<Float64Array>(),
            ),
        })
    }

    fn state(&mut self, emit_to: EmitTo) -> Result<Vec<ArrayRef>> {
        let Drained {
            offsets,
            keys,
            has_null,
        } = self.drain(emit_to);
        let null_classes = has_null.iter().filter(|&&n| n).count();
        let items = keys.len() + null_classes;
        if i32::try_from(items).is_err() {
            return Err(DataFusionError::Execution(format!(
                "too many distinct values ({items}) in one batch of intermediate state"
            )));
        }
        let lengths = offsets
            .windows(2)
            .zip(&has_null)
            .map(|(w, &null)| w[1] - w[0] + usize::from(null));
        let list_offsets = OffsetBuffer::<i32>::from_lengths(lengths);
        let (keys, nulls) = if null_classes == 0 {
            (keys, None)
        } else {
            // each class's keys, then a NULL item if the class has NULLs
            let mut with_nulls = Vec::with_capacity(items);
            let mut valid = Vec::with_capacity(items);
            for (w, &null) in offsets.windows(2).zip(&has_null) {
                with_nulls.extend_from_slice(&keys[w[0]..w[1]]);
                valid.extend(std::iter::repeat_n(true, w[1] - w[0]));
                if null {
                    with_nulls.push(0);
                    valid.push(false);
                }
            }
            (
                with_nulls,
                Some(NullBuffer::new(BooleanBuffer::from(valid))),
            )
        };
        let values = self.keys.decode(keys, nulls, emit_to)?;
        let field = Arc::new(Field::new_list_field(values.data_type().clone(), true));
        Ok(vec![Arc::new(ListArray::try_new(
            field,
            list_offsets,
            values,
            None,
        )?)])
    }

    fn merge_batch(
        &mut self,
        values: &[ArrayRef],
        group_indices: &[usize],
        total_num_groups: usize,
    ) -> Result<()> {
        self.resize(total_num_groups)?;
        let lists = values[0].as_list::<i32>();
        let offsets = lists.value_offsets();
        let (start, end) = (offsets[0] as usize, offsets[offsets.len() - 1] as usize);
        let items = lists.values().slice(start, end - start);
        self.keys.encode(&items, &mut self.batch_keys)?;
        let item_nulls = items.logical_nulls();
        // a NULL list is a row filtered out before the state was made (`convert_to_state`)
        let list_nulls = lists.logical_nulls();
        if items.len() == group_indices.len()
            && item_nulls.is_none()
            && list_nulls.is_none()
            && offsets.windows(2).all(|w| w[1] - w[0] == 1)
        {
            // one item per row, as `convert_to_state` makes when partial aggregation is
            // skipped (the common case for many small classes)
            self.log.log.extend(group_indices, &self.batch_keys);
        } else {
            for (row, &group) in group_indices.iter().enumerate() {
                if list_nulls.as_ref().is_some_and(|n| n.is_null(row)) {
                    continue;
                }
                for item in offsets[row] as usize..offsets[row + 1] as usize {
                    let local = item - start;
                    if item_nulls.as_ref().is_some_and(|n| n.is_null(local)) {
                        self.has_null[group] = true;
                    } else {
                        self.log.log.push(group, self.batch_keys[local]);
                    }
                }
            }
        }
        self.log.maybe_compact(total_num_groups);
        Ok(())
    }

    /// Each row as its own class: a one-item list over the input array (zero-copy); a row
    /// filtered out becomes a NULL list, which `merge_batch` skips.
    fn convert_to_state(
        &self,
        values: &[ArrayRef],
        opt_filter: Option<&BooleanArray>,
    ) -> Result<Vec<ArrayRef>> {
        let values = &values[0];
        let rows = values.len();
        let offsets = OffsetBuffer::<i32>::from_lengths(std::iter::repeat_n(1, rows));
        let nulls = opt_filter.map(|filter| {
            let selected: BooleanBuffer = match filter.nulls() {
                Some(n) => filter.values() & n.inner(),
                None => filter.values().clone(),
            };
            NullBuffer::new(selected)
        });
        let field = Arc::new(Field::new_list_field(values.data_type().clone(), true));
        Ok(vec![Arc::new(ListArray::try_new(
            field,
            offsets,
            Arc::clone(values),
            nulls,
        )?)])
    }

    fn size(&self) -> usize {
        self.log.log.size()
            + self.has_null.capacity()
            + self.batch_keys.capacity() * size_of::<u64>()
            + self.keys.size()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::{Int64Array, StringArray};
    use datafusion::arrow::datatypes::Float64Type;

    fn persons(acc: &mut DistinctGroupsAccumulator, emit_to: EmitTo) -> Vec<i64> {
        acc.evaluate(emit_to)
            .unwrap()
            .as_primitive::<Int64Type>()
            .values()
            .to_vec()
    }

    #[test]
    fn pairwise_and_sorted_counts_equal_a_set() {
        // classes of every size around the pairwise limit, keys drawn from a few values (many
        // repeats) or many (near-unique); the reference is a BTreeSet
        let mut state = 7u64;
        for len in (0..=PAIRWISE_KEYS + 3).chain([200]) {
            for spread in [3u64, 1 << 40] {
                let mut keys: Vec<u64> = (0..len)
                    .map(|_| {
                        state = state
                            .wrapping_mul(6364136223846793005)
                            .wrapping_add(1442695040888963407);
                        (state >> 20) % spread
                    })
                    .collect();
                let want = keys.iter().collect::<std::collections::BTreeSet<_>>().len();
                assert_eq!(
                    count_distinct(&mut keys),
                    want,
                    "len {len}, spread {spread}"
                );
            }
        }
    }

    #[test]
    fn counts_distinct_values_and_null_persons_as_known_ones() {
        // class 0: 1, 1, 2 -> 2; class 1: NULL, NULL, 3 -> 1 (the NULLs may be person 3);
        // class 2: NULL -> 1; class 3: none
        let values: ArrayRef = Arc::new(Int64Array::from(vec![
            Some(1),
            Some(1),
            None,
            Some(2),
            None,
            Some(3),
            None,
        ]));
        let mut acc =
            DistinctGroupsAccumulator::try_new(&DataType::Int64, DistinctOutput::Persons).unwrap();
        acc.update_batch(&[values], &[0, 0, 1, 0, 1, 1, 2], None, 4)
            .unwrap();
        assert_eq!(persons(&mut acc, EmitTo::All), vec![2, 1, 1, 0]);
    }

    #[test]
    fn state_round_trip_and_compaction_across_batches() {
        // 3 classes, value v goes to class v % 3, every value 5 times over several batches
        // and through state/merge: class g has the values v < 3000 with v % 3 == g -> 1000
        let mut acc =
            DistinctGroupsAccumulator::try_new(&DataType::Utf8, DistinctOutput::Persons).unwrap();
        let mut merged =
            DistinctGroupsAccumulator::try_new(&DataType::Utf8, DistinctOutput::Persons).unwrap();
        // compact every few batches
        acc.log.min_compaction = 5000;
        merged.log.min_compaction = 5000;
        for round in 0..5 {
            let strings: Vec<String> = (0..3000).map(|v| format!("id{v}")).collect();
            let values: ArrayRef = Arc::new(StringArray::from(strings));
            let groups: Vec<usize> = (0..3000).map(|v| v % 3).collect();
            acc.update_batch(&[values], &groups, None, 3).unwrap();
            if round == 2 {
                // move what there is so far into the second accumulator
                let state = acc.state(EmitTo::All).unwrap();
                merged.merge_batch(&state, &[0, 1, 2], 3).unwrap();
            }
        }
        let state = acc.state(EmitTo::All).unwrap();
        merged.merge_batch(&state, &[0, 1, 2], 3).unwrap();
        assert_eq!(persons(&mut merged, EmitTo::All), vec![1000, 1000, 1000]);
    }

    #[test]
    fn emit_first_keeps_the_rest() {
        // classes 0..4, class g has values 0..=g -> g + 1 persons
        let mut acc =
            DistinctGroupsAccumulator::try_new(&DataType::Int32, DistinctOutput::Persons).unwrap();
        let (mut values, mut groups) = (Vec::new(), Vec::new());
        for g in 0..4 {
            for v in 0..=g {
                values.push(v as i32);
                groups.push(g);
            }
        }
        let values: ArrayRef = Arc::new(datafusion::arrow::array::Int32Array::from(values));
        acc.update_batch(&[values], &groups, None, 4).unwrap();
        assert_eq!(persons(&mut acc, EmitTo::First(2)), vec![1, 2]);
        // the remaining classes 2, 3 are now 0, 1; add value 7 to both and a NULL to 1 (which
        // may be one of its persons: it adds none)
        let more: ArrayRef = Arc::new(datafusion::arrow::array::Int32Array::from(vec![
            Some(7),
            Some(7),
            None,
        ]));
        acc.update_batch(&[more], &[0, 1, 1], None, 2).unwrap();
        assert_eq!(persons(&mut acc, EmitTo::All), vec![4, 5]);
    }

    #[test]
    fn filter_and_state_of_skipped_rows() {
        // rows (class, value, selected): (0, 5, yes) (0, 6, no) (1, NULL, yes) (1, 5, NULL)
        // (0, 7, yes) -> class 0: {5, 7}, risk 1/2; class 1: {NULL}, one person, risk 1
        let values: ArrayRef = Arc::new(Int64Array::from(vec![
            Some(5),
            Some(6),
            None,
            Some(5),
            Some(7),
        ]));
        let filter =
            BooleanArray::from(vec![Some(true), Some(false), Some(true), None, Some(true)]);
        let groups = [0, 0, 1, 1, 0];
        let mut direct =
            DistinctGroupsAccumulator::try_new(&DataType::Int64, DistinctOutput::PersonRisk)
                .unwrap();
        direct
            .update_batch(std::slice::from_ref(&values), &groups, Some(&filter), 2)
            .unwrap();
        let mut merged =
            DistinctGroupsAccumulator::try_new(&DataType::Int64, DistinctOutput::PersonRisk)
                .unwrap();
        let state = merged
            .convert_to_state(std::slice::from_ref(&values), Some(&filter))
            .unwrap();
        merged.merge_batch(&state, &groups, 2).unwrap();
        for acc in [&mut direct, &mut merged] {
            let risk = acc.evaluate(EmitTo::All).unwrap();
            assert_eq!(
                risk.as_primitive::<Float64Type>().values().to_vec(),
                vec![0.5, 1.0]
            );
        }
    }
}
