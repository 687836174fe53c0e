//! Reads the columns of a bucketization into dictionary codes in value order, in one scan.
//!
//! Every value goes through Arrow's row encoding, whose byte order is the value order (NULL
//! first), so the distinct values sort by their bytes and keep the input's type. Errors name
//! the column, never a value.

use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef};
use datafusion::arrow::row::{RowConverter, SortField};
use datafusion::error::{DataFusionError, Result};
use datafusion::prelude::SessionContext;
use futures::StreamExt;
use hashbrown::HashMap;

use super::{EncodedColumn, MsaTable};
use crate::functions::common::{is_ordered, ordered_as_f64};
use crate::policy::quote_ident;

/// Codes one column batch by batch.
struct Interner {
    name: String,
    converter: RowConverter,
    ids: HashMap<Box<[u8]>, u32>,
    codes: Vec<u32>,
    refuse_nulls: bool,
}

impl Interner {
    fn new(
        name: &str,
        data_type: &datafusion::arrow::datatypes::DataType,
        refuse_nulls: bool,
    ) -> Result<Self> {
        Ok(Self {
            name: name.to_string(),
            converter: RowConverter::new(vec![SortField::new(data_type.clone())])?,
            ids: HashMap::new(),
            codes: Vec::new(),
            refuse_nulls,
        })
    }

    fn push(&mut self, values: &ArrayRef) -> Result<()> {
        if self.refuse_nulls && values.null_count() > 0 {
            return Err(DataFusionError::Plan(format!(
                "quasi-identifier '{}' has NULL values; bucketization publishes [min, max] ranges, \
                 which cannot cover NULL (fill or drop them first)",
                self.name
            )));
        }
        let rows = self
            .converter
            .convert_columns(std::slice::from_ref(values))?;
        self.codes.reserve(values.len());
        for row in rows.iter() {
            let bytes = row.as_ref();
            let next = self.ids.len() as u32;
            let id = match self.ids.get(bytes) {
                Some(&id) => id,
                None => {
                    self.ids.insert(bytes.into(), next);
                    next
                }
            };
            self.codes.push(id);
        }
        Ok(())
    }

    /// Renumbers the codes in value order and decodes the distinct values.
    fn finish(self) -> Result<EncodedColumn> {
        let mut distinct: Vec<(Box<[u8]>, u32)> = self.ids.into_iter().collect();
        distinct.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        let mut rank = vec![0u32; distinct.len()];
        for (position, (_, id)) in distinct.iter().enumerate() {
            rank[*id as usize] = position as u32;
        }
        let parser = self.converter.parser();
        let rows = distinct.iter().map(|(bytes, _)| parser.parse(bytes));
        let mut decoded = self.converter.convert_rows(rows)?;
        let values: ArrayRef = decoded.pop().ok_or_else(|| {
            DataFusionError::Internal(format!("column '{}': no decoded values", self.name))
        })?;
        let numeric = if is_ordered(values.data_type()) {
            Some(
                ordered_as_f64(&values)?
                    .into_iter()
                    .map(|v| v.unwrap_or(f64::NAN))
                    .collect(),
            )
        } else {
            None
        };
        let mut codes = self.codes;
        for code in &mut codes {
            *code = rank[*code as usize];
        }
        Ok(EncodedColumn {
            name: self.name,
            codes,
            values,
            numeric,
        })
    }
}

/// Reads `quasi_identifiers` and `sensitive` of table `table` (registered on `ctx`).
pub async fn read_table(
    ctx: &SessionContext,
    table: &str,
    quasi_identifiers: &[String],
    sensitive: &[String],
) -> Result<MsaTable> {
    let columns: Vec<String> = quasi_identifiers
        .iter()
        .chain(sensitive)
        .map(|c| quote_ident(c))
        .collect();
    let sql = format!("SELECT {} FROM {}", columns.join(", "), quote_ident(table));
    let frame = ctx.sql(&sql).await?;
    let schema = Arc::new(frame.schema().as_arrow().clone());
    let mut interners = Vec::with_capacity(columns.len());
    for (i, field) in schema.fields().iter().enumerate() {
        let name = if i < quasi_identifiers.len() {
            &quasi_identifiers[i]
        } else {
            &sensitive[i - quasi_identifiers.len()]
        };
        interners.push(Interner::new(
            name,
            field.data_type(),
            i < quasi_identifiers.len(),
        )?);
    }
    let mut stream = frame.execute_stream().await?;
    while let Some(batch) = stream.next().await {
        let batch = batch?;
        for (interner, column) in interners.iter_mut().zip(batch.columns()) {
            interner.push(column)?;
        }
    }
    let mut encoded = interners
        .into_iter()
        .map(Interner::finish)
        .collect::<Result<Vec<_>>>()?;
    let sensitive = encoded.split_off(quasi_identifiers.len());
    Ok(MsaTable {
        quasi_identifiers: encoded,
        sensitive,
    })
}
