//! Arrow data in extension-codec payloads: a sequence of arrays, or of record batches, each as
//! an Arrow IPC stream behind its byte length (little-endian u64).

use std::io::Cursor;
use std::sync::Arc;

use datafusion::arrow::array::ArrayRef;
use datafusion::arrow::datatypes::{Field, Schema, SchemaRef};
use datafusion::arrow::ipc::reader::StreamReader;
use datafusion::arrow::ipc::writer::StreamWriter;
use datafusion::arrow::record_batch::{RecordBatch, RecordBatchOptions};
use datafusion::error::{DataFusionError, Result};

/// Appends `batches` (all of `schema`) as one IPC stream.
pub fn put_batches(out: &mut Vec<u8>, schema: &SchemaRef, batches: &[RecordBatch]) -> Result<()> {
    let mut bytes = Vec::new();
    {
        let mut writer = StreamWriter::try_new(&mut bytes, schema)?;
        for batch in batches {
            writer.write(batch)?;
        }
        writer.finish()?;
    }
    put_bytes(out, &bytes);
    Ok(())
}

/// Appends `array` as a one-column IPC stream (its type travels with it, even when empty).
pub fn put_array(out: &mut Vec<u8>, array: &ArrayRef) -> Result<()> {
    let schema = Arc::new(Schema::new(vec![Field::new(
        "a",
        array.data_type().clone(),
        true,
    )]));
    let batch = RecordBatch::try_new_with_options(
        Arc::clone(&schema),
        vec![Arc::clone(array)],
        &RecordBatchOptions::new().with_row_count(Some(array.len())),
    )?;
    put_batches(out, &schema, &[batch])
}

/// Appends length-prefixed bytes.
pub fn put_bytes(out: &mut Vec<u8>, bytes: &[u8]) {
    out.extend_from_slice(&(bytes.len() as u64).to_le_bytes());
    out.extend_from_slice(bytes);
}

/// Reads what the `put_*` functions wrote, in order.
pub struct WireReader<'a> {
    rest: &'a [u8],
}

impl<'a> WireReader<'a> {
    pub fn new(bytes: &'a [u8]) -> Self {
        Self { rest: bytes }
    }

    /// The next length-prefixed bytes.
    pub fn bytes(&mut self) -> Result<&'a [u8]> {
        let truncated = || DataFusionError::Internal("truncated extension payload".to_string());
        let (len, rest) = self.rest.split_first_chunk::<8>().ok_or_else(truncated)?;
        let len = usize::try_from(u64::from_le_bytes(*len)).map_err(|_| truncated())?;
        if rest.len() < len {
            return Err(truncated());
        }
        let (bytes, rest) = rest.split_at(len);
        self.rest = rest;
        Ok(bytes)
    }

    /// The next IPC stream: its schema and batches.
    pub fn batches(&mut self) -> Result<(SchemaRef, Vec<RecordBatch>)> {
        let reader = StreamReader::try_new(Cursor::new(self.bytes()?), None)?;
        let schema = reader.schema();
        let batches = reader.collect::<std::result::Result<Vec<_>, _>>()?;
        Ok((schema, batches))
    }

    /// The next array [`put_array`] wrote.
    pub fn array(&mut self) -> Result<ArrayRef> {
        let (_, batches) = self.batches()?;
        match batches.as_slice() {
            [batch] if batch.num_columns() == 1 => Ok(Arc::clone(batch.column(0))),
            _ => Err(DataFusionError::Internal(
                "malformed array in extension payload".to_string(),
            )),
        }
    }
}
