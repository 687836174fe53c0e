//! Publishing a bucketized release: the generalized table (GT) and the sensitive table (ST)
//! are written into one hidden staging directory, verified from the written files, and the
//! directory is renamed into place — both tables appear together or neither does.
//!
//! ```text
//! <out>/gt.parquet   one row per record: each published quasi-identifier as its GB's label
//!                    ("[lo, hi]", or the value when the GB has one), and bucket_id
//! <out>/st.parquet   one row per record: bucket_id and every sensitive attribute, each column
//!                    sorted on its own within the bucket
//! ```
//!
//! GT rows are ordered by GB and bucket id, ST rows by bucket id: neither keeps the input's
//! order, and no ST row is a person's fingerprint.
//!
//! Verification reads the two files back and checks, independently of how the buckets were
//! made: both have one row per input record; every run of equal GT label tuples in the written
//! order has at least k rows (a run lies inside one class, so no class is smaller; GT is written
//! by generalized bucket, so a shorter run fails closed rather than passing wrongly); per
//! bucket id, GT and ST have the same number of rows; every bucket has at least k rows and the
//! required distinct values of every sensitive attribute; at most λ rows of a bucket share a
//! linking value; every sensitive attribute has exactly the input's values with their counts;
//! and the fingerprint-correlation attack, run on the written ST with the attributes the
//! linking value determines in the input, pins no protected attribute.

use std::fmt::Write;
use std::sync::Arc;
use std::time::Instant;

use datafusion::arrow::array::{
    Array, ArrayRef, AsArray, Int64Array, RecordBatch, StringBuilder, UInt32Array,
};
use datafusion::arrow::compute::{cast, take};
use datafusion::arrow::datatypes::{DataType, Field, Int64Type, Schema, SchemaRef};
use datafusion::arrow::util::display::{ArrayFormatter, FormatOptions};
use datafusion::catalog::streaming::StreamingTable;
use datafusion::dataframe::DataFrameWriteOptions;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::TaskContext;
use datafusion::physical_plan::SendableRecordBatchStream;
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::streaming::PartitionStream;
use datafusion::prelude::{ParquetReadOptions, SessionContext};
use serde::Serialize;

use super::request::PublishRequest;
use super::{Output, StagedOutput, is_parquet_file};
use crate::bucketize::attack::{AttackReport, SensitiveBuckets, fingerprint_attack, runs};
use crate::bucketize::fingerprint::{protected_attributes, protected_links};
use crate::bucketize::groups::pk_angelize;
use crate::bucketize::{
    BucketizedRelease, CkSummary, Dependencies, MsaTable, encode, utility, weights,
};
use crate::policy::{Bucketization, quote_ident};
use crate::storage::{Location, StoreOptions};

/// Rows per written batch (DataFusion's default batch size: tables of a few thousand rows
/// already span several batches, whose order the writer must keep).
const BATCH_ROWS: usize = 8192;
/// The bucket id column of both tables.
pub const BUCKET_ID: &str = "bucket_id";
/// File names inside the output directory.
pub const GT_FILE: &str = "gt.parquet";
/// File names inside the output directory.
pub const ST_FILE: &str = "st.parquet";

/// What was published and verified.
#[derive(Debug, Clone, Serialize)]
pub struct BucketizedReport {
    /// `ck-anonymization` or `pk-angelization`.
    pub method: &'static str,
    /// The output directory.
    pub output: String,
    /// Records (rows of each table).
    pub rows: u64,
    /// The quasi-identifiers GT publishes.
    pub published_quasi_identifiers: Vec<String>,
    /// Generalized buckets.
    pub generalized_buckets: usize,
    /// Fingerprint buckets.
    pub fingerprint_buckets: usize,
    /// Measured on the written files.
    pub verification: BucketVerification,
    /// The fingerprint-correlation attack on the written ST, through the linking attribute.
    pub attack: AttackReport,
    /// The same attack through every other attribute that determines another one in the data
    /// (an adversary may know a person's value of any of them). Enforced for (c,k) like the
    /// linking attribute's; reported for (p,k).
    pub other_links: Vec<AttackReport>,
    /// NCP of GT, percent.
    pub ncp_percent: f64,
    /// Seconds: writing both tables, verifying them.
    pub write_seconds: f64,
    /// Seconds verifying.
    pub verify_seconds: f64,
}

/// The figures verification measured.
#[derive(Debug, Clone, Serialize)]
pub struct BucketVerification {
    /// The shortest run of equal GT label tuples in the written order (each run lies inside
    /// one class, so every class is at least this large).
    pub min_generalized_class: u64,
    /// The smallest bucket of ST.
    pub min_bucket: u64,
    /// The fewest distinct values of any sensitive attribute in any bucket.
    pub min_distinct_values: u64,
    /// The most rows of a bucket sharing a linking value.
    pub max_linking_repeats: u64,
}

/// A bucketization policy run end to end.
#[derive(Debug, Clone)]
pub struct PolicyOutcome {
    /// The dependency analysis (its linking attribute is the attack's).
    pub dependencies: Dependencies,
    /// What (c,k)-anonymization built (`None` for (p,k)).
    pub construction: Option<CkSummary>,
    /// What was published and verified.
    pub report: BucketizedReport,
    /// Seconds reading the input.
    pub read_seconds: f64,
    /// Seconds bucketizing.
    pub bucketize_seconds: f64,
}

/// Runs the bucketization of `request`'s registered policy (its `[privacy] method`): read the
/// input in one scan, bucketize, publish GT and ST to the request's output (checked by the
/// caller: `jobs::output::PlannedOutput::check`). `progress` is told each phase's figures.
pub async fn publish_policy(
    request: PublishRequest<'_>,
    progress: &mut dyn FnMut(String),
) -> Result<PolicyOutcome> {
    let (ctx, policy) = (request.ctx, request.policy);
    let bucketization = policy.bucketization().cloned().ok_or_else(|| {
        DataFusionError::Plan(format!(
            "policy {}: no bucketization method",
            policy.source()
        ))
    })?;
    let out = request.output.location();
    if !matches!(request.output, Output::Files { .. }) {
        // the job refuses a Delta output before anything is read, saying why
        return Err(DataFusionError::Internal(
            "a bucketized release is published as files, not a Delta table".to_string(),
        ));
    }
    refuse_single_file(out)?;
    let phase = Instant::now();
    let table = encode::read_table(
        ctx,
        policy.table_name(),
        &policy.published_quasi_identifiers(),
        &policy.sensitive_attributes(),
    )
    .await?;
    let read_seconds = phase.elapsed().as_secs_f64();
    progress(format!(
        "read {} records ({read_seconds:.2} s)",
        table.rows()
    ));
    let phase = Instant::now();
    let nothing_written = |e: DataFusionError| {
        DataFusionError::Execution(format!("{}; nothing written", e.message()))
    };
    let (release, construction, dependencies) = match &bucketization {
        Bucketization::Ck(options) => {
            let (release, summary) =
                crate::bucketize::ck_anonymize(&table, options).map_err(nothing_written)?;
            let dependencies = summary.dependencies.clone();
            (release, Some(summary), dependencies)
        }
        Bucketization::Pk { p, k, analysis } => {
            let release = pk_angelize(&table, *p, *k).map_err(nothing_written)?;
            // the attack needs the linking attribute: the same analysis as (c,k)
            let dependencies = weights::analyse(&table, analysis).map_err(nothing_written)?;
            (release, None, dependencies)
        }
    };
    let bucketize_seconds = phase.elapsed().as_secs_f64();
    progress(format!(
        "{}: {} fingerprint buckets, {} generalized buckets, linking attribute '{}' (by {}) \
         ({bucketize_seconds:.2} s)",
        bucketization.method().name(),
        release.buckets,
        release.group_ranges.len(),
        dependencies.attributes[dependencies.linking],
        dependencies.linking_reason
    ));
    let report = publish_bucketized(
        ctx,
        &table,
        &release,
        &bucketization,
        &dependencies,
        out,
        policy.storage(),
    )
    .await?;
    Ok(PolicyOutcome {
        dependencies,
        construction,
        report,
        read_seconds,
        bucketize_seconds,
    })
}

/// Publishes `release` of `table` to the directory `out` (checked by the caller); see the
/// module documentation.
pub async fn publish_bucketized(
    ctx: &SessionContext,
    table: &MsaTable,
    release: &BucketizedRelease,
    bucketization: &Bucketization,
    dependencies: &Dependencies,
    out: &Location,
    options: &StoreOptions,
) -> Result<BucketizedReport> {
    refuse_single_file(out)?;
    let started = Instant::now();
    let staged = StagedOutput::directory(out, options).await?;
    staged.bind(&ctx.runtime_env())?;
    let st: Arc<SensitiveBuckets> = match &release.cells {
        Some(cells) => Arc::clone(cells),
        None => Arc::new(release.sensitive_buckets(table).into_owned()),
    };
    let gt_path = staged.staging().join(GT_FILE)?;
    let st_path = staged.staging().join(ST_FILE)?;
    // batches must reach the writer in the order they are made (GT by generalized bucket, ST
    // by bucket): no round-robin repartition, which would interleave them
    let in_order = SessionContext::new_with_state(super::in_order(ctx));
    // the two files are written side by side; GT's verification scan starts as soon as GT
    // is complete, while ST may still be written
    let quoted_qis: Vec<String> = table
        .quasi_identifiers
        .iter()
        .map(|c| quote_ident(&c.name))
        .collect();
    let gt_then_scan = async {
        write(&in_order, generalized_table(table, release)?, &gt_path).await?;
        let (ctx, path) = (ctx.clone(), gt_path.clone());
        Ok::<_, DataFusionError>(tokio::spawn(async move {
            scan_gt_file(&ctx, &path, &quoted_qis).await
        }))
    };
    let (gt_scan, ()) = futures::try_join!(
        gt_then_scan,
        write(
            &in_order,
            sensitive_table(table, Arc::clone(&st))?,
            &st_path
        ),
    )?;
    let write_seconds = started.elapsed().as_secs_f64();
    let verifying = Instant::now();
    let (verification, attack, other_links) = verify(
        ctx,
        table,
        bucketization,
        dependencies,
        &gt_path,
        &st_path,
        gt_scan,
    )
    .await?;
    let verify_seconds = verifying.elapsed().as_secs_f64();
    staged.commit().await?;
    Ok(BucketizedReport {
        method: bucketization.method().name(),
        output: out.to_string(),
        rows: table.rows() as u64,
        published_quasi_identifiers: table
            .quasi_identifiers
            .iter()
            .map(|c| c.name.clone())
            .collect(),
        generalized_buckets: release.group_ranges.len(),
        fingerprint_buckets: release.buckets,
        verification,
        attack,
        other_links,
        ncp_percent: utility::ncp_percent(table, release),
        write_seconds,
        verify_seconds,
    })
}

/// A bucketized release is a directory of two tables, never one `.parquet` file.
fn refuse_single_file(out: &Location) -> Result<()> {
    if is_parquet_file(out) {
        return Err(DataFusionError::Plan(format!(
            "output {out}: a bucketized release is two tables ({GT_FILE} and {ST_FILE}); give a \
             directory"
        )));
    }
    Ok(())
}

/// Batches made on demand by a closure over the batch index.
struct LazyBatches {
    schema: SchemaRef,
    batches: usize,
    make: Arc<dyn Fn(usize) -> Result<RecordBatch> + Send + Sync>,
}

impl std::fmt::Debug for LazyBatches {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "LazyBatches({} batches)", self.batches)
    }
}

impl PartitionStream for LazyBatches {
    fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    fn execute(&self, _ctx: Arc<TaskContext>) -> SendableRecordBatchStream {
        let make = Arc::clone(&self.make);
        let stream = futures::stream::iter((0..self.batches).map(move |i| make(i)));
        Box::pin(RecordBatchStreamAdapter::new(
            Arc::clone(&self.schema),
            stream,
        ))
    }
}

async fn write(ctx: &SessionContext, batches: LazyBatches, path: &Location) -> Result<()> {
    let schema = Arc::clone(&batches.schema);
    let table = StreamingTable::try_new(schema, vec![Arc::new(batches)])?;
    super::writer_context(ctx)
        .read_table(Arc::new(table))?
        .write_parquet(
            &path.datafusion_path(),
            DataFrameWriteOptions::new().with_single_file_output(true),
            None,
        )
        .await?;
    Ok(())
}

/// Every distinct value of a column as display text.
fn value_texts(values: &ArrayRef) -> Result<Vec<String>> {
    let formatter = ArrayFormatter::try_new(values.as_ref(), &FormatOptions::default())?;
    Ok((0..values.len())
        .map(|i| formatter.value(i).to_string())
        .collect())
}

/// GT: rows ordered by (GB, bucket id); labels per GB made once.
fn generalized_table(table: &MsaTable, release: &BucketizedRelease) -> Result<LazyBatches> {
    let mut fields: Vec<Field> = table
        .quasi_identifiers
        .iter()
        .map(|c| Field::new(&c.name, DataType::Utf8, false))
        .collect();
    fields.push(Field::new(BUCKET_ID, DataType::Int64, false));
    let schema = Arc::new(Schema::new(fields));
    let mut labels: Vec<ArrayRef> = Vec::with_capacity(table.quasi_identifiers.len());
    for (q, column) in table.quasi_identifiers.iter().enumerate() {
        let texts = value_texts(&column.values)?;
        // written straight into the array's buffer: no String per label
        let mut per_group = StringBuilder::with_capacity(release.group_ranges.len(), 0);
        for ranges in release.group_ranges.iter() {
            let (lo, hi) = ranges[q];
            let same = lo == hi;
            let (lo, hi) = (&texts[lo as usize], &texts[hi as usize]);
            if same {
                per_group.append_value(lo);
            } else {
                write!(per_group, "[{lo}, {hi}]").map_err(|e| {
                    DataFusionError::Execution(format!("cannot write a label: {e}"))
                })?;
                per_group.append_value("");
            }
        }
        labels.push(Arc::new(per_group.finish()));
    }
    // (group, bucket) packed in as few bits as they need, radix-sorted
    let width = |n: usize| u32::BITS - (n.max(1) as u32 - 1).leading_zeros();
    let bucket_bits = width(release.buckets);
    let key_bits = width(release.group_ranges.len()) + bucket_bits;
    let mut keys: Vec<u64> = release
        .group_of
        .iter()
        .zip(&release.bucket_of)
        .map(|(&g, &b)| ((g as u64) << bucket_bits) | b as u64)
        .collect();
    crate::sort::radix_sort(&mut keys, 0, key_bits);
    let keys = Arc::new(keys);
    let rows = keys.len();
    let batch_schema = Arc::clone(&schema);
    let make = move |i: usize| {
        let slice = &keys[i * BATCH_ROWS..((i + 1) * BATCH_ROWS).min(rows)];
        let groups = UInt32Array::from_iter_values(slice.iter().map(|k| (k >> bucket_bits) as u32));
        let mut columns: Vec<ArrayRef> = labels
            .iter()
            .map(|l| take(l.as_ref(), &groups, None))
            .collect::<std::result::Result<_, _>>()?;
        columns.push(Arc::new(Int64Array::from_iter_values(
            slice.iter().map(|k| (k & ((1 << bucket_bits) - 1)) as i64),
        )));
        Ok(RecordBatch::try_new(Arc::clone(&batch_schema), columns)?)
    };
    Ok(LazyBatches {
        schema,
        batches: rows.div_ceil(BATCH_ROWS),
        make: Arc::new(make),
    })
}

/// ST: bucket id and every sensitive attribute in the input's type, rows by bucket.
fn sensitive_table(table: &MsaTable, st: Arc<SensitiveBuckets>) -> Result<LazyBatches> {
    let mut fields = vec![Field::new(BUCKET_ID, DataType::Int64, false)];
    for column in &table.sensitive {
        fields.push(Field::new(
            &column.name,
            column.values.data_type().clone(),
            column.values.null_count() > 0,
        ));
    }
    let schema = Arc::new(Schema::new(fields));
    let values: Vec<ArrayRef> = table
        .sensitive
        .iter()
        .map(|c| Arc::clone(&c.values))
        .collect();
    let rows = st.records();
    let batch_schema = Arc::clone(&schema);
    let make = move |i: usize| {
        let range = i * BATCH_ROWS..((i + 1) * BATCH_ROWS).min(rows);
        // the bucket of each row from the bucket offsets
        let mut bucket = st.offsets.partition_point(|&o| o <= range.start) - 1;
        let ids = Int64Array::from_iter_values(range.clone().map(|row| {
            while st.offsets[bucket + 1] <= row {
                bucket += 1;
            }
            bucket as i64
        }));
        let mut out: Vec<ArrayRef> = vec![Arc::new(ids)];
        for (codes, values) in st.columns.iter().zip(&values) {
            let indices = UInt32Array::from(codes[range.clone()].to_vec());
            out.push(take(values.as_ref(), &indices, None)?);
        }
        Ok(RecordBatch::try_new(Arc::clone(&batch_schema), out)?)
    };
    Ok(LazyBatches {
        schema,
        batches: rows.div_ceil(BATCH_ROWS),
        make: Arc::new(make),
    })
}

/// GT's verification scan, running on its own task.
type GtScan = tokio::task::JoinHandle<Result<(u64, Vec<(i64, u64)>)>>;

/// [`scan_gt`] of the file at `path`, read in one partition so that the rows come back in the
/// file's order, which the label runs need.
async fn scan_gt_file(
    ctx: &SessionContext,
    path: &Location,
    labels: &[String],
) -> Result<(u64, Vec<(i64, u64)>)> {
    let mut state = ctx.state();
    state.config_mut().options_mut().execution.target_partitions = 1;
    let ctx = SessionContext::new_with_state(state);
    let name = format!("__anon_gt_scan_{}", std::process::id());
    ctx.register_parquet(
        &name,
        &path.datafusion_path(),
        ParquetReadOptions::default(),
    )
    .await?;
    let result = scan_gt(&ctx, &name, labels).await;
    let _ = ctx.deregister_table(name.as_str());
    result
}

/// One scan of the written GT: the shortest run of equal label tuples in its order, and the
/// rows per bucket id (sorted by id).
async fn scan_gt(
    ctx: &SessionContext,
    gt: &str,
    labels: &[String],
) -> Result<(u64, Vec<(i64, u64)>)> {
    let sql = format!(
        "SELECT {}, {} FROM {gt}",
        labels.join(", "),
        quote_ident(BUCKET_ID)
    );
    let mut stream = ctx.sql(&sql).await?.execute_stream().await?;
    let mut per_bucket: hashbrown::HashMap<i64, u64> = hashbrown::HashMap::new();
    let mut previous: Option<Vec<String>> = None;
    let (mut run, mut min_run) = (0u64, u64::MAX);
    while let Some(batch) = futures::StreamExt::next(&mut stream).await {
        let batch = batch?;
        let d = labels.len();
        let columns: Vec<ArrayRef> = batch.columns()[..d]
            .iter()
            .map(|c| cast(c, &DataType::Utf8View))
            .collect::<std::result::Result<_, _>>()?;
        let views: Vec<_> = columns.iter().map(|c| c.as_string_view()).collect();
        for row in 0..batch.num_rows() {
            let same = if row == 0 {
                previous.as_ref().is_some_and(|p| {
                    views
                        .iter()
                        .zip(p)
                        .all(|(v, p)| v.is_valid(0) && v.value(0) == p)
                })
            } else {
                // equal views are equal strings (same length and inline bytes, or the same
                // bytes of the same buffer): the bytes are compared only when they differ
                views.iter().all(|v| {
                    let (a, b) = (v.views()[row], v.views()[row - 1]);
                    v.is_valid(row)
                        && v.is_valid(row - 1)
                        && (a == b || v.value(row) == v.value(row - 1))
                })
            };
            if same {
                run += 1;
            } else {
                if run > 0 {
                    min_run = min_run.min(run);
                }
                run = 1;
            }
        }
        if batch.num_rows() > 0 {
            let last = batch.num_rows() - 1;
            previous = Some(views.iter().map(|v| v.value(last).to_string()).collect());
        }
        let ids = cast(batch.column(d), &DataType::Int64)?;
        let ids = ids.as_primitive::<Int64Type>();
        let mut last_id: Option<(i64, u64)> = None;
        for id in ids.iter() {
            let id = id.unwrap_or(i64::MIN);
            match &mut last_id {
                Some((value, n)) if *value == id => *n += 1,
                _ => {
                    if let Some((value, n)) = last_id {
                        *per_bucket.entry(value).or_insert(0) += n;
                    }
                    last_id = Some((id, 1));
                }
            }
        }
        if let Some((value, n)) = last_id {
            *per_bucket.entry(value).or_insert(0) += n;
        }
    }
    if run > 0 {
        min_run = min_run.min(run);
    }
    let mut per_bucket: Vec<(i64, u64)> = per_bucket.into_iter().collect();
    per_bucket.sort_unstable();
    Ok((if min_run == u64::MAX { 0 } else { min_run }, per_bucket))
}

/// One number from a one-row, one-column query (0 when empty or NULL).
async fn scalar(ctx: &SessionContext, sql: &str) -> Result<u64> {
    let batches = ctx.sql(sql).await?.collect().await?;
    let value = batches
        .iter()
        .find(|b| b.num_rows() > 0)
        .and_then(|b| {
            let column = datafusion::arrow::compute::cast(b.column(0), &DataType::Int64).ok()?;
            let column = column.as_primitive::<Int64Type>();
            column.is_valid(0).then(|| column.value(0))
        })
        .unwrap_or(0);
    Ok(value.max(0) as u64)
}

async fn verify(
    ctx: &SessionContext,
    table: &MsaTable,
    bucketization: &Bucketization,
    dependencies: &Dependencies,
    gt_path: &Location,
    st_path: &Location,
    gt_scan: GtScan,
) -> Result<(BucketVerification, AttackReport, Vec<AttackReport>)> {
    let suffix = std::process::id();
    let (gt, st) = (format!("__anon_gt_{suffix}"), format!("__anon_st_{suffix}"));
    ctx.register_parquet(
        &gt,
        &gt_path.datafusion_path(),
        ParquetReadOptions::default(),
    )
    .await?;
    ctx.register_parquet(
        &st,
        &st_path.datafusion_path(),
        ParquetReadOptions::default(),
    )
    .await?;
    let result =
        verify_registered(ctx, table, bucketization, dependencies, &gt, &st, gt_scan).await;
    let _ = ctx.deregister_table(gt.as_str());
    let _ = ctx.deregister_table(st.as_str());
    result
}

async fn verify_registered(
    ctx: &SessionContext,
    table: &MsaTable,
    bucketization: &Bucketization,
    dependencies: &Dependencies,
    gt: &str,
    st: &str,
    gt_scan: GtScan,
) -> Result<(BucketVerification, AttackReport, Vec<AttackReport>)> {
    let fail = |what: String| {
        Err(DataFusionError::Execution(format!(
            "verification of the written release failed: {what}; nothing was published"
        )))
    };
    let rows = table.rows() as u64;
    let gt_rows = scalar(ctx, &format!("SELECT count(*) FROM {gt}")).await?;
    let st_rows = scalar(ctx, &format!("SELECT count(*) FROM {st}")).await?;
    if gt_rows != rows || st_rows != rows {
        return fail(format!(
            "{rows} input records, {gt_rows} GT rows, {st_rows} ST rows"
        ));
    }
    let k = bucketization.k() as u64;
    // GT is scanned on its own task while ST is read back here
    let names: Vec<String> = table.sensitive.iter().map(|c| c.name.clone()).collect();
    let mut columns = names.clone();
    columns.push(BUCKET_ID.to_string());
    let mut written = encode::read_table(ctx, st, &[], &columns).await?;
    let st_ids = written.sensitive.pop().ok_or_else(|| {
        DataFusionError::Internal("the written ST has no bucket id column".into())
    })?;
    let (min_run, gt_buckets) = gt_scan
        .await
        .map_err(|e| DataFusionError::Execution(format!("verification task failed: {e}")))??;
    if min_run < k {
        return fail(format!("a GT class has {min_run} rows, k = {k}"));
    }
    let histogram = |codes: &[u32], n: usize| {
        let mut h = vec![0u64; n];
        for &c in codes {
            h[c as usize] += 1;
        }
        h
    };
    let st_ids_values = cast(&st_ids.values, &DataType::Int64)?;
    let st_buckets: Vec<(i64, u64)> = st_ids_values
        .as_primitive::<Int64Type>()
        .iter()
        .zip(histogram(&st_ids.codes, st_ids.cardinality()))
        .map(|(id, n)| (id.unwrap_or(i64::MIN), n))
        .collect();
    if st_ids.values.null_count() > 0 || gt_buckets != st_buckets {
        return fail("GT and ST do not have the same rows per bucket id".into());
    }
    for (original, read) in table.sensitive.iter().zip(&written.sensitive) {
        // Parquet may hand strings back as another string type (Utf8 → Utf8View)
        let read_values = cast(&read.values, original.values.data_type())?;
        if original.values.as_ref() != read_values.as_ref()
            || histogram(&original.codes, original.cardinality())
                != histogram(&read.codes, read.cardinality())
        {
            return fail(format!(
                "the values of '{}' in ST differ from the input's",
                original.name
            ));
        }
    }
    let written_st =
        SensitiveBuckets::from_columns(&written.sensitive, &st_ids.codes, st_ids.cardinality());
    let mut min_bucket = u64::MAX;
    let mut min_distinct = u64::MAX;
    let mut max_repeats = 0u64;
    for b in 0..written_st.buckets() {
        min_bucket = min_bucket.min((written_st.offsets[b + 1] - written_st.offsets[b]) as u64);
        for a in 0..names.len() {
            min_distinct = min_distinct.min(runs(written_st.cell(a, b)).count() as u64);
        }
        for (_, copies) in runs(written_st.cell(dependencies.linking, b)) {
            max_repeats = max_repeats.max(copies as u64);
        }
    }
    let (required_distinct, lambda) = match bucketization {
        Bucketization::Ck(o) => (o.c as u64 + 1, Some(o.lambda as u64)),
        Bucketization::Pk { p, .. } => (*p as u64, None),
    };
    if min_bucket < k {
        return fail(format!("a bucket has {min_bucket} rows, k = {k}"));
    }
    if min_distinct < required_distinct {
        return fail(format!(
            "a bucket has {min_distinct} distinct values of a sensitive attribute, \
             {required_distinct} required"
        ));
    }
    if let Some(lambda) = lambda
        && max_repeats > lambda
    {
        return fail(format!(
            "{max_repeats} rows of a bucket share a value of '{}', lambda = {lambda}",
            names[dependencies.linking]
        ));
    }
    // the attack through the linking attribute (enforced) and, on a second thread, through
    // every other attribute that determines one (reported)
    let (attack, other_links) = std::thread::scope(|scope| {
        let others = scope.spawn(|| {
            (0..names.len())
                .filter(|&a| {
                    a != dependencies.linking && dependencies.determines[a].iter().any(|&d| d)
                })
                .map(|a| {
                    fingerprint_attack(&written_st, a, &dependencies.determines[a])
                        .report(&written_st)
                })
                .collect::<Vec<_>>()
        });
        let outcome =
            fingerprint_attack(&written_st, dependencies.linking, &dependencies.determined);
        let attack = outcome.report(&written_st);
        (attack, others.join())
    });
    let other_links = other_links
        .map_err(|_| DataFusionError::Internal("the attack's second thread panicked".into()))?;
    // (c,k) cuts the links of every determining attribute (see `bucketize::fingerprint`)
    if let Bucketization::Ck(options) = bucketization {
        for (linker, mask) in protected_links(dependencies, options.refinement) {
            let Some(report) = other_links
                .iter()
                .find(|r| r.linking_attribute == names[linker])
            else {
                continue;
            };
            for (a, &protect) in mask.iter().enumerate() {
                let pinned = report
                    .pinned_per_attribute
                    .iter()
                    .find(|(name, _)| name == &names[a])
                    .map_or(0, |(_, n)| *n);
                if protect && pinned > 0 {
                    return fail(format!(
                        "through '{}', the fingerprint-correlation attack pins '{}' for {pinned} \
                         records",
                        names[linker], names[a]
                    ));
                }
            }
        }
    }
    if let Bucketization::Ck(options) = bucketization {
        let protected = protected_attributes(dependencies, options.refinement);
        for (a, &p) in protected.iter().enumerate() {
            let pinned = attack
                .pinned_per_attribute
                .iter()
                .find(|(name, _)| name == &names[a])
                .map_or(0, |(_, n)| *n);
            if p && pinned > 0 {
                return fail(format!(
                    "the fingerprint-correlation attack pins '{}' for {pinned} records",
                    names[a]
                ));
            }
        }
    }
    Ok((
        BucketVerification {
            min_generalized_class: min_run,
            min_bucket,
            min_distinct_values: min_distinct,
            max_linking_repeats: max_repeats,
        },
        attack,
        other_links,
    ))
}
