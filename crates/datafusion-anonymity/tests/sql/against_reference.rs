//! Brute-force reference implementation of every function, straight from the formulas of
//! `docs/definitions.md` and the NULL rules of `docs/functions.md`, compared with SQL on seeded
//! random data:
//! - written as several Parquet files, with target_partitions 1 and 4 and batch size 7 (many
//!   update calls), in the default single-phase plan and in DataFusion's two-phase plan (so
//!   partial/final state merging runs);
//! - once with the skip-partial-aggregation probe forced on (the `convert_to_state` path), and a
//!   check that rows really were skipped;
//! - as a multi-partition in-memory table whose columns have other types (Int16, Int32,
//!   Dictionary, LargeUtf8, Decimal128, Float32, Date32);
//! - a sample with a high-cardinality attribute and large classes (histograms far beyond a few
//!   values);
//! - through the DataFrame API instead of SQL.

use crate::reference::*;

use std::collections::HashMap;
use std::sync::Arc;

use datafusion::arrow::array::{AsArray, RecordBatch};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::DataType;
use datafusion::execution::FunctionRegistry;
use datafusion::parquet::arrow::ArrowWriter;
use datafusion::prelude::{ParquetReadOptions, SessionContext, col, lit};

const SEEDS: [(u64, usize); 3] = [(1, 161), (42, 192), (7, 1500)];

async fn compare_parquet(phases: Phases, partitions: &[usize]) {
    let mut failures = Vec::new();
    let mut checked = 0usize;
    for (seed, count) in SEEDS {
        let rows = gen_rows(seed, count);
        let wants = all_references(&rows);
        let dir = tempfile::tempdir().unwrap();
        write_parquet(dir.path(), &rows);
        for &tp in partitions {
            let ctx = make_ctx(tp, phases);
            register_t(&ctx, dir.path()).await;
            let desc = format!("parquet, seed {seed}, target_partitions {tp}, {phases:?}");
            let (f, c) = compare_table(&ctx, "t", &wants, &desc).await;
            failures.extend(f);
            checked += c;
        }
    }
    report(failures, checked);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reference_matches_sql() {
    compare_parquet(Phases::Single, &[1, 4]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reference_matches_sql_two_phases() {
    compare_parquet(Phases::Two, &[4]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reference_matches_sql_skip_partial_aggregation() {
    compare_parquet(Phases::SkipPartial, &[4]).await;
}

/// One measure alone in its query: `SELECT keys, m FROM table WHERE filter GROUP BY keys`.
async fn alone_values(
    ctx: &SessionContext,
    table: &str,
    filter: &str,
    group_by: &[&str],
    m: &Measure,
) -> HashMap<Key, f64> {
    let keys = group_by.join(", ");
    let sql = if group_by.is_empty() {
        format!("SELECT {} FROM {table} WHERE {filter}", m.sql)
    } else {
        format!(
            "SELECT {keys}, {} FROM {table} WHERE {filter} GROUP BY {keys}",
            m.sql
        )
    };
    let batches = ctx
        .sql(&sql)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"))
        .collect()
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"));
    collect_results(&batches, group_by.len(), &[m.sql], &[m.int])
        .into_iter()
        .map(|(k, v)| (k, v[0]))
        .collect()
}

/// The shared states of the rewrite (one histogram, one count, one set of persons per class
/// for several functions, one finalizer for several whole-table functions of a histogram)
/// give exactly — bit for bit — the value each function gives alone in its query, for every
/// measure, filter and grouping, on one and four partitions. (The query with all of them is
/// compared with the brute-force reference by the tests above.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shared_states_equal_functions_alone() {
    let rows = gen_rows(42, 192);
    let dir = tempfile::tempdir().unwrap();
    write_parquet(dir.path(), &rows);
    let mut failures = Vec::new();
    let mut checked = 0usize;
    for tp in [1, 4] {
        let ctx = make_ctx(tp, Phases::Single);
        register_t(&ctx, dir.path()).await;
        // the query with every measure is rewritten to share states: each kind of sharing
        // shows in its plan
        let plan = ctx
            .sql(&format!(
                "EXPLAIN SELECT g1, g2, {} FROM t GROUP BY g1, g2",
                select_list()
            ))
            .await
            .unwrap()
            .collect()
            .await
            .unwrap();
        let plan = datafusion::arrow::util::pretty::pretty_format_batches(&plan)
            .unwrap()
            .to_string();
        for shared in [
            "__anon_rows_",
            "__anon_persons_",
            "__anon_histogram_final(",
            "__anon_histogram_measure(",
        ] {
            assert!(plan.contains(shared), "{shared} not in the plan:\n{plan}");
        }
        for (case, group_by) in queries() {
            let together = sql_values(&ctx, "t", case.filter_sql, group_by).await;
            let desc = format!(
                "target_partitions {tp}, WHERE {}, GROUP BY {group_by:?}",
                case.filter_sql
            );
            for (i, m) in MEASURES.iter().enumerate() {
                let alone = alone_values(&ctx, "t", case.filter_sql, group_by, m).await;
                if alone.len() != together.len() {
                    failures.push(format!(
                        "{desc}: {}: {} groups alone, {} together",
                        m.sql,
                        alone.len(),
                        together.len()
                    ));
                    continue;
                }
                for (key, a) in &alone {
                    checked += 1;
                    let b = together.get(key).map_or(f64::NAN, |v| v[i]);
                    let same = a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan());
                    if !same {
                        failures.push(format!(
                            "{desc}: group {key:?}: {} = {a} alone, {b} together",
                            m.sql
                        ));
                    }
                }
            }
        }
    }
    report(failures, checked);
}

/// Other column types, from a 4-partition in-memory table (no Parquet).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reference_matches_sql_other_types() {
    let mut failures = Vec::new();
    let mut checked = 0usize;
    for (seed, count) in SEEDS {
        let rows = gen_rows(seed, count);
        let wants = all_references(&rows);
        for (tp, phases) in [
            (4, Phases::Single),
            (4, Phases::Two),
            (3, Phases::SkipPartial),
        ] {
            let ctx = make_ctx(tp, phases);
            ctx.register_table("tt", Arc::new(typed_mem_table(&rows)))
                .unwrap();
            let desc =
                format!("typed memory table, seed {seed}, target_partitions {tp}, {phases:?}");
            let (f, c) = compare_table(&ctx, "tt", &wants, &desc).await;
            failures.extend(f);
            checked += c;
        }
    }
    report(failures, checked);
}

/// `gen_rows(seed, count)` written as Parquet files (the directory lives as long as the
/// returned guard) and registered as `t` on a context of `make_ctx(target_partitions, phases)`.
async fn parquet_ctx(
    seed: u64,
    count: usize,
    target_partitions: usize,
    phases: Phases,
) -> (tempfile::TempDir, SessionContext) {
    let rows = gen_rows(seed, count);
    let dir = tempfile::tempdir().unwrap();
    write_parquet(dir.path(), &rows);
    let ctx = make_ctx(target_partitions, phases);
    register_t(&ctx, dir.path()).await;
    (dir, ctx)
}

async fn physical_plan(ctx: &SessionContext, sql: &str) -> String {
    let batches = ctx
        .sql(sql)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"))
        .collect()
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"));
    let physical = plan_text(&batches);
    assert!(!physical.is_empty(), "no physical plan in {sql}");
    physical
}

/// The physical plan rows of `EXPLAIN` / `EXPLAIN ANALYZE` output.
fn plan_text(batches: &[RecordBatch]) -> String {
    let mut physical = String::new();
    for b in batches {
        let kind = cast(b.column(0), &DataType::Utf8).unwrap();
        let plan = cast(b.column(1), &DataType::Utf8).unwrap();
        let (kind, plan) = (kind.as_string::<i32>(), plan.as_string::<i32>());
        for r in 0..b.num_rows() {
            if kind.value(r).contains("physical_plan") || kind.value(r) == "Plan with Metrics" {
                physical.push_str(plan.value(r));
                physical.push('\n');
            }
        }
    }
    physical
}

/// With the probe forced on, partial aggregation really is skipped (`convert_to_state` runs) for
/// every function; otherwise the skip test above would silently test the ordinary path.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn skip_partial_aggregation_is_exercised() {
    let (_dir, ctx) = parquet_ctx(11, 300, 4, Phases::SkipPartial).await;
    let mut not_skipped = Vec::new();
    for m in MEASURES {
        let plan = physical_plan(
            &ctx,
            &format!(
                "EXPLAIN ANALYZE SELECT g1, g2, {} FROM t GROUP BY g1, g2",
                m.sql
            ),
        )
        .await;
        let skipped = metric_sum(&plan, "skipped_aggregation_rows");
        if skipped == 0 {
            not_skipped.push(format!("{}:\n{plan}", m.sql));
        }
    }
    assert!(
        not_skipped.is_empty(),
        "partial aggregation was not skipped for:\n{}",
        not_skipped.join("\n")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn t_closeness_plan_scans_once() {
    let (_dir, ctx) = parquet_ctx(7, 50, 4, Phases::Single).await;
    for sql in [
        "EXPLAIN SELECT g1, t_closeness(s) FROM t GROUP BY g1",
        "EXPLAIN SELECT g1, t_closeness(s), t_closeness_ordered(n), ncp(f, c), entropy_leakage() \
         FROM t GROUP BY g1",
        "EXPLAIN SELECT t_closeness(s) FROM t WHERE pid > 3",
        "EXPLAIN SELECT g1, g2, t_closeness(s) FROM t GROUP BY g1, g2 HAVING k_anonymity() > 1",
    ] {
        let physical = physical_plan(&ctx, sql).await;
        assert_eq!(
            physical.matches("DataSourceExec").count(),
            1,
            "expected exactly one DataSourceExec for {sql}:\n{physical}"
        );
    }
}

/// `ncp` over `GROUP BY` expressions only and without `FILTER` reads the row count: no state
/// of its own, no window; with another attribute or a `FILTER` it keeps both.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ncp_over_group_keys_reads_the_row_count() {
    let (_dir, ctx) = parquet_ctx(7, 50, 4, Phases::Single).await;
    let plan = physical_plan(
        &ctx,
        "EXPLAIN SELECT g1, n, ncp(n, g1) FROM t GROUP BY g1, n",
    )
    .await;
    assert!(plan.contains("__anon_rows_0"), "{plan}");
    assert!(!plan.contains("__anon_state_"), "{plan}");
    assert!(!plan.contains("WindowAggExec"), "{plan}");
    for sql in [
        "EXPLAIN SELECT g1, ncp(g1, n) FROM t GROUP BY g1",
        "EXPLAIN SELECT g1, ncp(g1) FILTER (WHERE n > 2) FROM t GROUP BY g1",
    ] {
        let plan = physical_plan(&ctx, sql).await;
        assert!(plan.contains("__anon_state_"), "{sql}:\n{plan}");
        assert!(plan.contains("WindowAggExec"), "{sql}:\n{plan}");
    }
}

/// The plan's shape: one aggregation over rows hash-partitioned by the keys when a function
/// keeps a row log; DataFusion's partial and final aggregation when the option is off, for
/// plain counts, and for boolean keys (few classes).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn single_phase_aggregation_plan() {
    let (_dir, ctx) = parquet_ctx(7, 50, 4, Phases::Single).await;
    let single = "SELECT g1, g2, k_anonymity(pid), l_diversity(s), t_closeness(s) FROM t \
                  GROUP BY g1, g2";
    let modes = |plan: &str| -> Vec<String> {
        plan.lines()
            .filter_map(|l| l.split("AggregateExec: mode=").nth(1))
            .map(|rest| rest.split(',').next().unwrap_or_default().to_string())
            .collect()
    };
    let plan = physical_plan(&ctx, &format!("EXPLAIN {single}")).await;
    assert_eq!(modes(&plan), ["SinglePartitioned"], "{plan}");
    assert!(
        plan.contains("RepartitionExec: partitioning=Hash([g1@"),
        "{plan}"
    );
    for sql in [
        "EXPLAIN SELECT g1, g2, k_anonymity() FROM t GROUP BY g1, g2",
        "EXPLAIN SELECT g1 > 0, l_diversity(s) FROM t GROUP BY g1 > 0",
    ] {
        let plan = physical_plan(&ctx, sql).await;
        assert_eq!(
            modes(&plan),
            ["FinalPartitioned", "Partial"],
            "{sql}:\n{plan}"
        );
    }
    ctx.sql("SET anonymity.single_phase_aggregation = false")
        .await
        .unwrap();
    let plan = physical_plan(&ctx, &format!("EXPLAIN {single}")).await;
    assert_eq!(modes(&plan), ["FinalPartitioned", "Partial"], "{plan}");
}

/// The single-phase plan and DataFusion's two phases give the same rows for a query mixing the
/// crate's functions with DataFusion's own aggregates (DISTINCT, FILTER), HAVING and ORDER BY —
/// the two-phase plan being DataFusion's standard one. An ordered aggregate (`array_agg(c ORDER
/// BY c)`) keeps the two phases: its sorted input would not survive the repartition.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn single_and_two_phase_plans_agree() {
    let sql = "SELECT g1, g2, k_anonymity(pid) AS persons, l_diversity(s) AS l, \
               t_closeness_ordered(h) AS t, count(DISTINCT n) AS distinct_n, \
               count(*) FILTER (WHERE f > 0) AS positive_f, \
               array_to_string(array_sort(array_agg(c)), ',') AS cs \
               FROM t WHERE pid IS DISTINCT FROM 3 GROUP BY g1, g2 \
               HAVING k_anonymity() > 1 ORDER BY g1, g2";
    let mut results = Vec::new();
    for phases in [Phases::Single, Phases::Two] {
        let (_dir, ctx) = parquet_ctx(5, 1200, 3, phases).await;
        let plan = physical_plan(&ctx, &format!("EXPLAIN {sql}")).await;
        let single = plan.contains("mode=SinglePartitioned");
        assert_eq!(single, phases == Phases::Single, "{phases:?}:\n{plan}");
        let batches = ctx.sql(sql).await.unwrap().collect().await.unwrap();
        let text = datafusion::arrow::util::pretty::pretty_format_batches(&batches)
            .unwrap()
            .to_string();
        assert!(text.lines().count() > 8, "too few classes:\n{text}");
        results.push(text);
        if phases == Phases::Single {
            let ordered = "SELECT g1, k_anonymity(pid), array_agg(c ORDER BY c) FROM t GROUP BY g1";
            let plan = physical_plan(&ctx, &format!("EXPLAIN {ordered}")).await;
            assert!(!plan.contains("SinglePartitioned"), "{plan}");
            let batches = ctx.sql(ordered).await.unwrap().collect().await.unwrap();
            // g1: 4 values and NULL
            assert_eq!(batches.iter().map(|b| b.num_rows()).sum::<usize>(), 5);
        }
    }
    assert_eq!(results[0], results[1]);
}

/// The functions through the DataFrame API (the analyzer rule applies to any logical plan).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dataframe_api_matches_reference() {
    let (_dir, ctx) = parquet_ctx(99, 230, 4, Phases::Single).await;
    // the same rows, for the reference (gen_rows is deterministic)
    let rows = gen_rows(99, 230);
    let f = |name: &str| ctx.udaf(name).unwrap();
    let aggs = vec![
        f("k_anonymity").call(vec![]),
        f("k_anonymity").call(vec![col("pid")]),
        f("l_diversity").call(vec![col("s")]),
        f("entropy_l_diversity").call(vec![col("s")]),
        f("recursive_cl_diversity").call(vec![col("s"), lit(2i64)]),
        f("t_closeness").call(vec![col("s")]),
        f("t_closeness_ordered").call(vec![col("n")]),
        f("ncp").call(vec![col("f"), col("c")]),
        f("entropy_leakage").call(vec![]),
        f("reidentification_risk").call(vec![]),
        f("reidentification_risk").call(vec![col("pid")]),
    ];
    // the same measures' references, in order
    let refs = [
        "k_anonymity()",
        "k_anonymity(pid)",
        "l_diversity(s)",
        "entropy_l_diversity(s)",
        "recursive_cl_diversity(s, 2)",
        "t_closeness(s)",
        "t_closeness_ordered(n)",
        "ncp(f, c)",
        "entropy_leakage()",
        "reidentification_risk()",
        "reidentification_risk(pid)",
    ];
    let measures: Vec<&Measure> = refs
        .iter()
        .map(|s| MEASURES.iter().find(|m| m.sql == *s).unwrap())
        .collect();
    let batches = ctx
        .table("t")
        .await
        .unwrap()
        .filter(col("g2").is_not_null())
        .unwrap()
        .aggregate(vec![col("g1")], aggs)
        .unwrap()
        .collect()
        .await
        .unwrap();
    let ints: Vec<bool> = measures.iter().map(|m| m.int).collect();
    let got = collect_results(&batches, 1, &refs, &ints);
    let t = Tab::new(rows.iter().filter(|r| r.g2.is_some()).collect());
    let mut classes: HashMap<Key, Vec<&Row>> = HashMap::new();
    for r in &t.rows {
        classes.entry(key_of(r, &["g1"])).or_default().push(r);
    }
    assert_eq!(got.len(), classes.len(), "number of groups");
    for (key, e) in &classes {
        let g = got
            .get(key)
            .unwrap_or_else(|| panic!("group {key:?} missing"));
        for (i, m) in measures.iter().enumerate() {
            let w = (m.eval)(e, &t);
            assert!(
                close(g[i], w),
                "group {key:?}: {} = {} expected {w}",
                m.sql,
                g[i]
            );
        }
    }
}

/// Sum of a metric `name=<number>` over the plan text.
fn metric_sum(plan: &str, name: &str) -> u64 {
    plan.match_indices(&format!("{name}="))
        .map(|(i, pat)| {
            plan[i + pat.len()..]
                .chars()
                .take_while(|c| c.is_ascii_digit())
                .collect::<String>()
                .parse::<u64>()
                .unwrap_or(0)
        })
        .sum()
}

/// Input sorted on the group keys, declared as such: DataFusion then aggregates in streaming
/// mode (`ordering_mode=Sorted` / `PartiallySorted`) and emits finished classes early
/// (`EmitTo::First`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reference_matches_sql_sorted_input() {
    let mut rows = gen_rows(5, 600);
    rows.sort_by(|a, b| (a.g1, &a.g2).cmp(&(b.g1, &b.g2)));
    let dir = tempfile::tempdir().unwrap();
    {
        let file = std::fs::File::create(dir.path().join("sorted.parquet")).unwrap();
        let mut writer = ArrowWriter::try_new(file, schema(), None).unwrap();
        for chunk in rows.chunks(17) {
            writer.write(&to_batch(chunk)).unwrap();
        }
        writer.close().unwrap();
    }
    let qs: Vec<(&Case, &[&str])> = vec![
        (&CASES[0], &["g1"]),
        (&CASES[0], &["g1", "g2"]),
        (&CASES[0], &["g1", "n"]),
        (&CASES[1], &["g1", "g2"]),
        (&CASES[2], &["g1"]),
    ];
    let wants: Vec<_> = qs
        .iter()
        .map(|(case, g)| reference(&rows, case.filter, g))
        .collect();
    let mut failures = Vec::new();
    let mut checked = 0;
    for tp in [1, 4] {
        let ctx = make_ctx(tp, Phases::Single);
        let order = vec![vec![col("g1").sort(true, true), col("g2").sort(true, true)]];
        ctx.register_parquet(
            "t",
            dir.path().to_str().unwrap(),
            ParquetReadOptions::default().file_sort_order(order),
        )
        .await
        .unwrap();
        if tp == 1 {
            let plan = physical_plan(
                &ctx,
                &format!(
                    "EXPLAIN SELECT g1, g2, {} FROM t GROUP BY g1, g2",
                    select_list()
                ),
            )
            .await;
            assert!(
                plan.contains("ordering_mode=Sorted"),
                "the aggregation does not run in sorted mode:\n{plan}"
            );
        }
        let desc = format!("sorted parquet, target_partitions {tp}");
        let (f, c) = compare_queries(&ctx, "t", &qs, &wants, &desc).await;
        failures.extend(f);
        checked += c;
    }
    report(failures, checked);
}

/// A memory pool small enough that the aggregation spills its state to disk and merges it back.
/// For each query, pools of decreasing size are tried; the query is compared at the first pool
/// where its aggregation spills (the `spill_count` metric of an `AggregateExec`) and still runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reference_matches_sql_with_spilling() {
    use datafusion::execution::memory_pool::FairSpillPool;
    use datafusion::execution::runtime_env::RuntimeEnvBuilder;

    let rows = gen_rows(8, 4000);
    let dir = tempfile::tempdir().unwrap();
    write_parquet(dir.path(), &rows);
    // Groupings with many classes of a few rows each spill. (With fewer, larger classes the
    // list-typed states make DataFusion request ~2 MB at once when it starts to spill, and a
    // small pool fails with ResourcesExhausted instead; DataFusion's own `array_agg(h)` does the
    // same there, so those groupings are not used here.)
    let qs: Vec<(&Case, &[&str])> = vec![
        (&CASES[0], &["h"]),
        (&CASES[1], &["h"]),
        (&CASES[2], &["h"]),
        (&CASES[0], &["h", "g1"]),
    ];
    let mut failures = Vec::new();
    let mut checked = 0;
    for q in &qs {
        let (case, group_by) = *q;
        let want = reference(&rows, case.filter, group_by);
        let keys = group_by.join(", ");
        let sql = format!(
            "EXPLAIN ANALYZE SELECT {keys}, {} FROM t WHERE {} GROUP BY {keys}",
            select_list(),
            case.filter_sql
        );
        let mut tried = Vec::new();
        let mut spilled_at = None;
        for pool in SPILL_POOL_BYTES {
            let runtime = RuntimeEnvBuilder::new()
                .with_memory_pool(Arc::new(FairSpillPool::new(pool)))
                .build_arc()
                .unwrap();
            let ctx = SessionContext::new_with_config_rt(
                config(2, Phases::Single).with_batch_size(64),
                runtime,
            );
            datafusion_anonymity::register(&ctx).unwrap();
            ctx.register_parquet(
                "t",
                dir.path().to_str().unwrap(),
                ParquetReadOptions::default(),
            )
            .await
            .unwrap();
            let plan = match ctx.sql(&sql).await.unwrap().collect().await {
                Ok(batches) => plan_text(&batches),
                Err(e) => {
                    tried.push(format!("{pool} bytes: {e}"));
                    continue;
                }
            };
            let aggregate_spills: u64 = plan
                .lines()
                .filter(|l| l.contains("AggregateExec"))
                .map(|l| metric_sum(l, "spill_count"))
                .sum();
            if aggregate_spills == 0 {
                tried.push(format!("{pool} bytes: no spill"));
                continue;
            }
            spilled_at = Some(pool);
            let desc = format!("parquet with spilling (pool {pool} bytes)");
            let (f, c) =
                compare_queries(&ctx, "t", &[*q], std::slice::from_ref(&want), &desc).await;
            failures.extend(f);
            checked += c;
            break;
        }
        if spilled_at.is_none() {
            failures.push(format!(
                "WHERE {}, GROUP BY {group_by:?}: no pool size made the aggregation spill and \
                 still run:\n{}",
                case.filter_sql,
                tried.join("\n")
            ));
        }
    }
    report(failures, checked);
}

/// Memory pools tried for the spilling test, largest first.
const SPILL_POOL_BYTES: [usize; 13] = [
    4_000_000, 2_000_000, 1_400_000, 1_000_000, 850_000, 700_000, 600_000, 500_000, 300_000,
    200_000, 130_000, 100_000, 70_000,
];
