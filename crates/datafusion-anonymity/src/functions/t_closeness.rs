//! `t_closeness(s)`: equal-distance Earth Mover's Distance between the class's and the table's
//! distributions of the sensitive attribute.

use std::sync::{Arc, LazyLock};

use datafusion::arrow::array::{Array, ArrayRef, AsArray, Float64Array};
use datafusion::arrow::buffer::ScalarBuffer;
use datafusion::arrow::datatypes::UInt64Type;
use datafusion::error::Result;
use datafusion::logical_expr::{AggregateUDF, Documentation};

use super::common::{doc, map_classes};
use super::formulas;
use super::histogram::new_dictionary;
use super::whole_table::{WholeTableFunction, WholeTableKind};

static DOCUMENTATION: LazyLock<Documentation> = LazyLock::new(|| {
    doc(
        "t-closeness with equal ground distance (Li, Li, Venkatasubramanian 2007): the Earth \
         Mover's Distance 1/2 * sum_v |p_E(v) - p_T(v)| between the distribution of the \
         sensitive attribute in the equivalence class and in the whole table (all rows that \
         reach the aggregation, i.e. after WHERE). Computed in the same scan. NULL is a \
         category of its own, in the class and in the table. NULL only for an empty input. \
         The table's t is the maximum over the classes.",
        "t_closeness(sensitive)",
    )
    .with_argument("sensitive", "The sensitive attribute; any type.")
    .with_sql_example(
        "```sql\n> SELECT zip, age, t_closeness(disease) AS t FROM patients GROUP BY zip, age;\n```",
    )
    .build()
});

/// The `t_closeness` aggregate function.
pub fn t_closeness_udaf() -> Arc<AggregateUDF> {
    static INSTANCE: LazyLock<Arc<AggregateUDF>> = LazyLock::new(|| {
        WholeTableFunction::new("t_closeness", WholeTableKind::TCloseness, &DOCUMENTATION)
            .into_udaf()
    });
    Arc::clone(&INSTANCE)
}

/// Histograms of every class, with values interned to dense codes over the whole table.
pub struct TableHistograms {
    /// per class: `entries[offsets[c]..offsets[c + 1]]`
    pub offsets: Vec<usize>,
    pub codes: Vec<u32>,
    /// the states' own count buffer (not copied)
    pub counts: ScalarBuffer<u64>,
    /// the table's count of each code
    pub table_counts: Vec<u64>,
    pub table_rows: u64,
    /// the distinct values, in code order (a NULL value is a code of its own)
    pub values: ArrayRef,
}

/// Items interned per call: the interner writes `usize` codes, kept as `u32` (half the memory
/// for the millions of items of near-unique attributes; the list's `i32` offsets bound the
/// items, hence the codes, below 2^31).
const INTERN_CHUNK: usize = 1 << 16;

impl TableHistograms {
    /// Reads the `{values, counts}` struct column of `__anon_sa_histogram`.
    pub fn try_new(states: &ArrayRef) -> Result<Self> {
        let states = states.as_struct();
        let values = states.column(0).as_list::<i32>();
        let counts = states.column(1).as_list::<i32>();
        let offsets: Vec<usize> = values.value_offsets().iter().map(|&o| o as usize).collect();
        let (start, end) = (offsets[0], offsets[offsets.len() - 1]);
        let items = values.values().slice(start, end - start);
        let mut dictionary = new_dictionary(items.data_type())?;
        let mut codes = Vec::with_capacity(items.len());
        let mut chunk_codes = Vec::with_capacity(INTERN_CHUNK.min(items.len()));
        for chunk_start in (0..items.len()).step_by(INTERN_CHUNK) {
            let chunk = items.slice(chunk_start, INTERN_CHUNK.min(items.len() - chunk_start));
            dictionary.intern(std::slice::from_ref(&chunk), &mut chunk_codes)?;
            codes.extend(chunk_codes.iter().map(|&c| c as u32));
        }
        let count_offset = counts.value_offsets()[0] as usize;
        let counts = counts
            .values()
            .as_primitive::<UInt64Type>()
            .values()
            .slice(count_offset, items.len());
        let mut table_counts = vec![0u64; dictionary.len()];
        for (&code, &count) in codes.iter().zip(counts.iter()) {
            table_counts[code as usize] += count;
        }
        let table_rows = table_counts.iter().sum();
        let values = dictionary
            .emit(datafusion::logical_expr::EmitTo::All)?
            .swap_remove(0);
        Ok(Self {
            offsets: offsets.iter().map(|o| o - start).collect(),
            codes,
            counts,
            table_counts,
            table_rows,
            values,
        })
    }

    pub fn num_classes(&self) -> usize {
        self.offsets.len() - 1
    }

    pub fn class_range(&self, class: usize) -> std::ops::Range<usize> {
        self.offsets[class]..self.offsets[class + 1]
    }

    /// `value(pairs, class_rows)` of every class, with `pairs` the class's
    /// `(table_count, class_count)` per value present; NULL for an empty class.
    pub fn map_class_pairs(
        &self,
        value: impl Fn(&[(u64, u64)], u64) -> f64 + Sync,
    ) -> Vec<Option<f64>> {
        map_classes(self.num_classes(), |class, pairs: &mut Vec<(u64, u64)>| {
            pairs.clear();
            let range = self.class_range(class);
            pairs.extend(
                self.codes[range.clone()]
                    .iter()
                    .zip(&self.counts[range])
                    .map(|(&code, &count)| (self.table_counts[code as usize], count)),
            );
            let class_rows: u64 = pairs.iter().map(|&(_, c)| c).sum();
            (class_rows > 0).then(|| value(pairs, class_rows))
        })
    }
}

/// Finalizes every class from the table's histograms (see [`super::whole_table`]).
pub fn finalize(table: &TableHistograms) -> Result<ArrayRef> {
    let result: Float64Array = table
        .map_class_pairs(|pairs, class_rows| {
            formulas::equal_emd(pairs, class_rows, table.table_rows)
        })
        .into();
    Ok(Arc::new(result))
}
