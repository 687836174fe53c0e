//! The kernel against DataFusion's own aggregation (the same session with
//! `anonymity.packed_aggregation` off), on random tables; and each fallback shown by the plan
//! or its metrics.

use std::sync::Arc;

use datafusion::arrow::array::{
    ArrayRef, Date32Array, DictionaryArray, Float64Array, Int32Array, Int64Array, RecordBatch,
    StringArray, StringViewArray,
};
use datafusion::arrow::datatypes::{DataType, Field, Int32Type, Schema, SchemaRef};
use datafusion::arrow::util::pretty::pretty_format_batches;
use datafusion::datasource::MemTable;
use datafusion::execution::memory_pool::GreedyMemoryPool;
use datafusion::execution::runtime_env::RuntimeEnvBuilder;
use datafusion::prelude::{SessionConfig, SessionContext};

/// splitmix64
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        (z ^ (z >> 31)) % n
    }
}

fn schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("i", DataType::Int32, true),
        Field::new("t", DataType::Utf8View, true),
        Field::new(
            "d",
            DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8)),
            true,
        ),
        Field::new("day", DataType::Date32, true),
        Field::new("plain", DataType::Utf8, true),
        Field::new("wide", DataType::Int64, false),
        Field::new("f", DataType::Float64, true),
        Field::new("s", DataType::Utf8, true),
        Field::new("pid", DataType::Int64, true),
        Field::new("w2", DataType::Int64, false),
        Field::new("w3", DataType::Int64, false),
        Field::new("w4", DataType::Int64, false),
        Field::new("w5", DataType::Int64, false),
    ]))
}

/// Rows with NULLs in every key but `wide`, whose values spread over 2^`wide_bits`.
fn batch(rng: &mut Rng, rows: usize, wide_bits: u32) -> RecordBatch {
    // a value below n, NULL one time in ten
    let maybe = |rng: &mut Rng, n: u64| {
        let null = rng.below(10) == 0;
        let value = rng.below(n);
        (!null).then_some(value)
    };
    let i: Int32Array = (0..rows)
        .map(|_| maybe(rng, 7).map(|v| v as i32 - 3))
        .collect();
    let t: StringViewArray = (0..rows)
        .map(|_| maybe(rng, 5).map(|v| format!("t{v}")))
        .collect();
    let d: DictionaryArray<Int32Type> = (0..rows)
        .map(|_| {
            maybe(rng, 4)
                .map(|v| ["north", "south", "east", "a longer value than twelve"][v as usize])
        })
        .collect();
    let day: Date32Array = (0..rows)
        .map(|_| maybe(rng, 30).map(|v| 19_000 + v as i32))
        .collect();
    let plain: StringArray = (0..rows)
        .map(|_| maybe(rng, 3).map(|v| format!("p{v}")))
        .collect();
    let mut wide = || -> ArrayRef {
        Arc::new(
            (0..rows)
                .map(|_| Some(rng.below(1 << wide_bits) as i64 - (1 << (wide_bits - 1))))
                .collect::<Int64Array>(),
        )
    };
    let (wide, w2, w3, w4, w5) = (wide(), wide(), wide(), wide(), wide());
    let f: Float64Array = (0..rows)
        .map(|_| maybe(rng, 4).map(|v| v as f64 / 2.0))
        .collect();
    let s: StringArray = (0..rows)
        .map(|_| maybe(rng, 6).map(|v| format!("s{v}")))
        .collect();
    let pid: Int64Array = (0..rows)
        .map(|_| maybe(rng, 40).map(|v| v as i64))
        .collect();
    let columns: Vec<ArrayRef> = vec![
        Arc::new(i),
        Arc::new(t),
        Arc::new(d),
        Arc::new(day),
        Arc::new(plain),
        wide,
        Arc::new(f),
        Arc::new(s),
        Arc::new(pid),
        w2,
        w3,
        w4,
        w5,
    ];
    RecordBatch::try_new(schema(), columns).unwrap()
}

/// A session over `partitions` partitions of 4 random batches of 300 rows.
fn session(seed: u64, partitions: usize, wide_bits: u32, config: SessionConfig) -> SessionContext {
    session_with(seed, partitions, wide_bits, config, None)
}

fn session_with(
    seed: u64,
    partitions: usize,
    wide_bits: u32,
    config: SessionConfig,
    pool: Option<usize>,
) -> SessionContext {
    let mut rng = Rng(seed);
    let data: Vec<Vec<RecordBatch>> = (0..partitions)
        .map(|_| (0..4).map(|_| batch(&mut rng, 300, wide_bits)).collect())
        .collect();
    let config = config
        .with_target_partitions(partitions)
        .with_batch_size(64);
    let ctx = match pool {
        Some(bytes) => {
            let runtime = RuntimeEnvBuilder::new()
                .with_memory_pool(Arc::new(GreedyMemoryPool::new(bytes)))
                .build_arc()
                .unwrap();
            SessionContext::new_with_config_rt(config, runtime)
        }
        None => SessionContext::new_with_config(config),
    };
    crate::register(&ctx).unwrap();
    ctx.register_table("r", Arc::new(MemTable::try_new(schema(), data).unwrap()))
        .unwrap();
    ctx
}

/// The rows of `sql`, sorted, as text.
async fn rows(ctx: &SessionContext, sql: &str) -> Vec<String> {
    let batches = ctx.sql(sql).await.unwrap().collect().await.unwrap();
    let text = pretty_format_batches(&batches).unwrap().to_string();
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    lines.sort();
    lines
}

/// The physical plan of `EXPLAIN [ANALYZE] sql`, as text.
async fn plan(ctx: &SessionContext, sql: &str) -> String {
    let batches = ctx.sql(sql).await.unwrap().collect().await.unwrap();
    pretty_format_batches(&batches).unwrap().to_string()
}

/// The sum of a metric `name=<n>` over the plan's lines.
fn metric(plan: &str, name: &str) -> usize {
    plan.split(&format!("{name}="))
        .skip(1)
        .filter_map(|rest| {
            let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
            digits.parse::<usize>().ok()
        })
        .sum()
}

async fn set_packed(ctx: &SessionContext, on: bool) {
    ctx.sql(&format!("SET anonymity.packed_aggregation = {on}"))
        .await
        .unwrap();
}

const QUERIES: [&str; 8] = [
    // k_anonymity() alone: a partial count, then the final merge (both packed)
    "SELECT i, t, d, k_anonymity() AS k FROM r GROUP BY i, t, d",
    // dates and plain text, count with a FILTER beside sum and avg (two state columns, so
    // the final merge must find each aggregate's states at the right offset)
    "SELECT day, plain, count(*), count(*) FILTER (WHERE f > 0.5), sum(pid), avg(f), \
     max(pid) FROM r GROUP BY day, plain",
    // the histogram functions, single-phase (row logs), shared states
    "SELECT i, d, day, k_anonymity(), k_anonymity(pid), reidentification_risk(pid), \
     l_diversity(s), entropy_l_diversity(s), recursive_cl_diversity(s, 2), t_closeness(s), \
     beta_likeness(s), delta_disclosure(s), alpha_anonymity(s) FROM r GROUP BY i, d, day",
    // a key expression and WHERE
    "SELECT i % 2 AS parity, t, k_anonymity(pid), t_closeness_ordered(f) FROM r \
     WHERE plain IS DISTINCT FROM 'p1' GROUP BY i % 2, t",
    // one key
    "SELECT d, count(*), l_diversity(s) FROM r GROUP BY d",
    // the wide key among others
    "SELECT wide, i, count(*), max(f) FROM r GROUP BY wide, i",
    // one key column, its classes numbered by its value codes (NULL among them), both phases
    "SELECT pid, count(*), sum(i) FROM r GROUP BY pid",
    // a near-unique key: `count(DISTINCT)` as a GROUP BY of the values, then a count
    "SELECT count(DISTINCT wide) FROM r",
];

async fn compare(ctx: &SessionContext, desc: &str, partitions: usize) {
    for (q, sql) in QUERIES.iter().enumerate() {
        set_packed(ctx, true).await;
        let packed = rows(ctx, sql).await;
        let explained = plan(ctx, &format!("EXPLAIN {sql}")).await;
        assert!(
            explained.contains("PackedAggregateExec"),
            "{desc}: not planned for {sql}:\n{explained}"
        );
        // the two-phase counts: both phases packed
        if q < 2 && partitions > 1 {
            for mode in ["mode=Partial", "mode=FinalPartitioned"] {
                assert!(
                    explained.contains(&format!("PackedAggregateExec: {mode}")),
                    "{desc}: {mode} not packed for {sql}:\n{explained}"
                );
            }
        }
        set_packed(ctx, false).await;
        let datafusion = rows(ctx, sql).await;
        let explained = plan(ctx, &format!("EXPLAIN {sql}")).await;
        assert!(!explained.contains("PackedAggregateExec"), "{explained}");
        assert!(datafusion.len() > 4, "{desc}: too few rows for {sql}");
        assert_eq!(packed, datafusion, "{desc}: {sql}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn packed_kernel_equals_datafusion_on_random_tables() {
    for (seed, partitions) in [(1, 1), (2, 3), (3, 4)] {
        let ctx = session(seed, partitions, 12, SessionConfig::new());
        compare(
            &ctx,
            &format!("seed {seed}, {partitions} partitions"),
            partitions,
        )
        .await;
    }
}

/// Keys of many values: five of them and the class numbers no longer fit 64 bits, and the
/// classes go over to DataFusion's group table mid-stream (the `hashed` metric), with the
/// same results; floats are never packed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keys_past_the_packing_limit_go_to_datafusions_grouping() {
    let ctx = session(5, 2, 24, SessionConfig::new());
    // five keys of ~1,200 codes each (11 bits): 55 bits of key and 11 of class number
    let sql = "SELECT wide, w2, w3, w4, w5, count(*), l_diversity(s) FROM r \
               GROUP BY wide, w2, w3, w4, w5";
    let packed = rows(&ctx, sql).await;
    let analyzed = plan(&ctx, &format!("EXPLAIN ANALYZE {sql}")).await;
    assert!(analyzed.contains("PackedAggregateExec"), "{analyzed}");
    assert!(metric(&analyzed, "hashed") > 0, "{analyzed}");
    set_packed(&ctx, false).await;
    assert_eq!(packed, rows(&ctx, sql).await);
    set_packed(&ctx, true).await;
    let float = plan(&ctx, "EXPLAIN SELECT f, count(*) FROM r GROUP BY f").await;
    assert!(!float.contains("PackedAggregateExec"), "{float}");
    assert!(float.contains("AggregateExec"), "{float}");
}

/// A memory pool smaller than the kernel's first reservation: every partition runs
/// DataFusion's aggregation (the `fallback` metric), with the same results; and a pool with a
/// limit sends the single-mode aggregations (row logs) to DataFusion, which can spill.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_memory_pool_too_small_falls_back_to_datafusion() {
    let unlimited = session(7, 2, 12, SessionConfig::new());
    for (pool, sql) in [
        (512 << 10, QUERIES[0]),
        (512 << 10, QUERIES[1]),
        (256 << 20, QUERIES[2]),
    ] {
        let small = session_with(7, 2, 12, SessionConfig::new(), Some(pool));
        let analyzed = plan(&small, &format!("EXPLAIN ANALYZE {sql}")).await;
        assert!(analyzed.contains("PackedAggregateExec"), "{analyzed}");
        // one per partition of each packed aggregation
        assert!(metric(&analyzed, "fallback") >= 2, "{sql}:\n{analyzed}");
        assert_eq!(
            rows(&small, sql).await,
            rows(&unlimited, sql).await,
            "{sql}"
        );
    }
    // without a limit, no fallback
    let analyzed = plan(&unlimited, &format!("EXPLAIN ANALYZE {}", QUERIES[2])).await;
    assert_eq!(metric(&analyzed, "fallback"), 0, "{analyzed}");
}
