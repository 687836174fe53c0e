//! Codecs that carry table providers and custom plan nodes across the query planner's FFI
//! boundary by reference.
//!
//! Between datafusion-python and [`crate::planner`] a plan crosses serialized
//! (datafusion-proto): four times per query (the optimized logical plan to this library, the
//! rewritten one back to the session's planner, the physical plan to this library, and back).
//! datafusion-proto writes what it knows (Parquet and CSV listing tables, the built-in plan
//! nodes) by value and asks the codec for the rest. datafusion-python's own codec cannot write
//! an in-memory table (`ctx.from_pydict`, `register_record_batches`) nor a table provider of
//! another library (this library's `generalized_table`): with it alone, installing the planner
//! would break queries on such tables. Both sides of every crossing run in this process, so
//! these codecs, added to the session's codec chain by the extension bundle, write such a
//! provider or node as a ticket into [`HELD`] and read it back as the very same object.
//!
//! A ticket is taken when it is read: each crossing writes the plan once and reads it once.
//! A crossing that fails between the two leaves its objects held until the process ends
//! (they are the session's own tables, which it holds anyway). A plan serialized through the
//! session's codec chain for any other purpose (to be sent elsewhere) carries such a table as
//! a ticket too, which only this process can read, once.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, LazyLock, Mutex};

use datafusion_anonymity::datafusion::arrow::datatypes::SchemaRef;
use datafusion_anonymity::datafusion::catalog::TableProvider;
use datafusion_anonymity::datafusion::common::TableReference;
use datafusion_anonymity::datafusion::error::{DataFusionError, Result};
use datafusion_anonymity::datafusion::execution::TaskContext;
use datafusion_anonymity::datafusion::logical_expr::{Extension, LogicalPlan};
use datafusion_anonymity::datafusion::physical_plan::{
    ChildrenPropertiesMode, ExecutionPlan, ReplaceChildrenOptions,
};
use datafusion_proto::logical_plan::LogicalExtensionCodec;
use datafusion_proto::physical_plan::{PhysicalExtensionCodec, PhysicalProtoConverterExtension};

/// What a ticket stands for.
#[derive(Debug)]
enum Held {
    Table(Arc<dyn TableProvider>),
    Plan(Arc<dyn ExecutionPlan>),
}

static HELD: LazyLock<Mutex<HashMap<u64, Held>>> = LazyLock::new(Default::default);
static NEXT: AtomicU64 = AtomicU64::new(1);

/// The first bytes of a ticket: no datafusion-python encoding starts with them.
const TICKET: &[u8] = b"datafusion-anonymity:held:";

fn hold(held: Held, buf: &mut Vec<u8>) {
    let ticket = NEXT.fetch_add(1, Ordering::Relaxed);
    HELD.lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(ticket, held);
    buf.extend_from_slice(TICKET);
    buf.extend_from_slice(&ticket.to_le_bytes());
}

/// The object of the ticket in `buf`; `None` when `buf` is not a ticket.
fn take(buf: &[u8]) -> Result<Option<Held>> {
    let Some(rest) = buf.strip_prefix(TICKET) else {
        return Ok(None);
    };
    let ticket = u64::from_le_bytes(rest.try_into().map_err(|_| {
        DataFusionError::Internal("a datafusion-anonymity plan ticket is malformed".to_string())
    })?);
    HELD.lock()
        .unwrap_or_else(|e| e.into_inner())
        .remove(&ticket)
        .map(Some)
        .ok_or_else(|| {
            DataFusionError::Internal(format!(
                "datafusion-anonymity plan ticket {ticket} is not held: read already, or \
                 written by another process (a plan carrying a session's in-memory table \
                 through this codec is valid only in the process that wrote it, once)"
            ))
        })
}

/// A logical codec for the session's chain: table providers by reference (see module docs).
#[derive(Debug, Default)]
pub struct ByReferenceLogical;

impl LogicalExtensionCodec for ByReferenceLogical {
    fn try_decode(
        &self,
        _buf: &[u8],
        _inputs: &[LogicalPlan],
        _ctx: &TaskContext,
    ) -> Result<Extension> {
        Err(not_held("a logical plan node"))
    }

    fn try_encode(&self, _node: &Extension, _buf: &mut Vec<u8>) -> Result<()> {
        Err(not_held("a logical plan node"))
    }

    fn try_decode_table_provider(
        &self,
        buf: &[u8],
        table_ref: &TableReference,
        _schema: SchemaRef,
        _ctx: &TaskContext,
    ) -> Result<Arc<dyn TableProvider>> {
        match take(buf)? {
            Some(Held::Table(table)) => Ok(crate::held::hand_back(table)),
            _ => Err(DataFusionError::Internal(format!(
                "table {table_ref}: not a datafusion-anonymity ticket"
            ))),
        }
    }

    fn try_encode_table_provider(
        &self,
        _table_ref: &TableReference,
        node: Arc<dyn TableProvider>,
        buf: &mut Vec<u8>,
    ) -> Result<()> {
        hold(Held::Table(node), buf);
        Ok(())
    }
}

fn not_held(what: &str) -> DataFusionError {
    DataFusionError::NotImplemented(format!(
        "datafusion-anonymity's codec does not write {what}"
    ))
}

/// A physical codec for the session's chain: the plan nodes datafusion-proto does not know,
/// by reference (see module docs).
#[derive(Debug, Default)]
pub struct ByReferencePhysical;

impl PhysicalExtensionCodec for ByReferencePhysical {
    fn try_decode(
        &self,
        buf: &[u8],
        inputs: &[Arc<dyn ExecutionPlan>],
        _ctx: &TaskContext,
        _proto_converter: &dyn PhysicalProtoConverterExtension,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        match take(buf)? {
            // the node as it was, over the children as the decoding side made them: its own
            // plans, whose functions run natively there (the children it had, made on the
            // other side, would call that side's functions through the FFI)
            Some(Held::Plan(plan)) if inputs.is_empty() => Ok(plan),
            Some(Held::Plan(plan)) => plan.replace_children(
                inputs.to_vec(),
                ReplaceChildrenOptions::new(ChildrenPropertiesMode::Recompute),
            ),
            _ => Err(DataFusionError::Internal(
                "plan node: not a datafusion-anonymity ticket".to_string(),
            )),
        }
    }

    fn try_encode(
        &self,
        node: Arc<dyn ExecutionPlan>,
        buf: &mut Vec<u8>,
        _proto_converter: &dyn PhysicalProtoConverterExtension,
    ) -> Result<()> {
        hold(Held::Plan(node), buf);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A ticket reads back the object it was written for, once; other bytes are not tickets.
    #[test]
    fn tickets_are_read_once() {
        use datafusion_anonymity::datafusion::arrow::datatypes::Schema;
        use datafusion_anonymity::datafusion::physical_plan::empty::EmptyExec;

        let plan: Arc<dyn ExecutionPlan> = Arc::new(EmptyExec::new(Arc::new(Schema::empty())));
        let mut buf = Vec::new();
        hold(Held::Plan(Arc::clone(&plan)), &mut buf);
        let Some(Held::Plan(read)) = take(&buf).unwrap() else {
            panic!("not the plan")
        };
        assert!(Arc::ptr_eq(&read, &plan));
        assert!(
            take(&buf)
                .unwrap_err()
                .to_string()
                .contains("is not held: read already")
        );
        assert!(take(b"\x0a\x04abcd").unwrap().is_none());
    }
}
