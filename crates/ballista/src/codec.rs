//! Extension codecs: how the crate's functions and in-memory tables travel in a serialized
//! plan, wrapping Ballista's own codecs and falling back to them for everything else.
//!
//! Most functions are defined by their name alone and travel as that name; every host
//! registers them ([`datafusion_anonymity::register_udfs`]). Four carry parameters in their struct, which a
//! name cannot bring along, so their payload holds the parameters:
//! - `generalize`: the hierarchies of its registry ([`datafusion_anonymity::generalize::spec`]);
//! - `__anon_local_recode` and `__anon_local_class_key` (the same lookup returning class
//!   keys only): the local release it looks rows up in, and its column types;
//! - `__anon_domain_histogram` (the profile's histograms): its domain;
//! - `__anon_person_pseudonym`: its release's key (so the key reaches the cluster's executors,
//!   over the cluster's own connections, and nothing else).
//!
//! A `MemTable` (the failing classes a `GeneralizedTable` joins against, a table registered
//! from batches) travels as its batches. Payloads start with [`MAGIC`] and a tag, so a payload
//! of the wrapped codec is never mistaken for ours.

use std::sync::Arc;

use datafusion::arrow::array::new_empty_array;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::catalog::TableProvider;
use datafusion::common::TableReference;
use datafusion::datasource::MemTable;
use datafusion::datasource::file_format::FileFormatFactory;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::TaskContext;
use datafusion::logical_expr::{AggregateUDF, Extension, LogicalPlan, ScalarUDF, WindowUDF};
use datafusion::physical_plan::ExecutionPlan;
use datafusion_proto::logical_plan::LogicalExtensionCodec;
use datafusion_proto::physical_plan::{PhysicalExtensionCodec, PhysicalProtoConverterExtension};

use datafusion_anonymity::generalize::spec::{decode_registry, encode_registry};
use datafusion_anonymity::generalize::udf::generalize::GeneralizeFunction;
use datafusion_anonymity_engine::local_recode::LocalRecodeFunction;
use datafusion_anonymity_engine::profile::histogram::{histogram_domain, histogram_udaf};
use datafusion_anonymity_engine::pseudonym::{PseudonymFunction, PseudonymKey};
use datafusion_anonymity_engine::release::LocalRecoding;
use datafusion_anonymity_engine::wire::{self, WireReader};

/// The first bytes of every payload this codec writes.
pub const MAGIC: &[u8] = b"\0anon1";

const TAG_GENERALIZE: u8 = b'G';
const TAG_LOCAL_RECODE: u8 = b'L';
/// the same payload, for the lookup that returns class keys only
const TAG_LOCAL_CLASS_KEY: u8 = b'K';
const TAG_HISTOGRAM: u8 = b'H';
const TAG_MEM_TABLE: u8 = b'M';
/// the person pseudonyms: their key travels to the executors inside the plan
const TAG_PSEUDONYM: u8 = b'P';

/// Our tag and payload, when `buf` is ours.
fn ours(buf: &[u8]) -> Option<(u8, &[u8])> {
    let rest = buf.strip_prefix(MAGIC)?;
    let (&tag, payload) = rest.split_first()?;
    Some((tag, payload))
}

fn start(buf: &mut Vec<u8>, tag: u8) {
    buf.extend_from_slice(MAGIC);
    buf.push(tag);
}

/// Our payload of a scalar function, if it carries parameters.
fn encode_udf(node: &ScalarUDF, buf: &mut Vec<u8>) -> Result<bool> {
    if let Some(generalize) = node.inner().downcast_ref::<GeneralizeFunction>() {
        start(buf, TAG_GENERALIZE);
        buf.extend(encode_registry(generalize.registry())?);
        return Ok(true);
    }
    if let Some(lookup) = node.inner().downcast_ref::<LocalRecodeFunction>() {
        let tag = if lookup.returns_class_keys() {
            TAG_LOCAL_CLASS_KEY
        } else {
            TAG_LOCAL_RECODE
        };
        start(buf, tag);
        wire::put_bytes(buf, &(lookup.raw_types().len() as u64).to_le_bytes());
        for data_type in lookup.raw_types() {
            wire::put_array(buf, &new_empty_array(data_type))?;
        }
        lookup.release().put_wire(buf)?;
        return Ok(true);
    }
    if let Some(pseudonym) = node.inner().downcast_ref::<PseudonymFunction>() {
        start(buf, TAG_PSEUDONYM);
        buf.extend_from_slice(pseudonym.key().bytes());
        return Ok(true);
    }
    Ok(false)
}

fn decode_udf(name: &str, tag: u8, payload: &[u8]) -> Result<Arc<ScalarUDF>> {
    match tag {
        TAG_GENERALIZE => Ok(Arc::new(ScalarUDF::new_from_impl(GeneralizeFunction::new(
            Arc::new(decode_registry(payload)?),
        )))),
        TAG_LOCAL_RECODE | TAG_LOCAL_CLASS_KEY => {
            let mut reader = WireReader::new(payload);
            let count = reader
                .bytes()?
                .try_into()
                .map(u64::from_le_bytes)
                .map_err(|_| malformed(name))?;
            let raw_types = (0..count)
                .map(|_| reader.array().map(|a| a.data_type().clone()))
                .collect::<Result<Vec<_>>>()?;
            let release = LocalRecoding::from_wire(&mut reader)?;
            let lookup = LocalRecodeFunction::try_new(Arc::new(release), &raw_types)?;
            Ok(Arc::new(ScalarUDF::new_from_impl(
                if tag == TAG_LOCAL_CLASS_KEY {
                    lookup.class_keys()
                } else {
                    lookup
                },
            )))
        }
        TAG_PSEUDONYM => {
            let key: [u8; 32] = payload.try_into().map_err(|_| malformed(name))?;
            Ok(Arc::new(ScalarUDF::new_from_impl(PseudonymFunction::new(
                PseudonymKey::from_bytes(key),
            ))))
        }
        _ => Err(malformed(name)),
    }
}

fn encode_udaf(node: &AggregateUDF, buf: &mut Vec<u8>) -> Result<bool> {
    if let Some(domain) = histogram_domain(node) {
        start(buf, TAG_HISTOGRAM);
        wire::put_array(buf, domain)?;
        return Ok(true);
    }
    Ok(false)
}

fn decode_udaf(name: &str, tag: u8, payload: &[u8]) -> Result<Arc<AggregateUDF>> {
    match tag {
        TAG_HISTOGRAM => Ok(Arc::new(histogram_udaf(WireReader::new(payload).array()?))),
        _ => Err(malformed(name)),
    }
}

fn malformed(name: &str) -> DataFusionError {
    DataFusionError::Internal(format!(
        "malformed datafusion-anonymity payload for '{name}' (client and cluster of \
         different versions?)"
    ))
}

/// The function methods both codecs share: ours for the functions with parameters, the
/// wrapped codec's for the rest.
macro_rules! function_methods {
    () => {
        fn try_decode_udf(&self, name: &str, buf: &[u8]) -> Result<Arc<ScalarUDF>> {
            match ours(buf) {
                Some((tag, payload)) => decode_udf(name, tag, payload),
                None => self.inner.try_decode_udf(name, buf),
            }
        }

        fn try_encode_udf(&self, node: &ScalarUDF, buf: &mut Vec<u8>) -> Result<()> {
            if encode_udf(node, buf)? {
                return Ok(());
            }
            self.inner.try_encode_udf(node, buf)
        }

        fn try_decode_udaf(&self, name: &str, buf: &[u8]) -> Result<Arc<AggregateUDF>> {
            match ours(buf) {
                Some((tag, payload)) => decode_udaf(name, tag, payload),
                None => self.inner.try_decode_udaf(name, buf),
            }
        }

        fn try_encode_udaf(&self, node: &AggregateUDF, buf: &mut Vec<u8>) -> Result<()> {
            if encode_udaf(node, buf)? {
                return Ok(());
            }
            self.inner.try_encode_udaf(node, buf)
        }

        fn try_decode_udwf(&self, name: &str, buf: &[u8]) -> Result<Arc<WindowUDF>> {
            self.inner.try_decode_udwf(name, buf)
        }

        fn try_encode_udwf(&self, node: &WindowUDF, buf: &mut Vec<u8>) -> Result<()> {
            self.inner.try_encode_udwf(node, buf)
        }
    };
}

/// The logical codec: ours for the crate's functions and `MemTable`s, the wrapped one (by
/// default Ballista's) for the rest.
#[derive(Debug)]
pub struct AnonymityLogicalCodec {
    inner: Arc<dyn LogicalExtensionCodec>,
}

impl AnonymityLogicalCodec {
    /// Wraps `inner`.
    pub fn new(inner: Arc<dyn LogicalExtensionCodec>) -> Self {
        Self { inner }
    }
}

impl Default for AnonymityLogicalCodec {
    fn default() -> Self {
        Self::new(Arc::new(
            ballista_core::serde::BallistaLogicalExtensionCodec::default(),
        ))
    }
}

impl LogicalExtensionCodec for AnonymityLogicalCodec {
    fn try_decode(
        &self,
        buf: &[u8],
        inputs: &[LogicalPlan],
        ctx: &TaskContext,
    ) -> Result<Extension> {
        self.inner.try_decode(buf, inputs, ctx)
    }

    fn try_encode(&self, node: &Extension, buf: &mut Vec<u8>) -> Result<()> {
        self.inner.try_encode(node, buf)
    }

    fn try_decode_table_provider(
        &self,
        buf: &[u8],
        table_ref: &TableReference,
        schema: SchemaRef,
        ctx: &TaskContext,
    ) -> Result<Arc<dyn TableProvider>> {
        match ours(buf) {
            Some((TAG_MEM_TABLE, payload)) => {
                let mut reader = WireReader::new(payload);
                let count = reader
                    .bytes()?
                    .try_into()
                    .map(u64::from_le_bytes)
                    .map_err(|_| malformed(table_ref.table()))?;
                let partitions = (0..count)
                    .map(|_| reader.batches().map(|(_, batches)| batches))
                    .collect::<Result<Vec<_>>>()?;
                Ok(Arc::new(MemTable::try_new(schema, partitions)?))
            }
            Some(_) => Err(malformed(table_ref.table())),
            None => self
                .inner
                .try_decode_table_provider(buf, table_ref, schema, ctx),
        }
    }

    fn try_encode_table_provider(
        &self,
        table_ref: &TableReference,
        node: Arc<dyn TableProvider>,
        buf: &mut Vec<u8>,
    ) -> Result<()> {
        let Some(table) = node.downcast_ref::<MemTable>() else {
            let kind = format!("{node:?}");
            let kind = kind
                .split(|c: char| !(c.is_alphanumeric() || c == '_'))
                .next()
                .unwrap_or_default()
                .to_string();
            return self
                .inner
                .try_encode_table_provider(table_ref, node, buf)
                .map_err(|e| {
                    DataFusionError::Plan(format!(
                        "table {table_ref} (a {kind}) cannot be sent to the cluster: {e}"
                    ))
                });
        };
        start(buf, TAG_MEM_TABLE);
        wire::put_bytes(buf, &(table.batches.len() as u64).to_le_bytes());
        let schema = table.schema();
        for partition in &table.batches {
            let batches = partition.try_read().map_err(|_| {
                DataFusionError::Execution(format!(
                    "in-memory table {table_ref} is being written to; it cannot be sent \
                     to the cluster now"
                ))
            })?;
            wire::put_batches(buf, &schema, &batches)?;
        }
        Ok(())
    }

    fn try_decode_file_format(
        &self,
        buf: &[u8],
        ctx: &TaskContext,
    ) -> Result<Arc<dyn FileFormatFactory>> {
        self.inner.try_decode_file_format(buf, ctx)
    }

    fn try_encode_file_format(
        &self,
        buf: &mut Vec<u8>,
        node: Arc<dyn FileFormatFactory>,
    ) -> Result<()> {
        self.inner.try_encode_file_format(buf, node)
    }

    function_methods!();
}

/// The physical codec: ours for the crate's functions, the wrapped one (by default
/// Ballista's) for plan nodes and the rest. In-memory scans serialize natively.
#[derive(Debug)]
pub struct AnonymityPhysicalCodec {
    inner: Arc<dyn PhysicalExtensionCodec>,
}

impl AnonymityPhysicalCodec {
    /// Wraps `inner`.
    pub fn new(inner: Arc<dyn PhysicalExtensionCodec>) -> Self {
        Self { inner }
    }
}

impl Default for AnonymityPhysicalCodec {
    fn default() -> Self {
        Self::new(Arc::new(
            ballista_core::serde::BallistaPhysicalExtensionCodec::default(),
        ))
    }
}

impl PhysicalExtensionCodec for AnonymityPhysicalCodec {
    fn try_decode(
        &self,
        buf: &[u8],
        inputs: &[Arc<dyn ExecutionPlan>],
        ctx: &TaskContext,
        proto_converter: &dyn PhysicalProtoConverterExtension,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        self.inner.try_decode(buf, inputs, ctx, proto_converter)
    }

    fn try_encode(
        &self,
        node: Arc<dyn ExecutionPlan>,
        buf: &mut Vec<u8>,
        proto_converter: &dyn PhysicalProtoConverterExtension,
    ) -> Result<()> {
        self.inner.try_encode(node, buf, proto_converter)
    }

    function_methods!();
}

#[cfg(test)]
mod pseudonym_tests {
    use super::*;

    /// The pseudonym function travels with its key: the payload is the tag and the key's 32
    /// bytes, and the decoded function holds the same key.
    #[test]
    fn the_pseudonym_key_survives_the_cluster_codec() {
        let key = PseudonymKey::from_bytes([9; 32]);
        let udf = ScalarUDF::new_from_impl(PseudonymFunction::new(key.clone()));
        let codec = AnonymityLogicalCodec::default();
        let mut buf = Vec::new();
        codec.try_encode_udf(&udf, &mut buf).unwrap();
        assert_eq!(buf.len(), MAGIC.len() + 1 + 32);
        let decoded = codec.try_decode_udf(udf.name(), &buf).unwrap();
        let decoded = decoded.inner().downcast_ref::<PseudonymFunction>().unwrap();
        assert_eq!(decoded.key(), &key);
        // a truncated payload is refused, not read as another key
        assert!(
            codec
                .try_decode_udf(udf.name(), &buf[..buf.len() - 1])
                .is_err()
        );
    }
}

#[cfg(test)]
mod local_recode_tests {
    use datafusion::arrow::datatypes::DataType;
    use datafusion_anonymity_engine::policy::Policy;
    use datafusion_anonymity_engine::search::local::{LocalAlgorithm, LocalOptions};
    use datafusion_anonymity_engine::search::release::Release;
    use datafusion_anonymity_engine::search::{self, Method, Metric};

    use super::*;

    /// A Mondrian release of Li et al.'s 9 rows travels as itself, as the labels function and
    /// as the class-key one: the decoded lookup recodes the table's rows exactly as the
    /// original does.
    #[tokio::test]
    async fn a_local_recoding_survives_the_cluster_codec() {
        let ctx = datafusion_anonymity_engine::session::context(None).unwrap();
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../sql/policies/li2007_drop.toml"
        );
        let mut policy = Policy::from_file(path).unwrap();
        policy.register_with(&ctx, false).await.unwrap();
        let freq = policy.frequency_set(&ctx, None).await.unwrap();
        let decision = search::decide(
            &freq,
            policy.requirements(),
            Method::Local(LocalAlgorithm::Mondrian),
            Metric::Loss,
            LocalOptions::default(),
            &mut |_, _| {},
        )
        .unwrap();
        let Release::Local(recoding) = decision.release else {
            panic!("Mondrian makes a local release")
        };
        // the quasi-identifiers in the policy's order, as the lookup takes them
        let batches = ctx
            .sql("SELECT zip, age FROM li2007")
            .await
            .unwrap()
            .collect()
            .await
            .unwrap();
        let batch =
            datafusion::arrow::compute::concat_batches(&batches[0].schema(), &batches).unwrap();
        let columns = batch.columns().to_vec();
        let types: Vec<DataType> = columns.iter().map(|c| c.data_type().clone()).collect();
        let codec = AnonymityLogicalCodec::default();
        for keys_only in [false, true] {
            let by_labels = LocalRecodeFunction::try_new(Arc::clone(&recoding), &types).unwrap();
            let function = if keys_only {
                by_labels.class_keys()
            } else {
                by_labels
            };
            let udf = ScalarUDF::new_from_impl(function);
            let mut buf = Vec::new();
            codec.try_encode_udf(&udf, &mut buf).unwrap();
            let decoded = codec.try_decode_udf(udf.name(), &buf).unwrap();
            assert_eq!(decoded.name(), udf.name());
            let lookup = decoded
                .inner()
                .downcast_ref::<LocalRecodeFunction>()
                .unwrap();
            assert_eq!(lookup.returns_class_keys(), keys_only);
            let original = udf.inner().downcast_ref::<LocalRecodeFunction>().unwrap();
            assert_eq!(
                lookup.recoded(&columns, batch.num_rows()).unwrap(),
                original.recoded(&columns, batch.num_rows()).unwrap(),
                "class keys only: {keys_only}"
            );
        }
    }
}
